"""A policy of your own, run by the compiled simulator: ``simulate(..., policy=obj)``.

``obj`` is any object with the hooks of ``Policy``: ``allocate`` (required), and
optionally ``reclaim`` and ``admit``. The engine calls them where it would run its
own kernels, shows them the same ``aryl.ClusterState`` a live scheduler holds (read
only), and checks every answer whole before applying any of it: a decision that
over-commits a server, names an unknown job or worker, or leaves a job outside
``[min_workers, max_workers]`` stops the run with a ``ValueError`` naming the
epoch and the job, and nothing of it is applied. ``CoreHooks`` is the bridge the
engine calls (the compiled module's contract); users write only the ``Policy``.
"""

from __future__ import annotations

import bisect
import dataclasses
import warnings
from collections import abc
from typing import (
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
)

import numpy as np
import pandas as pd

from .. import _core
from ..decisions import Decision, ReclaimPlan
from ..model import Job, Server, Worker, as_records
from ..policy import (
    HOOKS,
    RECENT_LOAD_S,
    Allocation,
    Epoch,
    Policy,
    Reclaim,
    check_policy,
    has_hook,
    policy_name,
)
from ..state import ClusterState
from ..state.reclaim import ReclaimResult
from ..state.schedule_result import ScheduleResult
from ..state.tables import _records_columns, _worker_table
from .config import Config

# The protocol lives in aryl.policy (aryl.Policy), shared with live loops; these
# names stay importable from here.
__all__ = [
    "HOOKS",
    "Allocation",
    "CoreHooks",
    "Epoch",
    "Policy",
    "IdleWatch",
    "PolicyError",
    "RECENT_LOAD_S",
    "Reclaim",
    "check_policy",
    "decision_rows",
    "has_hook",
    "policy_name",
    "reclaim_rows",
]


class CoreHooks:
    """The bridge the compiled engine calls (``aryl._core.simulate(hooks=...)``).

    Its ``allocate``, ``reclaim`` and ``admit`` take the engine's columns (see
    ``cpp/bindings/sim_hooks.cpp``): ``state`` is ``(trace rows of the state's
    jobs, worker job, worker server, worker flexible, server on_loan, the state's
    compiled copy, each job's worker count, the queue in submit order)``, ``service``
    ``(attained GPU-s, waited s, preemptions)`` of each of those jobs. Each builds
    the read-only view, asks the policy and answers in rows (or, for an untouched
    ``state.schedule`` result, the kernel's own ``_core.Decision``); an answer that names
    something the view does not hold is a ``ValueError`` naming the epoch.
    """

    def __init__(
        self,
        policy: Any,
        servers: List[Server],
        jobs: pd.DataFrame,
        config: Config,
        load: Tuple[Sequence[float], Sequence[float]] = ((), ()),
    ) -> None:
        """``jobs``: the run's jobs as a frame of ``aryl.Job`` fields, in trace order;
        ``load``: the inference load the run serves, ``(times, loads)``."""
        # lists: bisect on a list beats np.searchsorted on one scalar per epoch
        self._load_time: List[float] = np.asarray(load[0], dtype=float).tolist()
        self._load: List[float] = np.asarray(load[1], dtype=float).tolist()
        self._recent: Dict[Tuple[int, int], Tuple[Any, ...]] = {}  # _load_at's last
        self._policy = policy
        servers_frame = pd.DataFrame([dataclasses.asdict(s) for s in servers])
        self._trace = ClusterState.from_frames(servers_frame, jobs)
        types = sorted({s.gpu_type for s in servers})
        self._options: Dict[str, Any] = {
            "placement": config.placement,
            "backfill": bool(config.backfill),
            # every server type named: the engine's speeds, unlisted types at 1.0
            "gpu_speed": {t: float(config.gpu_speed.get(t, 1.0)) for t in types},
            "hetero_efficiency": float(config.hetero_efficiency),
        }
        self._jobs: Optional[List[Job]] = None
        self.idle = IdleWatch(policy_name(policy))
        self.allocate = self._allocate
        self.reclaim = self._reclaim if has_hook(policy, "reclaim") else None
        self.admit = self._admit if has_hook(policy, "admit") else None

    def _ask(self, hook: str, epoch: Epoch, *args: Any) -> Any:
        """The policy's ``hook(*args)``; what it raises becomes a ``PolicyError``
        naming the hook and the epoch, with the policy's own error (and traceback)
        as its cause."""
        try:
            return getattr(self._policy, hook)(*args)
        except Exception as error:
            raise PolicyError(
                f"{epoch.where()}: {policy_name(self._policy)}.{hook} raised "
                f"{type(error).__name__}: {error} (its traceback is above)"
            ) from error

    def _view(
        self,
        columns: Tuple[np.ndarray, ...],
        remaining: np.ndarray,
        service: Tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> ClusterState:
        rows, job, server, flexible, on_loan, core, held, queue = columns
        workers = {"job": job, "server": server, "flexible": flexible}
        attained, waited, preemptions = service
        return self._trace.simulation_view(
            rows,
            workers,
            on_loan,
            remaining,
            {"attained": attained, "waited": waited, "preemptions": preemptions},
            core,
            {"workers": held, "queue": queue},
        )

    def _epoch(
        self, index: int, now: float, state: ClusterState, curves: List[List[float]]
    ) -> Epoch:
        options = self._fresh_options()
        if curves:
            options["throughput"] = dict(zip(state.job_ids, curves))
        load, recent = self._load_at(float(now))
        return Epoch(int(index), float(now), options, load, recent)

    def _fresh_options(self) -> Dict[str, Any]:
        """The run's schedule options, the policy's own copy: a change it makes,
        nested ones too, stays in its epoch. Shallow copies suffice (and cost a
        fraction of a deep copy each epoch): the one nested value, ``gpu_speed``,
        maps names to numbers."""
        options = dict(self._options)
        options["gpu_speed"] = dict(options["gpu_speed"])
        return options

    def _load_at(self, now: float) -> Tuple[Optional[float], Tuple[Any, ...]]:
        """The load in force at ``now`` and the series' points of the last
        ``RECENT_LOAD_S`` (the one in force at its start first), as the engine
        reads the series: each value from its time on, the first one before it."""
        if not self._load:
            return None, ()
        since = bisect.bisect_right(self._load_time, now - RECENT_LOAD_S)
        end = bisect.bisect_right(self._load_time, now)
        first, upto = max(since - 1, 0), end
        if (first, upto) not in self._recent:  # the same points for many epochs
            self._recent = {
                (first, upto): tuple(
                    zip(self._load_time[first:upto], self._load[first:upto])
                )
            }
        current = self._load[max(upto - 1, 0)]
        return current, self._recent[(first, upto)]

    def _allocate(
        self,
        columns: Tuple[np.ndarray, ...],
        remaining: np.ndarray,
        curves: List[List[float]],
        service: Tuple[np.ndarray, np.ndarray, np.ndarray],
        index: int,
        now: float,
    ) -> Any:
        state = self._view(columns, remaining, service)
        epoch = self._epoch(index, now, state, curves)
        answer = self._ask("allocate", epoch, state, epoch)
        rows = decision_rows(answer, state, epoch)
        # whether it starts anything matters only while nothing runs
        self.idle.observe(state, epoch, started=bool(state.n_workers) or _starts(rows))
        return rows

    def _reclaim(
        self,
        columns: Tuple[np.ndarray, ...],
        service: Tuple[np.ndarray, np.ndarray, np.ndarray],
        n: int,
        index: int,
        now: float,
        remaining: np.ndarray,
    ) -> np.ndarray:
        state = self._view(columns, remaining, service)
        epoch = self._epoch(index, now, state, [])
        return reclaim_rows(self._ask("reclaim", epoch, state, n, epoch), state, epoch)

    def _admit(self, job: int, index: int, now: float) -> bool:
        if self._jobs is None:
            self._jobs = self._trace.jobs()
        epoch = Epoch(int(index), float(now), self._fresh_options())
        answer = self._ask("admit", epoch, self._jobs[job], epoch)
        if not isinstance(answer, (bool, np.bool_)):
            raise TypeError(
                f"{Epoch(index, now, {}).where()}: admit must answer True or False, "
                f"got {answer!r}"
            )
        return bool(answer)


def _starts(rows: Any) -> bool:
    """Whether ``decision_rows``' answer starts any worker."""
    if isinstance(rows, _core.Decision):
        return len(rows.start_job) > 0
    return len(rows[0]) > 0


class PolicyError(RuntimeError):
    """A policy's hook raised: the message names the hook, the epoch and the
    simulated time; the hook's own exception is the ``__cause__`` (its traceback is
    printed above this one's)."""


#: Simulated seconds of an idle cluster with jobs waiting (the policy starting
#: none) after which a run warns (``IdleWatch``).
IDLE_WARNING_S = 3600.0


class IdleWatch:
    """Stretches in which jobs waited, nothing ran and the policy started nothing.

    A policy that never starts a job (an ``allocate`` that answers an empty
    decision by mistake) would otherwise just leave every job unfinished; the
    longest such stretch, once it reaches ``IDLE_WARNING_S``, is named in a
    ``RuntimeWarning`` at the end of the run (``warn``).
    """

    def __init__(self, name: str) -> None:
        """``name``: the policy's label, for the warning."""
        self.name = name
        self.start: Optional[Epoch] = None  # the open stretch's first epoch
        self.waiting = 0  # the most jobs that waited in it
        self.longest: Optional[Tuple[Epoch, float, int]] = None  # (from, to, jobs)

    def observe(self, state: ClusterState, epoch: Epoch, started: bool) -> None:
        """One ``allocate`` answer: ``started`` whether it started any worker."""
        # nothing runs, so every job waits
        if state.n_jobs and not state.n_workers and not started:
            if self.start is None:
                self.start, self.waiting = epoch, 0
            self.waiting = max(self.waiting, state.n_jobs)
        else:
            self.close(epoch.now)

    def close(self, end: float) -> None:
        """End the open stretch (if any) at simulated time ``end``."""
        if self.start is None:
            return
        if self.longest is None or end - self.start.now > (
            self.longest[1] - self.longest[0].now
        ):
            self.longest = (self.start, end, self.waiting)
        self.start = None

    def warn(self, end: float) -> None:
        """Close the open stretch at the run's ``end``; warn about the longest one."""
        self.close(end)
        if self.longest is None:
            return
        start, stop, waiting = self.longest
        if stop - start.now >= IDLE_WARNING_S:
            warnings.warn(
                f"policy {self.name!r} started no job from {start.where()} to "
                f"t = {stop:g} s ({(stop - start.now) / 3600:.1f} h) while up to "
                f"{waiting} job(s) waited and none ran: does its allocate answer "
                "the workers it means to start?",
                RuntimeWarning,
                stacklevel=3,
            )


def decision_rows(answer: Any, state: ClusterState, epoch: Epoch) -> Any:
    """``(start job, start server, start flexible, stop)`` rows of an ``allocate``
    answer on ``state``, or the kernel's own ``_core.Decision`` when the answer is
    a ``ScheduleResult`` of the kernel on the whole state, untouched (the engine
    checks what either does)."""
    if isinstance(answer, ScheduleResult):
        if answer._state is not state:
            raise ValueError(
                f"{epoch.where()}: allocate answered the schedule of another state; "
                "schedule the state it was given"
            )
        fresh = answer._kernel_rows()
        if fresh is not None:  # the kernel's own rows for this state: in range
            return fresh
        rows = (answer.start_job, answer.start_server, answer.start_flexible)
        for values, count, what in zip(
            (*rows[:2], answer.stop),
            (state.n_jobs, state.n_servers, state.n_workers),
            ("job", "server", "worker"),
        ):
            _check_rows(values, count, what, epoch)
        return (*rows, answer.stop)
    if isinstance(answer, Decision):
        return _decision_rows(answer, state, epoch.where())
    raise TypeError(
        f"{epoch.where()}: allocate must answer state.schedule(...)'s result or an "
        f"aryl.Decision, got {type(answer).__name__}"
    )


def _decision_rows(
    answer: Decision, state: ClusterState, where: str
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An ``aryl.Decision``'s rows, its workers checked as ``Decision.apply(state)``
    checks them (records, known ids, ``gpus`` the job's): errors name the epoch."""
    jobs, servers = state._job_index, state._server_index
    try:
        start, stop = (
            as_records(_listed(workers, f"decision.{what}"), Worker, f"{what} worker")
            for workers, what in ((answer.start, "start"), (answer.stop, "stop"))
        )
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: the policy's {error}") from None
    for w in start:
        if w.job not in jobs:
            raise ValueError(
                f"{where}: the policy's decision starts a worker of "
                f"job {w.job!r}, which is not queued or running"
            )
        if w.server not in servers:
            raise ValueError(
                f"{where}: the policy's decision starts a worker of "
                f"job {w.job!r} on unknown server {w.server!r}"
            )
    try:
        table = _worker_table(
            _records_columns(start, "worker"), state._jobs, jobs, servers
        )
        stop_rows = state._match_workers(stop)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: the policy's decision: {error}") from None
    return (
        table["job"],
        table["server"],
        table["flexible"].astype(np.int64),
        stop_rows,
    )


def _listed(workers: Any, what: str) -> Any:
    """``workers`` if it is a list of records (not a string, a mapping or None)."""
    if isinstance(workers, (str, bytes, abc.Mapping)) or not isinstance(
        workers, abc.Iterable
    ):
        raise TypeError(f"{what} must be a list of aryl.Worker, got {workers!r}")
    return workers


def _check_rows(rows: Any, count: int, what: str, epoch: Epoch) -> None:
    """A ``ValueError`` naming the epoch unless every row is in ``[0, count)``."""
    values = np.asarray(rows)
    if not values.size or (values.min() >= 0 and values.max() < count):
        return
    bad = values[(values < 0) | (values >= count)]
    if bad.size:
        raise ValueError(
            f"{epoch.where()}: the policy's answer names {what} row {bad[0]}, but the "
            f"state has {count} {what}s"
        )


def reclaim_rows(answer: Any, state: ClusterState, epoch: Epoch) -> np.ndarray:
    """The server rows of a ``reclaim`` answer on ``state``."""
    if isinstance(answer, ReclaimResult):
        if answer._state is not state:
            raise ValueError(
                f"{epoch.where()}: reclaim answered the plan of another state"
            )
        _check_rows(answer.servers, state.n_servers, "server", epoch)
        return answer.servers
    ids = answer.servers if isinstance(answer, ReclaimPlan) else answer
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (abc.Sequence, np.ndarray)):
        raise TypeError(
            f"{epoch.where()}: reclaim must answer a list of server ids, "
            f"state.reclaim(...)'s result or an aryl.ReclaimPlan, got {answer!r}"
        )
    try:
        return state._rows(list(ids), state._server_index, "server")
    except ValueError as error:
        raise ValueError(f"{epoch.where()}: the policy's reclaim: {error}") from None
