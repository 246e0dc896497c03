"""The Pollux rows through the replication machinery (issue 31): windowed, cached per
run, resumable, and the pooled figures of the table."""

import importlib
import json
import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aryl import sim, traces
from aryl.cli import main
from aryl.engine.result import job_times
from aryl.studies import sweep_engines
from aryl.studies.confidence import t_quantile
from aryl.studies.replications import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    POOLED_KEYS,
    pooled,
)

ROOT = Path(__file__).resolve().parents[2]


def benchmark(name):
    """The module ``benchmarks/<name>.py`` (the folder on the path only to import it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def small():
    """24 jobs of at most 8 GPUs from the ITP trace, re-based to start at 0."""
    frame, _ = traces.load_default()
    part = frame[frame["num_gpus"] <= 8].iloc[:24].copy()
    part["submit_time_s"] -= part["submit_time_s"].min()
    return part.reset_index(drop=True)


@pytest.mark.filterwarnings("ignore:.*use 5 or more replications:UserWarning")
def test_pollux_points_run_what_paper_runs_runs(small, tmp_path):
    """Through the sweep, the Pollux rows give what paper_runs' rows give."""
    config = {"pollux_generations": 3}
    out = sim.replicate_paper(
        small,
        None,
        2,
        0,
        seeds=1,
        config=config,
        rows=list(sim.POLLUX_ROWS),
        cache=tmp_path,
        engine="serial",
    )
    runs = sim.paper_runs(
        traces.to_jobs(small, seed=0), None, seed=0, config=config, pollux_rows=True
    )
    nodes = sim.pollux_nodes(sim.Cluster(2, 0))
    for name in sim.POLLUX_ROWS:
        direct = sim.simulate(cluster=nodes, label=name, **runs[name])
        swept = out.runs[(name, 0, 0)]
        assert swept.summary() == direct.summary(), name
        assert swept.provenance.jobs_fingerprint == direct.provenance.jobs_fingerprint


def _cli(small, tmp_path, cache, out):
    path = tmp_path / "jobs.csv"
    small.to_csv(path, index=False)
    return [
        "compare", str(path), "--training-servers", "2", "--inference-servers", "0",
        "--pollux-rows", "--pollux-generations", "2", "--windows", "4",
        "--warmup", "1h", "--engine", "serial", "--cache", str(cache),
        "--out", str(out), "--plot-format", "png",
    ]  # fmt: skip


def _tables(printed):
    """The printed tables, without the lines that name the cache or the output."""
    return [
        line
        for line in printed.splitlines()
        if not line.startswith(("Found ", "Wrote ", "Comparing on"))
    ]


def test_interrupted_pollux_windows_continue_from_the_cache(
    small, tmp_path, capsys, monkeypatch
):
    """The issue's "Done when": interrupt after the first runs, run again: it says what
    it found, runs nothing twice and prints the table of an uninterrupted run."""
    real, ran = sweep_engines.run_point, []  # the runs call it there

    def counted(point, *args, **kwargs):
        if stop[0] is not None and len(ran) == stop[0]:
            raise KeyboardInterrupt
        result = real(point, *args, **kwargs)
        ran.append(json.dumps(point, sort_keys=True, default=repr))
        return result

    monkeypatch.setattr(sweep_engines, "run_point", counted)
    cache = tmp_path / "cache"
    stop = [5]
    try:
        code = main(_cli(small, tmp_path, cache, tmp_path / "a"))
    except KeyboardInterrupt:
        code = 130
    assert code != 0 and len(ran) == 5
    first, total = set(ran), 8 * 4  # 6 rows without loaning + 2 Pollux rows, 4 windows
    assert len(list(cache.iterdir())) == 5  # each finished run was kept
    capsys.readouterr()
    stop[0], ran[:] = None, []
    assert main(_cli(small, tmp_path, cache, tmp_path / "b")) == 0
    resumed = capsys.readouterr().out
    assert f"Found 5 of {total} runs in the cache" in resumed
    assert len(ran) == total - 5 and not first & set(ran)  # nothing twice
    ran[:] = []
    assert main(_cli(small, tmp_path, tmp_path / "fresh", tmp_path / "c")) == 0
    whole = capsys.readouterr().out
    assert f"Found 0 of {total} runs" in whole and len(ran) == total
    assert _tables(resumed) == _tables(whole)
    assert "beside the paper's Table 3" in resumed and "1.42x" in resumed  # wraps
    samples = pd.read_csv(tmp_path / "b" / "samples.csv")
    assert sorted(set(samples["window"])) == [0, 1, 2, 3]
    assert {"Pollux", "Aryl+TunedJobs"} <= set(samples["run"])
    beside = pd.read_csv(tmp_path / "b" / "pollux_paper.csv", index_col="metric")
    assert beside.loc["jct_mean", "Pollux, paper"] == 14534
    # each entry says where, how and with what code it ran
    entry = json.loads(next(cache.glob("*/row.json")).read_text())
    assert entry["cpu_seconds"] >= 0 and entry["seconds"] >= 0
    by = entry["run_by"]
    assert by["engine"] == "serial" and "cores" in by["machine"] and by["command"]
    assert "commit" in by


def _windows(sizes, scale=(100.0, 5000.0), seed=3):
    rng = np.random.default_rng(seed)
    return [
        SimpleNamespace(
            jobs=pd.DataFrame(
                {
                    "queuing_time": rng.exponential(scale[0], n),
                    "jct": rng.exponential(scale[1], n),
                    "scaling_ops": rng.integers(0, 4, n),
                }
            )
        )
        for n in sizes
    ]


def test_pooled_counts_every_job_once_with_a_window_bootstrap_interval():
    windows = _windows((40, 55, 70, 12))
    windows[1].jobs.loc[3, "jct"] = np.nan  # unfinished: left out, as job_times does
    out = pooled(windows)
    stacked = job_times(pd.concat([w.jobs for w in windows]))
    # the oracle: the same draws of windows, each pooled by concatenation
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(
        0, 4, size=(BOOTSTRAP_RESAMPLES, 4)
    )
    for key in POOLED_KEYS:
        again = [
            job_times(pd.concat([windows[i].jobs for i in row]))[key] for row in picks
        ]
        low, high = np.percentile(again, [2.5, 97.5])
        assert out[key].value == stacked[key]
        assert out[key].low == pytest.approx(low, rel=1e-12)
        assert out[key].high == pytest.approx(high, rel=1e-12)
        assert out[key].low <= out[key].value <= out[key].high
    assert out["jobs"].value == 177
    assert out["scaling_ops"].value == sum(w.jobs["scaling_ops"].sum() for w in windows)
    one = pooled(windows[:1])
    assert math.isnan(one["jct_mean"].low) and one["jct_mean"].n == 1
    with pytest.raises(ValueError, match="at least one"):
        pooled([])


def test_pooled_bounds_stay_inside_what_the_jobs_can_give():
    # heavy-tailed windows: a small one holds all the long jobs; a t-interval over the
    # windows' statistics (the earlier rule) reached below zero here
    windows = _windows((10,) + (50,) * 7, scale=(10.0, 100.0), seed=5)
    windows[0].jobs["jct"] *= 1000.0
    windows[0].jobs["queuing_time"] *= 1000.0
    out = pooled(windows)
    each = [job_times(w.jobs)["jct_p95"] for w in windows]
    half = t_quantile(0.975, 7) * np.std(each, ddof=1) / math.sqrt(8)
    assert out["jct_p95"].value - half < 0  # what the old interval gave
    every = pd.concat([w.jobs for w in windows])
    for key in POOLED_KEYS:
        column = "queuing_time" if key.startswith("queuing") else "jct"
        assert every[column].min() <= out[key].low <= out[key].value
        assert out[key].value <= out[key].high <= every[column].max()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"rows": ["nope"]}, ValueError, r"unknown row\(s\) \['nope'\]"),
        ({"rows": "Pollux"}, ValueError, "non-empty list"),
        ({"rows": ["Pollux", "Pollux"]}, ValueError, "each row once"),
        ({"rows": ["Aryl Basic"]}, ValueError, "need a load series"),
        (
            {"config": {"goodput_jobs": "yes"}},
            ValueError,  # as every non-bool flag
            "goodput_jobs must be True or False",
        ),
    ],
)
def test_bad_rows_stop_before_any_run(small, tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        sim.replicate_paper(small, None, 2, 0, seeds=1, cache=tmp_path, **kwargs)
    assert not any(tmp_path.iterdir())


@pytest.mark.filterwarnings("ignore:.*use 5 or more replications:UserWarning")
def test_the_plan_lists_each_run_and_its_cache_entry(small, tmp_path):
    plan = sim.paper_plan(
        small, None, 2, 0, seeds=2, windows=3, warmup=600.0,
        rows=["Pollux", "Elastic only, aryl"],
    )  # fmt: skip
    entries = plan.entries()
    assert len(entries) == 2 * 2 * 3 and entries["fingerprint"].is_unique
    measured = [i for ids in plan.measured for i in ids]
    assert sorted(measured) == sorted(small["job_id"])  # every job measured once
    out = sim.replicate_paper(
        small, None, 2, 0, seeds=2, windows=3, warmup=600.0,
        rows=["Pollux", "Elastic only, aryl"], config={"pollux_generations": 2},
        cache=tmp_path, engine="serial",
    )  # fmt: skip
    assert list(out.index) == ["Pollux", "Elastic only, aryl"]
    # the generations are part of the run's configuration, hence of its key
    again = sim.paper_plan(
        small, None, 2, 0, seeds=2, windows=3, warmup=600.0,
        rows=["Pollux", "Elastic only, aryl"], config={"pollux_generations": 2},
    )  # fmt: skip
    keys = set(again.entries()["fingerprint"])
    assert keys == {p.name for p in tmp_path.iterdir()}
    assert not keys & set(entries["fingerprint"][entries["row"] == "Pollux"])


def test_the_readme_table_is_the_results_files():
    """benchmarks/README.md's Pollux table is what pollux_table.py makes of the files
    kept in benchmarks/results/pollux/."""
    table = benchmark("pollux_table")
    assert (table.RESULTS / "manifest.csv").exists()
    assert table.readme_section() == table.tables()


def test_the_ratios_docs_model_quotes_are_the_tables():
    """docs/model.md's Pollux / Aryl+TunedJobs ratios (between its pollux-ratios
    markers) are the kept table's."""
    text = (ROOT / "docs" / "model.md").read_text()
    quoted = text.split("<!-- pollux-ratios -->")[1].split("<!-- /pollux-ratios -->")[0]
    pairs = re.findall(r"(\w+ \w+)\s+([\d.]+x)", " ".join(quoted.split()))
    section = benchmark("pollux_table").readme_section()
    assert len(pairs) == 4
    for metric, ratio in pairs:
        line = next(x for x in section.splitlines() if x.startswith(f"| {metric} |"))
        assert line.split("|")[-3].strip() == ratio, (metric, line)


def test_the_causes_script_drops_minimums_only_inside_its_runs(small):
    """benchmarks/pollux_causes.py's variant: inside ``without_minimums`` the trace's
    jobs map onto Pollux jobs without minimums (the rest as mapped), outside as before;
    its demand table names each GPU demand's queuing and share."""
    causes = benchmark("pollux_causes")
    from aryl.traces import pollux_mapping

    jobs = traces.to_jobs(small, seed=0)
    before = pollux_mapping.pollux_profiles(jobs, 0, 4)
    assert before["min_replicas"].notna().any()
    with causes.without_minimums():
        free = pollux_mapping.pollux_profiles(jobs, 0, 4)
    assert free["min_replicas"].isna().all()
    pd.testing.assert_frame_equal(
        free.drop(columns="min_replicas"), before.drop(columns="min_replicas")
    )
    assert pollux_mapping.pollux_profiles(jobs, 0, 4).equals(before)
    times = pd.DataFrame({"id": ["a", "b", "c"], "queuing_time": [10.0, 30.0, 60.0]})
    frame = causes.by_demand(times, {"a": 1, "b": 1, "c": 8})
    assert frame.loc[1, "mean"] == 20.0 and frame.loc[8, "share"] == 0.6
    text = causes.demand_table({"row": frame})
    assert "| 8 | 1 | 60 s | 60% |" in text


def test_the_readme_causes_tables_are_the_kept_runs():
    """benchmarks/README.md's "One cause at a time" output is what pollux_causes.py makes
    of the runs kept in benchmarks/results/ (nothing run: a missing run fails)."""
    causes = benchmark("pollux_causes")
    report = causes.minimums_report([1, 3], run=False)
    assert report in (ROOT / "benchmarks" / "README.md").read_text()


@pytest.mark.filterwarnings("ignore:.*use 5 or more replications:UserWarning")
def test_the_table_shows_one_plan_of_a_shared_results_folder(tmp_path):
    """Plans of other settings (warm-up, days) kept in one folder stay apart: each
    table pools its own runs only, and the whole-trace run serves every warm-up."""
    table = benchmark("pollux_table")
    run = ["run", "--rows", "Elastic only, aryl", "--engine", "serial"]
    run += ["--results", str(tmp_path)]
    for options in (
        ["--days", "2", "--windows", "2", "--warmup", "3600"],
        ["--days", "2", "--windows", "2", "--warmup", "7200"],
        ["--days", "2", "--windows", "1"],
        ["--days", "1", "--windows", "2", "--warmup", "3600"],
    ):
        table.main([*run, *options])
    manifest = pd.read_csv(tmp_path / "manifest.csv")
    assert len(manifest) == 2 + 2 + 1 + 2
    short = table.tables(tmp_path, windows=2, warmup=3600.0, days=2.0)
    longer = table.tables(tmp_path, windows=2, warmup=7200.0, days=2.0)
    for text in (short, longer):
        assert "Cost of these 2 runs" in text
        assert "What windowing costs" in text
    assert "warm-up 3,600 s" in short and "the first 2 days" in short
    for warmup in (3600.0, 7200.0):
        runs = table.load_runs(tmp_path, windows=2, warmup=warmup, days=2.0)
        planned = manifest[
            (manifest["warmup"] == warmup) & (manifest["days"] == 2.0)
        ]  # fmt: skip
        assert sorted(runs["fingerprint"]) == sorted(planned["fingerprint"])
    one_day = table.load_runs(tmp_path, windows=2, warmup=3600.0, days=1.0)
    two_days = table.load_runs(tmp_path, windows=2, warmup=3600.0, days=2.0)
    assert sum(len(r.jobs) for r in one_day["result"]) < sum(
        len(r.jobs) for r in two_days["result"]
    )
    assert table.tables(tmp_path).startswith("No runs of this plan")
