"""aryl.live on a local Ray cluster with declared GPUs (issue 34, tier T2): workers land
on the servers the decision names and never off the whitelist, a gang starts whole or
waits, a reclaimed server is confirmed empty before it leaves the whitelist, a run with
one reclaim finishes every job, a killed node's job resumes at its checkpoint, and a
controller killed mid-run is followed by one that adopts its running jobs.

One cluster for the module (a head and the training servers; inference servers join
when lent), shut down even when a test fails; about a minute of wall time here."""

import json
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.ray

import ray  # noqa: E402

from aryl import Job, Worker  # noqa: E402
from aryl.live import Clock, Controller  # noqa: E402
from aryl.live.ray_backend import LocalCluster, RayBackend  # noqa: E402
from aryl.sim import Cluster, Config  # noqa: E402

CLUSTER = Cluster(2, 1)
C = 120.0  # simulated seconds per wall second


def test_aryl_live_replays_a_trace_beside_the_simulator(tmp_path):
    """The command on its own local cluster (first: before the module's starts)."""
    jobs = tmp_path / "jobs.csv"
    # running at the first reclaim (at 900 s: the lent nodes join in a few wall
    # seconds, hundreds of simulated ones, while the training servers run two jobs)
    rows = [f"j{i},0,8,1800," for i in range(3)]
    jobs.write_text(
        "job_id,submit_time_s,num_gpus,duration_s,gpu_type\n" + "\n".join(rows)
    )
    load = tmp_path / "load.csv"
    load.write_text("time_s,load\n0,0\n900,1\n")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "aryl", "live", str(jobs), "--load", str(load)]
    command += ["--local-cluster", "2+2", "--compression", str(C), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # a drained node's exit, expected, is Ray's news for OUT/ray.log, not the terminal
    assert "Raylet is terminated" not in done.stderr, done.stderr
    assert (out / "ray.log").is_file()
    said = done.stdout + done.stderr
    assert "ledger" in said and "Ledger:" in said
    assert "live vs simulated: mean JCT" in said
    # its Ray is on the loopback (issue 48), as Ray's connection line says
    assert re.search(r"Ray cluster at address: 127\.0\.0\.1:\d+", said), said
    # the simulator again with the start latency measured on this cluster
    assert re.search(r"with the measured start latency \(\d[\d,]* s a start\)", said)
    from aryl import sim

    taught = sim.load(out / "calibrated")
    assert taught.provenance.config["start_overhead"] > 0

    live = sim.load(out / "live").check()
    assert live.jobs["finish_time"].notna().all()
    assert live.totals["reclaims"] == 1
    assert sim.load(out / "simulated").totals["reclaims"] == 1


def test_sigterm_ends_aryl_live_with_143_and_ray_output_in_its_log(tmp_path):
    """R5-16: Ray's in-process head node puts its own SIGTERM handler (drain, exit 1)
    over aryl's; aryl's is put back, so SIGTERM ends the command as documented (143,
    one line, its local cluster shut down). Ray's nodes write to OUT/ray.log."""
    import signal

    jobs = tmp_path / "jobs.csv"
    rows = [f"j{i},0,8,36000," for i in range(2)]
    jobs.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\n")
    jobs.write_text(jobs.read_text() + "\n".join(rows) + "\n")
    load = tmp_path / "load.csv"
    load.write_text("time_s,load\n0,0\n")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "aryl", "live", str(jobs), "--load", str(load)]
    command += ["--local-cluster", "1+1", "--compression", "10", "--out", str(out)]
    running = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        journal = out / "journal.jsonl"
        deadline = time.monotonic() + 240.0
        while time.monotonic() < deadline and running.poll() is None:
            if journal.is_file() and len(journal.read_text().splitlines()) >= 6:
                break
            time.sleep(0.5)
        assert running.poll() is None, running.communicate()
        running.send_signal(signal.SIGTERM)
        stdout, stderr = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert running.returncode == 143, stderr
    assert stderr.rstrip().splitlines()[-1] == "aryl: interrupted", stderr
    assert "received SIGTERM" not in stderr
    assert (out / "ray.log").is_file() and f"goes to {out / 'ray.log'}" in stdout


@pytest.fixture(scope="module")
def nodes():
    with LocalCluster(CLUSTER.servers()) as cluster:
        yield cluster


@pytest.fixture
def backend(nodes, tmp_path):
    backend = RayBackend(str(tmp_path / "ckpt"), C, nodes, placement_timeout=3.0)
    backend.register(CLUSTER.servers())
    yield backend
    backend.shutdown()


def node_of(server):
    for node in ray.nodes():
        if node["Alive"] and (node.get("Labels") or {}).get("aryl.server") == server:
            return node["NodeID"]
    raise AssertionError(f"no node for {server}")


def test_the_agent_host_is_up_once_the_servers_are_registered(backend):
    """Its process starts before a controller's clock does, so no arrival waits for
    it (issue 44: at --compression 1000 that wait was every first job's queuing)."""
    assert "aryl-agents" in ray.util.list_named_actors()


def test_workers_land_on_the_servers_named_with_their_own_gpus(backend):
    job = Job("a", 4, 3, 3, 600.0)
    backend.submit(job, _program(job))
    workers = [Worker("a", s, 4) for s in ("t0", "t0", "t1")]
    backend.set_workers("a", workers)
    where = backend.where("a")
    assert [n for n, _ in where] == [node_of("t0"), node_of("t0"), node_of("t1")]
    assert set(where[0][1]).isdisjoint(where[1][1])  # two workers, distinct GPUs
    backend.set_workers("a", [])


def test_a_gang_starts_whole_or_waits(backend):
    job = Job("big", 8, 3, 3, 600.0)
    backend.submit(job, _program(job))
    # three 8-GPU workers on two 8-GPU servers: nothing of it may start
    with pytest.raises(RuntimeError, match="gang"):
        backend.set_workers("big", [Worker("big", s, 8) for s in ("t0", "t1", "t1")])
    assert "big" not in backend.running
    assert ray.available_resources().get("GPU", 0) >= 16  # nothing held
    fits = Job("fits", 8, 2, 2, 600.0)
    backend.submit(fits, _program(fits))
    # one epoch's starts go together: the gang that fits starts, the other is named
    with pytest.raises(
        RuntimeError, match=r"\['big'\]: their gangs could not be placed"
    ):
        backend.set_workers_many(
            {
                "big": [Worker("big", s, 8) for s in ("t0", "t1", "t1")],
                "fits": [Worker("fits", s, 8) for s in ("t0", "t1")],
            }
        )
    assert "big" not in backend.running
    assert len(backend.where("fits")) == 2
    backend.set_workers("fits", [])


def test_a_run_with_one_reclaim_confirms_before_it_returns(backend, tmp_path):
    # i0 is lent at once and the controller goes on while its node joins; the third
    # job runs there once it has, and at the next loan decision the load (up from
    # the moment a worker runs on i0, however long the join took) takes it back
    jobs = [Job(f"j{i}", 8, 1, 1, 900.0) for i in range(3)]
    used = []

    def load(t):
        running = [w for pairs in backend.running.values() for w, _ in pairs]
        if not used and any(w.server == "i0" for w in running):
            used.append(t)
        return 1.0 if used else 0.0

    config = Config(lend_hold=0.0, restart_overhead=0.0, gpu_speed={"T4": 1.0})
    journal = tmp_path / "journal.jsonl"
    result = Controller(
        jobs,
        CLUSTER,
        backend,
        "aryl",
        load=load,
        config=config,
        clock=Clock(C),
        journal=journal,
    ).run()
    result.check()
    assert result.jobs["finish_time"].notna().all()
    assert result.totals["reclaims"] == 1
    log = backend.log
    drain, release = log.index(("drain", "i0")), log.index(("release", "i0"))
    stops = [k for k, e in enumerate(log) if e[0] == "stop" and e[2] == "i0"]
    confirmed = [k for k, e in enumerate(log) if e[:2] == ("confirm", "i0")]
    assert stops and drain < min(stops) and max(stops) < confirmed[-1] < release
    assert log[confirmed[-1]] == ("confirm", "i0", 0)
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    lent = set()
    for e in events:  # never a worker on a server off the whitelist
        if e["event"] == "loan":
            lent = (
                lent | set(e["servers"]) if e["on_loan"] else lent - set(e["servers"])
            )
        if e["event"] == "workers":
            assert all(s.startswith("t") or s in lent for s, _ in e["workers"])
    assert any(
        s == "i0" for e in events if e["event"] == "workers" for s, _ in e["workers"]
    )


def test_a_killed_nodes_job_resumes_at_its_checkpoint(nodes, tmp_path):
    from aryl.live import EmulatedJob

    notes = tmp_path / "notes"

    class Noted(EmulatedJob):  # local: pickled by value into the agent's actor
        def save(self, path):
            super().save(path)
            with open(notes, "a") as f:
                f.write(f"save {self.done!r}\n")

        def load(self, path):
            super().load(path)
            with open(notes, "a") as f:
                f.write(f"load {self.done!r}\n")

    backend = RayBackend(str(tmp_path / "ckpt"), C, nodes, checkpoint_every=120.0)
    try:
        job = Job("a", 8, 1, 1, 600.0)
        controller = Controller(
            [job],
            Cluster(2, 0),
            backend,
            "aryl",
            config=Config(restart_overhead=0.0),
            clock=Clock(C),
            programs={"a": Noted(job, {"V100": 1.0})},
        )
        controller.run(until=240.0)
        backend.where("a")  # its workers are up (the controller does not wait)
        controller.run(until=controller.clock.now() + 150.0)
        server = controller.record.workers["a"][0][0]
        nodes.kill(server)
        result = controller.run().check()
    finally:
        backend.shutdown()
        if "server" in locals():
            nodes.add(next(s for s in CLUSTER.servers() if s.id == server))
    row = result.jobs.iloc[0]
    assert row["preemptions"] == 1 and row["finish_time"] > 600.0
    # lost: at most the checkpoint interval, plus the time to see the node dead
    assert 0.0 < row["work_lost"] <= 120.0 + 5.0 * C
    assert server not in set(result.history().query("interval == 1")["server"])
    # it restarted once, at the exact step of its last checkpoint
    lines = [line.split() for line in notes.read_text().splitlines()]
    loaded = [k for k, (what, _) in enumerate(lines) if what == "load"]
    assert len(loaded) == 1 and lines[loaded[0] - 1][0] == "save"
    assert lines[loaded[0]][1] == lines[loaded[0] - 1][1] != "0.0"


CONTROLLER = """
import os, sys
import ray
from aryl import Job
from aryl.live import Clock, Controller, EmulatedJob
from aryl.live.ray_backend import RayBackend
from aryl.sim import Cluster, Config
from aryl.loopback import on_loopback

address, out, resume = sys.argv[1], sys.argv[2], sys.argv[3] == "resume"


class Noted(EmulatedJob):  # which agent process runs each resize
    def resize(self, workers, servers):
        super().resize(workers, servers)
        with open(os.path.join(out, "notes"), "a") as f:
            f.write(f"{self.job.id} {os.getpid()} {len(workers)} {self.done}\\n")


with on_loopback():  # the module's cluster listens on 127.0.0.1 only
    ray.init(address=address, namespace="aryl", log_to_driver=False)
jobs = [Job(f"j{i}", 8, 1, 1, 1200.0) for i in range(2)]
backend = RayBackend(os.path.join(out, "ckpt"), 120.0)
controller = Controller(
    jobs, Cluster(2, 0), backend, "aryl", config=Config(restart_overhead=0.0),
    clock=Clock(120.0), journal=os.path.join(out, "journal.jsonl"), resume=resume,
    programs={j.id: Noted(j, {"V100": 1.0}) for j in jobs},
)
result = controller.run()
backend.shutdown()
result.check().save(os.path.join(out, "result"))
"""


def test_a_restarted_controller_adopts_the_jobs_that_run(nodes, tmp_path):
    """The controller's process is killed (SIGKILL) once both jobs run; a new one with
    resume=True adopts their agents and workers (detached, named): each job's program
    stays in one agent process with the progress it made (a fresh agent would start
    from 0.0: no checkpoint was written), starts once and loses nothing."""
    from aryl import sim

    script = tmp_path / "controller.py"
    script.write_text(CONTROLLER)
    command = [sys.executable, str(script), nodes.address, str(tmp_path)]
    notes, errors = tmp_path / "notes", tmp_path / "first.err"
    with (
        open(errors, "w") as err,
        subprocess.Popen(command + ["new"], stderr=err) as first,
    ):
        try:
            deadline = time.monotonic() + 120.0
            while not _running(notes, {"j0", "j1"}):
                assert first.poll() is None, errors.read_text()
                assert time.monotonic() < deadline, "the jobs never started"
                time.sleep(0.1)
            time.sleep(3.0)  # 360 simulated seconds of progress to lose, were they lost
        finally:
            first.kill()
    second = subprocess.run(
        command + ["resume"], capture_output=True, text=True, timeout=300
    )
    assert second.returncode == 0, second.stderr
    result = sim.load(tmp_path / "result")
    jobs = result.jobs.set_index("id")
    assert jobs["finish_time"].notna().all()
    assert (jobs["preemptions"] == 0).all() and (jobs["work_lost"] == 0).all()
    lines = [line.split() for line in notes.read_text().splitlines()]
    for job in ("j0", "j1"):
        resizes = [(pid, float(done)) for j, pid, _, done in lines if j == job]
        assert len({pid for pid, _ in resizes}) == 1, lines
        assert resizes[0][1] == 0.0 and resizes[-1][1] > 0.0, lines
    events = [
        json.loads(x) for x in (tmp_path / "journal.jsonl").read_text().splitlines()
    ]
    starts = [e["job"] for e in events if e["event"] == "workers" and e["workers"]]
    assert sorted(starts) == ["j0", "j1"]


def _running(notes, jobs):
    """Whether every job in ``jobs`` has had a resize with workers."""
    if not notes.exists():
        return False
    lines = [line.split() for line in notes.read_text().splitlines()]
    return jobs <= {j for j, _, n, _ in lines if n != "0"}


def _program(job):
    from aryl.live import EmulatedJob

    return EmulatedJob(job, {"V100": 1.0, "T4": 0.25})
