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

import copy
import dataclasses
from collections import abc
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    runtime_checkable,
)

import numpy as np
import pandas as pd

from ..decisions import Decision, ReclaimPlan
from ..model import Job, Server, Worker, as_records
from ..state import ClusterState
from ..state.reclaim import ReclaimResult
from ..state.schedule import ScheduleResult
from ..state.tables import _records_columns, _worker_table
from .config import Config

#: What ``allocate`` may answer: the result of ``state.schedule(...)`` on the view it
#: was given (fast: rows, no ids), or an ``aryl.Decision`` (workers by id).
Allocation = Union[ScheduleResult, Decision]
#: What ``reclaim`` may answer: the servers' ids in the order returned, or the result
#: of ``state.reclaim(n, ...)`` on the view, or an ``aryl.ReclaimPlan``.
Reclaim = Union[Sequence[Any], ReclaimResult, ReclaimPlan]


@dataclasses.dataclass(frozen=True)
class Epoch:
    """Where the run stands when the engine asks the policy.

    ``index``: scheduling epochs planned so far; ``now``: simulated seconds.
    ``schedule_options``: the run's kernel settings as ``ClusterState.schedule``
    takes them (``placement``, ``backfill``, ``gpu_speed`` of every server type,
    ``hetero_efficiency`` and, when a job's throughput is not linear,
    ``throughput``), so that ``state.schedule(policy, **epoch.schedule_options)``
    decides exactly as the built-in ``policy`` would in this run.
    """

    index: int
    now: float
    schedule_options: Mapping[str, Any]

    def where(self) -> str:
        """``"epoch 3 (t = 180 s)"``: how errors name this moment."""
        return f"epoch {self.index} (t = {self.now:g} s)"


@runtime_checkable
class Policy(Protocol):
    """The hooks ``simulate(..., policy=obj)`` calls; only ``allocate`` is required.

    ``allocate(state, epoch)``
        At each scheduling epoch at which something changed (an arrival, a
        completion, a loan or a reclaim; quiet epochs are skipped, as for the
        built-in policies): ``state`` holds every server (inference ones with their
        loans), the running jobs in trace order with their workers, then every
        queued job in arrival order, and ``state.remaining`` each partly done
        job's work left. Answer what to start and stop: ``state.schedule(...)``'s
        result, or an ``aryl.Decision`` (its ``start`` and ``stop``). A running job
        left without workers goes back to the queue (preempted: with a checkpoint it
        keeps its progress and pays ``restart_overhead`` when it starts again).
    ``reclaim(state, n, epoch)`` (optional)
        When the inference load needs ``n`` lent servers back: which (ids, or
        ``state.reclaim(n, ...)``'s result). Their jobs are scaled in where they keep
        ``min_workers`` and preempted otherwise. Without it, the run's ``reclaim``
        policy chooses. (This view's ``state.remaining`` is empty: the engine moves
        remaining work at epochs.)
    ``admit(job, epoch)`` (optional)
        An arriving ``aryl.Job``: ``False`` rejects it for good (it never runs;
        ``Result.jobs["rejected"]``).

    A ``name`` attribute, if any, labels the run (else the class name).
    """

    def allocate(self, state: ClusterState, epoch: Epoch) -> Allocation:
        """The decision at this epoch (see the class)."""


def policy_name(policy: Any) -> str:
    """The run's label for a policy object: its ``name``, else its class name."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


def has_hook(policy: Any, name: str) -> bool:
    """Whether ``policy`` has the hook ``name`` (a callable attribute)."""
    return callable(getattr(policy, name, None))


def check_policy(policy: Any) -> None:
    """A ``TypeError`` unless ``policy`` has a callable ``allocate`` and its other
    hooks, where present, are callable."""
    if not has_hook(policy, "allocate"):
        raise TypeError(
            f"policy must be a policy name or an object with an allocate(state, "
            f"epoch) method, got {policy!r}"
        )
    for hook in ("reclaim", "admit"):
        if getattr(policy, hook, None) is not None and not callable(
            getattr(policy, hook)
        ):
            raise TypeError(
                f"policy.{hook} must be a method, got {getattr(policy, hook)!r}"
            )


class CoreHooks:
    """The bridge the compiled engine calls (``aryl._core.simulate(hooks=...)``).

    Its ``allocate``, ``reclaim`` and ``admit`` take the engine's columns (see
    ``cpp/bindings/sim_hooks.cpp``): ``state`` is ``(trace rows of the state's
    jobs, worker job, worker server, worker flexible, server on_loan)``. Each builds
    the read-only view, asks the policy and answers in rows; an answer that names
    something the view does not hold is a ``ValueError`` naming the epoch.
    """

    def __init__(
        self,
        policy: Any,
        servers: List[Server],
        jobs: pd.DataFrame,
        config: Config,
    ) -> None:
        """``jobs``: the run's jobs as a frame of ``aryl.Job`` fields, in trace order."""
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
        self.allocate = self._allocate
        self.reclaim = self._reclaim if has_hook(policy, "reclaim") else None
        self.admit = self._admit if has_hook(policy, "admit") else None

    def _view(
        self, columns: Tuple[np.ndarray, ...], remaining: np.ndarray
    ) -> ClusterState:
        rows, job, server, flexible, on_loan = columns
        workers = {"job": job, "server": server, "flexible": flexible.astype(bool)}
        return self._trace.simulation_view(rows, workers, on_loan, remaining)

    def _epoch(
        self, index: int, now: float, state: ClusterState, curves: List[List[float]]
    ) -> Epoch:
        options = copy.deepcopy(self._options)  # a policy's change stays in its epoch
        if curves:
            options["throughput"] = dict(zip(state.job_ids, curves))
        return Epoch(int(index), float(now), options)

    def _allocate(
        self,
        columns: Tuple[np.ndarray, ...],
        remaining: np.ndarray,
        curves: List[List[float]],
        index: int,
        now: float,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        state = self._view(columns, remaining)
        epoch = self._epoch(index, now, state, curves)
        return decision_rows(self._policy.allocate(state, epoch), state, epoch)

    def _reclaim(
        self, columns: Tuple[np.ndarray, ...], n: int, index: int, now: float
    ) -> np.ndarray:
        state = self._view(columns, np.ones(len(columns[0])))
        epoch = self._epoch(index, now, state, [])
        return reclaim_rows(self._policy.reclaim(state, n, epoch), state, epoch)

    def _admit(self, job: int, index: int, now: float) -> bool:
        if self._jobs is None:
            self._jobs = self._trace.jobs()
        answer = self._policy.admit(
            self._jobs[job], Epoch(int(index), float(now), copy.deepcopy(self._options))
        )
        if not isinstance(answer, (bool, np.bool_)):
            raise TypeError(
                f"{Epoch(index, now, {}).where()}: admit must answer True or False, "
                f"got {answer!r}"
            )
        return bool(answer)


def decision_rows(
    answer: Any, state: ClusterState, epoch: Epoch
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start job, start server, start flexible, stop)`` rows of an ``allocate``
    answer on ``state`` (the engine checks what the rows do)."""
    where = epoch.where()
    if isinstance(answer, ScheduleResult):
        if answer._state is not state:
            raise ValueError(
                f"{where}: allocate answered the schedule of another state; "
                "schedule the state it was given"
            )
        rows = (answer.start_job, answer.start_server, answer.start_flexible)
        for values, count, what in zip(
            (*rows[:2], answer.stop),
            (state.n_jobs, state.n_servers, state.n_workers),
            ("job", "server", "worker"),
        ):
            _check_rows(values, count, what, where)
        return (*rows, answer.stop)
    if isinstance(answer, Decision):
        return _decision_rows(answer, state, where)
    raise TypeError(
        f"{where}: allocate must answer state.schedule(...)'s result or an "
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


def _check_rows(rows: Any, count: int, what: str, where: str) -> None:
    """A ``ValueError`` naming the epoch unless every row is in ``[0, count)``."""
    values = np.asarray(rows)
    bad = values[(values < 0) | (values >= count)]
    if bad.size:
        raise ValueError(
            f"{where}: the policy's answer names {what} row {bad[0]}, but the "
            f"state has {count} {what}s"
        )


def reclaim_rows(answer: Any, state: ClusterState, epoch: Epoch) -> np.ndarray:
    """The server rows of a ``reclaim`` answer on ``state``."""
    if isinstance(answer, ReclaimResult):
        if answer._state is not state:
            raise ValueError(
                f"{epoch.where()}: reclaim answered the plan of another state"
            )
        _check_rows(answer.servers, state.n_servers, "server", epoch.where())
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
