"""``ClusterState`` (the package's face says what it is for): its construction
(``from_records``, ``from_frames``, ``from_columns``), the simulator's read-only view
of a run, the kernels (``schedule``, ``reclaim``) and time (``advance``). Its reads,
updates and tables are its bases: ``views``, ``updates``, ``stored``."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from .. import _core
from ..defaults import HETERO_EFFICIENCY, RESTART_OVERHEAD_S
from ..model import Records
from ..typing import AllocationPolicy, ReclaimPolicy
from .columns import SERVICE
from .reclaim import ReclaimResult, reclaim_state
from .schedule import (
    advance_state,
    gpu_types,
    placeable_unlent,
    schedule_state,
    server_type_codes,
)
from .schedule_result import ScheduleResult
from .tables import (
    _EMPTY,
    Table,
    _empty,
    _index,
    _is_frame,
    _job_table,
    _raw_columns,
    _records_columns,
    _server_table,
    _TakenRows,
    _worker_table,
)
from .updates import StateUpdates


class ClusterState(StateUpdates):
    """Servers, jobs and the placement of their workers, validated once and kept.

    Build it with one constructor per input kind: ``from_records`` (``aryl.Server``,
    ``aryl.Job``, ``aryl.Worker`` or dicts), ``from_frames`` (pandas DataFrames) or
    ``from_columns`` (mappings of column name to NumPy arrays or lists; the same
    column names as the dataclasses' fields). Update it in place with
    ``add_jobs`` / ``remove_jobs``, ``add_servers`` / ``remove_servers``,
    ``set_on_loan``, ``Decision.apply(state)`` and ``ReclaimPlan.apply(state)`` (or
    the faster ``apply`` of the results of ``schedule`` and ``reclaim``). Each
    update is validated and atomic: a bad one raises ``ValueError`` and leaves the
    state as it was. A state takes one writer at a time: it is not thread-safe,
    so a program that updates it from several threads must hold a lock around
    each update and each ``schedule``/``reclaim`` call with its ``apply`` (a result
    computed before another thread's change is refused by ``apply``, but only
    when the change came first). An update costs about one rebuild of the compiled copy
    (linear in the cluster's size, ~1 ms for 3,000 jobs); ``schedule`` and
    ``reclaim`` cost the kernel plus little.
    """

    def __init__(self) -> None:
        """An empty cluster; use the ``from_*`` constructors to fill one."""
        if not _EMPTY:  # built once: tables are never changed in place
            _EMPTY.update({what: _empty(what) for what in ("server", "job", "worker")})
            _EMPTY["core"] = _core.ClusterState(
                *self._core_columns(_EMPTY["server"], _EMPTY["job"], _EMPTY["worker"])
            )
        self._servers, self._jobs = _EMPTY["server"], _EMPTY["job"]
        self._workers = _EMPTY["worker"]
        self._server_index = {}
        # built when first read in a simulation view (_job_index)
        self._job_index_ = {}
        self._core = _EMPTY["core"]
        self.version = 0
        self._cache = {}
        # jobs partly done (advance); a simulation view's is built when first read
        self._remaining_ = {}
        # a simulation view's (trace state, trace rows of its jobs): see
        # _queued_fit_unlent
        self._origin = None
        # each job's service (columns.SERVICE) by id, kept by advance and updates
        self._service = {n: {} for n in SERVICE}
        self._service_rows = None  # the simulator's, by job row
        self._remaining_rows = None  # the simulator's too
        self._read_only = False  # the simulator's view of a run (simulation_view)
        self._known_columns = {}  # columns the simulator made (StateColumns)

    # ----------------------------------------------------------- construction

    @classmethod
    def from_records(
        cls, servers: Records, jobs: Records = (), workers: Records = ()
    ) -> ClusterState:
        """From lists of ``aryl.Server`` / ``aryl.Job`` / ``aryl.Worker`` or dicts."""
        return cls._build(
            _records_columns(servers, "server"),
            _records_columns(jobs, "job"),
            _records_columns(workers, "worker"),
        )

    @classmethod
    def from_frames(
        cls, servers: Any, jobs: Any = None, workers: Any = None
    ) -> ClusterState:
        """From pandas DataFrames whose columns are the dataclasses' fields.

        Optional fields may be left out (their defaults apply); a missing value of
        ``gpu_type`` means any type (jobs) or the pool's default (servers).
        """
        for frame, what in ((servers, "server"), (jobs, "job"), (workers, "worker")):
            if frame is not None and not _is_frame(frame):
                raise ValueError(
                    f"{what}s must be a DataFrame, got {type(frame).__name__}"
                )
        return cls.from_columns(servers, jobs, workers)

    @classmethod
    def from_columns(
        cls, servers: Any, jobs: Any = None, workers: Any = None
    ) -> ClusterState:
        """From mappings of field name to a column (NumPy array, list) or DataFrames."""
        columns = [
            _raw_columns(data, what)[0] if data is not None else None
            for data, what in ((servers, "server"), (jobs, "job"), (workers, "worker"))
        ]
        return cls._build(*columns)

    @classmethod
    def _build(
        cls,
        servers: Optional[Dict[str, Any]],
        jobs: Optional[Dict[str, Any]],
        workers: Optional[Dict[str, Any]],
    ) -> ClusterState:
        state = cls()
        server_table = (
            _server_table(servers, len(servers["id"])) if servers else state._servers
        )
        job_table = (
            _job_table(jobs, len(jobs["id"]))
            if jobs and len(jobs["id"])
            else state._jobs
        )
        server_index = _index(server_table["id"], "server")
        job_index = _index(job_table["id"], "job")
        worker_table = (
            _worker_table(workers, job_table, job_index, server_index)
            if workers
            else state._workers
        )
        state._commit(server_table, job_table, worker_table, server_index, job_index)
        return state

    def simulation_view(
        self,
        jobs: np.ndarray,
        workers: Table,
        on_loan: np.ndarray,
        remaining: np.ndarray,
        service: Optional[Table] = None,
        core: Any = None,
        known: Optional[Table] = None,
    ) -> ClusterState:
        """A read-only state of this one's servers with loans ``on_loan``, its job rows
        ``jobs`` (in that order), ``workers`` (``job`` indexing ``jobs``) and each of
        those jobs' ``remaining`` work and ``service`` (``columns.SERVICE`` arrays, in
        the same order; zeros if not given): what the simulator shows a policy of
        your own (``aryl.engine.hooks``). ``core``: the engine's own compiled copy of
        that state, if the caller has one (taken as it is: the engine validated
        it); ``known``: ``columns()``' ``workers`` and ``queue`` if the caller has
        them (likewise). Its updates raise ``ValueError``; read it and schedule on
        it (``schedule``, ``reclaim``) as on any state.
        """
        view = ClusterState()
        servers = dict(self._servers)
        servers["on_loan"] = np.asarray(on_loan, dtype=bool)
        table = _TakenRows(self._jobs, jobs)  # the columns a policy reads, if any
        view._servers, view._jobs, view._workers = servers, table, workers
        view._server_index, view._job_index_ = self._server_index, None
        if core is None:
            view._core = _core.ClusterState(
                *self._core_columns(servers, table, workers)
            )
        else:
            view._core = core
        view.version = 1
        # what depends on the servers and the trace alone carries over (shared)
        view._cache.update(self._run_cache())
        view._remaining_, view._remaining_rows = None, remaining
        if service is not None:
            view._service_rows = dict(service)
        if known:
            view._known_columns = known
        view._origin = (self, jobs)
        view._read_only = True
        return view

    def _run_cache(self) -> Dict[str, Any]:
        """The cache entries a simulation view of this state shares with it: the
        servers' GPU types, every type of the run (its servers' and all its jobs',
        as ``gpu_speed`` is checked against a run's types) and the speeds worked
        out from them (``state/schedule.py``)."""
        if "run" not in self._cache:
            self._cache["run"] = {
                "speed_types": server_type_codes(self),
                "gpu_types": gpu_types(self),
                "by_servers": {},
            }
        shared: Dict[str, Any] = self._cache["run"]
        return shared

    def _queued_fit_unlent(self, policy: str, queued: np.ndarray) -> bool:
        """For a simulation view: whether each of its ``queued`` jobs can be placed
        under ``policy`` whatever is on loan (its base demand fits the training
        servers alone), worked out once on the trace; False for other states."""
        if self._origin is None:
            return False
        trace, rows = self._origin
        key = f"fits unlent {policy}"
        if key not in trace._cache:  # (each job's, every job's)
            fits = placeable_unlent(trace, policy)
            trace._cache[key] = (fits, bool(fits.all()))
        fits, every = trace._cache[key]
        return every or bool(fits[rows][queued].all())

    # --------------------------------------------------------------- kernels

    def schedule(
        self,
        policy: AllocationPolicy = "aryl",
        now: Optional[float] = None,
        placement: str = "aryl",
        backfill: bool = False,
        remaining: Optional[Mapping[Any, float]] = None,
        gpu_speed: Optional[Mapping[str, float]] = None,
        hetero_efficiency: float = HETERO_EFFICIENCY,
        throughput: Optional[Mapping[Any, Sequence[float]]] = None,
        queue: Any = None,
        grow: Any = None,
    ) -> ScheduleResult:
        """One scheduling epoch on this state, as ``aryl.schedule`` (same arguments).

        ``remaining`` defaults to what ``advance`` kept (``state.remaining``).
        The kernel's parts with a caller's own order or filter (a policy of your
        own, ``docs/policies.md``): ``queue``, the queued jobs to admit, as job
        rows in the order to admit them (each at its base demand, placed best fit,
        if it fits; queued jobs not listed stay queued; default: the policy's
        order); ``grow``, the rows of the jobs that may take extra workers after
        that (default: every elastic job). Rows as ``columns()`` gives them.
        Returns a ``ScheduleResult``: index arrays into this state's rows, its
        ``decision`` (an ``aryl.Decision``, built on first access) and ``apply()``.
        """
        return schedule_state(
            self,
            policy,
            now,
            placement,
            backfill,
            remaining,
            gpu_speed,
            hetero_efficiency,
            throughput,
            queue,
            grow,
        )

    # ------------------------------------------------------------------ time

    def advance(
        self,
        seconds: float,
        gpu_speed: Optional[Mapping[str, float]] = None,
        hetero_efficiency: float = HETERO_EFFICIENCY,
        throughput: Optional[Mapping[Any, Sequence[float]]] = None,
    ) -> List[Any]:
        """Let ``seconds`` pass: every running job does the work its workers do in
        that time, as the simulator moves it.

        A job's work is its ``duration`` at its reference worker count on reference
        GPUs; it progresses at throughput(workers) x the mean relative speed of their
        GPUs (x ``hetero_efficiency`` when they span GPU types): the same rule as
        ``aryl.sim.simulate``, from the same compiled code. ``gpu_speed``,
        ``hetero_efficiency`` and ``throughput`` as in ``schedule``. The remaining
        work is kept (``remaining``) and used by the next ``schedule``, so a live
        loop need not rebuild it each epoch. Returns the ids of the jobs whose work is
        done (remove them with ``remove_jobs``). Restart overheads are not modelled
        here: a job is assumed to run the whole time.
        """
        self._check_writable()
        after = advance_state(self, seconds, gpu_speed, hetero_efficiency, throughput)
        self._serve(float(seconds))
        done = [job for job, left in after.items() if left <= 0.0]
        # A finished job's remaining is kept as the least fraction schedule takes.
        self._remaining.update(
            {j: max(left, 1e-9) for j, left in after.items() if left < 1.0}
        )
        # The work left changed: a result scheduled before this is stale.
        self.version += 1
        return done

    def _serve(self, seconds: float) -> None:
        """Book ``seconds`` of service: GPU-seconds to each job holding workers,
        waiting time to the others (``columns()``' ``attained`` and ``waited``)."""
        held = np.bincount(self._workers["job"], minlength=self.n_jobs)
        gpus = (held * self._jobs["gpus_per_worker"]).tolist()
        attained, waited = self._service["attained"], self._service["waited"]
        for job_id, g in zip(self._jobs["id"].tolist(), gpus):
            if g:
                attained[job_id] = attained.get(job_id, 0.0) + g * seconds
            else:
                waited[job_id] = waited.get(job_id, 0.0) + seconds
        self._cache.pop("columns", None)

    def reclaim(
        self,
        n: int,
        policy: ReclaimPolicy = "aryl",
        seed: int = 0,
        among: Optional[Iterable[Any]] = None,
        unsaved: Optional[Mapping[Any, float]] = None,
        restart_overhead: float = RESTART_OVERHEAD_S,
    ) -> ReclaimResult:
        """Choose ``n`` on-loan servers to return, as ``aryl.reclaim`` (same arguments).

        ``among``: ids of the on-loan servers to choose from (a policy's own filter,
        e.g. never the servers of one rack); the others stay on loan. Default: every
        on-loan server. ``unsaved`` (job id -> GPU-seconds a preemption would throw
        away) and ``restart_overhead`` (s): each job's work at risk, what
        ``"least-work"`` minimises; a job ``unsaved`` does not name gets the state's
        estimate (none with a checkpoint; without, the progress the state knows:
        ``aryl.state.reclaim.unsaved_work``).

        Returns a ``ReclaimResult``: index arrays into this state's rows, its
        ``plan`` (an ``aryl.ReclaimPlan``, built on first access) and ``apply(state)``.
        """
        return reclaim_state(self, n, policy, seed, among, unsaved, restart_overhead)
