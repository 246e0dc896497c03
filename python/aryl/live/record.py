"""What a live run did, rebuilt from its events: the journal and the ``Result``.

The controller changes nothing except by an event (``Record.apply``), and appends
every event to the journal (``Journal``, ``journal.py``: JSON lines, flushed and synced)
before acting on it. Replaying the journal into a new ``Record`` therefore restores
the run: which jobs arrived, which workers each holds, which servers are on loan
(the whitelist), what finished, and every allocation interval in the simulator's
history schema (``aryl.engine.history``). ``Record.result()`` is an ``aryl.sim.Result``
with the same tables and totals a simulated run has.

Events (``"event"`` names the kind; every one has ``"t"``, simulated seconds):
``header`` (the first line: ``run``, the fingerprints a resume checks: jobs,
servers, policy, reclaim, config, load, seed), ``arrive`` (``job``), ``reject``
(``job``: a policy's ``admit`` said no), ``workers`` (``job``, its ``workers`` now as
``[server, flexible]`` pairs, ``why``: the history's change, ``done``: the fraction
done then; a preemption of a job without checkpoint books that fraction as lost, as
the simulator does, since the job starts over), ``lend`` (``servers`` asked of the inference side; a ``loan`` puts them
on the whitelist once they joined), ``unlend`` (``servers`` lent that went back
before joining), ``lost`` (``job``, ``fraction`` of it lost to a kill or a failure;
``restart``: true when its workers were restarted in place), ``loan`` (``servers``,
``on_loan``), ``drain`` (``servers``, and the reclaim's plan: the jobs it
``preempted`` and ``scaled`` in, their ``done``, its ``demand_gpus``,
``collateral_gpus`` and ``free``), ``reclaim`` (``servers``, ``demand_gpus``,
``collateral_gpus``, ``free``: servers returned without preempting a job there),
``sample`` (a timeline row), ``epoch`` (``changes``: the ``workers`` events of its
decision that follow it) and ``end``.

A resume (``restore``) keeps what is whole: a torn last line (a crash in mid-write)
and an epoch without all its changes were never acted on and are cut off; a
``drain`` without its ``reclaim`` is finished by the resumed controller.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..engine.history import CHANGES, COLUMNS, PREEMPTIONS, RESIZES
from ..engine.result import TIMELINE_COLUMNS, Result
from ..model import Job, Server
from .jobs import throughput
from .journal import Journal, JournalMismatch, JournalRepaired

__all__ = [
    "Journal",
    "JournalMismatch",
    "JournalRepaired",
    "KINDS",
    "MAX_TIME_S",
    "Record",
    "TIMELINE",
    "load_integral",
    "replay",
    "restore",
]

#: The timeline's columns, as ``aryl.sim.Result.timeline`` has them.
TIMELINE = TIMELINE_COLUMNS
#: The largest time a journal may hold, simulated seconds (about 31,700 years): past
#: it a float no longer counts milliseconds, and a clock cannot step an epoch.
MAX_TIME_S = 1e12
#: The kinds of events (the module docstring says what each holds), ``end`` aside.
KINDS = (
    "header",
    "arrive",
    "reject",
    "workers",
    "lost",
    "loan",
    "lend",
    "unlend",
    "reclaim",
    "drain",
    "sample",
    "epoch",
)


class Record:
    """A live run's state and tables, changed only by events (see the module)."""

    def __init__(
        self, jobs: Sequence[Job], servers: Sequence[Server], scaling: str = "linear"
    ) -> None:
        """``jobs`` in trace order; ``servers`` training then inference."""
        self.jobs = list(jobs)
        self.servers = list(servers)
        self.job_row = {j.id: i for i, j in enumerate(self.jobs)}
        self.server_row = {s.id: i for i, s in enumerate(self.servers)}
        self.server = {s.id: s for s in self.servers}
        n = len(self.jobs)
        self.work = np.array(
            [
                j.duration * throughput(j, j.reference_workers, scaling)
                for j in self.jobs
            ]
        )
        self.arrived: Dict[Any, float] = {}
        self.rejected: List[Any] = []  # by a policy's admit
        self.workers: Dict[Any, List[Tuple[Any, bool]]] = {}
        self.on_loan: List[Any] = []  # the whitelist's inference servers, in lend order
        self.draining: List[Any] = []
        self.joining: List[Any] = []  # lent, not joined yet (not on the whitelist)
        self.finished: Dict[Any, float] = {}
        self.done = np.zeros(n)
        self.start_time = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.scaling_ops = np.zeros(n, dtype=np.int64)
        self.work_lost = np.zeros(n)
        self.ran = np.zeros((n, 2), dtype=bool)  # on training, on inference
        self.ran_mixed = np.zeros(n, dtype=bool)
        self.intervals = np.zeros(n, dtype=np.int64)
        self._open: Dict[Any, Tuple[float, str, Dict[Any, int]]] = {}
        self.rows: List[Tuple[Any, ...]] = []
        self.timeline: List[Tuple[float, ...]] = []
        self.totals: Dict[str, Any] = {
            k: 0
            for k in (
                "reclaims",
                "servers_reclaimed",
                "servers_reclaimed_free",
                "collateral_gpus",
                "reclaim_demand_gpus",
                "epochs_run",
            )
        }
        self.loaned_capacity_seconds = 0.0
        self.now = 0.0
        self.ended: Optional[float] = None
        # where the run stood within its last instant, for a resumed controller
        self.reclaiming: Optional[Dict[str, Any]] = None  # a drain not yet reclaimed
        self.reclaimed: Optional[Tuple[float, float]] = None  # the last: drain, end
        self.dirty = True  # something changed since the last scheduling epoch
        self.epoch_at = -math.inf  # the last epoch's time
        self.sampled_at = -math.inf  # the last sample's time (an epoch tick's end)
        self.header: Optional[Dict[str, Any]] = None  # the run's fingerprints
        self.restarts: Dict[Any, int] = {}  # job -> restarts in place (``lost``)
        self.events = 0  # applied so far

    # ------------------------------------------------------------ the events

    def apply(self, event: Dict[str, Any]) -> None:
        """Apply one event (the journal's order is the run's)."""
        kind, t = event["event"], float(event["t"])
        if not -MAX_TIME_S <= t <= MAX_TIME_S:
            raise ValueError(
                f"time {t:g} s: a journal's times must be finite and within "
                f"{MAX_TIME_S:g} s ({MAX_TIME_S / 3.15576e7:,.0f} years)"
            )
        if kind not in KINDS + ("end",):
            raise ValueError(f"unknown event {kind!r} at t = {t:g}")
        self.events += 1
        if kind == "header":
            if self.events > 1:
                raise ValueError("a header after the first line")
            self.header = event
            return
        self._loaned_until(t)
        if kind in ("arrive", "loan", "reclaim"):
            self.dirty = True
        if kind == "arrive":
            self.arrived[event["job"]] = t
        elif kind == "reject":
            self.rejected.append(event["job"])
        elif kind == "workers":
            self._workers(
                t, event["job"], event["workers"], event["why"], event["done"]
            )
        elif kind == "lost":
            self._lost(event)
        elif kind == "lend":
            self.joining.extend(event["servers"])
        elif kind == "unlend":
            for s in event["servers"]:
                self.joining.remove(s)
        elif kind == "loan":
            for s in event["servers"]:
                if event["on_loan"]:
                    self.on_loan.append(s)
                    if s in self.joining:
                        self.joining.remove(s)
                else:
                    self.on_loan.remove(s)
                    if s in self.draining:
                        self.draining.remove(s)
        elif kind == "drain":
            self.draining.extend(event["servers"])
            self.reclaiming = event
        elif kind == "reclaim":
            if self.reclaiming is not None and list(self.reclaiming["servers"]) == list(
                event["servers"]
            ):
                self.reclaimed = (float(self.reclaiming["t"]), t)
                self.reclaiming = None
            self.totals["reclaims"] += 1
            self.totals["servers_reclaimed"] += len(event["servers"])
            self.totals["servers_reclaimed_free"] += int(event["free"])
            self.totals["collateral_gpus"] += int(event["collateral_gpus"])
            self.totals["reclaim_demand_gpus"] += int(event["demand_gpus"])
        elif kind == "epoch":
            self.totals["epochs_run"] += 1
            self.dirty = False
            self.epoch_at = t
        elif kind == "sample":
            self.timeline.append(tuple(event[c] for c in TIMELINE))
            self.sampled_at = t
        else:  # end
            for job in list(self._open):
                self._close(job, t, "end")
            self.ended = t

    def _lost(self, event: Dict[str, Any]) -> None:
        """Progress lost to a kill or a failure (back to the last checkpoint). A job
        without checkpoint that no longer runs lost all its progress when it was
        stopped (``_workers``): a kill after that stop has nothing left to lose."""
        job = event["job"]
        row = self.job_row[job]
        fraction = float(event["fraction"])
        if not self.jobs[row].checkpoint and job not in self.workers:
            fraction = 0.0
        self.work_lost[row] += fraction * self.work[row]
        self.done[row] = max(0.0, self.done[row] - fraction)
        if event.get("restart"):
            self.restarts[job] = self.restarts.get(job, 0) + 1

    def _workers(
        self, t: float, job: Any, workers: List[List[Any]], why: str, done: float
    ) -> None:
        if why not in CHANGES:
            raise ValueError(f"job {job!r}: unknown change {why!r}")
        row = self.job_row[job]
        self.done[row] = float(done)
        before = len(self.workers.get(job, []))
        placed = [(s, bool(f)) for s, f in workers]
        if before == 0 and placed:
            if np.isnan(self.start_time[row]):
                self.start_time[row] = t
        if why in PREEMPTIONS or why == "finish":
            self.dirty = True  # a job left: the next epoch runs
        if why in PREEMPTIONS:
            self.preemptions[row] += 1
            if not self.jobs[row].checkpoint:
                # the simulator's rule (Engine::preempt): a job without checkpoint
                # starts over, so all its progress since it started is lost
                self.work_lost[row] += self.done[row] * self.work[row]
                self.done[row] = 0.0
        elif why in RESIZES:
            self.scaling_ops[row] += 1
        elif why == "finish":
            self.finished[job] = t
            self.done[row] = 1.0
        self._close(job, t, why)
        if placed:
            self.workers[job] = placed
            per_server: Dict[Any, int] = {}
            for s, _ in sorted(placed, key=lambda p: self.server_row[p[0]]):
                per_server[s] = per_server.get(s, 0) + 1
            self._open[job] = (t, why, per_server)
            self.intervals[row] += 1
            pools = {self.server[s].pool for s in per_server}
            self.ran[row, 0] |= "training" in pools
            self.ran[row, 1] |= "inference" in pools
            self.ran_mixed[row] |= (
                len({self.server[s].gpu_type for s in per_server}) > 1
            )
        else:
            self.workers.pop(job, None)

    def _close(self, job: Any, t: float, why: str) -> None:
        if job not in self._open:
            return
        start, opened, per_server = self._open.pop(job)
        row = self.job_row[job]
        gpus = self.jobs[row].gpus_per_worker
        for s, count in per_server.items():
            server = self.server[s]
            self.rows.append(
                (
                    job,
                    int(self.intervals[row] - 1),
                    start,
                    t,
                    opened,
                    why,
                    s,
                    count,
                    count * gpus,
                    server.gpu_type,
                    server.pool == "inference",
                )
            )

    def _loaned_until(self, t: float) -> None:
        if t > self.now:
            gpus = sum(self.server[s].gpus for s in self.on_loan)
            self.loaned_capacity_seconds += gpus * (t - self.now)
            self.now = t

    # ------------------------------------------------------------ the views

    def queued(self) -> List[Any]:
        """Arrived jobs without workers and not finished, in the simulator's queue
        order (submit time, then trace order)."""
        ids = [
            j for j in self.arrived if j not in self.workers and j not in self.finished
        ]
        return sorted(
            ids, key=lambda j: (self.jobs[self.job_row[j]].submit_time, self.job_row[j])
        )

    def running(self) -> List[Any]:
        """Jobs holding workers, in trace order."""
        return sorted(self.workers, key=self.job_row.__getitem__)

    def used_gpus(self) -> Tuple[int, int]:
        """GPUs in use on training and on loaned servers."""
        used = [0, 0]
        for job, placed in self.workers.items():
            gpus = self.jobs[self.job_row[job]].gpus_per_worker
            for s, _ in placed:
                used[self.server[s].pool == "inference"] += gpus
        return used[0], used[1]

    def history(self) -> pd.DataFrame:
        """The allocation intervals closed so far, in ``aryl.engine.history``'s schema."""
        frame = pd.DataFrame(self.rows, columns=list(COLUMNS))
        changes = pd.CategoricalDtype(list(CHANGES))
        frame["opened"] = frame["opened"].astype(changes)
        frame["closed"] = frame["closed"].astype(changes)
        for column, dtype in (
            ("interval", np.int64),
            ("start", float),
            ("end", float),
            ("workers", np.int64),
            ("gpus", np.int64),
            ("on_loan", bool),
        ):
            frame[column] = frame[column].astype(dtype)
        return frame

    def result(
        self, label: str, inference_gpu_seconds: float = 0.0, rejected: bool = False
    ) -> Result:
        """The run as an ``aryl.sim.Result``, built as the simulator builds its own
        (call after the ``end`` event); ``rejected``: add the column a policy's
        ``admit`` fills."""
        from ..engine.core_io import _result

        history = self.history()
        seconds = (history["end"] - history["start"]) * history["gpus"]
        loaned = history["on_loan"].to_numpy(dtype=bool)
        completed = float((self.done * self.work).sum())
        lost = float(self.work_lost.sum())
        timeline = np.array(self.timeline, dtype=float).reshape(-1, len(TIMELINE))
        raw: Dict[str, Any] = {
            "start_time": self.start_time,
            "finish_time": np.array(
                [self.finished.get(j.id, np.nan) for j in self.jobs]
            ),
            "preemptions": self.preemptions,
            "scaling_ops": self.scaling_ops,
            "work_lost": self.work_lost,
            "ran_on_training": self.ran[:, 0],
            "ran_on_inference": self.ran[:, 1],
            "ran_mixed": self.ran_mixed,
            "t": timeline[:, 0],
            **{c: timeline[:, k].astype(np.int64) for k, c in enumerate(TIMELINE) if k},
            "end_time": float(self.ended if self.ended is not None else self.now),
            "training_gpu_seconds": float(seconds[~loaned].sum()),
            "loaned_gpu_seconds": float(seconds[loaned].sum()),
            "inference_gpu_seconds": float(inference_gpu_seconds),
            "loaned_capacity_seconds": self.loaned_capacity_seconds,
            # live progress is either kept or lost: delivered is their sum
            "work_delivered": completed + lost,
            "work_completed": completed,
            "work_lost_total": lost,
            # the ledger's counters: progress lost as GPU-seconds, as the engine
            # counts it; restarts and late returns are not measured apart live (a
            # restarting worker's GPUs are in its interval): NaN, not a made-up 0
            "work_lost_gpu_seconds": float(
                (
                    self.work_lost * np.array([j.gpus_per_worker for j in self.jobs])
                ).sum()
            ),
            "restart_gpu_seconds": math.nan,
            "inference_short_server_seconds": math.nan,
            **{k: int(v) for k, v in self.totals.items()},
            "violations": [],
        }
        if rejected:
            raw["rejected"] = np.array([j.id in self.rejected for j in self.jobs])
        ids = np.empty(len(self.jobs), dtype=object)
        ids[:] = [j.id for j in self.jobs]
        submit = np.array([j.submit_time for j in self.jobs])
        gpus = np.array([j.gpus_per_worker for j in self.jobs])
        users = np.array([j.user for j in self.jobs], dtype=object)
        vcs = np.array([j.vc for j in self.jobs], dtype=object)
        result = _result(self.servers, ids, submit, raw, label, gpus, (users, vcs))
        result.allocations = history
        return result


def replay(
    path: os.PathLike[str] | str,
    jobs: Sequence[Job],
    servers: Sequence[Server],
    scaling: str = "linear",
) -> Record:
    """The ``Record`` a journal restores (a restarted controller starts from it)."""
    return restore(path, jobs, servers, scaling)[0]


def restore(
    path: os.PathLike[str] | str,
    jobs: Sequence[Job],
    servers: Sequence[Server],
    scaling: str = "linear",
    check: Optional[Callable[[List[Dict[str, Any]]], None]] = None,
) -> Tuple[Record, int]:
    """``replay``'s ``Record``, and the bytes of the journal it holds (its whole
    lines): a resumed controller appends after them. ``check(events)``, given every
    whole event before any is applied, may refuse the journal (its header)."""
    lines = list(Journal.lines(path))
    if check is not None:
        check([event for _, _, event in lines])
    keep = Journal.whole(path)
    # an epoch is whole with the changes it announces: one journaled in part was
    # never acted on (the backend acts after the last), so it is cut off
    epoch = next(
        (k for k in range(len(lines) - 1, -1, -1) if lines[k][2]["event"] == "epoch"),
        None,
    )
    if epoch is not None:
        changes = lines[epoch][2].get("changes", 0)
        after = lines[epoch + 1 : epoch + 1 + int(changes)]
        if len(after) < changes:
            keep = lines[epoch][1]
            lines = lines[:epoch]
    record = Record(jobs, servers, scaling)
    for number, _, event in lines:
        try:
            record.apply(event)
        except (KeyError, ValueError, TypeError, OverflowError) as error:
            what = f"missing field {error}" if isinstance(error, KeyError) else error
            raise ValueError(
                f"{path}, line {number}: {event.get('event')!r} event: {what}"
            ) from None
    return record, keep


def load_integral(times: Sequence[float], loads: Sequence[float], end: float) -> float:
    """Integral of the load step function over ``[0, end]``."""
    from ..engine.core_io import _load_integral

    if end <= 0 or math.isinf(end):
        return 0.0
    return _load_integral(list(times), list(loads), end)
