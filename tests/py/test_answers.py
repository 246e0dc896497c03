"""Answers a reader can act on (issue 42): unfinished jobs in every answer, a reference
fit to compare against, any subset of rows, orderings only where the mechanism acted,
intervals that say what they cover, and the whole answer in compare.json."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from aryl import sim
from aryl.cli import main
from aryl.studies.confidence import Estimate, format_ratio, reading
from aryl.studies.reference import reference_problems

SMALL = ["--training-servers", "4", "--inference-servers", "4", "--plot-format", "png"]

#: A policy with a filter bug: it never starts a job wider than one GPU.
STARVER = """
class Starver:
    name = "starver"

    def allocate(self, state, epoch):
        c = state.columns()
        q = c.queue
        narrow = q[c.gpus_per_worker[q] * c.min_workers[q] <= 1]
        return state.schedule("aryl", queue=narrow, grow=[], **epoch.schedule_options)
"""


@pytest.fixture
def starver(tmp_path):
    path = tmp_path / "starver.py"
    path.write_text(STARVER)
    return f"{path}:Starver"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_starving_policy_is_never_ranked_on_its_finished_jobs(
    trace_slice, tmp_path, capsys, starver, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    jobs, load = trace_slice
    out = tmp_path / "o"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    rows = ["--rows", "Aryl Basic", "--rows", "starver", "--add-row", starver]
    assert main([*argv, *rows, "--seeds", "2", "-q"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "compare.csv", index_col="run")
    left = table.loc["starver", "jobs_unfinished"]
    assert left > 0 and table.loc["Aryl Basic", "jobs_unfinished"] == 0
    # -q keeps the fact: the table shows the unfinished jobs and marks the speed-up
    starver_line = next(x for x in printed.splitlines() if x.startswith("starver"))
    assert f" {left:,.0f} " in starver_line and starver_line.rstrip().endswith("*")
    finished = 300 - left
    assert table.loc["starver", "speed-up jobs"] == finished
    # the speed-up is over the jobs both rows finished, computed here by hand
    answer = json.loads((out / "compare.json").read_text())
    gain = next(g for g in answer["contributions"] if g["with"] == "starver")
    assert gain["reading"].startswith(f"starver left {left:,.0f} jobs unfinished; on ")
    assert gain["jobs compared"] == finished


def test_common_ratio_takes_the_jobs_both_rows_finished():
    def run(finish):
        jobs = pd.DataFrame(
            {
                "id": ["a", "b", "c"],
                "finish_time": finish,
                "jct": [10.0, 20.0, 30.0],
                "queuing_time": [1.0, 2.0, 3.0],
            }
        )
        return sim.Result.__new__(sim.Result), jobs

    from aryl.studies.replications import common_ratio

    results = {}
    for name, finish in (("x", [1.0, 1.0, 1.0]), ("y", [1.0, math.nan, 1.0])):
        r, jobs = run(finish)
        r.jobs = jobs
        results[(name, 0, 0)] = r
    samples = pd.DataFrame(
        [
            {
                "run": "x",
                "seed": 0,
                "window": 0,
                "jct_mean": 20.0,
                "jobs_unfinished": 0,
            },
            {
                "run": "y",
                "seed": 0,
                "window": 0,
                "jct_mean": 20.0,
                "jobs_unfinished": 1,
            },
        ]
    )
    e, basis = common_ratio(results, samples, "x", "y", "jct_mean")
    # both finished a and c: (10 + 30) / 2 over the same: 1.0 on 2 jobs
    assert e.value == pytest.approx(1.0) and basis.jobs == 2
    assert basis.note() == "y left 1 jobs unfinished; on the 2 jobs both finished"
    results[("y", 0, 0)].jobs["finish_time"] = 1.0  # the same jobs: every job counts
    e, basis = common_ratio(results, samples, "x", "y", "jct_mean")
    assert basis.jobs is None and basis.note() == ""


def test_one_run_per_row_is_answered_on_the_jobs_both_rows_finished():
    from aryl.studies.verdict import QUESTIONS, verdict_lines

    name, pairs = QUESTIONS[0]
    with_row, without_row = pairs[0]

    def run(jct, finish):
        r = sim.Result.__new__(sim.Result)
        r.jobs = pd.DataFrame(
            {"id": ["a", "b", "c"], "finish_time": finish, "jct": jct}
        )
        return r

    # without the feature, the slow job c never finishes: its finished-only mean (15)
    # looks faster than the feature's (20), which finished c at 30 s
    results = {
        with_row: run([10.0, 20.0, 30.0], [1.0, 1.0, 1.0]),
        without_row: run([10.0, 20.0, math.nan], [1.0, 1.0, math.nan]),
    }
    summaries = {
        with_row: {"jct_mean": 20.0, "jobs_unfinished": 0},
        without_row: {"jct_mean": 15.0, "jobs_unfinished": 1},
    }
    (first, *_) = verdict_lines(summaries=summaries, results=results)
    assert first.startswith(f"{name}: {without_row} left 1 jobs unfinished; on the 2 ")
    assert "(1.00x, one run" in first, first  # (10 + 20) / (10 + 20) on a and b
    (alone, *_) = verdict_lines(summaries=summaries)  # no job lists: finished-only
    assert "(0.75x, one run" in alone, alone


def test_a_zero_width_interval_says_why_instead_of_x_x():
    same = Estimate(2.236, 2.236, 2.236, 5)
    assert format_ratio(same) == "2.236x (no spread)"
    assert "[" not in format_ratio(same)
    assert reading(same) == "123.6% faster in every replication alike"
    assert format_ratio(Estimate(1.1, 1.0, 1.2, 5)) == "1.10x [1.00, 1.20]"
    assert reading(Estimate(math.nan, math.nan, math.nan, 5)).startswith(
        "undefined (a row finished no job"
    )


def _timeline_result(used, queue, capacity=16, usage=None, queuing=100.0, jct=1000.0):
    """A Result-like object with a timeline, for reference_problems."""

    class Fake:
        pass

    r = Fake()
    n = len(used)
    r.timeline = pd.DataFrame(
        {"t": np.arange(n) * 3600.0, "training_gpus_used": used, "queue_length": queue}
    )
    r.capacity = {"training_gpus": capacity}
    r.jobs = pd.DataFrame({"submit_time": [0.0, 3600.0 * n]})
    busy = float(np.mean(used)) / capacity if usage is None else usage
    r.summary = lambda: {
        "gpu_usage_training": busy,
        "queuing_mean": queuing,
        "jct_mean": jct,
    }
    return r


def test_a_stalled_saturated_or_idle_reference_is_named():
    fit = _timeline_result([12] * 10, [1] * 10)
    assert reference_problems(fit) == []
    # 3 of 10 hours with jobs queued and half the GPUs idle
    # (the last timeline row ends the run: it lasts no time)
    stalled = _timeline_result([12] * 7 + [4] * 3 + [0], [1] * 10 + [0])
    (problem,) = reference_problems(stalled)
    assert problem.startswith("stalled: for 3 of 10 hours")
    saturated = _timeline_result([16] * 10, [5] * 10, queuing=5000.0, jct=6000.0)
    assert reference_problems(saturated)[0].startswith("saturated: the training GPUs")
    idle = _timeline_result([0] * 10, [0] * 10, usage=0.0013)
    (problem,) = reference_problems(idle)
    assert problem.startswith("idle: only 0.13% of the training GPUs")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_stalled_baseline_is_said_first_and_marked_and_reference_moves_it(
    trace_slice, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    jobs, load = trace_slice
    argv = ["compare", str(jobs), "--load", str(load), *SMALL]
    rows = ["--rows", "Baseline (FIFO)", "--rows", "Control: SJF, no loaning"]
    assert main([*argv, *rows, "--out", str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    first = printed.index("The reference row 'Baseline (FIFO)' is not fit")
    assert first < printed.index("run (times in s)")
    assert "--reference 'Control: SJF, no loaning'" in printed
    assert "reference (stalled" in printed or "reference (saturated" in printed
    ref = ["--reference", "Control: SJF, no loaning"]
    assert main([*argv, *rows, *ref, "--out", str(tmp_path / "b")]) == 0
    answer = json.loads((tmp_path / "b" / "compare.json").read_text())
    assert answer["reference"] == "Control: SJF, no loaning"
    sjf = next(r for r in answer["rows"] if r["run"] == "Control: SJF, no loaning")
    assert sjf["speed-up JCT"] == 1.0
    assert main([*argv, *rows, "--reference", "nope", "--out", str(tmp_path / "c")])
    assert "--reference 'nope' is not a row" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("seeds", [[], ["--seeds", "2"]])
def test_any_subset_of_rows_runs_and_writes_every_file(
    trace_slice, tmp_path, capsys, seeds
):
    jobs, load = trace_slice
    out = tmp_path / "o"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    rows = ["--rows", "Aryl Basic", "--rows", "Elastic only, aryl"]
    assert main([*argv, *rows, *seeds]) == 0
    printed = capsys.readouterr().out
    assert (out / "compare.csv").exists() and (out / "compare.json").exists()
    table = pd.read_csv(out / "compare.csv", index_col="run")
    assert table.loc["Aryl Basic", "speed-up JCT"] == 1.0  # the first row given
    assert "--load)" not in printed  # a load was given: no wrong cause
    assert "Loaning: " in printed and "cannot tell" not in printed.split("\n\n")[1]
    assert "Elastic scaling: cannot tell, it needs the row(s)" in printed


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_orderings_without_the_mechanism_read_not_tested(trace_slice, tmp_path):
    jobs, _ = trace_slice
    # no load series is given: a constant one that never needs a server back
    load = tmp_path / "flat.csv"
    pd.DataFrame({"time_s": [0.0, 86400.0], "load": [0.0, 0.0]}).to_csv(
        load, index=False
    )
    out = tmp_path / "o"
    rows = [
        "--rows",
        "Loaning only, aryl reclaim",
        "--rows",
        "Loaning only, SCF reclaim",
        "--rows",
        "Loaning only, random reclaim",
    ]
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    assert main([*argv, *rows, "--seeds", "2", "-q"]) == 0
    orderings = json.loads((out / "compare.json").read_text())["orderings"]
    samples = pd.read_csv(out / "samples.csv")
    assert (samples["preemption_ratio"] == 0).all()
    for claim in ("aryl reclaim preempts no more than SCF",):
        assert orderings[claim]["verdict"] == "not tested"
        assert orderings[claim]["why"].startswith("no reclaim preempted a job")


def test_a_value_the_run_did_not_measure_reads_as_a_dash():
    from aryl.cli.output import summary_cell

    assert summary_cell("restart_gpu_hours", {"restart_gpu_hours": math.nan}) == "—"
    assert summary_cell("restart_gpu_hours", {"restart_gpu_hours": 2.0}) != "—"
