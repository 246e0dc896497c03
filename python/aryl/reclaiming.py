"""Choosing which on-loan inference servers to return (paper §4, Algorithm 1).

``reclaim`` takes the cluster as records; it builds an ``aryl.ClusterState`` and
runs ``ClusterState.reclaim`` on it (``state/reclaim.py``): one door, one check.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from .decisions import ReclaimPlan
from .defaults import RESTART_OVERHEAD_S
from .model import Records
from .state import ClusterState
from .typing import ReclaimPolicy


def reclaim(
    servers: Records,
    jobs: Records,
    workers: Records,
    n: int,
    policy: ReclaimPolicy = "aryl",
    seed: int = 0,
    among: Optional[Iterable[Any]] = None,
    unsaved: Optional[Mapping[Any, float]] = None,
    restart_overhead: float = RESTART_OVERHEAD_S,
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
        ``aryl._core.exact_subset_limit`` server sets. ``"least-work"``: the work
        a choice throws away instead of the jobs it preempts: scale-ins cost 0 and go
        first, then a greedy whose cost is each preempted job's work at risk
        (``unsaved`` plus, with a checkpoint, ``restart_overhead`` x its GPUs)
        shared among ``min(|S_j|, picks left)`` servers, recomputed after every
        pick; ties go to less work thrown away now, fewer preempted jobs, fewer
        scaled-in workers, then input order. ``"exact-work"``: the least work
        thrown away by branch and bound (ties as ``"exact"``), under the same limit.
    seed
        Seed of the ``"random"`` policy.
    among
        Ids of the on-loan servers to choose from (a caller's filter); the others
        stay on loan and do not count in a job's ``|S_j|``, while whether a job is
        preempted or scaled in still counts all of its workers. Default: every
        on-loan server. An unknown, repeated or not-on-loan id is a ``ValueError``,
        as is ``n`` larger than the servers given.
    unsaved
        Job id -> GPU-seconds a preemption of that job throws away: its progress
        since its last checkpoint (all of it for a job without one) x its GPUs.
        Default: none for every job (records carry no progress), so only the
        checkpointed jobs' restarts count; a negative value or an unknown job is a
        ``ValueError``.
    restart_overhead
        Seconds a checkpointed job holds its GPUs without progress after a restart
        (default 63, the paper's testbed), charged x its GPUs to its preemption.

    Raises
    ------
    ValueError
        On bad input (naming the record) or an impossible request; nothing is
        changed and no partial plan is returned.
    """
    state = ClusterState.from_records(servers, jobs, workers)
    return state.reclaim(n, policy, seed, among, unsaved, restart_overhead).plan
