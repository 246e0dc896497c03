"""Job scheduling at one epoch (paper §5, Algorithm 2): allocation and placement."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _core, validation
from .decisions import Decision
from .defaults import (
    DEFAULT_GPU_SPEED,
    HETERO_EFFICIENCY,
    PLACEMENTS,
    SCHEDULE_POLICIES,
)
from .model import Job, Records, Server, State, Worker, as_records
from .typing import AllocationPolicy, Placement, SchedulePolicy

POLICIES = SCHEDULE_POLICIES


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

        Queued jobs whose base demand can never be placed on ``servers`` (wider
        than every usable server, or needing more workers than the usable servers
        of one GPU type hold) do not block the epoch: they are reported in
        ``Decision.unplaceable`` and the others are scheduled.
    placement
        ``"aryl"``: best fit, elastic jobs preferring on-loan inference servers and
        inelastic ones training servers, base and flexible workers on separate
        servers, hetero jobs' base on training and flexible on inference servers.
        ``"bfd"``: plain best fit (the paper's ablation).
    backfill
        With ``"fifo"``: start later jobs when the head of the queue does not fit.
    remaining
        Fraction of each job's work still to do (job id -> (0, 1]; default 1). It
        may name jobs not yet submitted at ``now``.
    gpu_speed
        Relative speed per GPU type (default ``DEFAULT_GPU_SPEED``: V100 1.0, T4
        0.25, the paper's Appendix A; types not listed run at 1.0).
    hetero_efficiency
        Throughput factor of a job whose workers span GPU types (default 0.7).
    throughput
        Optional per-job throughput curves: job id -> throughput with
        1..max_workers workers (e.g. from ``aryl.agents``); default linear.
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
        On bad input, naming the record; nothing is decided.
    """
    if policy == "pollux":
        from .pollux_schedule import schedule_pollux

        return schedule_pollux(  # type: ignore[no-any-return]
            jobs, servers, workers, now, agents, validation.seed(seed)
        )
    validation.text(policy, "policy", POLICIES)
    validation.text(placement, "placement", PLACEMENTS)
    backfill = validation.flag(backfill, "backfill")
    if remaining is not None and not isinstance(remaining, Mapping):
        raise TypeError(
            f"remaining must be a mapping of job id to fraction, got {remaining!r}"
        )
    servers = as_records(servers, Server, "server")
    jobs = as_records(jobs, Job, "job")
    workers = as_records(workers if workers is not None else [], Worker, "worker")
    running = {w.job for w in workers}
    known = {j.id for j in jobs}
    for job_id in remaining or {}:
        if job_id not in known:
            raise ValueError(f"remaining: unknown job {job_id!r}")
    future: List[Any] = []
    if now is not None:
        now = validation.real(now, "now", finite=False)
        future = [j.id for j in jobs if j.id not in running and j.submit_time > now]
    queued = [j.id for j in jobs if j.id not in running and j.id not in future]
    unplaceable = _too_wide(jobs, servers, queued)
    left_out = set(future) | set(unplaceable)
    state = State.build(servers, [j for j in jobs if j.id not in left_out], workers)
    demands = _core.base_demands(state.core, policy)
    fits = [state.job_index[i] for i in queued if i not in unplaceable]
    more = validation.unplaceable(
        [state.jobs[i] for i in fits], [demands[i] for i in fits], servers
    )
    if more:
        unplaceable.update(more)
        state = State.build(
            servers, [j for j in state.jobs if j.id not in more], workers
        )
    speeds = {**DEFAULT_GPU_SPEED, **(gpu_speed or {})}
    raw = _core.schedule(
        state.core,
        policy,
        placement,
        backfill,
        _remaining(state, remaining),
        [float(speeds.get(s.gpu_type, 1.0)) for s in state.servers],
        hetero_efficiency,
        job_curves(state, throughput),
    )
    return _decision(state, raw, policy, future, unplaceable)


def _too_wide(
    jobs: List[Job], servers: List[Server], queued: List[Any]
) -> Dict[Any, str]:
    """Queued jobs with a worker wider than every server (the core refuses them outright)."""
    largest = max((s.gpus for s in servers), default=0)
    waiting = set(queued)
    return {
        j.id: f"a worker needs {j.gpus_per_worker} GPUs, more than any server has ({largest})"
        for j in jobs
        if j.id in waiting and j.gpus_per_worker > largest
    }


def job_curves(
    state: State, throughput: Optional[Mapping[Any, Sequence[float]]]
) -> List[List[float]]:
    """Per-job throughput curves in the state's job order (empty list: none given)."""
    if not throughput:
        return []
    curves: List[List[float]] = [[] for _ in state.jobs]
    for job_id, curve in throughput.items():
        if job_id not in state.job_index:
            raise ValueError(f"throughput: unknown job {job_id!r}")
        curves[state.job_index[job_id]] = [float(v) for v in curve]
    return curves


def _remaining(state: State, remaining: Optional[Mapping[Any, float]]) -> List[float]:
    if not remaining:
        return []
    fractions = [1.0] * len(state.jobs)
    for job_id, fraction in remaining.items():
        if job_id in state.job_index:  # the others were left out of this epoch
            fractions[state.job_index[job_id]] = validation.real(
                fraction, f"remaining[{job_id!r}]"
            )
    return fractions


def _decision(
    state: State,
    raw: _core.Decision,
    policy: AllocationPolicy,
    future: List[Any],
    unplaceable: Optional[Dict[Any, str]] = None,
) -> Decision:
    unplaceable = unplaceable or {}
    ids = [j.id for j in state.jobs]
    start = [
        Worker(
            ids[j], state.servers[s].id, state.jobs[j].gpus_per_worker, bool(flexible)
        )
        for j, s, flexible in raw.start
    ]
    return Decision(
        policy=policy,
        start=start,
        stop=[state.workers[w] for w in raw.stop],
        allocation={
            **dict(zip(ids, raw.allocation)),
            **{j: 0 for j in [*future, *unplaceable]},
        },
        pending=[ids[j] for j in raw.pending] + future,
        unplaceable=unplaceable,
    )
