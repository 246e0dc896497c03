import random

import pandas as pd
import pytest
from reference.reclaim import aryl_reclaim

import aryl
from aryl import _core
from instances import Built, random_loaned_cluster


def test_paper_example_costs_are_the_server_fractions(paper_example):
    state = Built(*paper_example)
    # table:server_cost, last column ("sum of job's server fraction").
    assert _core.preemption_costs(state.core) == [0.5, 0.5, 1.0, 0.5, 1.0, 0.5]


def test_paper_example_returns_servers_1_and_2(paper_example):
    plan = aryl.reclaim(*paper_example, n=2)
    assert plan.servers == [1, 2]
    assert plan.preempted == ["a"]
    assert plan.scaled_in == {}
    assert (plan.demand_gpus, plan.collateral_gpus, plan.collateral_damage) == (
        16,
        0,
        0.0,
    )


def test_paper_example_the_knapsack_reading_would_preempt_more(paper_example):
    # Counting jobs per server (SCF) cannot see that server 2 empties with 1.
    exact = aryl.reclaim(*paper_example, n=2, policy="exact")
    assert sorted(exact.servers) == [1, 2] and exact.preempted == ["a"]
    assert len(aryl.reclaim(*paper_example, n=1).preempted) == 1


def test_inputs_as_dicts_and_dataframes(paper_example):
    servers, jobs, workers = paper_example
    as_dicts = [[vars(r) for r in records] for records in paper_example]
    as_frames = [pd.DataFrame(records) for records in as_dicts]
    expected = aryl.reclaim(servers, jobs, workers, 2)
    assert aryl.reclaim(*as_dicts, 2) == expected
    assert aryl.reclaim(*as_frames, 2) == expected


def test_scale_in_avoids_a_preemption():
    servers = [
        aryl.Server("train", "training"),
        aryl.Server("busy", "inference", on_loan=True),
        aryl.Server("flex", "inference", on_loan=True),
    ]
    jobs = [aryl.Job("small", 8, 1, 1, 60), aryl.Job("big", 4, 2, 4, 60, hetero=True)]
    workers = [
        aryl.Worker("small", "busy"),
        aryl.Worker("big", "train"),
        aryl.Worker("big", "train"),
        aryl.Worker("big", "flex", flexible=True),
        aryl.Worker("big", "flex", flexible=True),
    ]
    plan = aryl.reclaim(servers, jobs, workers, 1)
    assert plan.servers == ["flex"]
    assert plan.preempted == []
    assert plan.scaled_in == {"big": 2}
    # Both servers: the scale-in still comes first, then small is preempted.
    both = aryl.reclaim(servers, jobs, workers, 2)
    assert both.servers == ["flex", "busy"] and both.preempted == ["small"]
    # SCF sees one job per server and takes them in input order.
    assert aryl.reclaim(servers, jobs, workers, 1, policy="scf").preempted == ["small"]


def test_scaling_in_past_min_is_a_preemption():
    servers = [aryl.Server(s, "inference", on_loan=True) for s in "xyz"]
    jobs = [aryl.Job("e", 4, 2, 4, 60)]
    workers = [aryl.Worker("e", s) for s in "xxyy"]
    plan = aryl.reclaim(servers, jobs, workers, 3)
    assert plan.servers[0] == "z"
    assert plan.preempted == ["e"] and plan.scaled_in == {}


@pytest.mark.parametrize("seed", range(40))
def test_kernel_matches_the_python_reference(seed):
    servers, jobs, workers = random_loaned_cluster(seed, loaned=12, jobs=30)
    state = Built(servers, jobs, workers)
    on_loan = [i for i, s in enumerate(servers) if s.on_loan]
    pairs = [(state.job_index[w.job], state.server_index[w.server]) for w in workers]
    mins = [j.min_workers for j in jobs]
    for n in range(len(on_loan) + 1):
        plan = _core.reclaim(state.core, n, "aryl")
        assert (list(plan.servers), list(plan.preempted)) == aryl_reclaim(
            on_loan, pairs, mins, n
        )


def test_quality_against_exact_scf_and_random():
    total = {p: 0 for p in aryl.defaults.RECLAIM_POLICIES}
    instances = 0
    for seed in range(300):
        servers, jobs, workers = random_loaned_cluster(seed)
        n = random.Random(seed).randint(1, 6)
        plans = {
            p: aryl.reclaim(servers, jobs, workers, n, p, seed=seed) for p in total
        }
        for p, plan in plans.items():
            assert len(plans["exact"].preempted) <= len(plan.preempted), (seed, p)
            assert len(set(plan.servers)) == n
            total[p] += len(plan.preempted)
        instances += 1
    assert instances == 300
    assert total["aryl"] <= 1.15 * total["exact"], total
    assert total["aryl"] < total["scf"] and total["aryl"] < total["random"], total


def test_random_is_seeded(paper_example):
    first = aryl.reclaim(*paper_example, 3, policy="random", seed=5)
    assert aryl.reclaim(*paper_example, 3, policy="random", seed=5) == first
    picks = {
        tuple(aryl.reclaim(*paper_example, 3, policy="random", seed=s).servers)
        for s in range(20)
    }
    assert len(picks) > 5


def test_integer_and_string_ids_are_kept():
    servers = [
        aryl.Server(7, "inference", on_loan=True),
        aryl.Server("x", "inference", on_loan=True),
    ]
    jobs = [aryl.Job(1, 8, 1, 1, 60)]
    plan = aryl.reclaim(servers, jobs, [aryl.Worker(1, 7)], 2)
    assert plan.servers == ["x", 7] and plan.preempted == [1]


def test_ids_that_print_alike_are_duplicates():
    servers = [
        aryl.Server(7, "inference", on_loan=True),
        aryl.Server("7", "inference", on_loan=True),
    ]
    with pytest.raises(ValueError, match="duplicate server id '7'"):
        aryl.reclaim(servers, [], [], 1)


@pytest.mark.parametrize(
    "n, policy, message",
    [
        (7, "aryl", "asked to reclaim 7 servers but only 6 are on loan"),
        (-1, "aryl", "cannot reclaim -1 servers"),
        (2, "greedy", "unknown reclaim policy 'greedy'"),
    ],
)
def test_bad_requests(paper_example, n, policy, message):
    with pytest.raises(ValueError, match=message):
        aryl.reclaim(*paper_example, n, policy=policy)


def test_exact_refuses_large_instances():
    servers = [aryl.Server(i, "inference", on_loan=True) for i in range(60)]
    jobs = [aryl.Job(i, 8, 1, 1, 60) for i in range(60)]
    workers = [aryl.Worker(i, i) for i in range(60)]
    with pytest.raises(ValueError, match="use policy 'aryl'"):
        aryl.reclaim(servers, jobs, workers, 30, policy="exact")
    assert len(aryl.reclaim(servers, jobs, workers, 30).preempted) == 30


def test_nothing_to_return():
    plan = aryl.reclaim([aryl.Server(0, "inference", on_loan=True)], [], [], 0)
    assert plan.servers == [] and plan.collateral_damage == 0.0
    assert "ReclaimPlan" in plan._repr_html_()
