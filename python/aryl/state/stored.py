"""What a ``ClusterState`` keeps and the one way to change it: its servers, jobs
and workers as NumPy tables, their indices by id, the compiled core's copy of them
(``_commit`` validates a change there and replaces the tables only if it passes),
the cache cleared by every change, and the counts and checks every part reads."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import numpy as np

from .. import _core
from ..columns import core_types
from ..decisions import Appliable
from .tables import Table, _index, _take


class StoredState(Appliable):
    """The tables of a ``ClusterState`` (``aryl.state.cluster_state``) and their
    commit; ``ClusterState.__init__`` sets each attribute."""

    _servers: Any  # the server table (``tables.Table``)
    _jobs: Any  # the job table (a simulation view's: ``tables._TakenRows``)
    _workers: Any  # the worker table (job and server row of each)
    _server_index: Dict[Any, int]
    # built when first read in a simulation view (_job_index)
    _job_index_: Optional[Dict[Any, int]]
    _core: Any  # the compiled core's copy
    version: int
    _cache: Dict[str, Any]
    # jobs partly done (advance); a simulation view's is built when first read
    _remaining_: Optional[Dict[Any, float]]
    # a simulation view's (trace state, trace rows of its jobs): see
    # ClusterState._queued_fit_unlent
    _origin: Optional[Tuple[StoredState, np.ndarray]]
    # each job's service (columns.SERVICE) by id, kept by advance and updates
    _service: Dict[str, Dict[Any, float]]
    _service_rows: Optional[Table]  # the simulator's, by job row
    _remaining_rows: Optional[np.ndarray]  # the simulator's too
    _read_only: bool  # the simulator's view of a run (simulation_view)
    _known_columns: Table  # columns the simulator made (StateColumns)

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

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()``, kept in the cache (cleared by every change) under ``key``."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

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
