"""``ScheduleResult``: what ``ClusterState.schedule`` decided, as index arrays into
the state's rows, its ``decision`` (records, built on first access) and ``apply``."""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional

import numpy as np

from ..decisions import Decision
from ..model import Worker, trusted_records
from ..typing import SchedulePolicy

#: The row arrays of a ``ScheduleResult`` that a caller may read (and edit).
_ROWS = frozenset({"start_job", "start_server", "start_flexible", "stop"})


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
        version: int,
        policy: SchedulePolicy,
        raw: Any,
        kept: Optional[np.ndarray],
        future: np.ndarray,
        unplaceable: Dict[Any, str],
    ) -> None:
        """Map the kernel's answer (rows of the jobs ``kept``) to the state's rows.

        ``version``: the state's version when the epoch began (read before the
        kernel ran, so a change made meanwhile makes this result stale).
        """
        self._state, self._version = state, version
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
        start = trusted_records(
            Worker,
            [
                ids[self.start_job].tolist(),
                self._servers["id"][self.start_server].tolist(),
                gpus,
                self.start_flexible.tolist(),
            ],
        )
        w = self._workers
        rows = self.stop
        stop = trusted_records(
            Worker,
            [
                ids[w["job"][rows]].tolist(),
                self._servers["id"][w["server"][rows]].tolist(),
                self._jobs["gpus_per_worker"][w["job"][rows]].tolist(),
                w["flexible"][rows].tolist(),
            ],
        )
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

    def _kernel_rows(
        self,
    ) -> Any:
        """The kernel's own answer when none of the row arrays has been read (so
        none can have been edited in place): its ``_core.Decision`` if the kernel
        saw every job of the state (its rows are then the state's), else
        ``(start_job, start_server, start_flexible, stop)`` in the state's rows.
        None once any was read."""
        if not _ROWS.isdisjoint(self.__dict__):
            return None
        raw = self._raw
        if self._kept is None:
            return raw
        job = self._kept[raw.start_job]
        return job, raw.start_server, raw.start_flexible, raw.stop_array

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
