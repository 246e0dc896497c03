"""``aryl live`` on the in-process backend (issue 44): nothing of OUT is deleted before
the inputs and the cluster are checked, nor a run that did not end without
``--overwrite``; one command per OUT (a lock); checkpoints belong to a run and their
names cannot collide; a local cluster is bounded; the model options and policy specs
of ``aryl simulate`` run live and in the simulated run beside it; progress, ledger and
the start-latency warning. The Ray side (SIGTERM, Ray's output) is in test_live_ray.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aryl.live as live_package
import aryl.live.ray_backend as ray_backend
from aryl import Job, Server, sim
from aryl.cli import live as live_cli
from aryl.cli import main
from aryl.cli.parser import _parser
from aryl.live import Controller, FakeBackend, JobAgent, VirtualClock
from aryl.live.jobs import EmulatedJob, checkpoint_name
from aryl.sim import Cluster, Config

ROOT = Path(__file__).resolve().parents[2]
JOBS_CSV = (
    "job_id,submit_time_s,num_gpus,duration_s,gpu_type\n"
    + "\n".join(f"j{i},{100 * i},8,{3000 + 500 * i}," for i in range(6))
    + "\n"
)
LOAD_CSV = "time_s,load\n0,0\n3000,0.9\n"


class Backend(FakeBackend):
    """A FakeBackend where ``aryl live`` builds a RayBackend."""

    made: list = []

    def __init__(self, checkpoints, compression=1.0, provider=None, run=None, **kw):
        super().__init__(checkpoints)
        self.run = run
        Backend.made.append(self)

    def start_overhead(self):
        return 0.0


class NoCluster:
    """``--local-cluster`` without Ray: nothing to start."""

    def __init__(self, args, servers, log):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        pass


@pytest.fixture
def fake(monkeypatch):
    Backend.made = []
    monkeypatch.setattr(ray_backend, "RayBackend", Backend)
    monkeypatch.setattr(live_cli, "_cluster", NoCluster)
    monkeypatch.setattr(live_package, "Clock", lambda compression: VirtualClock())
    return Backend.made


@pytest.fixture
def trace(tmp_path):
    jobs, load = tmp_path / "jobs.csv", tmp_path / "load.csv"
    jobs.write_text(JOBS_CSV)
    load.write_text(LOAD_CSV)
    return jobs, load


def aryl_live(trace, out, *more):
    jobs, load = trace
    argv = ["live", str(jobs), "--load", str(load), "--local-cluster", "2+2"]
    return main(argv + ["--out", str(out), *more])


def unfinished_run(out):
    """OUT as a stopped run leaves it: a journal without ``end``, checkpoints."""
    (out / "checkpoints").mkdir(parents=True)
    (out / ".aryl-output").write_text("aryl's\n")
    (out / "checkpoints" / "j1.ckpt").write_text('{"done": 0.5}')
    journal = out / "journal.jsonl"
    journal.write_text('{"event": "header", "t": 0}\n{"event": "epoch", "t": 300}\n')
    return journal


# ---- R5-04: check first, never delete a resumable run, one command per OUT --------------


def test_a_bad_trace_leaves_the_earlier_run_as_it_was(tmp_path, fake, capsys):
    out = tmp_path / "out"
    journal = unfinished_run(out)
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\nj0,soon,8,60,\n")
    argv = ["live", str(bad), "--local-cluster", "1+0", "--out", str(out)]
    assert main(argv + ["--overwrite"]) == 2
    assert "not a number" in capsys.readouterr().err
    assert journal.is_file() and (out / "checkpoints" / "j1.ckpt").is_file()


def test_a_run_that_did_not_end_is_replaced_only_with_overwrite(
    tmp_path, trace, fake, capsys
):
    out = tmp_path / "out"
    journal = unfinished_run(out)
    before = journal.read_text()
    assert aryl_live(trace, out) == 2
    err = capsys.readouterr().err
    assert "did not end" in err and "--resume" in err and "--overwrite" in err
    assert journal.read_text() == before
    assert (out / "checkpoints" / "j1.ckpt").is_file()
    assert not fake, "refused before the cluster was reached"

    assert aryl_live(trace, out, "--overwrite") == 0
    assert "replaced the earlier run" in capsys.readouterr().err
    assert not (out / "checkpoints" / "j1.ckpt").exists()
    assert json.loads(journal.read_text().splitlines()[-1])["event"] == "end"
    # a run that ended is replaced by the next without asking (as simulate's OUT)
    assert aryl_live(trace, out) == 0
    assert not (out / live_cli.LOCK).exists(), "the lock goes with the command"


def test_an_unreachable_cluster_leaves_the_earlier_run(tmp_path, trace, monkeypatch):
    out = tmp_path / "out"
    journal = unfinished_run(out)

    class Unreachable(NoCluster):
        def __enter__(self):
            raise ConnectionError("no Ray cluster at 10.0.0.1:6379")

    monkeypatch.setattr(live_cli, "_cluster", Unreachable)
    assert aryl_live(trace, out, "--overwrite") == 2
    assert journal.is_file() and (out / "checkpoints" / "j1.ckpt").is_file()


def test_a_second_command_on_a_running_runs_out_is_refused(
    tmp_path, trace, fake, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".aryl-output").write_text("aryl's\n")
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = out / live_cli.LOCK
        lock.write_text(f"{running.pid} {os.uname().nodename}\n")
        with pytest.raises(ValueError, match=f"PID {running.pid}"):
            with live_cli.OutLock(lock):
                pass
        assert aryl_live(trace, out) == 2
        assert f"another aryl live (PID {running.pid}" in capsys.readouterr().err
        assert lock.read_text().split()[0] == str(running.pid)
    finally:
        running.kill()
        running.wait()
    # its process gone, the lock is stale: taken over
    assert aryl_live(trace, out) == 0
    assert not lock.exists()


# ---- R5-06: a new run never restores another run's checkpoints -------------------------


def fake_run(tmp_path, backend, name):
    jobs = [
        Job(f"j{i}", 8, 1, 1, 3000 + 500 * i, submit_time=100 * i) for i in range(8)
    ]
    return Controller(
        jobs,
        Cluster(2, 2, inference_gpu="V100"),
        backend,
        "aryl",
        load=[(0.0, 0.0), (3000.0, 0.9)],
        config=Config(lend_hold=0.0),
        clock=VirtualClock(),
        journal=tmp_path / f"{name}.jsonl",
    ).run()


def test_a_new_run_does_not_restore_an_earlier_runs_checkpoints(tmp_path):
    shared = str(tmp_path / "shared")
    first = fake_run(tmp_path, FakeBackend(shared), "first").check()
    assert first.jobs["preemptions"].sum() > 0, "checkpoints were written and read"
    second = fake_run(tmp_path, FakeBackend(shared), "second").check()
    assert second.summary()["jct_mean"] == pytest.approx(first.summary()["jct_mean"])


def test_an_agent_restores_only_its_runs_checkpoint(tmp_path):
    job = Job("j", 8, 1, 1, 1000.0)
    server = {"s": Server("s", "training", 8)}
    workers = [sim_worker()]
    old = JobAgent("j", EmulatedJob(job, {"V100": 1.0}), str(tmp_path), run="old")
    old.resize(workers, server)
    old.step(500.0)
    old.resize([], server)  # saved at 0.5
    same = JobAgent("j", EmulatedJob(job, {"V100": 1.0}), str(tmp_path), run="old")
    same.resize(workers, server)
    assert same.program.done == pytest.approx(0.5), "its own run's: restored"
    new = JobAgent("j", EmulatedJob(job, {"V100": 1.0}), str(tmp_path), run="new")
    new.resize(workers, server)
    assert new.program.done == 0.0
    with pytest.raises(ValueError, match="run id"):
        JobAgent("j", EmulatedJob(job, {}), str(tmp_path), run="../x")


def sim_worker():
    from aryl import Worker

    return Worker("j", "s", 8, False)


def test_each_command_run_has_its_own_run_id(tmp_path, trace, fake):
    out = tmp_path / "out"
    assert aryl_live(trace, out) == 0
    first = (out / live_cli.RUN).read_text().strip()
    assert fake[-1].run == first
    assert aryl_live(trace, out) == 0
    second = (out / live_cli.RUN).read_text().strip()
    assert second != first and fake[-1].run == second


# ---- R5-07: checkpoint names one to one, bounded ----------------------------------------


def test_checkpoint_names_cannot_collide_and_are_bounded(tmp_path):
    ids = ["a/b", "a_b", "a b", "a:b", "A", "a", 1, "1", "x" * 300, "é", "e"]
    names = [checkpoint_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert len(set(n.lower() for n in names)) == len(ids), "case-insensitive disks"
    assert all(len(n) <= 60 and "/" not in n for n in names)
    assert checkpoint_name("a/b").startswith("a_b-")  # readable


def test_jobs_with_colliding_or_long_ids_keep_their_own_progress(tmp_path):
    """R5-07's scenario: ``a/b`` is preempted by the reclaim; ``a_b`` must not take
    its checkpoint; a 300-character id runs."""
    long_id = "x" * 300
    jobs = [
        Job("long", 8, 1, 1, 20000.0, submit_time=0.0),
        Job("a/b", 8, 1, 1, 6000.0, submit_time=10.0),
        Job("a_b", 8, 1, 1, 6000.0, submit_time=20.0),
        Job(long_id, 8, 1, 1, 100.0, submit_time=30.0),
    ]
    cluster = Cluster(1, 1, inference_gpu="V100")
    load = [(0.0, 0.0), (3000.0, 1.0)]
    config = Config(lend_hold=0.0)
    backend = FakeBackend(str(tmp_path / "ckpt"))
    live = Controller(
        jobs, cluster, backend, "fifo", load=load, config=config, clock=VirtualClock()
    ).run()
    simulated = sim.simulate(jobs, cluster, "fifo", "aryl", load, config)
    got = live.check().jobs.set_index("id")["finish_time"]
    want = simulated.jobs.set_index("id")["finish_time"]
    for job in ("a/b", "a_b", long_id):
        assert got[job] == pytest.approx(want[job]), job


# ---- R5-15: a local cluster is bounded --------------------------------------------------


def test_a_local_cluster_is_bounded_with_a_reason(tmp_path, trace, fake, capsys):
    out = tmp_path / "out"
    jobs, _ = trace
    with pytest.raises(SystemExit) as exit:
        main(["live", str(jobs), "--local-cluster", "5000+0", "--out", str(out)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "5,000 servers" in err and "at most 32" in err and "--address" in err
    top = live_cli.MAX_LOCAL_SERVERS
    assert live_cli.parse_cluster(f"{top - 1}+1") == (top - 1, 1)


# ---- item 3: the model options and policy specs of simulate ------------------------------

POLICY = '''
class Las:
    """Least attained service: the schedule as the kernel returns it."""

    name = "las-mine"

    def allocate(self, state, epoch):
        return state.schedule("fifo")
'''


def test_live_takes_simulates_model_options_and_policy_specs(
    tmp_path, trace, fake, monkeypatch
):
    ran = {}
    run_live = live_cli._run_live

    def spy(args, console, out, run, jobs, *more):
        ran["jobs"] = jobs
        return run_live(args, console, out, run, jobs, *more)

    monkeypatch.setattr(live_cli, "_run_live", spy)
    policy = tmp_path / "mine.py"
    policy.write_text(POLICY)
    out = tmp_path / "out"
    more = ["--gpu-speed", "T4=1", "--any-type-share", "1", "--headroom", "0.5"]
    more += ["--policy", f"{policy}:Las", "--restart-overhead", "30"]
    more += ["--first-jobs", "5", "--lend-hold", "60", "--trace-format", "aryl"]
    assert aryl_live(trace, out, *more) == 0
    for run in ("live", "simulated"):
        result = sim.load(out / run)
        config = result.provenance.config
        assert config["gpu_speed"]["T4"] == 1.0, run
        assert config["headroom"] == 0.5 and config["lend_hold"] == 60.0, run
        assert config["restart_overhead"] == 30.0, run
        assert len(result.jobs) == 5, run
        assert result.provenance.policy == "las-mine", run
    # any-type share 1: every untyped job may run on any type (the T4s lent)
    assert [j.gpu_type for j in ran["jobs"]] == [None] * 5


def test_a_raw_release_is_read_with_trace_format(tmp_path, fake, capsys):
    raw = ROOT / "tests" / "py" / "data" / "alibaba2023"
    pods = sorted(raw.glob("openb_pod_list_*.csv"))[0]
    out = tmp_path / "out"
    argv = ["live", str(pods), "--local-cluster", "1+0", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--trace-format alibaba-2023" in err
    args = _parser().parse_args(argv + ["--trace-format", "alibaba-2023"])
    jobs = live_cli._inputs(args, live_cli.console_of(args))[0]
    assert len(jobs) > 0


# ---- item 4: progress, ledger, start latency --------------------------------------------


def test_the_table_has_the_ledger_and_progress_says_where_the_run_is(
    tmp_path, trace, fake, capsys
):
    assert aryl_live(trace, tmp_path / "out") == 0
    said = capsys.readouterr().out
    assert "ledger" in said and "reclaims" in said and "Ledger:" in said
    controller = Controller(
        [Job("j", 8, 1, 1, 100.0)],
        Cluster(1, 0),
        FakeBackend(str(tmp_path / "ckpt")),
        clock=VirtualClock(),
    )
    assert live_cli.progress_line(controller).startswith("0/1 submitted, 0 running")
    controller.run()
    assert "1 finished; 0 on loan; simulated 0:01:40" in live_cli.progress_line(
        controller
    )


def test_a_start_latency_that_dominates_is_warned_about():
    jobs = [Job("j", 8, 1, 1, 1000.0)]
    assert live_cli.latency_warning(50.0, jobs, 30.0) == ""
    said = live_cli.latency_warning(519.0, jobs, 1000.0)
    assert "52%" in said and "lower --compression" in said


def test_the_processes_a_local_cluster_starts_write_to_its_log(tmp_path, capfd):
    """Ray's nodes inherit the command's stdout and stderr; started within
    ``_child_output``, their messages (a drained node's agents reporting the
    "unexpected" raylet exit) go to OUT/ray.log instead, and the command's own
    output stays where it was."""
    log = tmp_path / "ray.log"
    child = "import sys; print('out of a node'); print('Raylet is terminated', file=sys.stderr)"
    with ray_backend._child_output(str(log)):
        started = subprocess.Popen([sys.executable, "-c", child])
    started.wait()
    print("aryl's own line", file=sys.stderr)
    said = capfd.readouterr()
    assert "Raylet" not in said.err and "out of a node" not in said.out
    assert "aryl's own line" in said.err
    assert (
        "Raylet is terminated" in log.read_text() and "out of a node" in log.read_text()
    )


def test_the_lock_is_held_until_the_results_are_written(
    tmp_path, trace, fake, monkeypatch
):
    out, seen = tmp_path / "out", []
    table = live_cli.comparison_table

    def spy(*results):
        seen.append((out / live_cli.LOCK).is_file())
        return table(*results)

    monkeypatch.setattr(live_cli, "comparison_table", spy)
    assert aryl_live(trace, out) == 0
    assert seen == [True] and not (out / live_cli.LOCK).exists()


def test_the_progress_bar_draws_the_runs_state(tmp_path):
    import io

    stream = io.StringIO()
    jobs = [Job(f"j{i}", 8, 1, 1, 100.0, submit_time=50.0 * i) for i in range(3)]
    controller = Controller(
        jobs, Cluster(1, 0), FakeBackend(str(tmp_path / "ckpt")), clock=VirtualClock()
    )
    with live_cli.LiveProgress(controller, True, stream=stream):
        controller.run()
    drawn = stream.getvalue()
    assert "3/3 submitted, 0 running, 3 finished; 0 on loan; simulated" in drawn
