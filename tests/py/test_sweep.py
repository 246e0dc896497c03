"""Sweeps: grid expansion, equality with sequential runs, the cache, Ray, `aryl sweep`."""

import json
import shutil
import subprocess
import sys
import tempfile

import pandas as pd
import pytest

import aryl
from aryl import sim, traces
from aryl.cli import main
from aryl.loopback import is_loopback
from aryl.studies import sweep_engines
from aryl.studies.sweep import grid_points, resolve, run_point

SMALL = {"first_jobs": 200, "training_servers": 8, "inference_servers": 8}
GRID = {"inference_servers": [0, 8], "reclaim": ["aryl", "scf"]}


@pytest.fixture(scope="module")
def trace():
    jobs, load = traces.load_default()
    return {"itp": (jobs.iloc[:400], load)}


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray on 2 CPUs as a sweep starts one (on the loopback, without dashboard),
    logging to a temporary folder; shut down after."""
    ray = pytest.importorskip("ray")
    folder = tempfile.mkdtemp(prefix="aryl-ray-")
    sweep_engines.start_local_ray(2, _temp_dir=folder)
    yield ray
    ray.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


def sequential(trace, base, grid):
    """The sweep's rows, run one by one with simulate() as the module docstring describes."""
    jobs, load = trace["itp"]
    rows = []
    for point in grid_points(base, grid):
        p = resolve(point)
        records = traces.to_jobs(
            jobs.iloc[: p["first_jobs"]],
            any_type_share=p["any_type_share"],
            seed=p["seed"],
        )
        records = sim.scenario(records, p["scenario"], seed=p["seed"])
        result = sim.simulate(
            records,
            sim.Cluster(p["training_servers"], p["inference_servers"]),
            policy=p["policy"],
            reclaim=p["reclaim"],
            inference_load=load,
            config=p["config"],
            seed=p["seed"],
        ).check()
        rows.append(result.summary())
    return pd.DataFrame(rows)[list(sim.SUMMARY_KEYS)]


def test_grid_points_and_resolution():
    points = grid_points(
        {"seed": 1}, {"headroom": [0.0, 0.2], "policy": ["aryl", "fifo", "afs"]}
    )
    assert len(points) == 6 and points[1] == {
        "seed": 1,
        "headroom": 0.0,
        "policy": "fifo",
    }
    p = resolve({"scenario": "baseline"})
    assert (
        p["policy"] == "fifo"
        and p["config"]["loaning"] is False
        and p["inference_servers"] == 64
    )
    assert resolve({"headroom": 0.0}) == resolve({})  # explicit defaults: the same run
    assert resolve({"headroom": 0, "elastic_gpu_share": 1})["config"]["headroom"] == 0.0
    assert resolve({"elastic_gpu_share": 1})["elastic_gpu_share"] == 1.0
    assert resolve({"headroom": 0}) == resolve({})


@pytest.mark.parametrize(
    "base, grid, message",
    [
        ({"nodes": 3}, {}, r"unknown sweep parameter\(s\) \['nodes'\]"),
        ({"servers": 3}, {}, "servers: give a list of aryl.Server records"),
        ({}, {"headroom": []}, "non-empty list"),
        ({}, {"policy": "aryl"}, "non-empty list"),
        ({"policy": "tetris"}, {}, "unknown policy 'tetris'"),
        ({"reclaim": "exact"}, {}, "unknown reclaim policy"),
        ({"scenario": "huge"}, {}, "unknown scenario"),
        ({"training_servers": 2.5}, {}, "training_servers must be an integer"),
        ({"first_jobs": 0}, {}, "first_jobs must be"),
        ({"placement": "tetris"}, {}, "unknown placement"),
        ({"trace": "philly"}, {}, r"unknown trace\(s\) \['philly'\]"),
    ],
)
def test_bad_sweeps_fail_before_running(base, grid, message):
    with pytest.raises(ValueError, match=message):
        sim.sweep(base, grid, traces={}, engine="serial", cache=False)


def test_rows_equal_sequential_runs_and_the_cache_returns_them(trace, tmp_path):
    base = {**SMALL, "trace": "itp"}
    first = sim.sweep(
        base,
        GRID,
        traces=trace,
        engine="threads",
        workers=2,
        cache=tmp_path,
        progress=False,
    )
    assert (
        list(first.columns[:2]) == ["inference_servers", "reclaim"] and len(first) == 4
    )
    assert not first["cached"].any()
    pd.testing.assert_frame_equal(
        first[list(sim.SUMMARY_KEYS)], sequential(trace, base, GRID), check_dtype=False
    )
    again = sim.sweep(
        base, GRID, traces=trace, engine="serial", cache=tmp_path, progress=False
    )
    assert again["cached"].all()
    same = [c for c in first.columns if c not in ("cached", "seconds")]
    pd.testing.assert_frame_equal(again[same], first[same])
    saved = sim.load(first.loc[3, "saved"])
    assert saved.summary()["jct_mean"] == first.loc[3, "jct_mean"]
    assert saved.provenance.inputs == {
        "trace": "itp",
        "sweep": {**base, "inference_servers": 8, "reclaim": "scf"},
    }


def test_an_interrupted_sweep_resumes(trace, tmp_path):
    base = {**SMALL, "trace": "itp"}
    sim.sweep(
        base,
        {"inference_servers": [0]},
        traces=trace,
        engine="serial",
        cache=tmp_path,
        progress=False,
    )
    more = sim.sweep(
        base,
        {"inference_servers": [0, 8]},
        traces=trace,
        engine="serial",
        cache=tmp_path,
        progress=False,
    )
    assert list(more["cached"]) == [True, False]


def test_the_cache_key_is_the_content_not_the_name(trace, tmp_path):
    base = {**SMALL, "inference_servers": 0}
    a = sim.sweep(
        {**base, "trace": "a"},
        {},
        traces={"a": trace["itp"]},
        engine="serial",
        cache=tmp_path,
    )
    b = sim.sweep(
        {**base, "trace": "b"},
        {},
        traces={"b": trace["itp"]},
        engine="serial",
        cache=tmp_path,
    )
    assert b["cached"].all() and a["fingerprint"].equals(b["fingerprint"])
    jobs, load = trace["itp"]
    other = {"a": (jobs.assign(duration_s=jobs["duration_s"] + 1), load)}
    c = sim.sweep(
        {**base, "trace": "a"}, {}, traces=other, engine="serial", cache=tmp_path
    )
    assert not c["cached"].any()


def test_sweep_over_traces_and_config_fields(trace):
    jobs, load = trace["itp"]
    table = sim.sweep(
        {**SMALL},
        {"trace": ["itp", "no load"], "lend_hold": [0.0, 3600.0]},
        traces={**trace, "no load": (jobs, None)},
        engine="threads",
        cache=False,
    )
    assert list(table["trace"]) == ["itp", "itp", "no load", "no load"]
    assert list(table["lend_hold"]) == [0.0, 3600.0, 0.0, 3600.0]
    assert (table.loc[table["trace"] == "no load", "preemption_ratio"] == 0).all()
    assert table["saved"].isna().all()


@pytest.mark.ray
def test_a_small_sweep_on_a_local_ray_equals_sequential_runs(
    local_ray, trace, tmp_path
):
    base = {**SMALL, "trace": "itp"}
    table = sim.sweep(
        base, GRID, traces=trace, engine="ray", cache=tmp_path, progress=False
    )
    assert len(table) == 4 and not table["cached"].any()
    pd.testing.assert_frame_equal(
        table[list(sim.SUMMARY_KEYS)], sequential(trace, base, GRID), check_dtype=False
    )
    assert sim.sweep(base, GRID, traces=trace, engine="ray", cache=tmp_path)[
        "cached"
    ].all()


@pytest.mark.ray
def test_a_failing_run_on_ray_raises_its_own_one_line_error(local_ray):
    # A job of 4 servers on a 2-server cluster: refused inside the run, on a worker.
    wide = {"wide": ([aryl.Job("w", 8, 4, 4, 60)], None)}
    with pytest.raises(ValueError) as error:
        sim.sweep(
            {"trace": "wide", "training_servers": 2, "inference_servers": 0},
            {"seed": [0, 1]},
            traces=wide,
            engine="ray",
            cache=False,
            progress=False,
        )
    assert type(error.value) is ValueError  # not Ray's wrapper
    assert "'w'" in str(error.value) and "\n" not in str(error.value)
    assert "Traceback" not in str(error.value) and "\x1b[" not in str(error.value)


def test_bad_config_values_are_refused_before_any_run(tmp_path):
    with pytest.raises(ValueError, match="headroom"):
        sim.sweep(
            {"first_jobs": 50, "training_servers": 4},
            {"headroom": [0.0, -1.0]},
            cache=tmp_path,
            engine="serial",
            progress=False,
        )
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was cached


@pytest.mark.parametrize(
    "options, given",
    [
        ([], {}),
        (  # beyond the defaults: the recipe (aryl.engine.runs) reads each of them
            "--scenario advanced --seed 3 --any-type-share 0.5 --headroom 0.1".split(),
            {"scenario": "advanced", "seed": 3, "any_type_share": 0.5, "headroom": 0.1},
        ),
    ],
)
def test_run_point_is_the_cli_simulate(tmp_path, capsys, trace, options, given):
    jobs, load = trace["itp"]
    jobs.iloc[:200].to_csv(tmp_path / "jobs.csv", index=False)
    load.to_csv(tmp_path / "load.csv", index=False)
    assert (
        main(
            [
                "simulate",
                str(tmp_path / "jobs.csv"),
                "--load",
                str(tmp_path / "load.csv"),
                "--training-servers",
                "8",
                "--inference-servers",
                "8",
                "--out",
                str(tmp_path / "o"),
                *options,
            ]
        )
        == 0
    )
    capsys.readouterr()
    cli = json.loads((tmp_path / "o" / "summary.json").read_text())
    api = run_point({**SMALL, **given, "trace": "itp"}, trace["itp"]).summary()
    assert {k: cli[k] for k in api} == api


def test_aryl_sweep_prints_one_table_and_writes_parquet(tmp_path, capsys, trace):
    jobs, load = trace["itp"]
    jobs.iloc[:200].to_csv(tmp_path / "jobs.csv", index=False)
    load.to_csv(tmp_path / "load.csv", index=False)
    args = [
        "sweep",
        str(tmp_path / "jobs.csv"),
        "--load",
        str(tmp_path / "load.csv"),
        "--training-servers",
        "8",
        "--grid",
        "inference_servers=0,8",
        "--grid",
        "headroom=0,0.25",
        "--set",
        "scenario=basic",
        "--engine",
        "threads",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert (
        "inference_servers" in printed
        and "headroom" in printed
        and "4 runs (0 from the cache)" in printed
    )
    table = pd.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert len(table) == 4 and list(table["headroom"]) == [0, 0.25, 0, 0.25]
    assert (table["trace"] == "jobs.csv+load.csv").all() and (
        table["aryl_version"] != ""
    ).all()
    record = json.loads(
        table.attrs["aryl"]
    )  # the command's inputs, parameters, seed, version
    assert (
        record["command"] == "aryl sweep"
        and str(tmp_path / "jobs.csv") in record["inputs"]
    )
    assert record["seed"] == 0 and record["parameters"]["grid"] == [
        "inference_servers=0,8",
        "headroom=0,0.25",
    ]
    assert main(args) == 0
    assert "4 runs (4 from the cache)" in capsys.readouterr().out


def test_aryl_sweep_rejects_a_bad_grid(capsys):
    assert main(["sweep", "--grid", "inference_servers"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert main(["sweep", "--grid", "speed=1,2"]) == 2
    assert "unknown sweep parameter" in capsys.readouterr().err


def test_cli_help_names_every_sweep_parameter():
    from aryl.cli.sweep_command import SWEEP_PARAMETERS

    assert SWEEP_PARAMETERS.split(", ") == list(sim.PARAMETERS)


def test_progress_bar_has_an_eta():
    import io

    from aryl.studies.sweep import SweepProgress

    out = io.StringIO()
    bar = SweepProgress(4, 1, True, out)
    bar.step()
    bar.step()
    bar.step()
    text = out.getvalue()
    assert (
        "1/4 runs" in text
        and "ETA ?" in text
        and "4/4 runs" in text
        and "ETA 0:00" in text
    )


def test_without_ray_auto_falls_back_to_threads(trace, monkeypatch):
    base = {**SMALL, "trace": "itp", "inference_servers": 8}
    grid = {"reclaim": ["aryl", "random"]}
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ImportError, match=r"pip install 'aryl\[ray\]'"):
        sim.sweep(base, grid, traces=trace, engine="ray", cache=False)
    with pytest.warns(UserWarning, match=r"Ray is not installed .* local threads"):
        table = sim.sweep(
            base, grid, traces=trace, engine="auto", workers=2, cache=False
        )
    pd.testing.assert_frame_equal(
        table[list(sim.SUMMARY_KEYS)], sequential(trace, base, grid), check_dtype=False
    )


# Run in a process of its own: it signals itself, and beside the pytest process's
# other threads (a live Ray's, from the tests above) a stray Ctrl-C would end pytest.
CTRL_C_IN_SHUTDOWN = """
import os, signal, sys
import aryl.sim as sim
from aryl.cli import main

class FakeRay:
    up, deaf = True, False

    def is_initialized(self):
        return self.up

    def shutdown(self):
        signal.raise_signal(signal.SIGINT)  # another Ctrl-C meanwhile: ignored
        self.deaf = True  # (it would have raised KeyboardInterrupt above)
        self.up = False

def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

fake = sys.modules["ray"] = FakeRay()
sim.sweep = interrupted
code = main(["sweep", "--first-jobs", "10", "--out", sys.argv[1], "-q"])
print(code, fake.up, fake.deaf, signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
"""


def test_ctrl_c_in_a_sweep_shuts_ray_down_deaf_to_more(tmp_path):
    # The audit saw a crash (-11) when Ctrl-C came while a local Ray was starting.
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_SHUTDOWN, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # 130, Ray shut down, the Ctrl-C during it ignored, and so to the exit
    assert done.stdout.split() == ["130", "False", "True", "True"], done.stderr
    assert "sweep interrupted" in done.stderr


def test_an_interrupted_sweep_ends_its_progress_line(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_engines, "run_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sim.sweep({"first_jobs": 5}, engine="serial", cache=False, progress=True)
    bar = capsys.readouterr().err
    assert bar.startswith("\rsweep    0/1 runs") and bar.endswith("\n"), repr(bar)


def test_a_script_without_a_main_guard_sweeps_without_ray(tmp_path):
    # The audit's N9: auto fell back to a spawned process pool, which re-runs an
    # unguarded script in every worker and fails there.
    script = tmp_path / "s.py"
    script.write_text(
        "import sys\n"
        "sys.modules['ray'] = None  # as if Ray were not installed\n"
        "import aryl.sim as sim\n"
        "t = sim.sweep({'first_jobs': 100, 'training_servers': 4}, {'seed': [0, 1]},\n"
        "              cache=False, progress=False)\n"
        "print(len(t))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2" and "local threads" in done.stderr


def test_loopback_addresses_are_told_apart():
    loopback = ["127.0.0.1:6379", "ray://127.0.0.1:10001", "localhost:6390"]
    loopback += ["[::1]:6379", "127.0.0.2:6379"]
    for address in loopback:
        assert is_loopback(address), address
    for address in [None, "", "auto", "192.0.2.2:6379", "ray://head:10001", "head"]:
        assert not is_loopback(address), address


def test_ray_clients_server_failing_to_start_is_tried_again_then_named(
    monkeypatch, capsys
):
    """Ray's client server now and then fails to start a client's server (it dies at
    once or is not up in time on a loaded head): each connection through ``ray://``
    is tried CLIENT_ATTEMPTS times, saying so; then the error keeps the first line of
    the server's traceback and its last, which says what failed. A refusal (a
    version mismatch) is not tried again, nor is a direct address."""
    ray = pytest.importorskip("ray")
    server_failed = ConnectionAbortedError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        '  File "proxier.py", line 780\nRuntimeError: Proxy failed to Connect to '
        "backend! Check the logs\n"
    )
    state = {"calls": 0, "fail": 99, "error": server_failed}

    def init(**_):
        state["calls"] += 1
        if state["calls"] <= state["fail"]:
            raise state["error"]

    monkeypatch.setattr(ray, "is_initialized", lambda: state["calls"] > state["fail"])
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(ConnectionError) as caught:
        sweep_engines.connect_ray("ray://head:10001", 2)
    assert state["calls"] == sweep_engines.CLIENT_ATTEMPTS == 3
    message = str(caught.value)
    assert "failure from server: ... RuntimeError: Proxy failed" in message
    assert "\n" not in message and "ray://head:10001" in message
    assert capsys.readouterr().err.count("trying again") == 2

    state.update(calls=0, fail=2)  # up on the third attempt
    assert (
        sweep_engines.connect_ray("ray://head:10001", 2) is ray and state["calls"] == 3
    )

    for address, error in [
        ("ray://head:10001", ConnectionAbortedError("Version mismatch: 2.9 vs 2.60")),
        ("head:6379", server_failed),
    ]:
        state.update(calls=0, fail=99, error=error)
        with pytest.raises(ConnectionError):
            sweep_engines.connect_ray(address, 2)
        assert state["calls"] == 1
