import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import aryl  # noqa: E402
from aryl import plot, sim  # noqa: E402
from aryl.plot.style import percent  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LOAD = [(0, 0.0), (300, 0.8)]


def tiny_jobs():
    return [
        aryl.Job("a", 1, 1, 2, 100, submit_time=0),
        aryl.Job("b", 4, 1, 2, 2000, submit_time=10),
        aryl.Job("c", 8, 1, 1, 3000, submit_time=20),
        aryl.Job("d", 8, 1, 2, 1000, submit_time=30),
    ]


@pytest.fixture(scope="module")
def runs():
    """Two finished runs differing in reclaim policy, one cut short by a horizon."""
    out = {}
    same_speed = {
        "gpu_speed": {"T4": 1.0}
    }  # jobs spill onto the loaned servers, get reclaimed
    for reclaim in ("aryl", "scf"):
        out[reclaim] = sim.simulate(
            tiny_jobs(),
            sim.Cluster(2, 2),
            reclaim=reclaim,
            inference_load=LOAD,
            config=same_speed,
            label=f"reclaim {reclaim}",
        ).check()
    out["short"] = sim.simulate(
        tiny_jobs(),
        sim.Cluster(2, 2),
        inference_load=LOAD,
        config={**same_speed, "horizon": 50},
        label="horizon 50 s",
    )
    return out


@pytest.fixture(autouse=True)
def no_pyplot_leak():
    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before == []


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_runs_cover_what_the_plots_need(runs):
    assert runs["aryl"].summary()["jobs_unfinished"] == 0
    short = runs["short"].jobs
    assert short["jct"].isna().sum() == 4  # nothing finished by 50 s
    assert short["queuing_time"].isna().sum() == 3  # only "a" started
    assert (
        runs["aryl"].jobs["queuing_time"] == 0
    ).any()  # a 0 s value for the log scale
    assert runs["aryl"].summary()["preemption_ratio"] > 0


@pytest.mark.parametrize("metric", ["jct", "queuing_time"])
def test_cdf_one_line_per_run_on_a_log_axis(runs, metric):
    fig = plot.cdf({"aryl": runs["aryl"], "scf": runs["scf"]}, metric)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert len(ax.get_lines()) == 2
    assert legend_texts(ax) == ["aryl", "scf"]
    assert "log scale" in ax.get_xlabel() and ax.get_ylabel()
    for line, name in zip(ax.get_lines(), ("aryl", "scf")):
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        assert x.min() >= 1.0  # 0 s clipped to 1 s
        assert y[0] == 0.0 and y[-1] == 1.0
        assert np.all(np.diff(y) >= 0) and np.all(np.diff(x) >= 0)
        assert len(x) == len(runs[name].jobs) + 1
    assert ax.get_xlim()[0] > 0


def test_cdf_clipping_at_one_second(runs):
    (ax,) = plot.cdf([runs["aryl"]], "queuing_time").axes
    x, y = (np.asarray(v, dtype=float) for v in ax.get_lines()[0].get_data())
    zero = int((runs["aryl"].jobs["queuing_time"] < 1).sum())
    assert zero > 0 and x[0] == 1.0 and y[zero] == zero / len(runs["aryl"].jobs)
    assert "below 1 s shown at 1 s" in ax.get_xlabel()
    (ax,) = plot.cdf([runs["aryl"]], "jct").axes  # every JCT >= 1 s: no note
    assert "below 1 s" not in ax.get_xlabel()


def test_cdf_sequence_uses_labels_and_counts_unfinished(runs):
    fig = plot.cdf([runs["aryl"], runs["short"]], "jct")
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 2
    texts = legend_texts(ax)
    assert texts[0] == "reclaim aryl"
    assert texts[1].startswith("horizon 50 s") and "4 of 4 unfinished" in texts[1]
    assert (
        len(ax.get_lines()[1].get_xdata()) == 0
    )  # nothing to draw, still in the legend
    queuing = plot.cdf([runs["short"]], "queuing_time").axes[0]
    assert "3 of 4 never started" in legend_texts(queuing)[0]
    x, y = (np.asarray(v, dtype=float) for v in queuing.get_lines()[0].get_data())
    assert y[-1] == 1.0 and len(x) == 2  # the one job that started


def test_cdf_single_result_and_duplicate_or_empty_labels(runs):
    unnamed = sim.Result(
        runs["aryl"].jobs,
        runs["aryl"].timeline,
        runs["aryl"].totals,
        runs["aryl"].capacity,
        label="",
    )
    ax = plot.cdf(unnamed).axes[0]
    assert legend_texts(ax) == ["run 1"]
    ax = plot.cdf([runs["aryl"], runs["aryl"]]).axes[0]
    assert legend_texts(ax) == ["reclaim aryl", "reclaim aryl (2)"]


def test_cdf_rejects_bad_input(runs):
    with pytest.raises(ValueError, match="unknown metric"):
        plot.cdf([runs["aryl"]], "work_lost")
    with pytest.raises(TypeError, match="Result"):
        plot.cdf({"x": runs["aryl"].jobs})
    with pytest.raises(TypeError, match="Result"):
        plot.preemptions([runs["aryl"], "scf"])


def test_usage_two_panels_sharing_time(runs):
    result = runs["aryl"]
    fig = plot.usage(result)
    assert isinstance(fig, Figure)
    top, bottom = fig.axes
    assert top.get_shared_x_axes().joined(top, bottom)
    assert fig.get_suptitle().endswith("reclaim aryl")
    assert bottom.get_xlabel() == "time since start (hours)"  # ~1 h run
    assert "GPUs" in top.get_ylabel() and "servers" in bottom.get_ylabel()
    assert legend_texts(top) == [
        "used on training servers",
        "training capacity (16 GPUs)",
        "lent (inference servers on loan)",
        "used on loaned servers",
    ]
    assert top.get_legend().get_title().get_text() == (
        "lent GPUs: above the training capacity"
    )
    assert legend_texts(bottom) == [
        "on loan to training",
        "needed by inference",
        "inference servers (2)",
    ]
    tl = result.timeline
    end = result.totals["end_time"]
    assert end > tl["t"].iloc[-1]
    lines = {line.get_label(): line for line in top.get_lines() + bottom.get_lines()}

    times = np.r_[tl["t"], end] / 3600

    def drawn(label, column, factor=1, base=0, where=None):
        # The timeline, with its last row held until the end of the run, as a step
        # function (rows repeating the previous one may be left out: the steps are
        # the same), from ``base`` up; NaN (no line) where ``where`` is False.
        held = np.r_[tl[column].to_numpy(), tl[column].iloc[-1]] * factor
        expected = base + held
        if where is not None:
            expected = np.where(where(held), expected, np.nan)
        xs = np.asarray(lines[label].get_xdata())
        at = np.asarray(lines[label].get_ydata())[
            np.searchsorted(xs, times, side="right") - 1
        ]
        np.testing.assert_array_equal(at, expected)

    lent = result.capacity["max_inference_server_gpus"]
    assert lent == 8  # the timeline counts servers; 8 GPUs each are lent
    drawn("_training", "training_gpus_used")
    # Lent GPUs and the part used, both above the training capacity (16 GPUs).
    drawn("_lent", "on_loan", factor=lent, base=16, where=lambda v: v > 0)
    drawn("_used", "loaned_gpus_used", base=16, where=lambda v: v > 0)
    drawn("on loan to training", "on_loan")
    drawn("needed by inference", "inference_needed")
    xs = np.asarray(lines["on loan to training"].get_xdata())
    assert xs[0] == pytest.approx(times[0]) and xs[-1] == pytest.approx(times[-1])
    assert np.isin(np.round(xs, 9), np.round(times, 9)).all()
    assert top.get_xlim() == pytest.approx((0, end / 3600))
    assert plot.usage(result, label="other").get_suptitle().endswith("other")


def test_usage_switches_to_days_for_long_runs():
    jobs = [aryl.Job("long", 8, 1, 1, 5 * 86400)]
    result = sim.simulate(
        jobs,
        sim.Cluster(1, 1),
        inference_load=LOAD,
        config={"schedule_interval": 3600},
        label="long",
    )
    fig = plot.usage(result)
    assert fig.axes[1].get_xlabel() == "time since start (days)"
    assert fig.axes[0].get_xlim()[1] == pytest.approx(result.totals["end_time"] / 86400)


def test_usage_short_timelines_stay_visible(runs):
    # Stopped early: one timeline row at t=0, held until the run's end (20 s).
    result = sim.simulate(
        tiny_jobs(),
        sim.Cluster(2, 2),
        inference_load=LOAD,
        progress=lambda f: f < 0.2,
        label="stopped",
    )
    assert len(result.timeline) == 1 and result.totals["end_time"] > 0
    top, _ = plot.usage(result).axes
    line = next(ln for ln in top.get_lines() if ln.get_label() == "_training")
    assert list(line.get_xdata()) == [0, result.totals["end_time"] / 60]
    assert top.figure.axes[1].get_xlabel() == "time since start (minutes)"
    held = result.timeline["training_gpus_used"].iloc[0]
    assert held > 0
    assert list(line.get_ydata()) == [held, held]
    # Nothing to hold it until: the single point is marked.
    point = sim.Result(
        result.jobs,
        result.timeline,
        {**result.totals, "end_time": 0.0},
        result.capacity,
        "point",
    )
    top, bottom = plot.usage(point).axes
    for ln in top.get_lines() + bottom.get_lines():
        if ln.get_label() in ("_training", "on loan to training"):
            assert ln.get_marker() == "o" and len(ln.get_xdata()) == 1


def test_cdf_identical_runs_differ_in_dash(runs):
    ax = plot.cdf([runs["aryl"], runs["scf"]]).axes[0]
    styles = [line.get_linestyle() for line in ax.get_lines()]
    assert styles[0] != styles[1]


def test_usage_without_inference_servers():
    result = sim.simulate(tiny_jobs(), sim.Cluster(2, 0), label="no loans")
    fig = plot.usage(result)
    assert len(fig.axes) == 2
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert texts == ["no inference servers: nothing lent"]
    assert "inference servers" not in " ".join(legend_texts(fig.axes[1]))


def test_preemptions_one_metric_per_axes(runs):
    chosen = {"aryl": runs["aryl"], "scf": runs["scf"], "short": runs["short"]}
    fig = plot.preemptions(chosen)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert left.get_shared_y_axes().joined(left, right)
    assert [t.get_text() for t in left.get_yticklabels()] == ["aryl", "scf", "short"]
    expected = [r.summary() for r in chosen.values()]
    (ratio,), (damage,) = left.containers, right.containers
    assert [b.get_width() for b in ratio] == pytest.approx(
        [s["preemption_ratio"] for s in expected]
    )
    assert [b.get_width() for b in damage] == pytest.approx(
        [s["collateral_damage"] for s in expected]
    )
    assert (
        left.get_title() == "Preemption ratio"
        and right.get_title() == "Collateral damage"
    )
    assert (
        "preemptions / jobs" in left.get_xlabel() and "reclaimed" in right.get_xlabel()
    )
    assert [t.get_text() for t in left.texts] == [
        f"{percent(s['preemption_ratio'])} ({int(r.jobs['preemptions'].sum()):,})"
        for s, r in zip(expected, chosen.values())
    ]
    assert chosen["short"].totals["reclaims"] == 0  # stopped before the load rose
    assert [t.get_text() for t in right.texts] == [
        percent(expected[0]["collateral_damage"]),
        percent(expected[1]["collateral_damage"]),
        "no reclaims",
    ]
    for ax in (left, right):  # every bar and its label inside the axes
        assert ax.get_xlim()[1] > 1.3 * max(b.get_width() for b in ax.containers[0])


def test_speedups_headline_figure(runs):
    table = sim.speedups(
        {name: r.summary() for name, r in runs.items()}, baseline="scf"
    )
    fig = plot.speedups(table, baseline="scf")
    left, right = fig.axes
    assert [t.get_text() for t in left.get_yticklabels()] == list(table.index)
    for ax, column in ((left, "speed-up JCT"), (right, "speed-up queue")):
        widths = [b.get_width() for b in ax.containers[0]]
        assert widths == pytest.approx(table[column].fillna(0).tolist())
        labels = [t.get_text() for t in ax.texts]
        assert labels == ["n/a" if np.isnan(v) else f"{v:.2f}x" for v in table[column]]
        assert ax.get_lines()[0].get_xdata()[0] == 1.0  # the no-change line
    assert labels[list(table.index).index("scf")] == "1.00x"
    assert "scf" in fig.get_suptitle()
    with pytest.raises(ValueError, match="speed-up JCT"):
        plot.speedups(table.drop(columns=["speed-up JCT"]))


def step_series(t, v, end):
    """A made-up timeline: v[i] holds from t[i] until t[i+1] (the last until end)."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            "t": t,
            "training_gpus_used": v,
            "loaned_gpus_used": v,
            "on_loan": v,
            "inference_needed": v,
        }
    )
    return frame, {"end_time": end}


def test_usage_window_means_are_exact_time_weighted_means(runs):
    rng = np.random.default_rng(3)
    t = np.r_[0.0, np.cumsum(rng.integers(60, 900, size=400))].astype(float)
    values = rng.integers(0, 16, size=len(t)).astype(float)
    end = t[-1] + 500.0
    timeline, totals = step_series(t, values, end)
    base = runs["aryl"]
    result = sim.Result(base.jobs, timeline, totals, base.capacity, "made up")
    window = 3600.0
    top, _ = plot.usage(result, window=window).axes
    line = next(ln for ln in top.get_lines() if ln.get_label() == "_training")
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    unit = 86400.0 if end > 3 * 86400 else 3600.0
    edges = np.r_[np.arange(0.0, end, window), end]
    assert xs * unit == pytest.approx(edges)
    # Brute force: sample the step function every second and average each window.
    seconds = np.arange(0.0, end)
    sampled = values[np.searchsorted(t, seconds, side="right") - 1]
    expected = [sampled[int(a) : int(b)].mean() for a, b in zip(edges[:-1], edges[1:])]
    assert ys[:-1] == pytest.approx(expected) and ys[-1] == ys[-2]
    assert "1-h means" in top.figure.get_suptitle()
    # raw: every step kept
    raw_top, _ = plot.usage(result, window=None).axes
    raw = next(ln for ln in raw_top.get_lines() if ln.get_label() == "_training")
    assert (
        len(raw.get_xdata()) > len(xs) and "means" not in raw_top.figure.get_suptitle()
    )


def test_usage_grid_one_panel_per_run(runs):
    fig = plot.usage_grid(runs, window=600)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["aryl", "scf", "short"]
    assert len(fig.axes) == 4 and not fig.axes[3].get_visible()  # 2 x 2, one spare
    assert panels[0].get_shared_y_axes().joined(panels[0], panels[2])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [
        "used on training servers",
        "training capacity",
        "lent (inference servers on loan)",
        "used on loaned servers",
    ]
    # Lent GPUs sit on the training capacity (16 GPUs): the highest lent floor fits.
    peak = max(16 + (r.timeline["on_loan"] * 8).max() for r in runs.values())
    assert panels[0].get_ylim()[1] >= peak
    assert panels[2].get_ylim() == panels[0].get_ylim()
    assert fig.get_suptitle().startswith("GPUs used by training, and GPUs lent")


def test_save_all_writes_each_figure_in_each_format(runs, tmp_path):
    target = tmp_path / "new" / "dir"
    chosen = [runs["aryl"], runs["scf"], runs["short"]]
    table = sim.speedups({r.label: r.summary() for r in chosen})
    paths = plot.save_all(
        chosen,
        target,
        formats=("png", "svg", "pdf"),
        headline=table,
        metadata={"Software": "aryl test", "Description": "made by a test"},
    )
    stems = ["jct_cdf", "queuing_cdf", "preemptions", "speedups", "usage"]
    assert [p.name for p in paths] == [
        f"{s}.{f}" for f in ("png", "svg", "pdf") for s in stems
    ]
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in paths)
    for p in paths:
        data = p.read_bytes()
        if p.suffix == ".png":
            assert data[:8] == PNG_MAGIC
            width, height = (
                int.from_bytes(data[16:20], "big"),
                int.from_bytes(data[20:24], "big"),
            )
            assert width > 500 and height > 300
        elif p.suffix == ".svg":
            assert b"<svg" in data[:2000] and b"made by a test" in data
        else:
            assert data[:5] == b"%PDF-"
    single = plot.save_all(runs["aryl"], tmp_path / "one")
    assert [p.name for p in single] == [f"{s}.png" for s in stems if s != "speedups"]
    with pytest.raises(ValueError, match="figure format"):
        plot.save_all(chosen, tmp_path, formats=("gif",))


def test_speedups_draw_the_intervals_of_a_replicated_comparison():
    import pandas as pd

    table = pd.DataFrame(
        {
            "speed-up JCT": [1.0, 1.2, 1.01],
            "speed-up JCT low": [1.0, 1.1, 0.98],
            "speed-up JCT high": [1.0, 1.3, 1.04],
            "speed-up queue": [1.0, 2.0, 1.5],
        },
        index=["base", "better", "unresolved"],
    )
    from matplotlib.container import BarContainer

    left, right = plot.speedups(table).axes
    bars = next(c for c in left.containers if isinstance(c, BarContainer))
    assert bars.errorbar is not None and right.containers[0].errorbar is None
    segments = bars.errorbar.lines[2][0].get_segments()
    assert [tuple(np.round(s[:, 0], 6)) for s in segments] == [
        (1.0, 1.0),
        (1.1, 1.3),
        (0.98, 1.04),
    ]
    # green only where the whole interval is above 1
    colors = [b.get_facecolor()[:3] for b in bars]
    assert colors[1] != colors[2] and colors[0] == colors[2]


def test_intervals_draw_a_band_per_line():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "speed": [0.25, 0.5, 0.25, 0.5],
            "share": [0.1, 0.1, 0.5, 0.5],
            "gain": [1.0, 1.1, 1.02, 1.2],
            "gain low": [0.99, 1.05, 1.0, 1.1],
            "gain high": [1.01, 1.15, 1.04, 1.3],
        }
    )
    ax = plot.intervals(frame, "speed", "gain", by="share").axes[0]
    assert len(ax.collections) == 2  # one band per share
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(0.99) and band[:, 1].max() == 1.15
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0.1", "0.5"]
    assert ax.get_legend().get_title().get_text() == "share"
    with pytest.raises(ValueError, match="gain low"):
        plot.intervals(frame.drop(columns=["gain low"]), "speed", "gain")
