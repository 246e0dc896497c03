"""The live API: ``ClusterState.advance`` moves remaining work as the simulator
does, so a scheduler loop need not rebuild ``remaining`` each epoch; a reclaim plan
names the workers to stop."""

import math

import pytest

import aryl
from aryl import sim
from aryl.model import Worker

V100, T4 = (
    aryl.Server("v", "training", 8, "V100"),
    aryl.Server("t", "training", 8, "T4"),
)


def simulated_jct(job, servers, **config):
    """The simulator's running time of ``job`` alone on ``servers`` (it starts at 0)."""
    run = sim.simulate([job], servers, config=config)
    return float(run.jobs["jct"].iloc[0])


@pytest.mark.parametrize(
    "job, servers, workers",
    [
        (aryl.Job("a", 8, 1, 1, 3600.0), [V100], [Worker("a", "v")]),
        (aryl.Job("a", 8, 1, 1, 3600.0, gpu_type="T4"), [T4], [Worker("a", "t")]),
        (  # a hetero job over both types: mean speed x the hetero efficiency
            aryl.Job("a", 8, 2, 2, 3600.0, hetero=True),
            [V100, T4],
            [Worker("a", "v"), Worker("a", "t")],
        ),
        (  # elastic, on its minimum: work is counted at max_workers
            aryl.Job("a", 4, 1, 3, 1000.0, gpu_type="V100"),
            [aryl.Server("v", "training", 4, "V100")],
            [Worker("a", "v")],
        ),
    ],
)
def test_advance_moves_work_as_the_simulator_does(job, servers, workers):
    jct = simulated_jct(job, servers)
    state = aryl.ClusterState.from_records(servers, [job], workers)
    assert state.advance(jct / 4) == [] and state.advance(jct / 4) == []
    assert math.isclose(state.remaining["a"], 0.5, rel_tol=1e-9)
    assert state.advance(jct / 2 * (1 - 1e-9)) == []
    assert state.advance(jct * 1e-8) == ["a"]


def test_the_next_epoch_uses_what_advance_kept():
    servers = [aryl.Server(f"s{i}", "training", 8, "V100") for i in range(4)]
    jobs = [aryl.Job("e", 8, 1, 4, 7200.0), aryl.Job("q", 8, 1, 1, 600.0)]
    state = aryl.ClusterState.from_records(servers, jobs, [Worker("e", "s0")])
    state.advance(900.0)
    left = state.remaining
    assert math.isclose(left["e"], 1 - 900.0 / (7200.0 * 4), rel_tol=1e-12)
    kept = state.schedule().decision
    given = aryl.ClusterState.from_records(servers, jobs, [Worker("e", "s0")])
    assert kept == given.schedule(remaining=left).decision
    assert state.schedule(remaining={}).decision == given.schedule().decision


def test_idle_jobs_keep_their_work_and_removed_jobs_are_forgotten():
    state = aryl.ClusterState.from_records(
        [V100],
        [aryl.Job("a", 8, 1, 1, 100.0), aryl.Job("b", 8, 1, 1, 100.0)],
        [Worker("a", "v")],
    )
    assert state.advance(50.0) == [] and state.remaining == {"a": 0.5}
    assert state.advance(60.0) == ["a"]
    state.remove_jobs(["a"])
    assert state.remaining == {}


@pytest.mark.parametrize("seconds", [-1.0, math.inf, math.nan, "1"])
def test_bad_seconds_are_refused(seconds):
    state = aryl.ClusterState.from_records([V100], [aryl.Job("a", 8, 1, 1, 100.0)])
    with pytest.raises((ValueError, TypeError), match="seconds"):
        state.advance(seconds)
    assert state.remaining == {}


def test_a_reclaim_plan_names_the_workers_to_stop(paper_example):
    servers, jobs, workers = paper_example
    plan = aryl.reclaim(servers, jobs, workers, 2)
    stop = plan.stop
    returned = set(plan.servers)
    # every worker of a preempted job, and the others' workers on returned servers
    expected = [
        w
        for w in aryl.ClusterState.from_records(servers, jobs, workers).workers()
        if w.job in plan.preempted or w.server in returned
    ]
    assert sorted(map(repr, stop)) == sorted(map(repr, expected))
    assert all(w.gpus is not None for w in stop)
    for job, count in plan.scaled_in.items():
        assert sum(w.job == job for w in stop) == count
    after = aryl.Decision("aryl", stop=stop).apply(workers)  # exactly these stop
    assert not {w.server for w in after} & returned


def test_the_readme_live_scheduler_block_runs_as_written():
    from test_provenance import readme_blocks

    (block,) = readme_blocks("### A live scheduler: `aryl.ClusterState`")
    namespace: dict = {}
    exec(compile(block, "README live scheduler", "exec"), namespace)
    state = namespace["state"]
    assert state.n_jobs == 3 - len(namespace["done"])
