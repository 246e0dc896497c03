"""The allocation history (simulate(..., history=True)): intervals that tile every
job's running time and give back its counts and the run's GPU-seconds, on the
embedded trace's Basic row, a run with reclaims and a goodput-driven run; off by
default and without effect on the run; the Gantt chart drawn from it."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import aryl  # noqa: E402
from aryl import plot, sim, traces  # noqa: E402
from aryl.engine.history import CHANGES, COLUMNS, gpu_seconds, intervals  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def basic():
    """The Aryl Basic row on 400 jobs of the embedded trace, on the cluster
    ``aryl compare`` sizes for them (``size_cluster``)."""
    frame, load = traces.load_default()
    part = frame.iloc[2000:2400].copy()
    part["submit_time_s"] -= part["submit_time_s"].min()
    jobs = traces.to_jobs(part, seed=0)
    load = traces.extend_load(load, max(j.submit_time for j in jobs) + 30 * 86400)
    row = sim.paper_runs(jobs, load)["Aryl Basic"]
    return sim.simulate(cluster=sim.size_cluster(jobs).cluster, history=True, **row)


@pytest.fixture(scope="module")
def reclaimed():
    """A synthetic day-pair on a small training cluster that borrows often: reclaims
    preempt jobs and scale them in."""
    frame, load = traces.synthetic(days=2, jobs=400, seed=0)
    jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
    kwargs = dict(inference_load=load, config={"lend_hold": 0.0}, label="reclaimed")
    return (
        sim.simulate(jobs, sim.Cluster(4, 10), history=True, **kwargs),
        sim.simulate(jobs, sim.Cluster(4, 10), **kwargs),
    )


def tiles(result, goodput=False):
    """Independent of Result.check: each job's intervals, their gaps and totals (a
    goodput-driven run's totals count a finished job's GPUs until its round ends)."""
    spans = intervals(result.history()).sort_values(["job", "interval"])
    jobs = result.jobs.set_index("id")
    for job, rows in spans.groupby("job"):
        record = jobs.loc[job]
        start, end = rows["start"].to_numpy(), rows["end"].to_numpy()
        assert list(rows["interval"]) == list(range(len(rows)))
        assert start[0] == record["start_time"]
        assert end[-1] == record["finish_time"]
        gaps = start[1:] - end[:-1]
        assert (gaps >= 0).all()
        waits = rows["closed"].isin(["reclaim_preemption", "preemption"]).to_numpy()
        assert (gaps[~waits[:-1]] == 0).all()  # no gap but after a preemption
        held = (end - start).sum()
        assert held + gaps.sum() == pytest.approx(end[-1] - start[0], abs=1e-6)
        assert waits.sum() == record["preemptions"]
        assert (~waits[:-1]).sum() == record["scaling_ops"]
    assert set(spans["job"]) == set(jobs.index[jobs["start_time"].notna()])
    for key, value in gpu_seconds(result.history()).items():
        if goodput:
            assert value <= result.totals[key]
        else:
            assert value == pytest.approx(result.totals[key], rel=1e-12, abs=1e-6)


def test_the_basic_rows_history_tiles_every_jobs_run(basic):
    result = basic
    result.check()
    tiles(result)
    h = result.history()
    assert list(h.columns) == list(COLUMNS)
    assert list(h["closed"].cat.categories) == list(CHANGES)
    assert (h["gpu_type"] == np.where(h["on_loan"], "T4", "V100")).all()
    assert set(h["closed"].astype(str)) >= {"finish", "scale_in", "scale_out"}


def test_reclaims_show_as_preemptions_and_scale_ins(reclaimed):
    result, _ = reclaimed
    result.check()
    tiles(result)
    counts = result.history()["closed"].value_counts()
    assert counts["reclaim_preemption"] > 0 and counts["reclaim_scale_in"] > 0
    assert result.totals["loaned_gpu_seconds"] > 0


def test_history_is_off_by_default_and_changes_nothing(reclaimed):
    on, off = reclaimed
    assert off.allocations is None
    with pytest.raises(ValueError, match="history=True"):
        off.history()
    assert on.jobs.equals(off.jobs) and on.timeline.equals(off.timeline)
    assert on.totals == off.totals


def test_history_must_be_a_bool():
    with pytest.raises(ValueError, match="history must be True or False"):
        sim.simulate([aryl.Job("a", 1, 1, 1, 10.0)], sim.Cluster(1, 0), history=1)


def test_a_hand_computed_history():
    # On one 8-GPU server B (2..6 workers, 20 s at 6) runs 5 workers and ends at
    # 24 s; A (2..3, 100 s at 3) runs 3 from 0 to 100 s: one interval each.
    jobs = [aryl.Job("A", 1, 2, 3, 100.0), aryl.Job("B", 1, 2, 6, 20.0)]
    result = sim.simulate(jobs, [aryl.Server("s", "training", 8)], history=True)
    rows = result.history().set_index("job")
    assert rows.loc["A", ["start", "end", "workers"]].tolist() == [0.0, 100.0, 3]
    assert rows.loc["B", ["start", "end", "workers"]].tolist() == [0.0, 24.0, 5]
    assert set(rows["opened"]) == {"start"} and set(rows["closed"]) == {"finish"}


def test_an_interval_spanning_gpu_types_and_pools():
    # A hetero job of 2 x 8 GPUs, one worker on a V100 training server and one on
    # a lent T4 server: one interval, a row per server.
    jobs = [aryl.Job("h", 8, 2, 2, 100.0, hetero=True)]
    servers = [aryl.Server("t", "training", 8), aryl.Server("i", "inference", 8)]
    result = sim.simulate(
        jobs,
        servers,
        inference_load=[(0, 0.0)],
        config={"lend_hold": 0.0},
        history=True,
    ).check()
    tiles(result)
    assert sorted(result.history()["gpu_type"]) == ["T4", "V100"]
    (span,) = intervals(result.history()).itertuples()
    assert (span.gpu_type, span.gpus, span.on_loan, span.training) == (
        "T4+V100",
        16,
        True,
        True,
    )
    legend = plot.gantt(result, color="loan").axes[0].get_legend_handles_labels()
    assert "training + on loan" in legend[1]


def test_a_run_stopped_by_its_horizon_closes_its_intervals_at_the_end():
    jobs = [aryl.Job("a", 8, 1, 1, 1000.0), aryl.Job("b", 8, 1, 1, 50.0)]
    result = sim.simulate(
        jobs, sim.Cluster(2, 0), config={"horizon": 500.0}, history=True
    ).check()
    rows = result.history().set_index("job")
    assert rows.loc["a", "closed"] == "end"
    assert rows.loc["a", "end"] == result.totals["end_time"]
    assert rows.loc["b", "closed"] == "finish"


def test_a_goodput_driven_run_records_its_reallocations():
    w = traces.pollux_workload(1)
    part = w[(w["time"] < 3600) & w["application"].isin(("cifar10", "ncf"))]
    part = part.reset_index(drop=True)
    part.attrs = dict(w.attrs)
    quick = {"pollux_population": 20, "pollux_generations": 10}
    result = sim.simulate(
        part,
        sim.Cluster(4, 0, gpus_per_server=4),
        policy="pollux",
        config=quick,
        history=True,
    ).check()
    h = result.history()
    assert (h["gpus"] == h["workers"]).all()  # one-GPU replicas
    resized = h["closed"].isin(["scale_out", "scale_in", "move"]).sum()
    assert resized > 0
    tiles(result, goodput=True)


def test_tiresias_preemptions_show_in_the_history():
    w = traces.pollux_workload(1)
    part = w[(w["time"] < 4 * 3600) & (w["num_replicas"] <= 4)].reset_index(drop=True)
    part.attrs = dict(w.attrs)
    result = sim.simulate(
        part,
        sim.Cluster(1, 0, gpus_per_server=4),
        policy="tiresias",
        config={"tiresias_threshold": 600.0},  # demotions: preemptions
        history=True,
    ).check()
    tiles(result, goodput=True)
    closed = result.history()["closed"]
    assert (closed == "preemption").sum() == result.jobs["preemptions"].sum() > 0


def test_check_catches_a_history_that_does_not_tile(reclaimed):
    result, _ = reclaimed
    h = result.history()
    resized = intervals(h)
    job = resized.loc[resized["interval"] == 1, "job"].iloc[0]
    dropped = h.drop(h.index[(h["job"] == job) & (h["interval"] == 0)])
    with pytest.raises(sim.InvariantError, match=repr(job)):
        result.__class__(**{**result.__dict__, "allocations": dropped}).check()
    relabelled = h.copy()
    relabelled.loc[relabelled["closed"] == "reclaim_preemption", "closed"] = "scale_in"
    with pytest.raises(sim.InvariantError, match="preemptions"):
        result.__class__(**{**result.__dict__, "allocations": relabelled}).check()


# ---- the Gantt chart -------------------------------------------------------------------


def test_gantt_marks_reclaims_and_colours_by_gpu_type_or_loan(reclaimed):
    result, _ = reclaimed
    h = result.history()
    hit = list(h.loc[h["closed"] == "reclaim_preemption", "job"].unique()[:5])
    fig = plot.gantt(result, jobs=hit)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(j) for j in hit]
    labels = ax.get_legend_handles_labels()[1]
    assert "reclaim preemption" in labels and "T4" in labels
    marks = [c for c in ax.collections if c.get_label() == "reclaim preemption"]
    wanted = intervals(h[h["job"].isin(hit)])["closed"].eq("reclaim_preemption").sum()
    assert len(marks[0].get_offsets()) == wanted
    by_loan = plot.gantt(result, jobs=hit, color="loan", window=(0.0, 86400.0))
    assert "on loan" in by_loan.axes[0].get_legend_handles_labels()[1]
    assert by_loan.axes[0].get_xlim() == (0.0, 24.0)  # hours
    assert len(plot.gantt(result).axes[0].get_yticklabels()) == plot.GANTT_JOBS


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"jobs": ["nope"]}, "no job 'nope'"),
        ({"jobs": []}, "1 to"),
        ({"jobs": ["syn-000001", "syn-000001"]}, "given twice"),
        ({"color": "rainbow"}, "color must be one of"),
        ({"window": (10.0, 5.0)}, "window must be"),
    ],
)
def test_gantt_refuses_bad_arguments(reclaimed, kwargs, error):
    with pytest.raises(ValueError, match=error):
        plot.gantt(reclaimed[0], **kwargs)


def test_gantt_takes_a_sequence_of_ids(reclaimed):
    with pytest.raises(TypeError, match="sequence of job ids"):
        plot.gantt(reclaimed[0], jobs="syn-000001")


@pytest.mark.parametrize(
    "kwargs, message",
    [  # the audit's R4-13: Python's or matplotlib's own messages before
        ({"window": "ab"}, "window must be a .start, end. pair of seconds"),
        ({"window": 5}, "window must be a .start, end. pair of seconds"),
        ({"window": (t for t in (0.0, 10.0))}, "window must be a .start, end. pair"),
        ({"window": (0.0, "1h")}, "window must be a .start, end. pair"),
        ({"window": (True, 10.0)}, "window must be a .start, end. pair"),
        ({"jobs": 5}, "jobs must be a sequence of job ids, got 5"),
        ({"ax": "polar"}, r"ax must be a Cartesian .* got PolarAxes .*'polar'"),
        ({"ax": "3d"}, r"ax must be a Cartesian .* got Axes3D .*'3d'"),
    ],
)
def test_gantt_names_a_bad_argument_before_drawing(reclaimed, kwargs, message):
    fig = Figure()
    if "ax" in kwargs:
        kwargs = {"ax": fig.add_subplot(projection=kwargs["ax"])}
    with pytest.raises(TypeError, match=f"gantt: {message}"):
        plot.gantt(reclaimed[0], **kwargs)
    assert not any(ax.has_data() for ax in fig.axes)  # nothing drawn


def test_every_plot_refuses_axes_that_are_not_cartesian(reclaimed):
    polar = Figure().add_subplot(projection="polar")
    with pytest.raises(TypeError, match="usage: ax must be a Cartesian"):
        plot.usage(reclaimed[1], ax=[polar, Figure().add_subplot()])
    with pytest.raises(TypeError, match="cdf: ax must be a Cartesian"):
        plot.cdf({"run": reclaimed[1]}, ax=polar)


def test_gantt_needs_a_history(reclaimed):
    with pytest.raises(ValueError, match="history=True"):
        plot.gantt(reclaimed[1])


def test_the_docs_gantt_figure_is_drawn_by_its_script():
    sys.path.insert(0, str(ROOT / "docs" / "figures"))
    try:
        import gantt
    finally:
        sys.path.pop(0)
    fig = gantt.figure()
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "reclaim scale-in" in labels
    assert (ROOT / "docs" / "figures" / "gantt.png").is_file()
    # What docs/model.md says of it.
    result = gantt.basic_run()
    cluster = result.provenance.cluster
    assert (cluster["training_servers"], cluster["inference_servers"]) == (85, 100)
    spans = intervals(result.history())
    assert not (spans["closed"] == "reclaim_preemption").any()
    reclaimed = spans[spans["closed"] == "reclaim_scale_in"]
    at = reclaimed["end"].min()
    first = reclaimed[reclaimed["end"] == at]
    assert len(first) == 1 and bool(first["on_loan"].iloc[0])
    assert "T4" in first["gpu_type"].iloc[0] and "V100" in first["gpu_type"].iloc[0]
    job = spans[spans["job"] == first["job"].iloc[0]]
    after = job[job["interval"] == first["interval"].iloc[0] + 1].iloc[0]
    assert after["start"] == at and after["workers"] == first["workers"].iloc[0] - 1
    assert after["gpu_type"] == "V100" and after["closed"] == "scale_out"
    assert job[job["interval"] == after["interval"] + 1]["start"].iloc[0] == at
