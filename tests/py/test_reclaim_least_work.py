"""The least-work reclaim policy (issue 43, item 3): the name works in the API, the
state, ``simulate``, the CLI, a sweep and live; the work at risk it weighs; bad
input is a ``ValueError``. The kernel against its exact optimum is in
tests/cpp/test_reclaim_least_work.cpp."""

import json

import numpy as np
import pytest

import aryl
from aryl import Job, Server, Worker, sim, traces
from aryl.cli import main
from aryl.defaults import RECLAIM_POLICIES, SIMULATION_RECLAIM_POLICIES
from aryl.live import Controller, FakeBackend, VirtualClock
from aryl.studies.sweep import run_point

# Two on-loan servers, one job each, neither with a checkpoint: "old" has run a
# long time, "fresh" has just started; Algorithm 1 sees two equal servers.
SERVERS = [
    Server("t0", "training"),
    Server("a", "inference", on_loan=True),
    Server("b", "inference", on_loan=True),
]
JOBS = [
    Job("old", 8, 1, 1, 10_000.0, checkpoint=False),
    Job("fresh", 8, 1, 1, 10_000.0, checkpoint=False),
]
WORKERS = [Worker("old", "a"), Worker("fresh", "b")]
UNSAVED = {"old": 8 * 9_000.0, "fresh": 8 * 60.0}


def test_the_names_are_reclaim_policies():
    assert {"least-work", "exact-work"} <= set(RECLAIM_POLICIES)
    assert "least-work" in SIMULATION_RECLAIM_POLICIES
    assert "exact-work" not in SIMULATION_RECLAIM_POLICIES  # one-off requests only


def test_least_work_spares_the_job_with_unsaved_progress():
    plan = aryl.reclaim(SERVERS, JOBS, WORKERS, 1, "least-work", unsaved=UNSAVED)
    assert plan.servers == ["b"] and plan.preempted == ["fresh"]
    assert plan.work_lost == 8 * 60.0 and plan.policy == "least-work"
    # Algorithm 1 takes the first of two equal servers, and loses the old job's work
    aryl_plan = aryl.reclaim(SERVERS, JOBS, WORKERS, 1, "aryl", unsaved=UNSAVED)
    assert aryl_plan.preempted == ["old"] and aryl_plan.work_lost == 8 * 9_000.0
    exact = aryl.reclaim(SERVERS, JOBS, WORKERS, 1, "exact-work", unsaved=UNSAVED)
    assert exact.servers == ["b"]


def test_the_default_unsaved_work_is_what_the_state_knows():
    # Records carry no progress: nothing unsaved, so without checkpoints both cost 0
    # and the tie goes to input order.
    plan = aryl.reclaim(SERVERS, JOBS, WORKERS, 1, "least-work")
    assert plan.servers == ["a"] and plan.work_lost == 0.0
    # A state that has advanced knows the progress: 8 GPUs x the reference
    # seconds done (fraction done x estimated duration at its reference workers):
    # 3,000 s on a T4 at a quarter of a V100.
    state = aryl.ClusterState.from_records(SERVERS, JOBS, WORKERS)
    state.advance(3_000.0)
    result = state.reclaim(1, "least-work")
    assert result.plan.servers == ["a"]  # both ran 3,000 s: a tie
    assert result.work_lost == pytest.approx(8 * 3_000.0 * 0.25)
    result = state.reclaim(1, "least-work", unsaved={"old": 8 * 9_000.0})
    assert result.plan.servers == ["b"]  # the one named, the other estimated
    assert result.work_lost == pytest.approx(8 * 3_000.0 * 0.25)


def test_a_checkpointed_job_costs_its_restart_and_a_scale_in_nothing():
    servers = SERVERS + [Server("c", "inference", on_loan=True)]
    jobs = [
        Job("saved", 8, 1, 1, 10_000.0),  # checkpoint: 63 s x 8 GPUs
        Job("fresh", 2, 1, 1, 10_000.0, checkpoint=False),
        Job("elastic", 4, 1, 3, 10_000.0, checkpoint=False, hetero=True),
    ]
    workers = [
        Worker("saved", "a"),
        Worker("fresh", "b"),
        Worker("elastic", "t0"),
        Worker("elastic", "c", flexible=True),
        Worker("elastic", "c", flexible=True),
    ]
    unsaved = {"fresh": 2 * 600.0, "elastic": 12 * 50_000.0}
    plan = aryl.reclaim(servers, jobs, workers, 2, "least-work", unsaved=unsaved)
    assert plan.servers == ["c", "a"]  # the scale-in first; then 504 < 1,200
    assert plan.scaled_in == {"elastic": 2} and plan.preempted == ["saved"]
    assert plan.work_lost == 63.0 * 8
    free = aryl.reclaim(
        servers, jobs, workers, 2, "least-work", unsaved=unsaved, restart_overhead=0.0
    )
    assert free.preempted == ["saved"] and free.work_lost == 0.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(policy="least_work"), "did you mean 'least-work'"),
        (dict(policy="least-work", unsaved={"nobody": 1.0}), "unknown job 'nobody'"),
        (dict(policy="least-work", unsaved={"old": -1.0}), "unsaved work of job 'old'"),
        (dict(policy="least-work", unsaved={"old": float("nan")}), "'old'"),
        (dict(policy="least-work", restart_overhead=-1.0), "restart_overhead"),
        (dict(policy="least-work", n=3), "only 2 are on loan"),
    ],
)
def test_bad_input_is_a_value_error(kwargs, message):
    args = {"n": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        aryl.reclaim(SERVERS, JOBS, WORKERS, **args)


def test_unsaved_must_be_a_mapping():
    with pytest.raises(TypeError, match="mapping of job id"):
        aryl.reclaim(SERVERS, JOBS, WORKERS, 1, "least-work", unsaved=[1.0, 2.0])


def test_exact_work_refuses_a_state_too_large():
    servers = [Server(f"s{i}", "inference", on_loan=True) for i in range(60)]
    jobs = [Job(f"j{i}", 8, 1, 1, 100.0) for i in range(60)]
    workers = [Worker(f"j{i}", f"s{i}") for i in range(60)]
    with pytest.raises(ValueError, match="exact-work reclaim would search"):
        aryl.reclaim(servers, jobs, workers, 30, "exact-work")


def small_trace(seed=0, checkpoint=False):
    """A busy small cluster whose lent servers are taken back while in use."""
    rng = np.random.default_rng(seed)
    jobs = [
        Job(
            f"j{i}",
            int(rng.choice([1, 2, 4, 8])),
            1,
            1,
            float(rng.uniform(600, 6_000)),
            submit_time=float(rng.uniform(0, 3_600)),
            checkpoint=checkpoint,
        )
        for i in range(40)
    ]
    load = [(300.0 * k, float(rng.random())) for k in range(40)]
    return jobs, load


def test_simulate_runs_least_work_and_books_its_losses():
    jobs, load = small_trace()
    results = {
        policy: sim.simulate(
            jobs,
            sim.Cluster(2, 4),
            reclaim=policy,
            inference_load=load,
            config={"audit": True, "lend_hold": 0.0},
        ).check()
        for policy in ("aryl", "least-work")
    }
    lw = results["least-work"]
    assert lw.provenance.reclaim == "least-work"
    summary = lw.summary()
    assert summary["jobs_finished"] == len(jobs)
    assert lw.totals["reclaims"] > 0 and summary["preemption_ratio"] > 0
    assert summary["work_lost_gpu_hours"] >= 0.0
    with pytest.raises(ValueError, match="reclaim policy"):
        sim.simulate(jobs, sim.Cluster(2, 4), reclaim="exact-work", inference_load=load)


def test_the_cli_and_a_sweep_take_least_work(tmp_path, capsys):
    jobs, load = traces.load_default()
    jobs.iloc[:200].to_csv(tmp_path / "jobs.csv", index=False)
    load.to_csv(tmp_path / "load.csv", index=False)
    common = [str(tmp_path / "jobs.csv"), "--load", str(tmp_path / "load.csv")]
    sizes = ["--training-servers", "8", "--inference-servers", "8"]
    out = tmp_path / "o"
    assert (
        main(
            ["simulate", *common, *sizes, "--reclaim", "least-work", "--out", str(out)]
        )
        == 0
    )
    capsys.readouterr()
    cli = json.loads((out / "summary.json").read_text())
    assert cli["provenance"]["run"]["reclaim"] == "least-work"
    small = {"first_jobs": 200, "training_servers": 8, "inference_servers": 8}
    api = run_point(
        {**small, "reclaim": "least-work", "trace": "itp"}, (jobs.iloc[:200], load)
    ).summary()
    assert {k: cli[k] for k in api} == api
    sweep_out = tmp_path / "s"
    argv = ["sweep", *common, "--training-servers", "8", "--inference-servers", "8"]
    argv += ["--grid", "reclaim=aryl,least-work", "--engine", "serial"]
    assert main([*argv, "--out", str(sweep_out)]) == 0
    printed = capsys.readouterr().out
    assert "least-work" in printed
    with pytest.raises(SystemExit):
        main(["simulate", *common, "--reclaim", "least_work"])
    assert "'least-work'" in capsys.readouterr().err


def live_controller(tmp_path, reclaim, jobs, load, cluster):
    return Controller(
        jobs,
        cluster,
        FakeBackend(str(tmp_path / reclaim / "ckpt")),
        "aryl",
        reclaim=reclaim,
        load=load,
        config=sim.Config(lend_hold=0.0),
        clock=VirtualClock(),
        journal=None,
    )


def test_live_decides_as_simulate_under_least_work(tmp_path):
    # least-work preempts the job that has run least
    jobs, cluster, load = staggered()
    config = sim.Config(lend_hold=0.0)
    simulated = sim.simulate(
        jobs, cluster, reclaim="least-work", inference_load=load, config=config
    )
    result = live_controller(tmp_path, "least-work", jobs, load, cluster).run()
    for column in ("start_time", "finish_time", "preemptions"):
        np.testing.assert_allclose(
            result.jobs[column], simulated.jobs[column], rtol=1e-9
        )
    assert result.totals["reclaims"] == simulated.totals["reclaims"] >= 1
    preempted = result.jobs.set_index("id")["preemptions"]
    assert preempted.sum() == 1
    # the job preempted is the one that had run least by then (the last started,
    # 900 s); Algorithm 1 takes the first of three equal servers (j1, 2,280 s)
    assert preempted.idxmax() == "j3"
    aryl_run = live_controller(tmp_path, "aryl", jobs, load, cluster).run()
    assert aryl_run.jobs.set_index("id")["preemptions"].idxmax() == "j1"
    assert simulated.jobs.set_index("id")["work_lost"].to_dict()["j3"] == 900.0


def test_aryl_live_accepts_least_work(tmp_path, capsys):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\nj0,0,8,60,\n")
    # a bad cluster stops it after the options parsed: the reclaim name passed
    with pytest.raises(SystemExit):
        main(["live", str(jobs), "--reclaim", "least-work", "--local-cluster", "4x4"])
    err = capsys.readouterr().err
    assert "T+I" in err and "--reclaim" not in err
    with pytest.raises(SystemExit):
        main(["live", str(jobs), "--reclaim", "exact-work", "--local-cluster", "2+2"])
    assert "--reclaim" in capsys.readouterr().err


class LeastWorkViaHooks:
    """aryl's allocation and least-work's reclaim, asked through the hooks."""

    name = "least-work via hooks"

    def allocate(self, state, epoch):
        return state.schedule("aryl", **epoch.schedule_options)

    def reclaim(self, state, n, epoch):
        return state.reclaim(n, "least-work")


def staggered():
    """One-server jobs without checkpoints on V100 servers; the load takes one of
    three lent servers back at 3,000 s, when each job has run a different time."""
    jobs = [
        Job(f"j{i}", 8, 1, 1, 6000 + 500 * i, submit_time=700 * i, checkpoint=False)
        for i in range(4)
    ]
    return jobs, sim.Cluster(1, 3, inference_gpu="V100"), [(0.0, 0.0), (3000.0, 0.3)]


@pytest.mark.parametrize("trace", ["staggered", "small"])
def test_a_reclaim_hook_sees_the_progress_the_engine_weighs(trace):
    # The reclaim hook's state holds each job's fraction left, so least-work asked
    # through it (the state's own estimate of unsaved work) decides as built in.
    if trace == "staggered":
        jobs, cluster, load = staggered()
    else:
        (jobs, load), cluster = small_trace(0), sim.Cluster(2, 4)
    config = {"lend_hold": 0.0, "gpu_speed": {"V100": 1.0, "T4": 1.0}}
    run = dict(inference_load=load, config=config)
    built_in = sim.simulate(jobs, cluster, reclaim="least-work", **run)
    asked = sim.simulate(jobs, cluster, LeastWorkViaHooks(), **run).check()
    assert built_in.totals["reclaims"] > 0 and built_in.jobs["preemptions"].sum() > 0
    for column in ("start_time", "finish_time", "preemptions", "work_lost"):
        np.testing.assert_array_equal(asked.jobs[column], built_in.jobs[column])
    if trace == "staggered":  # the job that has run least, not the first server's
        assert asked.jobs.set_index("id")["preemptions"].idxmax() == "j3"
