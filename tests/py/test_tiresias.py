"""Tiresias rounds (aryl._core.tiresias_round) by hand and against the reference."""

import random

import pytest
from reference.tiresias import tiresias_round as reference

from aryl import _core

HOUR = 3600.0


def test_hand_checked_round():
    # Two 4-GPU nodes. Job 0 (4 GPUs) has run 5 h: 20 GPU-h >= 16, demoted behind job 2.
    # Job 1 (2 GPUs) keeps node 1. Job 2 (4 GPUs) is new: fits, goes to node 0 (4 free).
    # Job 0 then needs 4 of the 2 GPUs left: stopped. Job 3 (2 GPUs) in queue 1 runs.
    out = _core.tiresias_round(
        gpus=[4, 2, 4, 2],
        executed_time=[5 * HOUR, 1 * HOUR, 0, 9 * HOUR],
        allocations=[[0, 0, 0, 0], [1, 1], [], []],
        queue0=[0, 1, 2],
        queue1=[3],
        node_gpus=[4, 4],
    )
    assert out["demoted"] == [0]
    assert out["queue0"] == [1, 2] and out["queue1"] == [3, 0]
    assert out["running"] == [False, True, True, True]
    assert out["allocations"] == [[], [1, 1], [0, 0, 0, 0], [1, 1]]


def test_new_jobs_take_the_emptiest_nodes_first():
    out = _core.tiresias_round([3, 5], [0, 0], [[], []], [0, 1], [], [4, 4, 4])
    assert out["allocations"] == [[0, 0, 0], [1, 1, 1, 1, 2]]
    assert _core.allocation_placement(out["allocations"][1]) == [4, 1]


def test_threshold_is_executed_time_times_gpus():
    at = 16 * HOUR / 8
    out = _core.tiresias_round([8, 8], [at, at - 1], [[], []], [0, 1], [], [8, 8])
    assert out["demoted"] == [0] and out["queue0"] == [1] and out["queue1"] == [0]
    assert _core.tiresias_default_threshold == 16 * HOUR


@pytest.mark.parametrize("seed", range(30))
def test_matches_reference(seed):
    rng = random.Random(seed)
    nodes = [rng.choice([2, 4, 8]) for _ in range(rng.randint(1, 5))]
    n = rng.randint(0, 12)
    gpus = [rng.choice([1, 2, 4, 8]) for _ in range(n)]
    executed = [rng.choice([0.0, rng.uniform(0, 10 * HOUR)]) for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    cut = rng.randint(0, n)
    q0, q1 = sorted(order[:cut]), order[cut:]
    # Allocations of a feasible previous round.
    allocations, free = [[] for _ in range(n)], list(nodes)
    for j in order:
        if rng.random() < 0.5 and sum(free) >= gpus[j]:
            while len(allocations[j]) < gpus[j]:
                k = rng.choice([i for i, f in enumerate(free) if f > 0])
                allocations[j].append(k)
                free[k] -= 1
    got = _core.tiresias_round(gpus, executed, allocations, q0, q1, nodes)
    assert got == reference(gpus, executed, allocations, q0, q1, nodes)
    used = [0] * len(nodes)
    for j, alloc in enumerate(got["allocations"]):
        assert len(alloc) == (gpus[j] if got["running"][j] else 0)
        for k in alloc:
            used[k] += 1
    assert all(u <= c for u, c in zip(used, nodes))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"gpus": [0]}, "job 0 requests 0 GPUs"),
        ({"queue0": [], "queue1": []}, "job 0 is in no queue"),
        ({"queue0": [0], "queue1": [0]}, "job 0 is queued twice"),
        ({"queue0": [1]}, "queue entry 1 is not a job index"),
        ({"allocations": [[5]]}, "unknown node 5"),
        ({"allocations": [[0, 0]]}, "holds 2 GPUs but requests 1"),
        ({"executed_time": [-1.0]}, "executed_time -1"),
        ({"gpus": ["a"]}, "gpus must be a sequence of numbers"),
    ],
)
def test_errors_name_the_record(kwargs, message):
    args = {
        "gpus": [1],
        "executed_time": [0.0],
        "allocations": [[]],
        "queue0": [0],
        "queue1": [],
        "node_gpus": [4],
    }
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=message):
        _core.tiresias_round(**args)
