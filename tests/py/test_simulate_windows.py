"""``aryl simulate --windows K`` (issue 46 item 4): one configuration on K time windows of
a trace, each its own cached run given only its slice, results kept per window."""

import concurrent.futures
import json
from concurrent.futures import Future

import numpy as np
import pandas as pd
import pytest

from aryl import sim, traces
from aryl.cli import main
from aryl.studies import sweep_engines
from aryl.studies.windows import time_windows

CLUSTER = ["--training-servers", "6", "--inference-servers", "6"]
WINDOWS = ["--windows", "3", "--warmup", "6h"]
REAL_RUN_POINT = sweep_engines.run_point
TIMING = ["wall_seconds", "cpu_seconds", "peak_memory_bytes", "cached", "saved"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """Three days of a synthetic trace, 600 jobs, and its load, as CSV files."""
    frame, load = traces.synthetic(3, 600, seed=0)
    folder = tmp_path_factory.mktemp("fleet")
    frame.to_csv(folder / "jobs.csv", index=False)
    load.to_csv(folder / "load.csv", index=False)
    return folder / "jobs.csv", folder / "load.csv", frame, load


def windowed(trace, out, *extra):
    jobs, load = trace[0], trace[1]
    argv = ["simulate", str(jobs), "--load", str(load), *CLUSTER, *WINDOWS]
    return main([*argv, "--engine", "serial", "--out", str(out), "-q", *extra])


def counting(monkeypatch, fail=None):
    """Count the runs (their traces' names); raise in the window named ``fail``."""
    real, ran = REAL_RUN_POINT, []

    def run_point(point, *args, **kwargs):
        if point["trace"] == fail:
            raise ValueError(f"{fail} failed")
        ran.append(point["trace"])
        return real(point, *args, **kwargs)

    monkeypatch.setattr(sweep_engines, "run_point", run_point)
    return ran


def test_each_window_equals_simulating_its_slice_by_hand(trace, tmp_path):
    assert windowed(trace, tmp_path / "out") == 0
    frame, load = trace[2], trace[3]
    t = frame["submit_time_s"].to_numpy()
    edges = np.linspace(t[0], t[-1], 4)
    table = pd.read_csv(tmp_path / "out" / "windows.csv")
    assert list(table["window"]) == [1, 2, 3]
    every = []
    for k in range(3):
        # by hand: the jobs from 6 h before the slice to its end, shifted to 0, and
        # the load from the value in force then, through the plain simulate command
        start = t[0] if k == 0 else edges[k] - 6 * 3600
        end = t <= edges[k + 1] if k == 2 else t < edges[k + 1]
        part = frame[(t >= start) & end].copy()
        part["submit_time_s"] -= start
        times = load["time_s"].to_numpy()
        at = np.searchsorted(times, start, "right") - 1
        cut = pd.concat(
            [
                pd.DataFrame({"time_s": [0.0], "load": [load["load"].iloc[at]]}),
                load[times > start].assign(time_s=times[times > start] - start),
            ]
        )
        part.to_csv(tmp_path / f"jobs{k}.csv", index=False)
        cut.to_csv(tmp_path / f"load{k}.csv", index=False)
        by_hand = tmp_path / f"by-hand-{k}"
        argv = ["simulate", str(tmp_path / f"jobs{k}.csv")]
        argv += ["--load", str(tmp_path / f"load{k}.csv"), *CLUSTER]
        assert main([*argv, "--out", str(by_hand), "-q"]) == 0
        hand = pd.read_csv(by_hand / "jobs.csv")
        measured_ids = frame["job_id"][(t >= edges[k]) & end]
        hand = hand[hand["id"].isin(measured_ids)].sort_values("id")
        mine = pd.read_parquet(
            tmp_path / "out" / "windows" / f"window-{k + 1}" / "jobs.parquet"
        )
        assert len(mine) == len(part)  # the warm-up's jobs ran too
        mine = mine[mine["measured"]].sort_values("id")
        assert list(mine["id"]) == list(hand["id"])
        np.testing.assert_array_equal(mine["jct"], hand["jct"])
        np.testing.assert_array_equal(mine["queuing_time"], hand["queuing_time"])
        row = table.iloc[k]
        assert row["jobs_run"] == len(part) and row["jobs_measured"] == len(mine)
        assert row["jobs_finished"] == mine["jct"].notna().sum()
        assert row["jct_mean"] == pytest.approx(mine["jct"].mean(), rel=1e-12)
        summary = json.loads(
            (
                tmp_path / "out" / "windows" / f"window-{k + 1}" / "summary.json"
            ).read_text()
        )
        assert summary["measured"]["jobs_finished"] == row["jobs_finished"]
        every.append(mine)
    assert table["jobs_measured"].sum() == len(frame)  # every job measured once
    pooled = json.loads((tmp_path / "out" / "summary.json").read_text())
    jct = pd.concat(every)["jct"].dropna()
    assert pooled["pooled"]["jct_mean"]["value"] == pytest.approx(jct.mean(), rel=1e-12)
    assert pooled["jobs_measured"] == len(frame)
    assert pooled["jobs_finished"] + pooled["jobs_unfinished"] == len(frame)
    assert (table["peak_memory_bytes"] > 0).all() and (table["cpu_seconds"] > 0).all()


def test_a_rerun_reads_every_window_from_the_cache(
    trace, tmp_path, monkeypatch, capsys
):
    ran = counting(monkeypatch)
    assert windowed(trace, tmp_path / "out", "--quiet") == 0
    assert len(ran) == 3
    first = pd.read_csv(tmp_path / "out" / "windows.csv")
    ran.clear()
    assert windowed(trace, tmp_path / "out") == 0
    assert ran == []
    again = pd.read_csv(tmp_path / "out" / "windows.csv")
    assert again["cached"].all() and not first["cached"].any()
    same = [c for c in first.columns if c not in TIMING]
    pd.testing.assert_frame_equal(again[same], first[same])
    # the run's own wall, CPU and memory come back with it from the cache
    pd.testing.assert_frame_equal(again[TIMING[:3]], first[TIMING[:3]])


def test_a_failed_window_keeps_the_others_and_the_rerun_completes(
    trace, tmp_path, monkeypatch, capsys
):
    ran = counting(monkeypatch, fail="window 2/3")
    out = tmp_path / "out"
    assert windowed(trace, out) == 2
    assert "window 2/3 failed" in capsys.readouterr().err
    assert ran == ["window 1/3"]
    assert len(list((out / "cache").iterdir())) == 1  # window 1, kept
    # nothing written half: no window folder, no table, no pooled summary
    assert sorted(p.name for p in out.iterdir()) == [".aryl-output", "cache"]
    ran = counting(monkeypatch)
    capsys.readouterr()
    assert main(_argv(trace, out)) == 0
    said = capsys.readouterr().out
    assert "Found 1 of 3 windows in the cache" in said
    assert ran == ["window 2/3", "window 3/3"]
    resumed = pd.read_csv(out / "windows.csv")
    assert list(resumed["cached"]) == [True, False, False]
    fresh = tmp_path / "fresh"
    assert windowed(trace, fresh) == 0
    whole = pd.read_csv(fresh / "windows.csv")
    same = [c for c in whole.columns if c not in TIMING]
    pd.testing.assert_frame_equal(resumed[same], whole[same])
    assert sorted(p.name for p in (out / "windows").iterdir()) == [
        "window-1",
        "window-2",
        "window-3",
    ]


def _argv(trace, out):
    argv = ["simulate", str(trace[0]), "--load", str(trace[1]), *CLUSTER, *WINDOWS]
    return [*argv, "--engine", "serial", "--out", str(out)]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--windows", "0"], None),  # argparse: K >= 1
        (["--windows", "2", "--warmup", "-1"], None),
        (
            ["--windows", "2", "--engine", "serial", "--address", "127.0.0.1:1"],
            "--address",
        ),
        (["--engine", "processes"], "--engine: say where the windows"),
        (["--no-cache"], "--no-cache: say where the windows"),
        (["--warmup", "1h"], "--warmup is the warm-up before each window"),
        (["--windows", "2", "--by", "vc"], "--windows and --by"),
        (
            ["--windows", "2", "--pollux-workload", "1"],
            "--windows and --pollux-workload",
        ),
        (["--windows", "2", "--no-cache", "--cache"], "--cache and --no-cache"),
    ],
)
def test_bad_windows_options_stop_before_anything_is_written(
    trace, tmp_path, capsys, extra, message
):
    out = tmp_path / "out"
    argv = ["simulate", str(trace[0]), "--load", str(trace[1]), *CLUSTER]
    argv += ["--out", str(out), *extra]
    if argv[-1] == "--cache":
        argv.append(str(tmp_path / "cache"))
    if message is None:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
    else:
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_python_entry_on_threads_equals_serial_and_refuses_a_trace(trace):
    frame, load = trace[2], trace[3]
    run = {"scenario": "basic", "training_servers": 6, "inference_servers": 6}
    serial = sim.simulate_windows(
        frame, load, run, 3, warmup=6 * 3600, engine="serial", cache=False
    )
    seen = []
    threads = sim.simulate_windows(
        frame,
        load,
        run,
        3,
        warmup=6 * 3600,
        engine="threads",
        workers=2,
        cache=False,
        each=lambda done: seen.append((done.window.index, int(done.measured.sum()))),
    )
    same = [c for c in serial.table.columns if c not in TIMING]
    pd.testing.assert_frame_equal(threads.table[same], serial.table[same])
    assert threads.table["peak_memory_bytes"].isna().all()  # one process, two runs
    assert seen == [(k, n) for k, n in enumerate(serial.table["jobs_measured"])]
    assert serial.pooled["jct_mean"].n == 3
    assert serial.jobs_finished + serial.jobs_unfinished == len(frame)
    windows = time_windows(frame["submit_time_s"], 3, 6 * 3600)
    assert list(serial.table["run_start_s"]) == [w.run_start for w in windows]
    with pytest.raises(ValueError, match="'trace' is not a setting"):
        sim.simulate_windows(frame, load, {**run, "trace": "x"}, 3)


class _Pool:
    """A process pool that runs each call here, keeping what it was sent."""

    made = []

    def __init__(self, workers, mp_context=None, initializer=None, initargs=()):
        self.initargs, self.sent = initargs, []
        if initializer is not None:
            initializer(*initargs)
        _Pool.made.append(self)

    def submit(self, fn, *args):
        self.sent.append(args)
        done = Future()
        done.set_result(fn(*args))
        return done

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_a_process_pool_sends_each_window_its_own_slice_only(trace, monkeypatch):
    """Several traces (windows) go each with its run, none through the workers'
    initializer (which would give every worker the whole trace); one trace (a
    sweep on it) once per worker, as before."""
    frame, load = trace[2], trace[3]
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _Pool)
    _Pool.made.clear()
    run = {"scenario": "basic", "training_servers": 6, "inference_servers": 6}
    out = sim.simulate_windows(
        frame, load, run, 3, engine="processes", workers=2, cache=False
    )
    (pool,) = _Pool.made
    assert pool.initargs == ()
    sent = [len(args[1][0]) for args in pool.sent]  # (point, (jobs, load), check)
    assert sent == list(out.table["jobs_run"])  # each run its window's jobs
    assert all(size < len(frame) for size in sent)
    _Pool.made.clear()
    sim.sweep(
        {**run, "trace": "t"},
        {"seed": [0, 1]},
        traces={"t": (frame, load)},
        engine="processes",
        workers=2,
        cache=False,
        progress=False,
    )
    (pool,) = _Pool.made
    assert list(pool.initargs[0]) == ["t"]
    assert [args[1] for args in pool.sent] == ["t", "t"]  # the trace's name only
