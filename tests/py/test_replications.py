"""Replicated comparisons (aryl.studies.replications): seeds, windows, paired intervals."""

import math

import numpy as np
import pandas as pd
import pytest

from aryl import sim, traces
from aryl.engine.metrics import undefined_share
from aryl.studies import replications, sweep_engines
from aryl.studies.confidence import mean_interval, ratio_interval

# Few seeds keep these tests short; test_verdict checks the warning they give.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*use 5 or more replications:UserWarning"
)


@pytest.fixture(scope="module")
def trace():
    """600 jobs of the ITP trace from its 2,000th, re-based to start at 0, and its load."""
    frame, load = traces.load_default()
    part = frame.iloc[2000:2600].copy()
    part["submit_time_s"] -= part["submit_time_s"].min()
    return part, load


@pytest.fixture(scope="module")
def replicated(trace):
    frame, load = trace
    jobs = traces.to_jobs(frame, seed=0)

    def runs(seed):
        return sim.paper_runs(traces.to_jobs(frame, seed=seed), load, seed=seed)

    return sim.compare(jobs, sim.Cluster(12, 14), runs, load, seeds=3, threads=2)


def test_every_row_runs_once_per_seed_and_keeps_every_result(replicated):
    assert len(replicated) == 14 and len(replicated.runs) == 14 * 3
    assert sorted({s for _, s, _ in replicated.runs}) == [0, 1, 2]
    assert (replicated["replications"] == 3).all()
    for (name, seed, window), result in replicated.runs.items():
        assert result.provenance.seed == seed and window == 0
        assert result.label == name
    assert replicated.results[sim.BASELINE] is replicated.runs[(sim.BASELINE, 0, 0)]


def test_rows_of_one_replication_share_their_draws(replicated):
    """Same scenario and seed: identical jobs; another seed: other draws."""
    fp = {k: r.provenance.jobs_fingerprint for k, r in replicated.runs.items()}
    same_scenario = {
        "basic": [
            "Aryl Basic",
            "Elastic only, aryl",
            "Elastic only, AFS",
            "Ablation: Basic, imperfect",
            "Ablation: Basic, plain BFD",
        ],
        "baseline": [
            sim.BASELINE,
            "Loaning only, aryl reclaim",
            "Loaning only, random reclaim",
            "Control: SJF, no loaning",
        ],
    }
    for rows in same_scenario.values():
        for seed in range(3):
            assert len({fp[(row, seed, 0)] for row in rows}) == 1, (rows, seed)
    assert fp[("Aryl Basic", 0, 0)] != fp[("Aryl Basic", 1, 0)]


def test_intervals_are_the_student_t_ones_of_the_samples(replicated):
    s = replicated.samples
    basic = s[s["run"] == "Aryl Basic"].sort_values("seed")
    base = s[s["run"] == sim.BASELINE].sort_values("seed")
    e = mean_interval(basic["jct_mean"])
    row = replicated.loc["Aryl Basic"]
    assert (row["jct_mean"], row["jct_mean_low"], row["jct_mean_high"]) == (
        pytest.approx((e.value, e.low, e.high))
    )
    r = ratio_interval(base["jct_mean"].to_numpy(), basic["jct_mean"].to_numpy())
    assert row["speed-up JCT"] == pytest.approx(r.value)
    assert (row["speed-up JCT low"], row["speed-up JCT high"]) == pytest.approx(
        (r.low, r.high)
    )
    reference = replicated.loc[sim.BASELINE]
    assert reference["speed-up JCT"] == 1.0 == reference["speed-up JCT high"]


@pytest.mark.filterwarnings("ignore:.*far too small for this trace:UserWarning")
def test_one_seed_equals_the_single_comparison(trace):
    frame, load = trace
    jobs = traces.to_jobs(frame, seed=4)
    runs = sim.paper_runs(jobs, load, seed=4)
    runs = {k: runs[k] for k in (sim.BASELINE, "Aryl Basic")}
    single = sim.compare(jobs, sim.Cluster(12, 14), runs, load, seed=4)
    once = sim.compare(jobs, sim.Cluster(12, 14), runs, load, seed=4, seeds=1)
    assert list(single.columns) == list(sim.SUMMARY_KEYS)  # unchanged without seeds
    assert single.samples is None and single.runs == {}
    for key in sim.SUMMARY_KEYS:
        # a share of nothing (the Baseline lends nothing) is 0.0 in a summary, NaN
        # in the replicated table (metrics.SHARE_OF)
        expected = [
            math.nan if undefined_share(key, row) else float(row[key])
            for _, row in single.iterrows()
        ]
        assert once[key].tolist() == pytest.approx(expected, nan_ok=True)
        assert once[f"{key}_low"].isna().all()  # one replication: no interval
    assert math.isnan(once.loc[sim.BASELINE, "lent_used_share"])
    speed = sim.speedups({n: r.summary() for n, r in single.results.items()})
    assert once["speed-up JCT"].tolist() == pytest.approx(
        speed["speed-up JCT"].tolist()
    )


def test_contributions_and_verdicts(replicated):
    table = replications.contributions(replicated)
    assert list(table["feature"]) == [f for f, _, _ in replications.CONTRIBUTIONS]
    loaning = table.set_index("feature").loc["loaning, given elasticity"]
    samples = replicated.samples
    expected = replications.paired_ratio(
        samples, "Elastic only, aryl", "Aryl Basic", "jct_mean"
    )
    assert loaning["JCT gain"] == pytest.approx(expected.value)
    for _, row in table.iterrows():
        if row["JCT gain low"] == row["JCT gain high"]:  # no spread: said in words
            assert row["reading"] == "no change in any replication" or row[
                "reading"
            ].endswith("in every replication alike")
            continue
        inside = row["JCT gain low"] <= 1.0 <= row["JCT gain high"]
        assert (row["reading"] == "no detectable gain") == inside
    verdicts = sim.check_orderings(replicated)
    assert len(verdicts) == len(sim.ORDERINGS)
    for claim in verdicts.values():
        assert claim["verdict"] in (
            "holds",
            "reversed",
            "not resolved",
            "tied",
            "not tested",
        )
        assert (claim["why"] is not None) == (claim["verdict"] == "not tested")
        link_verdicts = [link[-1] for link in claim["links"]]
        if claim["verdict"] == "holds":
            assert set(link_verdicts) == {"holds"}
    single = sim.check_orderings(
        {n: r.summary() for n, r in replicated.results.items()}
    )
    assert set(single) == set(verdicts) and "verdict" not in next(iter(single.values()))


def test_windows_partition_the_trace_and_warm_up_before_each(trace):
    frame, load = trace
    jobs = traces.to_jobs(frame, seed=0)
    t = np.array([j.submit_time for j in jobs])
    windows = replications.time_windows(t, 3, warmup=3600.0)
    measured_ids = []
    for w in windows:
        part, measured = replications.window_jobs(jobs, w)
        shifted = part.column("submit_time")
        assert shifted.min() >= 0.0
        original = shifted + w.run_start
        assert (original[measured] >= w.start).all()
        assert (original[~measured] < w.start).all()
        assert w.index == 0 or w.run_start == max(t[0], w.start - 3600.0)
        measured_ids += part.ids[measured].tolist()
    assert sorted(measured_ids) == sorted(jobs.ids.tolist())  # each job once
    assert windows[0].run_start == t[0] and windows[-1].end == t[-1]


def test_window_load_starts_with_the_load_in_force():
    load = pd.DataFrame(
        {"time_s": [0.0, 100.0, 200.0, 300.0], "load": [0.1, 0.2, 0.3, 0.4]}
    )
    w = replications.Window(1, 250.0, 400.0, 150.0, True)
    shifted = replications.window_load(load, w, last_submit=300.0)
    assert shifted.tolist() == [[0.0, 0.2], [50.0, 0.3], [150.0, 0.4]]


def test_windows_with_seeds_are_batches(trace):
    frame, load = trace
    jobs = traces.to_jobs(frame, seed=0)
    runs = sim.paper_runs(jobs, load, seed=0)
    runs = {k: runs[k] for k in (sim.BASELINE, "Control: SJF, no loaning")}
    out = sim.compare(jobs, sim.Cluster(12, 14), runs, load, seeds=2, windows=3)
    assert len(out.runs) == 2 * 3 * 2
    assert (out["replications"] == 3).all()  # the windows are the batches
    measured = sum(
        len(r.jobs)
        for (name, s, _), r in out.runs.items()
        if name == sim.BASELINE and s == 0
    )
    assert measured == len(jobs)
    s = out.samples[out.samples["run"] == sim.BASELINE].sort_values(["window", "seed"])
    e = mean_interval(s["jct_mean"], groups=s["window"].tolist())
    assert out.loc[sim.BASELINE, "jct_mean_low"] == pytest.approx(e.low)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"seeds": 0}, ValueError, r"seeds must be in \[1, 10000\], got 0"),
        ({"seeds": [1, 1]}, ValueError, "distinct"),
        ({"seeds": [1, -2]}, ValueError, "integer >= 0"),
        ({"seeds": True}, TypeError, "seeds"),
        ({"windows": 0}, ValueError, "windows must be"),
        ({"seeds": 2, "reference": "nope"}, ValueError, "reference row 'nope'"),
        ({"warmup": 10.0}, TypeError, "need seeds= or windows="),
        ({"seeds": 2, "windows": 2, "warmup": -1.0}, ValueError, "warmup"),
    ],
)
def test_bad_input_stops_before_any_run(trace, kwargs, error, message):
    frame, load = trace
    jobs = traces.to_jobs(frame, seed=0)
    runs = {"A": {"policy": "fifo", "config": {"loaning": False}}}
    with pytest.raises(error, match=message):
        sim.compare(jobs, sim.Cluster(12, 14), runs, load, **kwargs)


def test_a_ratio_of_zero_means_is_nan_not_an_error():
    assert math.isnan(ratio_interval([0.0, 0.0], [0.0, 0.0]).value)


# ---- through the sweep: replicate_paper ---------------------------------------------------


def test_paper_points_run_what_paper_runs_runs(trace, replicated, tmp_path):
    """The sweep's rows give the same summaries as compare over paper_runs, seed by seed."""
    frame, load = trace
    out = sim.replicate_paper(frame, load, 12, 14, seeds=3, cache=tmp_path)
    assert list(out.index) == list(replicated.index)
    key = ["run", "seed", "window"]
    a = out.samples.sort_values(key).reset_index(drop=True)
    b = replicated.samples.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    fp = {k: r.provenance.jobs_fingerprint for k, r in out.runs.items()}
    assert fp == {k: r.provenance.jobs_fingerprint for k, r in replicated.runs.items()}


def test_more_seeds_run_only_the_new_ones(trace, tmp_path, monkeypatch):
    frame, load = trace
    calls = []
    real = sweep_engines.run_point  # the runs call it there
    monkeypatch.setattr(
        sweep_engines,
        "run_point",
        lambda point, *a, **k: calls.append(point["seed"]) or real(point, *a, **k),
    )
    first = sim.replicate_paper(frame, load, 12, 14, seeds=5, cache=tmp_path)
    assert sorted(set(calls)) == [0, 1, 2, 3, 4] and len(calls) == 14 * 5
    calls.clear()
    both = sim.replicate_paper(frame, load, 12, 14, seeds=10, cache=tmp_path)
    assert sorted(set(calls)) == [5, 6, 7, 8, 9] and len(calls) == 14 * 5
    assert (both["replications"] == 10).all()
    old = both.samples[both.samples["seed"] < 5].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, first.samples.reset_index(drop=True))


def test_replicate_paper_windows_measure_every_job_once(trace, tmp_path):
    frame, load = trace
    out = sim.replicate_paper(
        frame, load, 12, 14, seeds=1, windows=3, warmup=3600.0, cache=False
    )
    assert (out["replications"] == 3).all()
    ids = [
        i
        for (name, _, _), r in out.runs.items()
        if name == sim.BASELINE
        for i in r.jobs["id"]
    ]
    assert sorted(ids) == sorted(frame["job_id"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": 0}, r"seeds must be in \[1, 10000\], got 0"),
        ({"seeds": 2, "windows": -1}, "windows must be"),
        ({"seeds": 2, "reference": "nope"}, "reference row 'nope'"),
        ({"seeds": 2, "config": {"nope": 1}}, "unknown sweep parameter"),
    ],
)
def test_replicate_paper_bad_input_stops_before_any_run(
    trace, tmp_path, kwargs, message
):
    frame, load = trace
    with pytest.raises(ValueError, match=message):
        sim.replicate_paper(frame, load, 12, 14, cache=tmp_path, **kwargs)
    assert not any(tmp_path.iterdir())  # nothing ran, nothing cached
