"""Job scheduling at one epoch (paper §5, Algorithm 2): allocation and placement.

``schedule`` takes the cluster as records; it builds an ``aryl.ClusterState`` and
runs ``ClusterState.schedule`` on it (``state/schedule.py``), so both doors share
one argument check, one unplaceable rule and one result.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from . import validation
from .decisions import Decision
from .defaults import HETERO_EFFICIENCY
from .model import Records
from .pollux_schedule import schedule_pollux
from .state import ClusterState
from .typing import Placement, SchedulePolicy


def schedule(
    jobs: Records,
    servers: Records,
    workers: Optional[Records] = None,
    policy: SchedulePolicy = "aryl",
    now: Optional[float] = None,
    placement: Placement = "aryl",
    backfill: bool = False,
    remaining: Optional[Mapping[Any, float]] = None,
    gpu_speed: Optional[Mapping[str, float]] = None,
    hetero_efficiency: float = HETERO_EFFICIENCY,
    throughput: Optional[Mapping[Any, Sequence[float]]] = None,
    agents: Optional[Mapping[Any, Any]] = None,
    seed: int = 0,
) -> Decision:
    """Decide how many workers each job gets and where they run.

    Parameters
    ----------
    jobs
        Queued and running jobs (``Job``, dicts or a DataFrame). A job with workers
        in ``workers`` is running; the others are queued.
    servers
        Training servers and on-loan inference servers (inference servers not on
        loan are never used).
    workers
        Where the running jobs' workers are. A running job's base workers are its
        first ``min_workers`` workers not marked ``flexible``; base workers are never
        moved or stopped.
    policy
        ``"aryl"`` (default): queued jobs' base demand shortest-estimated-job first
        (at ``min_workers``), skipping jobs that cannot be placed; then the
        multiple-choice knapsack gives elastic jobs (running and just admitted)
        extra workers from the GPUs left, including those now held by flexible
        workers. Item *w* of a job weighs ``w * gpus_per_worker`` GPUs and is worth
        ``T(min) - T(min + w)``, its running-time reduction on the remaining work at
        the GPUs' real speed (``T(k) = estimated_duration * thr(reference_workers) /
        (thr(k) * speed) * remaining``, ``thr`` the job's throughput curve, linear by
        default). Every decision is speed-aware: base workers go to the fastest GPU
        type with room, extra workers to the type that shortens the job most, and
        the knapsack is solved per GPU type. Baselines: ``"fifo"`` (arrival order at ``max_workers``, no
        elasticity, strict unless ``backfill``), ``"sjf"`` (shortest first at
        ``max_workers``, no elasticity), ``"gandiva"`` (arrival order at base demand,
        shrinking elastic jobs to admit new ones; grows them to ``max_workers`` only
        when nothing is pending, after Xiao et al., OSDI'18), ``"afs"`` (base demand
        in arrival order, then one worker at a time to the job whose progress rate
        gains most per GPU, after Hwang et al., NSDI'21).
    now
        If given, queued jobs with ``submit_time > now`` are not yet submitted and
        stay pending.

        Queued jobs whose base demand can never be placed on ``servers`` (a worker
        wider than every server, or needing more workers than the usable servers
        of one GPU type hold) do not block the epoch: they are reported in
        ``Decision.unplaceable`` and the others are scheduled (``ClusterState``
        holds such a job too, and reports it the same way).
    placement
        ``"aryl"``: best fit, elastic jobs preferring on-loan inference servers and
        inelastic ones training servers, base and flexible workers on separate
        servers, hetero jobs' base on training and flexible on inference servers.
        ``"bfd"``: plain best fit (the paper's ablation).
    backfill
        With ``"fifo"``: start later jobs when the head of the queue does not fit.
    remaining
        Fraction of each job's work still to do (job id -> (0, 1]; default 1). It
        may name jobs left out of the epoch (not yet submitted at ``now``, or
        unplaceable).
    gpu_speed
        Relative speed per GPU type, each a finite number in [1e-3, 1e3] (default
        ``aryl.defaults.DEFAULT_GPU_SPEED``: V100 1.0, T4 0.25, the paper's
        Appendix A; types not listed run at 1.0).
    hetero_efficiency
        Throughput factor of a job whose workers span GPU types, in [1e-9, 1]
        (default 0.7, the paper's Appendix A).
    throughput
        Optional per-job throughput curves: job id -> throughput with
        1..max_workers workers (e.g. from ``aryl.agents``); default linear. Like
        ``remaining``, it may name jobs left out of the epoch.
    agents, seed
        Policy ``"pollux"`` (Qiao et al., OSDI'21, as its artifact schedules): one
        round of the genetic search over replicas per server (population 100, 100
        generations, seeded), maximising the power mean of the jobs' speedups
        over their fair share with a restart penalty. It needs ``agents`` (job id
        -> ``aryl.agents.PolluxAgent``, whose fitted goodput model gives the
        speedups), ``now``, and one-GPU workers; ``min_workers`` is no guarantee
        (Pollux may stop a job), ``max_workers`` caps its replicas beside the
        agent's ``max_replicas``; the other options do not apply.

    Returns
    -------
    Decision
        Applying it (``decision.apply(workers)``) gives a valid state: no server
        over-committed, every job within ``[min_workers, max_workers]`` or pending.

    Raises
    ------
    ValueError
        On bad input, naming the record; nothing is decided. The records and
        arguments are checked as ``ClusterState.from_records`` and
        ``ClusterState.schedule`` check them (this is that call), so the same
        mistake raises the same error through both.
    TypeError
        For an argument of the wrong type (e.g. ``backfill=1``).
    """
    if policy == "pollux":
        return schedule_pollux(
            jobs, servers, workers, now, agents, validation.seed(seed)
        )
    validation.seed(seed)  # only the pollux policy draws, but a bad seed is a mistake
    state = ClusterState.from_records(servers, jobs, workers or ())
    result = state.schedule(
        policy,
        now,
        placement,
        backfill,
        remaining,
        gpu_speed,
        hetero_efficiency,
        throughput,
    )
    return result.decision
