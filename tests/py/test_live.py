"""aryl.live on the in-process backend (issue 34, tier T1): decisions become actions in
order, reclaim goes drain -> stop -> confirm -> whitelist, the deadline kill records
lost work, a journal replay restores the state, faults requeue from checkpoints, and
the same policy object decides the same live (virtual clock) and in ``simulate``."""

import contextlib
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import aryl
from aryl import Job
from aryl.live import (
    Controller,
    EmulatedJob,
    FakeBackend,
    JobAgent,
    VirtualClock,
    progress_rate,
    replay,
)
from aryl.sim import Cluster, Config, simulate

# Eight one-server jobs on 2 training + 2 lent servers (all V100: no speed-aware
# admission, whose wait estimate reads the simulator's stale remaining work); the
# load takes the lent servers back at t = 3,000 s, preempting the jobs on them.
JOBS = [Job(f"j{i}", 8, 1, 1, 3000 + 500 * i, submit_time=100 * i) for i in range(8)]
CLUSTER = Cluster(2, 2, inference_gpu="V100")
LOAD = [(0.0, 0.0), (3000.0, 0.9)]
CONFIG = Config(lend_hold=0.0)


def live(tmp_path, policy="aryl", backend=None, jobs=JOBS, config=CONFIG, **kwargs):
    backend = backend or FakeBackend(str(tmp_path / "ckpt"))
    controller = Controller(
        jobs,
        CLUSTER,
        backend,
        policy,
        load=kwargs.pop("load", LOAD),
        config=config,
        clock=VirtualClock(),
        journal=kwargs.pop("journal", tmp_path / "journal.jsonl"),
        **kwargs,
    )
    return controller, backend


def events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


class Logged:
    """A policy object that logs what it decides: (now, starts, stops)."""

    name = "logged"

    def __init__(self):
        self.log = []

    def allocate(self, state, epoch):
        result = state.schedule("aryl", **epoch.schedule_options)
        d = result.decision
        self.log.append(
            (
                epoch.now,
                sorted((w.job, w.server, w.flexible) for w in d.start),
                sorted((w.job, w.server, w.flexible) for w in d.stop),
            )
        )
        return result


class Untouched:
    """A policy object that returns ``state.schedule(...)`` untouched, as the docs'
    policies do (the engine then takes the kernel's own answer, unread)."""

    name = "untouched"

    def allocate(self, state, epoch):
        return state.schedule("aryl", **epoch.schedule_options)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "policies.md"


def docs_policies():
    """The python blocks of docs/policies.md, run in one namespace (the week-long
    comparison aside)."""
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S):
        if "sim.simulate(week" not in block:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block, str(DOCS), "exec"), namespace)
    return namespace


def test_a_policy_returning_the_schedule_untouched_runs_live(tmp_path):
    """R5-01: the kernel's own answer (an unread ``ScheduleResult``) is taken live."""
    sim = simulate(JOBS, CLUSTER, Untouched(), inference_load=LOAD, config=CONFIG)
    result = live(tmp_path, Untouched())[0].run().check()
    np.testing.assert_allclose(result.jobs["jct"], sim.jobs["jct"], rtol=1e-9)
    assert result.totals["reclaims"] == sim.totals["reclaims"] == 1


@pytest.mark.parametrize("name", ["Aryl", "LoadAware", "LeastAttainedService"])
def test_the_docs_policies_run_live_as_in_simulate(tmp_path, name):
    """R5-01: docs/policies.md's own policy objects run on the fake backend as
    ``simulate`` runs them."""
    policy = docs_policies()[name]
    sim = simulate(JOBS, CLUSTER, policy(), inference_load=LOAD, config=CONFIG)
    result = live(tmp_path, policy())[0].run().check()
    assert result.jobs["finish_time"].notna().all()
    np.testing.assert_allclose(result.jobs["jct"], sim.jobs["jct"], rtol=1e-9)


def test_the_same_policy_object_decides_the_same_live_and_simulated(tmp_path):
    simulated, live_policy = Logged(), Logged()
    sim = simulate(JOBS, CLUSTER, simulated, inference_load=LOAD, config=CONFIG)
    controller, _ = live(tmp_path, live_policy)
    result = controller.run()
    assert live_policy.log == simulated.log
    assert any(stop or start for _, start, stop in live_policy.log)
    for column in ("start_time", "finish_time", "preemptions", "scaling_ops"):
        np.testing.assert_allclose(result.jobs[column], sim.jobs[column], rtol=1e-9)
    assert result.totals["reclaims"] == sim.totals["reclaims"] == 1
    result.check()


def test_a_live_run_is_a_result_with_the_simulators_tables(tmp_path):
    sim = simulate(JOBS, CLUSTER, inference_load=LOAD, config=CONFIG, history=True)
    result = live(tmp_path)[0].run().check()
    assert list(result.jobs.columns) == list(sim.jobs.columns)
    assert list(result.timeline.columns) == list(sim.timeline.columns)
    assert set(result.totals) == set(sim.totals)
    # not measured apart live (NaN): restarts' GPU time and late returns
    unmeasured = {"restart_gpu_hours", "inference_short_server_hours"}
    for key in set(sim.summary()) - unmeasured:
        assert result.summary()[key] == pytest.approx(
            sim.summary()[key], rel=1e-9, nan_ok=True
        )
    assert all(np.isnan(result.summary()[key]) for key in unmeasured)
    a, b = result.history(), sim.history()
    assert a[["job", "interval", "opened", "closed", "server"]].equals(
        b[["job", "interval", "opened", "closed", "server"]]
    )
    np.testing.assert_allclose(a["end"], b["end"], rtol=1e-9)


def test_decisions_become_actions_in_order(tmp_path):
    controller, backend = live(tmp_path)
    controller.run()
    # each job's workers started as one gang on the servers its decision named
    journal = events(tmp_path / "journal.jsonl")
    starts = [e for e in journal if e["event"] == "workers" and e["why"] == "start"]
    gangs = [entry for entry in backend.log if entry[0] == "gang"]
    assert [(e["job"], tuple(s for s, _ in e["workers"])) for e in starts] == [
        (job, servers) for _, job, servers in gangs
    ]
    # never a worker on a server off the whitelist
    lent = set()
    for e in journal:
        if e["event"] == "loan":
            lent = (
                lent | set(e["servers"]) if e["on_loan"] else lent - set(e["servers"])
            )
        if e["event"] == "workers":
            assert all(s.startswith("t") or s in lent for s, _ in e["workers"])


def test_reclaim_goes_drain_stop_confirm_whitelist(tmp_path):
    controller, backend = live(tmp_path)
    controller.run()
    log = backend.log
    returned = [entry[1] for entry in log if entry[0] == "release"]
    assert sorted(returned) == ["i0", "i1"]
    for server in returned:
        drain = log.index(("drain", server))
        stops = [k for k, e in enumerate(log) if e[0] == "stop" and e[2] == server]
        confirm = log.index(("confirm", server, 0))
        release = log.index(("release", server))
        assert stops and drain < min(stops) and max(stops) < confirm < release
    journal = [e["event"] for e in events(tmp_path / "journal.jsonl")]
    drain = journal.index("drain")
    off = next(
        k
        for k, e in enumerate(events(tmp_path / "journal.jsonl"))
        if e["event"] == "loan" and not e["on_loan"]
    )
    preempted = [
        k
        for k, e in enumerate(events(tmp_path / "journal.jsonl"))
        if e["event"] == "workers" and e["why"] == "reclaim_preemption"
    ]
    assert drain < min(preempted) and max(preempted) < off


def test_a_lent_server_joins_while_the_controller_goes_on(tmp_path):
    """A lend does not hold the controller: jobs start on the training servers while
    the lent ones join (250 s), which are used only once they have joined."""
    backend = FakeBackend(str(tmp_path / "ckpt"), join=250.0)
    controller, _ = live(tmp_path, backend=backend)
    result = controller.run().check()
    journal = events(tmp_path / "journal.jsonl")
    lent = [e for e in journal if e["event"] == "loan" and e["on_loan"]]
    assert [(e["t"], sorted(e["servers"])) for e in lent] == [(250.0, ["i0", "i1"])]
    starts = [e for e in journal if e["event"] == "workers" and e["why"] == "start"]
    assert any(0 < e["t"] < 250 for e in starts)  # decided while they joined
    on_lent = [
        e["t"] for e in starts if any(s[0].startswith("i") for s in e["workers"])
    ]
    assert on_lent and min(on_lent) >= 250
    # j2 (submitted at 200) waited for the join and the epoch after it (300 s), not
    # for the first epoch after its arrival, as with servers ready when lent
    instant = live(tmp_path / "instant")[0].run().jobs.set_index("id")["start_time"]
    assert instant["j2"] == 240.0
    assert result.jobs.set_index("id").at["j2", "start_time"] == 300.0


class WaitingBackend(FakeBackend):
    """A backend whose lend waits until the servers have joined (returns None)."""

    def lend(self, servers):
        super().lend(servers)


def test_a_backend_that_waits_in_lend_lends_as_before(tmp_path):
    waited = live(tmp_path, backend=WaitingBackend(str(tmp_path / "ckpt")))[0].run()
    instant = live(tmp_path / "instant")[0].run()
    assert waited.jobs.equals(instant.jobs) and waited.totals["reclaims"] == 1


def test_a_server_still_joining_goes_back_without_a_reclaim(tmp_path):
    """The load needs the servers back before they joined: they are released at
    once, nothing drained, preempted or counted as a reclaim."""
    backend = FakeBackend(str(tmp_path / "ckpt"), join=2000.0)
    load = [(0.0, 0.0), (300.0, 0.9), (20000.0, 0.9)]
    controller, _ = live(tmp_path, backend=backend, load=load)
    result = controller.run().check()
    assert [e for e in backend.log if e[0] in ("lend", "release", "drain")] == [
        ("lend", "i0"),
        ("lend", "i1"),
        ("release", "i0"),
        ("release", "i1"),
    ]
    journal = events(tmp_path / "journal.jsonl")
    assert not [e for e in journal if e["event"] in ("loan", "reclaim", "drain")]
    assert result.totals["reclaims"] == 0 and result.jobs["preemptions"].eq(0).all()
    assert set(result.history()["server"]) == {"t0", "t1"}


def test_the_deadline_kill_records_the_work_lost(tmp_path):
    backend = FakeBackend(str(tmp_path / "ckpt"), checkpoint_every=600.0)
    backend.hang("j2")  # on a lent server at the reclaim: ignores its stop
    controller, _ = live(tmp_path, backend=backend, grace=120.0)
    result = controller.run().check()
    assert ("kill", "i0") in backend.log or ("kill", "i1") in backend.log
    lost = result.jobs.set_index("id")["work_lost"]
    # j2 ran 240 s -> 3,000 s and checkpointed every 600 s: 360 s of work lost
    assert lost["j2"] == pytest.approx(3000 - 240 - 4 * 600)
    assert (lost.drop("j2") == 0).all()
    assert result.totals["work_lost_total"] == pytest.approx(lost["j2"])
    assert result.jobs["finish_time"].notna().all()


# Four jobs without checkpoint on 1 training + 2 lent servers: the reclaim at 3,000 s
# preempts the two on the lent servers, which start over (issue 44's lost work).
UNSAVED = [
    Job(f"u{i}", 8, 1, 1, 2500 + 1000 * i, submit_time=100 * i, checkpoint=False)
    for i in range(4)
]
SMALL = Cluster(1, 2, inference_gpu="V100")


@pytest.mark.parametrize("hung", [False, True])
def test_a_preempted_job_without_checkpoint_books_its_lost_work_as_simulated(
    tmp_path, hung
):
    """Live books the progress a job without checkpoint loses at a preemption as the
    simulator does (all of it since it started, GPU-seconds = progress x GPUs), and a
    kill past the grace (a hung job) adds nothing to what its stop booked."""
    sim = simulate(UNSAVED, SMALL, inference_load=LOAD, config=CONFIG)
    backend = FakeBackend(str(tmp_path / "ckpt"))
    if hung:
        backend.hang("u1")  # on a lent server at the reclaim: ignores its stop
    controller = Controller(
        UNSAVED, SMALL, backend, "aryl", load=LOAD, config=CONFIG, clock=VirtualClock()
    )
    result = controller.run().check()
    assert ("kill", "i0") in backend.log or ("kill", "i1") in backend.log or not hung
    assert sim.totals["work_lost_gpu_seconds"] > 0
    np.testing.assert_allclose(result.jobs["work_lost"], sim.jobs["work_lost"])
    np.testing.assert_allclose(result.jobs["jct"], sim.jobs["jct"], rtol=1e-9)
    for key in ("work_lost_gpu_seconds", "work_lost_total", "work_delivered"):
        assert result.totals[key] == pytest.approx(sim.totals[key], rel=1e-9)
    assert result.summary()["work_lost_gpu_hours"] == pytest.approx(
        sim.summary()["work_lost_gpu_hours"], rel=1e-9
    )


# Elastic jobs (1 to 2 servers) on the same cluster: scale-outs and moves start
# workers too.
ELASTIC = [Job(f"e{i}", 8, 1, 2, 3000 + 700 * i, submit_time=400 * i) for i in range(6)]


@pytest.mark.parametrize("jobs", [JOBS, ELASTIC], ids=["rigid", "elastic"])
def test_a_start_latency_is_booked_where_the_calibrated_simulation_books_it(
    tmp_path, jobs
):
    """Issue 44: a backend whose starts take 300 s (the controller going on, the job
    holding its workers without progress, as on Ray) and the simulation calibrated
    with it (``aryl.live.calibrated``) book it alike: as running time, not queuing,
    on first starts, scale-outs and restarts after a reclaim."""
    config = Config(lend_hold=0.0, restart_overhead=63.0)
    backend = FakeBackend(str(tmp_path / "ckpt"), start=300.0)
    result = live(tmp_path, backend=backend, jobs=jobs, config=config)[0].run().check()
    sim = simulate(
        jobs, CLUSTER, inference_load=LOAD, config=aryl.live.calibrated(config, 300.0)
    )
    assert result.totals["reclaims"] == sim.totals["reclaims"] == 1
    assert result.jobs["preemptions"].sum() == sim.jobs["preemptions"].sum() > 0
    for column in ("start_time", "queuing_time", "finish_time", "scaling_ops"):
        np.testing.assert_allclose(result.jobs[column], sim.jobs[column], rtol=1e-9)
    plain = FakeBackend(str(tmp_path / "plain"))
    faster = live(tmp_path / "plain", backend=plain, jobs=jobs, config=config)[0].run()
    assert (result.jobs["jct"] > faster.jobs["jct"]).all()


def test_calibrated_adds_the_start_latency_to_restarts_and_refuses_nonsense():
    config = aryl.live.calibrated(Config(restart_overhead=63.0), 17.0)
    assert (config.start_overhead, config.restart_overhead) == (17.0, 80.0)
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="start_latency"):
            aryl.live.calibrated(Config(), bad)


def test_a_journal_replay_restores_the_state(tmp_path):
    controller, _ = live(tmp_path)
    controller.run(until=3300.0)  # mid-run: jobs running, one reclaim behind
    restored = replay(tmp_path / "journal.jsonl", controller.jobs, controller.servers)
    record = controller.record
    assert restored.workers == record.workers and record.workers
    assert restored.on_loan == record.on_loan
    assert restored.finished == record.finished and restored.arrived == record.arrived
    assert restored.rows == record.rows
    assert restored.totals == record.totals


def test_a_restarted_controller_goes_on_without_starting_a_job_twice(tmp_path):
    whole = live(tmp_path / "a")[0].run()
    first, backend = live(tmp_path / "b")
    first.run(until=3300.0)
    running = set(first.record.workers)
    second, _ = live(tmp_path / "b", backend=backend, resume=True)
    result = second.run().check()
    gangs = [entry[1] for entry in backend.log if entry[0] == "gang"]
    assert len(gangs) == len(set(gangs)) + 2  # only the two preempted jobs twice
    assert running and all(
        gangs.count(j) == 1 for j in running if j not in ("j2", "j3")
    )
    np.testing.assert_allclose(result.jobs["jct"], whole.jobs["jct"], rtol=1e-9)


def test_a_dead_node_requeues_its_jobs_from_their_checkpoints(tmp_path):
    backend = FakeBackend(str(tmp_path / "ckpt"), checkpoint_every=600.0)
    controller, _ = live(tmp_path, backend=backend, load=None)
    controller.run(until=1000.0)
    backend.fail_server("t0")  # j0 runs there, since t = 0
    result = controller.run().check()
    row = result.jobs.set_index("id").loc["j0"]
    assert row["preemptions"] == 1
    # seen at the next tick (the epoch at 1,020 s); its checkpoint is from 600 s
    assert row["work_lost"] == pytest.approx(1020.0 - 600.0)
    assert result.jobs["finish_time"].notna().all()
    assert "t0" not in set(result.history().query("start >= 1000")["server"])


def test_a_dead_lent_server_counts_as_reclaimed(tmp_path):
    controller, backend = live(tmp_path, load=[(0.0, 0.0)])
    controller.run(until=600.0)
    on_i0 = [j for j, w in controller.record.workers.items() if w[0][0] == "i0"]
    backend.fail_server("i0")
    result = controller.run().check()
    assert result.totals["reclaims"] == 1 and result.totals["servers_reclaimed"] == 1
    assert on_i0 and all(
        result.jobs.set_index("id").loc[j, "preemptions"] == 1 for j in on_i0
    )


def test_a_dead_worker_restarts_in_place_a_bounded_number_of_times(tmp_path):
    controller, backend = live(tmp_path, load=None, worker_restarts=2)
    controller.run(until=600.0)
    for _ in range(2):
        backend.fail_worker("j0")
        controller.run(until=controller.record.now + 120.0)
    assert [e for e in backend.log if e == ("restart", "j0")] == [("restart", "j0")] * 2
    assert "j0" in controller.record.workers  # still in place
    backend.fail_worker("j0")
    result = controller.run().check()
    assert result.jobs.set_index("id").loc["j0", "preemptions"] == 1


def test_checkpoints_are_written_aside_and_renamed(tmp_path):
    class Breaks(EmulatedJob):
        def save(self, path):
            super().save(path)
            if self.done > 0.5:
                raise OSError("disk full")

    job = Job("a", 8, 1, 1, 100.0)
    agent = JobAgent("a", Breaks(job, {"V100": 1.0}), str(tmp_path))
    server = aryl.Server("t0", "training")
    agent.resize([aryl.Worker("a", "t0")], {"t0": server})
    agent.step(30.0)
    agent.save()
    assert json.loads(agent.path.read_text()) == {"done": pytest.approx(0.3)}
    agent.step(40.0)
    with pytest.raises(OSError):
        agent.save()
    assert json.loads(agent.path.read_text()) == {"done": pytest.approx(0.3)}
    assert agent.saved == pytest.approx(0.3)


def test_emulated_progress_is_the_simulators(tmp_path):
    job = Job("a", 4, 1, 3, 1000.0, hetero=True)
    servers = {
        "v": aryl.Server("v", "training", 8, "V100"),
        "t": aryl.Server("t", "training", 8, "T4"),
    }
    workers = [aryl.Worker("a", "v", 4), aryl.Worker("a", "t", 4)]
    speed = {"V100": 1.0, "T4": 0.25}
    state = aryl.ClusterState.from_records(list(servers.values()), [job], workers)
    state.advance(100.0, gpu_speed=speed)
    rate = progress_rate(job, workers, servers, speed)
    assert 1.0 - state.remaining["a"] == pytest.approx(rate * 100.0, rel=1e-12)


def test_bad_input_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="unknown policy"):
        live(tmp_path, "nope")
    with pytest.raises(TypeError, match="allocate"):
        live(tmp_path, object())
    with pytest.raises(ValueError, match="grace"):
        live(tmp_path, grace=-1.0)
    with pytest.raises(TypeError, match="resize, step, save and load"):
        JobAgent("a", object(), str(tmp_path))
    with pytest.raises(TypeError, match=r"programs\['j0'\]"):
        live(tmp_path, programs={"j0": object()})
    with pytest.raises(ValueError, match="unknown job 'x'"):
        live(tmp_path, programs={"x": EmulatedJob(JOBS[0], {})})
    with pytest.raises(ValueError, match="resume"):
        live(tmp_path, journal=None, resume=True)
    with pytest.raises(ValueError, match="reclaim policy"):
        live(tmp_path, reclaim="exact")
    assert not math.isnan(live(tmp_path)[0].run().summary()["jct_mean"])


class Picky(Logged):
    """Rejects one job and chooses the reclaimed servers itself, last lent first."""

    def admit(self, job, epoch):
        return job.id != "j5"

    def reclaim(self, state, n, epoch):
        lent = [s.id for s in state.servers() if s.on_loan]
        return lent[::-1][:n]


def test_admit_and_reclaim_hooks_answer_as_in_simulate(tmp_path):
    simulated, live_policy = Picky(), Picky()
    sim = simulate(JOBS, CLUSTER, simulated, inference_load=LOAD, config=CONFIG)
    result = live(tmp_path, live_policy)[0].run().check()
    assert live_policy.log == simulated.log
    assert result.jobs["rejected"].tolist() == sim.jobs["rejected"].tolist()
    assert result.jobs.set_index("id").loc["j5", "rejected"]
    np.testing.assert_allclose(result.jobs["jct"], sim.jobs["jct"], rtol=1e-9)
    restored = replay(tmp_path / "journal.jsonl", JOBS, CLUSTER.servers())
    assert restored.rejected == ["j5"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--local-cluster", "4x4"], "T+I"),
        (["--local-cluster", "0+2"], "a training server"),
        (["--local-cluster", "2+2", "--compression", "0"], "--compression"),
        ([], "--local-cluster"),  # one of --local-cluster and --address
    ],
)
def test_aryl_live_refuses_bad_options_before_starting(tmp_path, capsys, argv, message):
    from aryl.cli import main

    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\nj0,0,8,60,\n")
    with pytest.raises(SystemExit) as stop:
        main(["live", str(jobs), *argv])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--local-cluster", "2+2", "--resume"], "a --local-cluster ends with"),
        (["--address", "127.0.0.1:1", "--resume"], "no journal to continue"),
    ],
)
def test_aryl_live_resume_needs_a_cluster_that_runs_on_and_a_journal(
    tmp_path, capsys, argv, message
):
    from aryl.cli import main

    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\nj0,0,8,60,\n")
    assert main(["live", str(jobs), "--out", str(tmp_path / "out"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_new_run_never_appends_to_an_earlier_journal(tmp_path):
    live(tmp_path)[0].run(until=1000.0)
    with pytest.raises(ValueError, match="journal of an earlier run; resume=True"):
        live(tmp_path)
    assert (
        live(tmp_path, resume=True)[0].run().check().jobs["finish_time"].notna().all()
    )
