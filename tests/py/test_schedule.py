from collections import Counter

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl.state.schedule_result import ScheduleResult
from instances import Built, random_cluster

POLICIES = aryl.defaults.SCHEDULE_POLICIES


def one_server(gpus=8):
    return [aryl.Server("s", "training", gpus=gpus)]


def check_valid(jobs, servers, workers, decision):
    """Applying the decision gives a valid state; every job within range or pending."""
    after = decision.apply(workers)
    Built(servers, jobs, after)  # raises on over-commitment or a bad worker count
    counts = Counter(w.job for w in after)
    for job in jobs:
        n = counts[job.id]
        assert n == decision.allocation[job.id]
        waiting = job.id in decision.pending or job.id in decision.unplaceable
        assert (n == 0 and waiting) or job.min_workers <= n <= job.max_workers


def test_paper_two_jobs_a_gets_3_and_b_gets_5():
    jobs = [aryl.Job("A", 1, 2, 3, 100), aryl.Job("B", 1, 2, 6, 20)]
    decision = aryl.schedule(jobs, one_server())
    assert decision.allocation == {"A": 3, "B": 5}
    assert decision.pending == [] and decision.stop == []
    assert sum(w.flexible for w in decision.start) == 4
    check_valid(jobs, one_server(), [], decision)


def test_item_values_reproduce_the_paper_table():
    # fig:elastic_pack_example: A needs 2 GPUs per worker, B 1. With capacity 4
    # after the base demands, the knapsack takes A's item and B's 2-worker item.
    a, b = aryl.Job("A", 2, 2, 3, 100), aryl.Job("B", 1, 2, 6, 20)
    decision = aryl.schedule([a, b], one_server(gpus=10))  # 6 GPUs of base, 4 left
    assert decision.allocation == {"A": 3, "B": 4}


def test_shortest_first_and_skipping():
    jobs = [
        aryl.Job("big", 8, 1, 1, 10, submit_time=0),
        aryl.Job("small", 4, 1, 1, 100, submit_time=1),
        aryl.Job("tiny", 4, 1, 1, 50, submit_time=2),
    ]
    assert aryl.schedule(jobs, one_server()).pending == ["tiny", "small"]
    running = jobs + [aryl.Job("r", 4, 1, 1, 10)]
    workers = [aryl.Worker("r", "s")]
    assert aryl.schedule(running, one_server(), workers, policy="fifo").pending == [
        "big",
        "small",
        "tiny",
    ]
    backfill = aryl.schedule(
        running, one_server(), workers, policy="fifo", backfill=True
    )
    assert backfill.pending == ["big", "tiny"] and backfill.allocation["small"] == 1
    assert (
        aryl.schedule(running, one_server(), workers, policy="sjf").allocation["tiny"]
        == 1
    )


def test_now_keeps_future_jobs_pending():
    jobs = [
        aryl.Job("now", 1, 1, 1, 10, submit_time=0),
        aryl.Job("later", 1, 1, 1, 10, submit_time=100),
    ]
    decision = aryl.schedule(jobs, one_server(), now=50)
    assert decision.allocation == {"now": 1, "later": 0} and decision.pending == [
        "later"
    ]
    assert aryl.schedule(jobs, one_server()).pending == []


def test_running_jobs_keep_base_and_shrink_to_admit():
    jobs = [aryl.Job("e", 1, 2, 8, 100), aryl.Job("q", 1, 4, 4, 10)]
    workers = [aryl.Worker("e", "s", flexible=i >= 2) for i in range(8)]
    decision = aryl.schedule(jobs, one_server(), workers)
    assert decision.allocation == {"e": 4, "q": 4}
    assert len(decision.stop) == 4 and all(w.flexible for w in decision.stop)
    check_valid(jobs, one_server(), workers, decision)


def test_unmarked_workers_count_as_base_first():
    jobs = [aryl.Job("e", 1, 2, 8, 100), aryl.Job("q", 1, 6, 6, 10)]
    workers = [aryl.Worker("e", "s", flexible=True)] * 2 + [aryl.Worker("e", "s")] * 2
    decision = aryl.schedule(jobs, one_server(), workers)
    # Stopped workers come with their GPUs filled in, as started ones do.
    assert decision.stop == [aryl.Worker("e", "s", gpus=1, flexible=True)] * 2
    after = decision.apply(workers)  # matched although the records give no gpus
    assert sorted(w.flexible for w in after) == [False] * 8


def test_placement_preferences():
    servers = [
        aryl.Server("train", "training"),
        aryl.Server("loan1", "inference", on_loan=True),
        aryl.Server("loan2", "inference", on_loan=True),
        aryl.Server("idle", "inference"),
    ]
    jobs = [aryl.Job("inelastic", 4, 1, 1, 100), aryl.Job("elastic", 4, 1, 3, 100)]
    same_speed = {"T4": 1.0}  # the pool preferences alone decide
    decision = aryl.schedule(jobs, servers, gpu_speed=same_speed)
    where = {(w.job, w.flexible): w.server for w in decision.start}
    assert where[("inelastic", False)] == "train"
    assert where[("elastic", False)] == "loan1" and where[("elastic", True)] == "loan2"
    assert all(w.server != "idle" for w in decision.start)  # not on loan: never used
    # Plain best fit packs both base workers on the V100 server; the non-hetero
    # elastic job is then pinned to V100 and cannot grow onto the T4 servers.
    plain = aryl.schedule(jobs, servers, placement="bfd", gpu_speed=same_speed)
    assert {w.server for w in plain.start} == {"train"}
    assert plain.allocation == {"inelastic": 1, "elastic": 1}
    # At real speeds one V100 worker (1.0) beats three T4 workers (0.75): the
    # elastic job takes the V100 room the inelastic one left.
    real = aryl.schedule(jobs, servers)
    assert {w.server for w in real.start} == {"train"}
    assert real.allocation == {"inelastic": 1, "elastic": 1}


def test_gpu_types():
    servers = [
        aryl.Server("v", "training"),
        aryl.Server("t", "inference", on_loan=True),
    ]
    jobs = [aryl.Job("t4", 2, 2, 2, 10, gpu_type="T4"), aryl.Job("wide", 4, 3, 3, 20)]
    decision = aryl.schedule(jobs, servers)
    assert {w.server for w in decision.start if w.job == "t4"} == {"t"}
    # 12 GPUs, but only 8 of each type: it can never start, and is reported so
    assert decision.pending == [] and list(decision.unplaceable) == ["wide"]
    hetero = [jobs[0], aryl.Job("wide", 4, 3, 3, 20, hetero=True)]
    assert aryl.schedule(hetero, servers).pending == []


def test_gandiva_grows_only_when_nothing_is_pending():
    jobs = [aryl.Job("e", 1, 2, 6, 100)]
    assert aryl.schedule(jobs, one_server(), policy="gandiva").allocation == {"e": 6}
    crowded = jobs + [aryl.Job("q", 8, 1, 1, 10)]  # can never fit beside e
    assert aryl.schedule(crowded, one_server(), policy="gandiva").allocation == {
        "e": 2,
        "q": 0,
    }


def test_afs_favours_the_larger_progress_gain_per_gpu():
    jobs = [aryl.Job("long", 1, 1, 8, 1000), aryl.Job("short", 1, 1, 4, 10)]
    assert aryl.schedule(jobs, one_server(), policy="afs").allocation == {
        "long": 4,
        "short": 4,
    }


def test_remaining_work_changes_the_values():
    jobs = [aryl.Job("a", 1, 1, 5, 100), aryl.Job("b", 1, 1, 5, 100)]
    decision = aryl.schedule(jobs, one_server(gpus=6), remaining={"a": 0.1})
    assert decision.allocation == {"a": 1, "b": 5}


def test_inputs_as_dicts_and_dataframes():
    jobs = [aryl.Job("A", 1, 2, 3, 100), aryl.Job("B", 1, 2, 6, 20)]
    expected = aryl.schedule(jobs, one_server()).allocation
    frames = (
        pd.DataFrame([vars(j) for j in jobs]),
        pd.DataFrame([vars(s) for s in one_server()]),
    )
    assert aryl.schedule(*frames).allocation == expected
    assert (
        aryl.schedule(
            [vars(j) for j in jobs], [vars(s) for s in one_server()]
        ).allocation
        == expected
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_gives_valid_decisions_over_epochs(policy):
    for seed in range(30):
        jobs, servers = random_cluster(seed)
        workers = []
        for epoch in range(3):
            decision = aryl.schedule(jobs, servers, workers, policy=policy)
            check_valid(jobs, servers, workers, decision)
            before = Counter(w for w in workers if not w.flexible)
            workers = decision.apply(workers)
            after = Counter(workers)
            assert all(
                after[w] >= n for w, n in before.items()
            )  # base workers never move
            jobs = (
                jobs[2:] + jobs[:2] if epoch else jobs
            )  # reorder input: same semantics


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(policy="lottery"), "unknown policy 'lottery'"),
        (dict(placement="random"), "unknown placement 'random'"),
        (dict(remaining={"x": 0.5}), "remaining: unknown job 'x'"),
        (dict(remaining={"A": 0.0}), "job 'A': remaining must be in"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        aryl.schedule([aryl.Job("A", 1, 1, 2, 10)], one_server(), **kwargs)


def test_bad_input_names_the_record():
    with pytest.raises(ValueError, match="job 'A': min_workers 3 > max_workers 2"):
        aryl.schedule([aryl.Job("A", 1, 3, 2, 10)], one_server())
    with pytest.raises(ValueError, match="worker 0: unknown job 'ghost'"):
        aryl.schedule([], one_server(), [aryl.Worker("ghost", "s")])


def test_decision_displays():
    decision = aryl.schedule([aryl.Job("A", 1, 1, 2, 10)], one_server())
    assert "Decision" in decision._repr_html_()


@pytest.mark.parametrize(
    "real_speeds", [False, True], ids=["reference-speed", "T4-quarter"]
)
@pytest.mark.parametrize("seed", range(25))
def test_kernel_matches_the_python_reference(seed, real_speeds):
    from reference.schedule import schedule as reference

    jobs, servers = random_cluster(seed)
    workers = []
    for _ in range(3):
        state = Built(servers, jobs, workers)
        speed = [
            aryl.defaults.DEFAULT_GPU_SPEED.get(s.gpu_type, 1.0) if real_speeds else 1.0
            for s in state.servers
        ]
        raw = aryl._core.schedule(state.core, speed=speed)
        triples = [
            (state.job_index[w.job], state.server_index[w.server], w.flexible)
            for w in state.workers
        ]
        start, stop, allocation, pending = reference(
            state.servers, state.jobs, triples, speed
        )
        assert [tuple(x) for x in raw.start] == start
        assert (list(raw.stop), list(raw.allocation), list(raw.pending)) == (
            stop,
            allocation,
            pending,
        )
        result = ScheduleResult(
            state.state, state.state.version, "aryl", raw, None, np.zeros(0, int), {}
        )
        workers = result.decision.apply(workers)
