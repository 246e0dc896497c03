"""Choosing which on-loan inference servers to return (paper §4, Algorithm 1)."""

from __future__ import annotations

from . import _core, validation
from .decisions import ReclaimPlan
from .defaults import RECLAIM_POLICIES
from .model import Records, State
from .typing import ReclaimPolicy

POLICIES = RECLAIM_POLICIES


def reclaim(
    servers: Records,
    jobs: Records,
    workers: Records,
    n: int,
    policy: ReclaimPolicy = "aryl",
    seed: int = 0,
) -> ReclaimPlan:
    """Choose ``n`` on-loan inference servers to return to the inference cluster.

    Parameters
    ----------
    servers
        All servers (``Server``, dicts or a DataFrame). Only those with
        ``on_loan=True`` are candidates.
    jobs
        The running jobs (their ``gpus_per_worker``, ``min_workers`` and
        ``max_workers`` decide between scaling in and preemption).
    workers
        Where each worker runs (``Worker(job, server)``).
    n
        How many servers to return; more than are on loan is a ``ValueError``.
    policy
        ``"aryl"`` (default): servers whose loss preempts nothing first (idle ones,
        then those whose jobs can scale in), then Algorithm 1's greedy on
        preemption cost ``sum(1/|S_j|)`` over the jobs a server would preempt,
        recomputed after every pick; ties go to fewer preempted jobs, fewer
        scaled-in workers, then input order; the last pick minimises preempted jobs
        first (Algorithm 1's ``N_R = 1`` case). ``"scf"``: the servers hosting the
        fewest jobs. ``"random"``: uniformly at random with ``seed``. ``"exact"``:
        fewest preempted jobs by branch and bound over all on-loan servers (ties:
        fewer collateral GPUs, then fewer scaled-in workers, then input order),
        refused with a ``ValueError`` when the search space exceeds
        ``aryl._core.exact_subset_limit`` server sets.
    seed
        Seed of the ``"random"`` policy.

    Raises
    ------
    ValueError
        On bad input (naming the record) or an impossible request; nothing is
        changed and no partial plan is returned.
    """
    validation.text(policy, "reclaim policy", POLICIES)
    n = validation.integer(n, "n", -validation.MAX_INT)
    seed = validation.seed(seed)
    state = State.build(servers, jobs, workers)
    plan = _core.reclaim(state.core, n, policy, seed)
    return ReclaimPlan(
        policy=policy,
        servers=[state.servers[i].id for i in plan.servers],
        preempted=[state.jobs[j].id for j in plan.preempted],
        scaled_in={state.jobs[j].id: w for j, w in plan.scaled_in},
        demand_gpus=plan.demand_gpus,
        collateral_gpus=plan.collateral_gpus,
    )
