"""How a ``ClusterState`` changes in place: jobs and servers added and removed,
loans set, a ``Decision``'s workers and a ``ReclaimPlan`` applied; each change
validated and atomic (through ``StoredState._commit``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

import numpy as np

from ..decisions import ReclaimPlan
from ..model import Worker, as_records
from ..validation import flag, integer
from .tables import (
    Table,
    _any_columns,
    _concat,
    _index,
    _job_table,
    _records_columns,
    _server_table,
    _take,
    _worker_table,
)
from .views import StateViews


class StateUpdates(StateViews):
    """A ``ClusterState``'s updates (``aryl.state.cluster_state``)."""

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
        on_loan = flag(on_loan, "on_loan")
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


def _mismatch(detail: str) -> ValueError:
    """A reclaim plan that the state contradicts (``ReclaimPlan.apply``)."""
    return ValueError(f"the plan does not match the state: {detail}")
