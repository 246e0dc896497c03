"""Job scheduling at one epoch (paper §5, Algorithm 2): allocation and placement."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _core
from .model import Records, State, Worker, as_records

POLICIES = ("aryl", "fifo", "sjf", "gandiva", "afs")
#: Relative GPU speeds (reference: the training GPU); a T4 is a quarter of a V100.
DEFAULT_GPU_SPEED = {"V100": 1.0, "T4": 0.25}
PLACEMENTS = ("aryl", "bfd")


@dataclass
class Decision:
    """What to change at this epoch.

    ``start`` are new workers to launch (``Worker.flexible`` marks those beyond the
    job's ``min_workers``); ``stop`` are existing workers to remove (scale-ins);
    ``allocation`` maps every job id to its worker count after the decision (0 for
    jobs left queued); ``pending`` lists the queued jobs left queued, in queue order.
    """

    policy: str
    start: List[Worker] = field(default_factory=list)
    stop: List[Worker] = field(default_factory=list)
    allocation: Dict[Any, int] = field(default_factory=dict)
    pending: List[Any] = field(default_factory=list)

    def apply(self, workers: Records) -> List[Worker]:
        """The workers after the decision: ``workers`` less ``stop``, plus ``start``.

        Workers are matched by value, so ``workers`` may be the dicts or DataFrame
        the decision was computed from.
        """
        to_stop = Counter(self.stop)
        kept = []
        for w in as_records(workers, Worker, "worker"):
            if to_stop[w] > 0:
                to_stop[w] -= 1
            else:
                kept.append(w)
        return kept + list(self.start)

    def _repr_html_(self) -> str:
        from ._display import html_table

        running = {j: n for j, n in self.allocation.items() if n}
        flexible = sum(w.flexible for w in self.start)
        total = len(self.allocation)
        rows = [
            ("policy", self.policy),
            ("workers started", f"{len(self.start)} ({flexible} flexible, beyond min_workers)"),
            ("workers stopped", f"{len(self.stop)} (scale-ins)"),
            ("jobs running", f"{len(running)} of {total} ({len(running) / total:.0%})" if total else "0"),
            ("workers per job", ", ".join(f"{j}: {n}" for j, n in running.items()) or "—"),
            ("jobs pending", f"{len(self.pending)}: " + (", ".join(map(str, self.pending)) or "—")),
        ]
        return html_table(rows, "Decision")


def schedule(
    jobs: Records,
    servers: Records,
    workers: Optional[Records] = None,
    policy: str = "aryl",
    now: Optional[float] = None,
    placement: str = "aryl",
    backfill: bool = False,
    remaining: Optional[Mapping[Any, float]] = None,
    gpu_speed: Optional[Mapping[str, float]] = None,
    hetero_efficiency: float = 0.7,
    throughput: Optional[Mapping[Any, Sequence[float]]] = None,
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
    placement
        ``"aryl"``: best fit, elastic jobs preferring on-loan inference servers and
        inelastic ones training servers, base and flexible workers on separate
        servers, hetero jobs' base on training and flexible on inference servers.
        ``"bfd"``: plain best fit (the paper's ablation).
    backfill
        With ``"fifo"``: start later jobs when the head of the queue does not fit.
    remaining
        Fraction of each job's work still to do (job id -> (0, 1]; default 1).
    gpu_speed
        Relative speed per GPU type (default ``DEFAULT_GPU_SPEED``: V100 1.0, T4
        0.25, the paper's Appendix A; types not listed run at 1.0).
    hetero_efficiency
        Throughput factor of a job whose workers span GPU types (default 0.7).
    throughput
        Optional per-job throughput curves: job id -> throughput with
        1..max_workers workers (e.g. from ``aryl.agents``); default linear.

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
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}; expected one of {', '.join(PLACEMENTS)}")
    state = State.build(servers, jobs, workers if workers is not None else [])
    future: List[Any] = []
    if now is not None:
        running = {w.job for w in state.workers}
        future = [j.id for j in state.jobs if j.id not in running and j.submit_time > now]
        if future:
            later = set(future)
            submitted = [j for j in state.jobs if j.id not in later]
            state = State.build(state.servers, submitted, state.workers)
    speeds = {**DEFAULT_GPU_SPEED, **(gpu_speed or {})}
    raw = _core.schedule(
        state.core, policy, placement, bool(backfill), _remaining(state, remaining),
        [float(speeds.get(s.gpu_type, 1.0)) for s in state.servers], float(hetero_efficiency),
        job_curves(state, throughput),
    )
    return _decision(state, raw, policy, future)


def job_curves(state: State, throughput: Optional[Mapping[Any, Sequence[float]]]) -> List[List[float]]:
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
        if job_id not in state.job_index:
            raise ValueError(f"remaining: unknown job {job_id!r}")
        fractions[state.job_index[job_id]] = float(fraction)
    return fractions


def _decision(state: State, raw: Any, policy: str, future: List[Any]) -> Decision:
    ids = [j.id for j in state.jobs]
    start = [
        Worker(ids[j], state.servers[s].id, state.jobs[j].gpus_per_worker, bool(flexible))
        for j, s, flexible in raw.start
    ]
    return Decision(
        policy=policy,
        start=start,
        stop=[state.workers[w] for w in raw.stop],
        allocation={**dict(zip(ids, raw.allocation)), **{j: 0 for j in future}},
        pending=[ids[j] for j in raw.pending] + future,
    )
