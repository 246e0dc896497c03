import itertools
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


# ---- a caller's filter: among= ----------------------------------------------------------


def _among(seed, servers):
    """A random subset of the on-loan server ids (at least one), in shuffled order."""
    rng = random.Random(seed)
    loaned = [s.id for s in servers if s.on_loan]
    among = rng.sample(loaned, rng.randint(1, len(loaned)))
    return among


@pytest.mark.parametrize("seed", range(40))
def test_among_is_algorithm_1_over_the_servers_given(seed):
    """The greedy over the given servers only (in the state's order, whatever order
    they are given in): the reference run with those servers as the candidates,
    while preemption still counts every worker of a job."""
    servers, jobs, workers = random_loaned_cluster(seed, loaned=12, jobs=30)
    state = Built(servers, jobs, workers)
    among = _among(seed, servers)
    candidates = sorted(state.server_index[s] for s in among)
    pairs = [(state.job_index[w.job], state.server_index[w.server]) for w in workers]
    mins = [j.min_workers for j in jobs]
    for n in range(len(among) + 1):
        plan = _core.reclaim(
            state.core, n, "aryl", 0, [state.server_index[s] for s in among]
        )
        assert (list(plan.servers), list(plan.preempted)) == aryl_reclaim(
            candidates, pairs, mins, n
        )


@pytest.mark.parametrize("seed", range(60))
def test_among_exact_is_the_brute_force_optimum(seed):
    """`exact` among the given servers preempts as few jobs as the best set of n of
    them (brute force), and every policy returns n distinct servers of those given."""
    servers, jobs, workers = random_loaned_cluster(seed, loaned=8, jobs=16)
    among = _among(seed, servers)
    n = random.Random(seed + 1).randint(0, len(among))
    count = {j.id: 0 for j in jobs}
    for w in workers:
        count[w.job] += 1

    def preempted(chosen):
        removed = {j.id: 0 for j in jobs}
        for w in workers:
            removed[w.job] += w.server in chosen
        return sum(
            count[j.id] - removed[j.id] < j.min_workers for j in jobs if removed[j.id]
        )

    best = min(preempted(set(c)) for c in itertools.combinations(among, n))
    for policy in aryl.defaults.RECLAIM_POLICIES:
        plan = aryl.reclaim(servers, jobs, workers, n, policy, seed=seed, among=among)
        assert len(set(plan.servers)) == n and set(plan.servers) <= set(among)
        assert len(plan.preempted) == preempted(set(plan.servers))
        if policy == "exact":
            assert len(plan.preempted) == best


def test_among_through_the_state_applies(paper_example):
    """Servers 1 and 2 are the unconstrained answer; kept out, the state's reclaim
    returns others and applying it takes them off loan, nothing else."""
    state = aryl.ClusterState.from_records(*paper_example)
    result = state.reclaim(2, among=[3, 4, 5, 6])
    assert set(result.plan.servers) <= {3, 4, 5, 6}
    result.apply(state)
    assert {s.id for s in state.servers() if not s.on_loan} == set(result.plan.servers)


@pytest.mark.parametrize(
    "among, n, message",
    [
        ([1, 9], 1, "unknown server 9"),
        ([1, 1], 1, "server ids must not repeat"),
        ("12", 1, "server ids must be a list of ids"),
        (
            [1, 2],
            3,
            "asked to reclaim 3 servers but only 2 of the servers given are on loan",
        ),
    ],
)
def test_among_bad_requests(paper_example, among, n, message):
    with pytest.raises(ValueError, match=message):
        aryl.reclaim(*paper_example, n, among=among)


def test_among_refuses_a_server_not_on_loan():
    servers = [
        aryl.Server("t", "training"),
        aryl.Server("i", "inference", on_loan=True),
    ]
    with pytest.raises(ValueError, match="server 't' is not on loan"):
        aryl.reclaim(servers, [], [], 1, among=["t"])
