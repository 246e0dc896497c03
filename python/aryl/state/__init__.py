"""A reusable, validated cluster state for live schedulers (README, "live scheduler").

``aryl.schedule`` and ``aryl.reclaim`` take the whole cluster as records and
convert it on every call. A scheduler that decides again and again on a cluster
that changes a little at a time builds a ``ClusterState`` once instead, updates it
as jobs arrive and finish, servers come and go and decisions are applied, and
calls ``state.schedule(...)`` / ``state.reclaim(n)`` on it, which run the kernels
without converting anything.

The state is held as NumPy columns (servers, jobs, and workers by row index) plus
the compiled core's copy of them. Every construction and every update is
validated with the same rules and messages as the record API (``ValueError``
naming the record) and is atomic: when it fails, the state is unchanged.
"""

from __future__ import annotations

from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

import numpy as np

from .. import _core
from ..columns import core_types
from ..decisions import Appliable, ReclaimPlan
from ..defaults import HETERO_EFFICIENCY, RESTART_OVERHEAD_S
from ..jobtable import FIELDS
from ..model import (
    POOLS,
    Job,
    Records,
    Server,
    Worker,
    as_records,
    trusted_records,
)
from ..typing import AllocationPolicy, ReclaimPolicy
from ..validation import integer
from .columns import SERVICE, StateColumns
from .reclaim import ReclaimResult, reclaim_state
from .schedule import (
    ScheduleResult,
    advance_state,
    gpu_types,
    placeable_unlent,
    schedule_state,
    server_type_codes,
)
from .tables import (
    _EMPTY,
    Table,
    _any_columns,
    _concat,
    _empty,
    _index,
    _is_frame,
    _job_table,
    _raw_columns,
    _records_columns,
    _server_table,
    _take,
    _TakenRows,
    _worker_table,
)


class ClusterState(Appliable):
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
        self._server_index: Dict[Any, int] = {}
        # built when first read in a simulation view (_job_index)
        self._job_index_: Optional[Dict[Any, int]] = {}
        self._core = _EMPTY["core"]
        self.version = 0
        self._cache: Dict[str, Any] = {}
        # jobs partly done (advance); a simulation view's is built when first read
        self._remaining_: Optional[Dict[Any, float]] = {}
        # a simulation view's (trace state, trace rows of its jobs): see
        # _queued_fit_unlent
        self._origin: Optional[Tuple[ClusterState, np.ndarray]] = None
        # each job's service (columns.SERVICE) by id, kept by advance and updates
        self._service: Dict[str, Dict[Any, float]] = {n: {} for n in SERVICE}
        self._service_rows: Optional[Table] = None  # the simulator's, by job row
        self._remaining_rows: Optional[np.ndarray] = None  # the simulator's too
        self._read_only = False  # the simulator's view of a run (simulation_view)
        self._known_columns: Table = {}  # columns the simulator made (StateColumns)

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

    @property
    def _job_index(self) -> Dict[Any, int]:
        """Job id -> row (a simulation view builds it when first read)."""
        if self._job_index_ is None:
            self._job_index_ = _index(self._jobs["id"], "job")
        return self._job_index_

    @property
    def _remaining(self) -> Dict[Any, float]:
        """Job id -> fraction left, partly done jobs only (a simulation view builds
        it from its column when first read)."""
        if self._remaining_ is None:
            left = np.asarray(self._remaining_rows)
            partly = np.flatnonzero(left < 1.0)
            self._remaining_ = dict(
                zip(self._jobs["id"][partly].tolist(), left[partly].tolist())
            )
        return self._remaining_

    # ----------------------------------------------------------------- views

    @property
    def n_servers(self) -> int:
        """Number of servers (training and inference)."""
        return len(self._servers["id"])

    @property
    def n_jobs(self) -> int:
        """Number of jobs (queued and running)."""
        if self._origin is not None:  # a simulation view: its rows of the trace
            return len(self._origin[1])
        return len(self._jobs["id"])

    @property
    def n_workers(self) -> int:
        """Number of workers placed."""
        return len(self._workers["job"])

    @property
    def job_ids(self) -> List[Any]:
        """Job ids in row order (the order the index arrays of results refer to)."""
        ids: List[Any] = self._jobs["id"].tolist()
        return ids

    @property
    def server_ids(self) -> List[Any]:
        """Server ids in row order."""
        ids: List[Any] = self._servers["id"].tolist()
        return ids

    def servers(self) -> List[Server]:
        """The servers as ``aryl.Server`` records (a new list on each call)."""
        if self._origin is not None:  # the trace's records, one per server and loan
            trace = self._origin[0]
            pairs = trace._cached("server pairs", lambda: _server_pairs(trace._servers))
            return [p[o] for p, o in zip(pairs, self._servers["on_loan"].tolist())]
        return list(self._cached("servers", lambda: _server_records(self._servers)))

    def jobs(self) -> List[Job]:
        """The jobs as ``aryl.Job`` records (a new list on each call)."""
        if self._origin is not None:  # the trace's records of its rows
            trace, rows = self._origin
            records = trace._cached("jobs", lambda: _job_records(trace._jobs))
            return [records[r] for r in rows.tolist()]
        return list(self._cached("jobs", lambda: _job_records(self._jobs)))

    def workers(self) -> List[Worker]:
        """The workers as ``aryl.Worker`` records, ``gpus`` filled in (a new list on
        each call)."""
        return list(
            self._cached(
                "worker records",
                lambda: self._worker_records(np.arange(self.n_workers)),
            )
        )

    def _worker_records(self, rows: np.ndarray) -> List[Worker]:
        w = self._workers
        jobs, servers = w["job"][rows], w["server"][rows]
        return trusted_records(
            Worker,
            [
                self._jobs["id"][jobs].tolist(),
                self._servers["id"][servers].tolist(),
                self._jobs["gpus_per_worker"][jobs].tolist(),
                w["flexible"][rows].tolist(),
            ],
        )

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()``, kept in the cache (cleared by every change) under ``key``."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def columns(self) -> StateColumns:
        """The state as read-only NumPy arrays (``aryl.state.columns.StateColumns``):
        each job's fields, workers, GPUs held, work left, attained service, time
        waited and preemptions, the queue in submit order, each server's free GPUs
        and loan. Built once per state (an update builds it anew): a policy reads
        these rather than building records each epoch."""
        if "columns" not in self._cache:
            self._cache["columns"] = StateColumns(
                self._servers,
                self._jobs,
                self._workers,
                self._remaining_column(),
                self._service_columns(),
                self._known_columns,
            )
        built: StateColumns = self._cache["columns"]
        return built

    def _remaining_column(self) -> np.ndarray:
        if self._remaining_rows is not None:
            return np.asarray(self._remaining_rows, dtype=float)
        left = self._remaining
        if not left:  # no job advanced yet (a state built from records): all left
            return np.ones(len(self._jobs["id"]))
        return np.array([left.get(i, 1.0) for i in self._jobs["id"].tolist()])

    def _service_columns(self) -> Table:
        if self._service_rows is not None:
            return self._service_rows
        ids = self._jobs["id"].tolist()
        return {
            name: np.array(
                [kept.get(i, 0) for i in ids],
                dtype=np.int64 if name == "preemptions" else float,
            )
            for name, kept in self._service.items()
        }

    def frames(self) -> Dict[str, Any]:
        """The state as three pandas DataFrames (``servers``, ``jobs``, ``workers``)."""
        import pandas as pd

        s, j = self._servers, self._jobs
        servers = pd.DataFrame(
            {
                "id": s["id"],
                "pool": np.asarray(POOLS)[s["pool"]],
                "gpus": s["gpus"],
                "gpu_type": s["gpu_type"],
                "on_loan": s["on_loan"],
            }
        )
        jobs = pd.DataFrame(
            {n: v for n, v in j.items() if n not in ("key", "type_code")}
        )
        w = self._workers
        workers = pd.DataFrame(
            {
                "job": j["id"][w["job"]],
                "server": s["id"][w["server"]],
                "gpus": j["gpus_per_worker"][w["job"]],
                "flexible": w["flexible"],
            }
        )
        return {"servers": servers, "jobs": jobs, "workers": workers}

    def __repr__(self) -> str:
        on_loan = int(self._servers["on_loan"].sum())
        return (
            f"ClusterState({self.n_servers} servers ({on_loan} on loan), "
            f"{self.n_jobs} jobs, {self.n_workers} workers)"
        )

    # --------------------------------------------------------------- updates

    def add_jobs(self, jobs: Any) -> None:
        """Add jobs (records, dicts, a DataFrame or columns); they start queued."""
        columns = _any_columns(jobs, "job")
        if not len(columns["id"]):
            return
        table = _job_table(columns, len(columns["id"]))
        merged = _concat(self._jobs, table)
        self._commit(
            self._servers,
            merged,
            self._workers,
            self._server_index,
            _index(merged["id"], "job"),
        )

    def remove_jobs(self, ids: Iterable[Any]) -> None:
        """Remove jobs (finished or cancelled) by id, with all their workers."""
        rows = self._rows(ids, self._job_index, "job")
        gone = self._jobs["id"][rows].tolist()
        keep = np.ones(self.n_jobs, dtype=bool)
        keep[rows] = False
        workers = _take(self._workers, np.flatnonzero(keep[self._workers["job"]]))
        workers["job"] = (np.cumsum(keep) - 1)[workers["job"]]
        jobs = _take(self._jobs, np.flatnonzero(keep))
        self._commit(
            self._servers, jobs, workers, self._server_index, _index(jobs["id"], "job")
        )
        for job_id in gone:
            self._remaining.pop(job_id, None)
            for kept in self._service.values():
                kept.pop(job_id, None)

    def add_servers(self, servers: Any) -> None:
        """Add servers (records, dicts, a DataFrame or columns)."""
        columns = _any_columns(servers, "server")
        if not len(columns["id"]):
            return
        merged = _concat(self._servers, _server_table(columns, len(columns["id"])))
        self._commit(
            merged,
            self._jobs,
            self._workers,
            _index(merged["id"], "server"),
            self._job_index,
        )

    def remove_servers(self, ids: Iterable[Any]) -> None:
        """Remove servers by id; a server that still hosts workers is a ValueError."""
        rows = self._rows(ids, self._server_index, "server")
        keep = np.ones(self.n_servers, dtype=bool)
        keep[rows] = False
        busy = ~keep[self._workers["server"]]
        if busy.any():
            w = int(np.flatnonzero(busy)[0])
            raise ValueError(
                f"server {self._servers['id'][self._workers['server'][w]]!r} still "
                f"hosts a worker of job {self._jobs['id'][self._workers['job'][w]]!r}; "
                "stop it first"
            )
        workers = dict(self._workers)
        workers["server"] = (np.cumsum(keep) - 1)[workers["server"]]
        servers = _take(self._servers, np.flatnonzero(keep))
        self._commit(
            servers,
            self._jobs,
            workers,
            _index(servers["id"], "server"),
            self._job_index,
        )

    def set_on_loan(self, ids: Iterable[Any], on_loan: bool = True) -> None:
        """Lend inference servers to training (or take them back, when idle)."""
        if not isinstance(on_loan, (bool, np.bool_)):
            raise TypeError(f"on_loan must be True or False, got {on_loan!r}")
        rows = self._rows(ids, self._server_index, "server")
        servers = dict(self._servers)
        servers["on_loan"] = servers["on_loan"].copy()
        servers["on_loan"][rows] = bool(on_loan)
        self._commit(
            servers, self._jobs, self._workers, self._server_index, self._job_index
        )

    def _apply_workers(self, stop: Sequence[Worker], start: Sequence[Worker]) -> None:
        """Remove ``stop`` (matched by value) and add ``start``: ``Decision.apply``."""
        rows = self._match_workers(stop)
        keep = np.ones(self.n_workers, dtype=bool)
        keep[rows] = False
        new = _worker_table(
            _records_columns(start, "worker"),
            self._jobs,
            self._job_index,
            self._server_index,
        )
        self._commit_workers(_concat(_take(self._workers, np.flatnonzero(keep)), new))

    def _apply_indices(self, stop: np.ndarray, start: Table) -> None:
        """Remove worker rows ``stop`` and append the worker table ``start``."""
        keep = np.ones(self.n_workers, dtype=bool)
        keep[stop] = False
        self._commit_workers(_concat(_take(self._workers, np.flatnonzero(keep)), start))

    def _apply_plan(self, plan: ReclaimPlan) -> None:
        """``ReclaimPlan.apply``: check the plan's ids against the state, then apply."""
        servers = self._rows(plan.servers, self._server_index, "server")
        off = servers[~self._servers["on_loan"][servers]]
        if len(off):
            raise ValueError(
                f"server {self._servers['id'][off[0]]!r} is not on loan; a plan "
                "returns only on-loan servers"
            )
        preempted = self._rows(plan.preempted, self._job_index, "job")
        scaled = self._rows(list(plan.scaled_in), self._job_index, "job")
        counts = {}
        for row, (job, count) in zip(scaled.tolist(), plan.scaled_in.items()):
            counts[row] = integer(count, f"scaled_in[{job!r}]", 1)
        self._apply_reclaim(servers, preempted, counts)

    def _apply_reclaim(
        self, servers: np.ndarray, preempted: np.ndarray, scaled_in: Mapping[int, int]
    ) -> None:
        """Return ``servers`` (rows) and drop the workers the plan stops."""
        w = self._workers
        returned = np.zeros(self.n_servers, dtype=bool)
        returned[servers] = True
        hit = np.zeros(self.n_jobs, dtype=bool)
        hit[preempted] = True
        on_returned = returned[w["server"]]
        drop = hit[w["job"]] | on_returned
        lost = np.bincount(
            w["job"][on_returned & ~hit[w["job"]]], minlength=self.n_jobs
        )
        expected = np.zeros(self.n_jobs, dtype=np.int64)
        for job, count in scaled_in.items():
            expected[job] = count
        held = np.bincount(w["job"], minlength=self.n_jobs)
        bare = np.flatnonzero(
            hit & ~np.isin(np.arange(self.n_jobs), w["job"][on_returned])
        )
        if len(bare):
            raise _mismatch(
                f"job {self._jobs['id'][bare[0]]!r} is preempted but has no worker "
                "on the returned servers"
            )
        below = np.flatnonzero(
            (expected > 0) & (held - expected < self._jobs["min_workers"])
        )
        if len(below):
            j = int(below[0])
            raise _mismatch(
                f"scaling job {self._jobs['id'][j]!r} in by {expected[j]} leaves "
                f"{held[j] - expected[j]} workers, below its min_workers "
                f"{self._jobs['min_workers'][j]}"
            )
        wrong = np.flatnonzero(lost != expected)
        if len(wrong):
            j = int(wrong[0])
            raise _mismatch(
                f"job {self._jobs['id'][j]!r} has {lost[j]} workers on the returned "
                f"servers, the plan scales it in by {expected[j]}; compute the plan "
                "on this state"
            )
        servers_table = dict(self._servers)
        servers_table["on_loan"] = servers_table["on_loan"] & ~returned
        workers = _take(w, np.flatnonzero(~drop))
        self._commit(
            servers_table, self._jobs, workers, self._server_index, self._job_index
        )
        self._count_preemptions(w["job"])

    # -------------------------------------------------------------- helpers

    def _rows(self, ids: Iterable[Any], index: Dict[Any, int], what: str) -> np.ndarray:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise ValueError(f"{what} ids must be a list of ids, got {ids!r}")
        rows = []
        for id_ in ids:
            if id_ not in index:
                raise ValueError(f"unknown {what} {id_!r}")
            rows.append(index[id_])
        if len(set(rows)) != len(rows):
            raise ValueError(f"{what} ids must not repeat, got {list(ids)!r}")
        return np.asarray(rows, dtype=np.int64)

    def _match_workers(self, stop: Sequence[Worker]) -> np.ndarray:
        """Rows of the workers equal to ``stop`` (job, server, flexible, gpus)."""
        if not stop:
            return np.zeros(0, dtype=np.int64)
        free: Dict[Tuple[Any, Any, bool], List[int]] = {}
        for row, worker in enumerate(self.workers()):
            free.setdefault((worker.job, worker.server, worker.flexible), []).append(
                row
            )
        rows = []
        for worker in as_records(stop, Worker, "worker"):
            job = self._job_index.get(worker.job)
            if (
                worker.gpus is not None
                and job is not None
                and worker.gpus != self._jobs["gpus_per_worker"][job]
            ):
                raise ValueError(f"no worker {worker!r} in the state to stop")
            matches = free.get((worker.job, worker.server, worker.flexible))
            if not matches:
                raise ValueError(f"no worker {worker!r} in the state to stop")
            rows.append(matches.pop(0))
        return np.asarray(rows, dtype=np.int64)

    def _commit_workers(self, workers: Table) -> None:
        before = self._workers["job"]
        self._commit(
            self._servers, self._jobs, workers, self._server_index, self._job_index
        )
        self._count_preemptions(before)

    def _count_preemptions(self, before: np.ndarray) -> None:
        """One more preemption for each job that had workers (worker job rows
        ``before``) and has none now (the job rows unchanged)."""
        had = np.bincount(before, minlength=self.n_jobs) > 0
        has = np.bincount(self._workers["job"], minlength=self.n_jobs) > 0
        count = self._service["preemptions"]
        for job_id in self._jobs["id"][had & ~has].tolist():
            count[job_id] = count.get(job_id, 0) + 1

    @staticmethod
    def _core_columns(
        servers: Table, jobs: Table, workers: Table
    ) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
        server_columns = {
            "id": servers["key"].tolist(),
            "pool": servers["pool"],
            "gpus": servers["gpus"],
            "gpu_type": servers["gpu_type"].tolist(),
            "on_loan": servers["on_loan"],
        }
        job_columns: Dict[str, Any] = {
            n: v for n, v in jobs.items() if n not in ("id", "key", "type_code")
        }
        job_columns["id"] = jobs["key"].tolist()
        job_columns["gpu_type"] = core_types(jobs["gpu_type"])
        return server_columns, job_columns, workers

    def _check_writable(self) -> None:
        if self._read_only:
            raise ValueError(
                "this ClusterState is the simulator's view of the run: read-only; "
                "a policy returns its decision instead of applying it"
            )

    def _commit(
        self,
        servers: Table,
        jobs: Table,
        workers: Table,
        server_index: Dict[Any, int],
        job_index: Dict[Any, int],
    ) -> None:
        """Validate the new tables in the core; replace the state only if they pass."""
        self._check_writable()
        core = _core.ClusterState(*self._core_columns(servers, jobs, workers))
        self._servers, self._jobs, self._workers = servers, jobs, workers
        self._server_index, self._job_index_ = server_index, job_index
        self._core = core
        self.version += 1
        self._cache = {}

    def _sub_core(self, jobs: np.ndarray) -> Any:
        """The core state restricted to job rows ``jobs`` (only queued ones dropped)."""
        keep = np.zeros(self.n_jobs, dtype=bool)
        keep[jobs] = True
        workers = dict(self._workers)
        workers["job"] = (np.cumsum(keep) - 1)[workers["job"]]
        return _core.ClusterState(
            *self._core_columns(self._servers, _take(self._jobs, jobs), workers)
        )

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

    @property
    def remaining(self) -> Dict[Any, float]:
        """Fraction of each partly done job's work still to do (job id -> (0, 1]; a job
        not listed has all of it), as ``advance`` left it; ``schedule`` uses it."""
        return dict(self._remaining)

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


def _server_records(table: Table) -> List[Server]:
    """A server table's rows as ``aryl.Server`` records."""
    return trusted_records(
        Server,
        [
            table["id"].tolist(),
            [POOLS[p] for p in table["pool"].tolist()],
            table["gpus"].tolist(),
            table["gpu_type"].tolist(),
            table["on_loan"].tolist(),
        ],
    )


def _server_pairs(table: Table) -> List[Tuple[Server, Server]]:
    """Each server's record not on loan and on loan (a simulation view's servers)."""
    n = len(table["id"])
    unlent, lent = (
        _server_records({**table, "on_loan": np.full(n, on_loan)})
        for on_loan in (False, True)
    )
    return list(zip(unlent, lent))


def _job_records(table: Table) -> List[Job]:
    """A job table's rows as ``aryl.Job`` records."""
    return trusted_records(Job, [table[n].tolist() for n in FIELDS])


def _mismatch(detail: str) -> ValueError:
    """A reclaim plan that the state contradicts (``ReclaimPlan.apply``)."""
    return ValueError(f"the plan does not match the state: {detail}")
