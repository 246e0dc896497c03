"""Job scheduling at one epoch (paper §5, Algorithm 2): allocation and placement."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    get_args,
    overload,
)

import numpy as np

from . import _core, validation
from .model import Job, Records, Server, State, Worker, as_records
from .typing import AllocationPolicy, Placement, SchedulePolicy

if TYPE_CHECKING:
    from .state import ClusterState

POLICIES = get_args(AllocationPolicy)
#: Relative GPU speeds (reference: the training GPU); a T4 is a quarter of a V100.
DEFAULT_GPU_SPEED = {"V100": 1.0, "T4": 0.25}
PLACEMENTS = get_args(Placement)


@dataclass
class Decision:
    """What to change at this epoch.

    ``start`` are new workers to launch (``Worker.flexible`` marks those beyond the
    job's ``min_workers``); ``stop`` are existing workers to remove (scale-ins);
    ``allocation`` maps every job id to its worker count after the decision (0 for
    jobs left queued); ``pending`` lists the queued jobs left queued, in queue order.
    ``unplaceable`` maps the queued jobs whose base demand can never be placed on
    these servers (not even on an empty cluster) to the reason; they were left out
    of the epoch, are not in ``pending``, and have allocation 0.
    """

    policy: SchedulePolicy
    start: List[Worker] = field(default_factory=list)
    stop: List[Worker] = field(default_factory=list)
    allocation: Dict[Any, int] = field(default_factory=dict)
    pending: List[Any] = field(default_factory=list)
    unplaceable: Dict[Any, str] = field(default_factory=dict)

    @overload
    def apply(self, workers: ClusterState) -> None: ...

    @overload
    def apply(self, workers: Records) -> List[Worker]: ...

    def apply(self, workers: Any) -> Optional[List[Worker]]:
        """The workers after the decision: ``workers`` less ``stop``, plus ``start``.

        Workers are matched by value, so ``workers`` may be the dicts or DataFrame
        the decision was computed from. Given an ``aryl.ClusterState`` instead, the
        decision is applied to it in place (validated and atomic: a worker to stop
        that is not there, or a start that over-commits a server, is a
        ``ValueError`` and the state is unchanged) and None is returned.
        """
        from .state import ClusterState

        if isinstance(workers, ClusterState):
            workers._apply_workers(self.stop, self.start)
            return None
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
            (
                "workers started",
                f"{len(self.start)} ({flexible} flexible, beyond min_workers)",
            ),
            ("workers stopped", f"{len(self.stop)} (scale-ins)"),
            (
                "jobs running",
                f"{len(running)} of {total} ({len(running) / total:.0%})"
                if total
                else "0",
            ),
            (
                "workers per job",
                ", ".join(f"{j}: {n}" for j, n in running.items()) or "—",
            ),
            (
                "jobs pending",
                f"{len(self.pending)}: " + (", ".join(map(str, self.pending)) or "—"),
            ),
            ("jobs unplaceable", ", ".join(map(str, self.unplaceable)) or "—"),
        ]
        return html_table(rows, "Decision")


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
    hetero_efficiency: float = 0.7,
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


class ScheduleResult:
    """The outcome of ``ClusterState.schedule``, as index arrays into the state's rows.

    ``start_job``, ``start_server`` and ``start_flexible`` describe the workers to
    launch (job and server rows, flexible flag); ``stop`` are the rows of the
    state's workers to remove; ``allocation`` is every job's worker count after
    the decision (by job row); ``pending`` the rows of the jobs left queued, in
    queue order; ``unplaceable`` maps job id to the reason it can never be placed.
    ``decision`` is the same as an ``aryl.Decision`` (built on first access);
    ``apply(state)`` applies it to the state it was computed on.
    """

    def __init__(
        self,
        state: Any,
        policy: SchedulePolicy,
        raw: Any,
        kept: Optional[np.ndarray],
        future: np.ndarray,
        unplaceable: Dict[Any, str],
    ) -> None:
        """Map the kernel's answer (rows of the jobs ``kept``) to the state's rows."""
        self._state, self._version = state, state.version
        self._jobs, self._servers, self._workers = (
            state._jobs,
            state._servers,
            state._workers,
        )
        self.policy = policy
        self.unplaceable = unplaceable
        self._raw, self._kept, self._future = raw, kept, future
        self._decision: Optional[Decision] = None

    # The index arrays are made on first access: an epoch whose caller reads only
    # some of them does not pay for the others (the kernel takes ~1 ms).

    @functools.cached_property
    def start_job(self) -> np.ndarray:
        """Job rows of the workers to start."""
        rows: np.ndarray = self._raw.start_job
        return rows if self._kept is None else self._kept[rows]

    @functools.cached_property
    def start_server(self) -> np.ndarray:
        """Server rows of the workers to start."""
        rows: np.ndarray = self._raw.start_server
        return rows

    @functools.cached_property
    def start_flexible(self) -> np.ndarray:
        """Whether each worker to start is flexible (beyond the job's min_workers)."""
        flags: np.ndarray = self._raw.start_flexible
        return flags

    @functools.cached_property
    def stop(self) -> np.ndarray:
        """Rows of the state's workers to stop."""
        rows: np.ndarray = self._raw.stop_array
        return rows

    @functools.cached_property
    def allocation(self) -> np.ndarray:
        """Every job's worker count after the decision, by job row."""
        allocation: np.ndarray = self._raw.allocation_array
        if self._kept is None:
            return allocation
        out = np.zeros(len(self._jobs["id"]), dtype=allocation.dtype)
        out[self._kept] = allocation
        return out

    @functools.cached_property
    def pending(self) -> np.ndarray:
        """Rows of the jobs left queued, in queue order (not yet submitted ones last)."""
        rows: np.ndarray = self._raw.pending_array
        if self._kept is not None:
            rows = self._kept[rows]
        return np.concatenate([rows, self._future]) if len(self._future) else rows

    @property
    def decision(self) -> Decision:
        """The friendly ``aryl.Decision`` (ids and ``Worker`` records), built once."""
        if self._decision is None:
            self._decision = self._build_decision()
        return self._decision

    def _build_decision(self) -> Decision:
        ids = self._jobs["id"]
        gpus = self._jobs["gpus_per_worker"][self.start_job].tolist()
        start = [
            Worker(j, s, g, f)
            for j, s, g, f in zip(
                ids[self.start_job].tolist(),
                self._servers["id"][self.start_server].tolist(),
                gpus,
                self.start_flexible.tolist(),
            )
        ]
        w = self._workers
        rows = self.stop
        stop = [
            Worker(j, s, g, f)
            for j, s, g, f in zip(
                ids[w["job"][rows]].tolist(),
                self._servers["id"][w["server"][rows]].tolist(),
                self._jobs["gpus_per_worker"][w["job"][rows]].tolist(),
                w["flexible"][rows].tolist(),
            )
        ]
        kept = np.arange(len(ids)) if self._kept is None else self._kept
        allocation = dict(zip(ids[kept].tolist(), self.allocation[kept].tolist()))
        allocation.update(
            {j: 0 for j in [*ids[self._future].tolist(), *self.unplaceable]}
        )
        return Decision(
            policy=self.policy,
            start=start,
            stop=stop,
            allocation=allocation,
            pending=ids[self.pending].tolist(),
            unplaceable=dict(self.unplaceable),
        )

    def apply(self, state: Any) -> None:
        """Apply the decision to ``state``: the state it was computed on, unchanged.

        Faster than ``decision.apply(state)`` (no matching by value); a state that
        changed since is a ``ValueError``.
        """
        if state is not self._state or state.version != self._version:
            raise ValueError(
                "the state changed since this decision was computed; "
                "schedule again (or use result.decision.apply(state))"
            )
        start = {
            "job": self.start_job.astype(np.int64),
            "server": self.start_server.astype(np.int64),
            "flexible": self.start_flexible.astype(bool),
        }
        state._apply_indices(self.stop, start)

    def __repr__(self) -> str:
        return (
            f"ScheduleResult(policy={self.policy!r}, {len(self.start_job)} workers to "
            f"start, {len(self.stop)} to stop, {len(self.pending)} jobs pending)"
        )


def schedule_state(
    state: Any,
    policy: AllocationPolicy,
    now: Optional[float],
    placement: str,
    backfill: bool,
    remaining: Optional[Mapping[Any, float]],
    gpu_speed: Optional[Mapping[str, float]],
    hetero_efficiency: float,
    throughput: Optional[Mapping[Any, Sequence[float]]],
) -> ScheduleResult:
    """``ClusterState.schedule``: ``schedule``'s rules on the state's columns."""
    validation.text(policy, "policy", POLICIES)
    validation.text(placement, "placement", PLACEMENTS)
    backfill = validation.flag(backfill, "backfill")
    if remaining is not None and not isinstance(remaining, Mapping):
        raise TypeError(
            f"remaining must be a mapping of job id to fraction, got {remaining!r}"
        )
    for job_id in remaining or {}:
        if job_id not in state._job_index:
            raise ValueError(f"remaining: unknown job {job_id!r}")
    jobs = state._jobs
    if "queued" not in state._cache:  # jobs without workers, until the state changes
        queued = np.ones(state.n_jobs, dtype=bool)
        queued[state._workers["job"]] = False
        queued.flags.writeable = False
        state._cache["queued"] = queued
    queued = state._cache["queued"]
    future = np.zeros(state.n_jobs, dtype=bool)
    if now is not None:
        now = validation.real(now, "now", finite=False)
        future = queued & (jobs["submit_time"] > now)
        queued = queued & ~future
    unplaceable, kept, core = _state_rows(state, policy, queued, future)
    speeds = {**DEFAULT_GPU_SPEED, **(gpu_speed or {})}
    raw = _core.schedule(
        core,
        policy,
        placement,
        backfill,
        _state_remaining(state, kept, remaining),
        _state_speeds(state, speeds),
        hetero_efficiency,
        _state_curves(state, kept, throughput),
    )
    future_rows = np.flatnonzero(future)
    return ScheduleResult(state, policy, raw, kept, future_rows, dict(unplaceable))


def _state_rows(
    state: Any, policy: str, queued: np.ndarray, future: np.ndarray
) -> Tuple[Dict[Any, str], Optional[np.ndarray], Any]:
    """The unplaceable jobs, the rows the kernel sees (None: all) and its state.

    They depend only on the state, the policy and which jobs are still to come, so
    they are kept in the state's cache (cleared by every change): an epoch on an
    unchanged state then costs the kernel alone, which now takes about a
    millisecond for 2,000 queued jobs.
    """
    key = ("rows", policy, np.packbits(future).tobytes())
    if key not in state._cache:
        unplaceable = _state_unplaceable(state, policy, queued)
        left_out = future.copy()
        if unplaceable:
            left_out[[state._job_index[j] for j in unplaceable]] = True
        kept, core = None, state._core
        if left_out.any():
            kept = np.flatnonzero(~left_out)
            kept.flags.writeable = False  # shared by every result of this state
            core = state._sub_core(kept)
        state._cache[key] = (unplaceable, kept, core)
    rows: Tuple[Dict[Any, str], Optional[np.ndarray], Any] = state._cache[key]
    return rows


def _state_unplaceable(state: Any, policy: str, queued: np.ndarray) -> Dict[Any, str]:
    """``_too_wide`` then ``validation.unplaceable`` on the queued rows, vectorised."""
    jobs = state._jobs
    d = jobs["gpus_per_worker"]
    largest = int(state._servers["gpus"].max()) if state.n_servers else 0
    wide = queued & (d > largest)
    out = {
        j: f"a worker needs {g} GPUs, more than any server has ({largest})"
        for j, g in zip(jobs["id"][wide].tolist(), d[wide].tolist())
    }
    fits = np.flatnonzero(queued & ~wide)
    if not len(fits):
        return out
    demands = np.asarray(_core.base_demands(state._core, policy))[fits]
    rooms = _rooms(state, fits)
    short = rooms < demands
    for row, demand, room in zip(
        fits[short].tolist(), demands[short].tolist(), rooms[short].tolist()
    ):
        kind = "" if jobs["hetero"][row] else " of one GPU type"
        out[jobs["id"][row]] = (
            f"needs {demand} workers of {d[row]} GPUs but the usable "
            f"servers{kind} hold at most {room}"
        )
    return out


def _rooms(state: Any, rows: np.ndarray) -> np.ndarray:
    """Workers that fit on the usable servers, per job row (``validation._room``)."""
    from .state.tables import TYPE_NAMES

    jobs = state._jobs
    keys = (
        (jobs["gpus_per_worker"][rows] << 32)
        | (jobs["type_code"][rows] << 1)
        | jobs["hetero"][rows].astype(np.int64)
    )
    unique, inverse = np.unique(keys, return_inverse=True)
    kinds = state._server_kinds()
    room = [
        validation._room(
            kinds, k >> 32, TYPE_NAMES[(k >> 1) & 0x7FFFFFFF] or None, bool(k & 1), None
        )
        for k in unique.tolist()
    ]
    return np.asarray(room, dtype=np.int64)[inverse.reshape(-1)]


def _state_remaining(
    state: Any, kept: Optional[np.ndarray], remaining: Optional[Mapping[Any, float]]
) -> Any:
    if not remaining:
        return []
    fractions = np.ones(state.n_jobs)
    for job_id, fraction in remaining.items():
        fractions[state._job_index[job_id]] = validation.real(
            fraction, f"remaining[{job_id!r}]"
        )
    return fractions if kept is None else fractions[kept]


def _state_speeds(state: Any, speeds: Mapping[str, float]) -> np.ndarray:
    """Per-server relative speeds, looked up once per GPU type."""
    types = state._servers["gpu_type"]
    if "speed_types" not in state._cache:
        import pandas as pd

        state._cache["speed_types"] = pd.factorize(types)
    codes, names = state._cache["speed_types"]
    per_type = tuple(float(speeds.get(t, 1.0)) for t in names)
    key = ("speeds", per_type)
    if key not in state._cache:
        table = np.asarray(per_type, dtype=np.float64)
        state._cache[key] = table[codes] if len(codes) else np.zeros(0)
    out: np.ndarray = state._cache[key]
    return out


def _state_curves(
    state: Any,
    kept: Optional[np.ndarray],
    throughput: Optional[Mapping[Any, Sequence[float]]],
) -> List[List[float]]:
    if not throughput:
        return []
    curves: List[List[float]] = [[] for _ in range(state.n_jobs)]
    for job_id, curve in throughput.items():
        if job_id not in state._job_index:
            raise ValueError(f"throughput: unknown job {job_id!r}")
        curves[state._job_index[job_id]] = [float(v) for v in curve]
    return curves if kept is None else [curves[i] for i in kept.tolist()]
