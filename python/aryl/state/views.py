"""What a ``ClusterState`` shows: its ids, its records (``aryl.Server``,
``aryl.Job``, ``aryl.Worker``), its columns (``StateColumns``) and frames."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from ..jobtable import FIELDS
from ..model import POOLS, Job, Server, Worker, trusted_records
from .columns import StateColumns
from .stored import StoredState
from .tables import Table


class StateViews(StoredState):
    """A ``ClusterState``'s reads (``aryl.state.cluster_state``)."""

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

    @property
    def remaining(self) -> Dict[Any, float]:
        """Fraction of each partly done job's work still to do (job id -> (0, 1]; a job
        not listed has all of it), as ``advance`` left it; ``schedule`` uses it."""
        return dict(self._remaining)


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
