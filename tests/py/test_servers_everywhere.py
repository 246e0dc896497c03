"""A cluster from a file through every door (issue 45, round 2): replicated compares
(``--seeds``/``--windows``, ``replicate_paper(servers=...)``), sweeps (``aryl sweep
--servers``, the ``servers`` sweep parameter, whose content is in every run's cache
key) and ``aryl live --servers``; bad input stops before anything is written."""

import json

import pytest

import aryl.live as live_package
import aryl.live.ray_backend as ray_backend
from aryl import Server, sim, traces
from aryl.cli import live as live_cli
from aryl.cli import main
from aryl.live import FakeBackend, VirtualClock

QUIET = ["--quiet", "--plot-format", "png"]
ROWS = ["--rows", "Baseline (FIFO)", "--rows", "Aryl Basic"]


def server_csv(path, training=5, inference=2, training_gpu="V100"):
    """aryl's server CSV: ``training`` 8-GPU servers of ``training_gpu``, then
    ``inference`` 8-GPU T4 servers."""
    rows = [f"t{i},training,8,{training_gpu}" for i in range(training)]
    rows += [f"i{i},inference,8,T4" for i in range(inference)]
    path.write_text("id,pool,gpus,gpu_type\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def trace():
    """200 jobs of the ITP trace from its 3,000th, re-based to start at 0, its load."""
    frame, load = traces.load_default()
    part = frame.iloc[3000:3200].copy()
    part["submit_time_s"] -= part["submit_time_s"].min()
    return part, load


@pytest.fixture
def files(tmp_path, trace):
    """(jobs.csv, load.csv, servers.csv) of ``trace``."""
    frame, load = trace
    jobs, loads = tmp_path / "jobs.csv", tmp_path / "load.csv"
    frame[["job_id", "submit_time_s", "num_gpus", "duration_s", "gpu_type"]].to_csv(
        jobs, index=False
    )
    load.to_csv(loads, index=False)
    return jobs, loads, server_csv(tmp_path / "servers.csv")


# ---- replicated compares ----------------------------------------------------------------


def test_replicate_paper_runs_every_row_on_the_server_list(trace, tmp_path):
    frame, load = trace
    servers = traces.read_servers(server_csv(tmp_path / "s.csv"))
    rows = ["Baseline (FIFO)", "Aryl Basic"]
    with pytest.warns(UserWarning, match="n = 2 only"):  # a test's two seeds
        out = sim.replicate_paper(
            frame, load, seeds=2, servers=servers, rows=rows, cache=tmp_path
        )
    assert len(out.runs) == 4
    for result in out.runs.values():
        cluster = result.provenance.cluster
        assert cluster["training_servers"] == 5 and cluster["training_gpus"] == 40
        assert cluster["inference_servers"] == 2 and cluster["inference_gpus"] == 16


def test_a_runs_cache_key_covers_the_server_lists_content(trace, tmp_path):
    frame, load = trace

    def keys(servers):
        plan = sim.paper_plan(
            frame, load, seeds=1, servers=servers, rows=["Aryl Basic"]
        )
        return plan.entries()["fingerprint"].tolist()

    servers = traces.read_servers(server_csv(tmp_path / "s.csv"))
    as_dicts = [{"id": s.id, "pool": s.pool, "gpus": s.gpus} for s in servers]
    assert keys(servers) == keys(as_dicts)  # the same content, however given
    other = [*servers[:-1], Server("i1", "inference", 4)]  # one server's GPUs
    assert keys(other) != keys(servers)
    typed = [Server(s.id, s.pool, s.gpus, "A10") for s in servers]
    assert keys(typed) != keys(servers)
    counts = sim.paper_plan(frame, load, 5, 2, seeds=1, rows=["Aryl Basic"])
    assert counts.entries()["fingerprint"].tolist() != keys(servers)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"training_servers": 3}, "servers gives the whole cluster"),
        ({"servers": None}, "give the cluster"),
        ({"servers": []}, "the server list is empty"),
        ({"servers": "nodes.csv"}, "must be a list of records"),
        ({"pollux_rows": True}, "does not take a server list"),
    ],
)
def test_a_bad_server_list_stops_before_any_run(trace, tmp_path, kwargs, message):
    frame, load = trace
    given = {"servers": [Server("t0"), Server("i0", "inference")], **kwargs}
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match=message):
        sim.replicate_paper(frame, load, seeds=1, cache=cache, **given)
    assert not cache.exists()  # nothing ran, nothing cached


def test_compare_with_seeds_and_windows_takes_a_server_file(files, tmp_path, capsys):
    jobs, load, servers = files
    out = tmp_path / "out"
    argv = ["compare", str(jobs), "--load", str(load), "--servers", str(servers)]
    argv += [*QUIET, *ROWS, "--seeds", "2", "--windows", "2", "--warmup", "3600"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    samples = json.loads((out / "compare.json").read_text())
    assert samples["intervals_over"]  # a replicated answer
    run = sim.load(next((out / "cache").iterdir()))
    assert run.provenance.cluster["training_servers"] == 5
    assert run.provenance.inputs["sweep"]["servers"].startswith("7 servers ")


def test_compare_with_seeds_refuses_a_bad_server_file_and_writes_nothing(
    files, tmp_path, capsys
):
    jobs, load, servers = files
    servers.write_text("id,pool,gpus\nt0,training,8\nt1,training,zero\n")
    out = tmp_path / "out"
    argv = ["compare", str(jobs), "--load", str(load), "--servers", str(servers)]
    assert main([*argv, *QUIET, "--seeds", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "servers.csv" in err and "gpus" in err, err
    assert [p.name for p in out.iterdir()] == [".aryl-output"]  # its mark alone


def test_the_pollux_rows_say_they_take_server_counts(files, tmp_path, capsys):
    jobs, load, servers = files
    argv = ["compare", str(jobs), "--servers", str(servers), "--pollux-rows"]
    assert main([*argv, *QUIET, "--seeds", "2", "--out", str(tmp_path / "o")]) == 2
    assert "--pollux-rows runs the Pollux rows" in capsys.readouterr().err


# ---- sweeps -------------------------------------------------------------------------------


def test_a_sweep_runs_on_a_server_list(trace, tmp_path):
    frame, load = trace
    servers = traces.read_servers(server_csv(tmp_path / "s.csv"))
    table = sim.sweep(
        {"servers": servers, "trace": "t"},
        {"headroom": [0.0, 0.5]},
        traces={"t": (frame, load)},
        engine="serial",
        cache=tmp_path / "cache",
        progress=False,
    )
    assert table["training_servers"].tolist() == [5, 5]
    assert table["inference_servers"].tolist() == [2, 2]
    assert table["servers"].str.startswith("7 servers ").all()
    again = sim.sweep(
        {"servers": servers, "trace": "t"},
        {"headroom": [0.0, 0.5]},
        traces={"t": (frame, load)},
        engine="serial",
        cache=tmp_path / "cache",
        progress=False,
    )
    assert again["cached"].all()


@pytest.mark.parametrize("name", ["training_servers", "inference_servers"])
def test_a_grid_over_server_counts_with_a_server_list_is_refused(name):
    with pytest.raises(ValueError, match=f"cannot also set {name}"):
        sim.sweep({"servers": [Server("t0")]}, {name: [1, 2]}, cache=False)


def test_aryl_sweep_takes_a_server_file(files, tmp_path, capsys):
    jobs, load, servers = files
    out = tmp_path / "out"
    argv = ["sweep", str(jobs), "--load", str(load), "--servers", str(servers)]
    argv += ["--grid", "headroom=0,0.5", "--engine", "serial", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    written = (out / "sweep.csv").read_text()
    assert "7 servers " in written


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--grid", "training_servers=1,2"], "cannot also set training_servers"),
        (["--set", "inference_servers=1"], "cannot also set inference_servers"),
    ],
)
def test_aryl_sweep_refuses_server_counts_with_a_server_file(
    files, tmp_path, capsys, more, message
):
    jobs, load, servers = files
    out = tmp_path / "out"
    argv = ["sweep", str(jobs), "--servers", str(servers), *more, "--quiet"]
    assert main([*argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


# ---- aryl live ----------------------------------------------------------------------------


class Backend(FakeBackend):
    """A FakeBackend where ``aryl live`` builds a RayBackend."""

    def __init__(self, checkpoints, compression=1.0, provider=None, run=None, **kw):
        super().__init__(checkpoints)

    def start_overhead(self):
        return 0.0


class Started:
    """``_cluster`` without Ray: records the servers it would start."""

    servers: list = []

    def __init__(self, args, servers, log):
        Started.servers = list(servers)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        pass


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(ray_backend, "RayBackend", Backend)
    monkeypatch.setattr(live_cli, "_cluster", Started)
    monkeypatch.setattr(live_package, "Clock", lambda compression: VirtualClock())


def small_jobs(tmp_path):
    jobs = tmp_path / "jobs.csv"
    rows = [f"j{i},{100 * i},2,{1200 + 300 * i}," for i in range(4)]
    jobs.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\n")
    with jobs.open("a") as f:
        f.write("\n".join(rows) + "\n")
    return jobs


def test_aryl_live_runs_on_the_servers_of_a_file(tmp_path, fake, capsys):
    servers = server_csv(tmp_path / "servers.csv", 2, 1)
    out = tmp_path / "out"
    argv = ["live", str(small_jobs(tmp_path)), "--servers", str(servers)]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
    assert [s.id for s in Started.servers] == ["t0", "t1", "i0"]
    for run in ("live", "simulated"):
        cluster = sim.load(out / run).provenance.cluster
        assert cluster["training_servers"] == 2 and cluster["inference_servers"] == 1


@pytest.mark.parametrize(
    ("training", "inference", "message"),
    [(30, 3, "33 servers would start"), (0, 2, "needs a training server")],
)
def test_aryl_live_refuses_a_file_it_cannot_start_and_writes_nothing(
    tmp_path, fake, capsys, training, inference, message
):
    servers = server_csv(tmp_path / "servers.csv", training, inference)
    out = tmp_path / "out"
    argv = ["live", str(small_jobs(tmp_path)), "--servers", str(servers)]
    assert main([*argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not (out / "journal.jsonl").exists() and not (out / "checkpoints").exists()


def test_aryl_live_takes_one_cluster(tmp_path, capsys):
    servers = server_csv(tmp_path / "servers.csv")
    argv = ["live", str(small_jobs(tmp_path)), "--servers", str(servers)]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--local-cluster", "1+1"])
    assert stop.value.code == 2 and "not allowed with" in capsys.readouterr().err
