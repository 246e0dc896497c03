"""What the live controller records: the journal's header, every event journaled then
applied, and a resume from the journal.

The controller changes nothing but through ``_emit``: the event is appended to the
journal (synced) and then applied to the ``Record``, so that a restarted controller
(``resume=True``) rebuilds the run from the journal, checked against this run's
header (``_check_header``), and reconciles the backend with it (``_resume``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from typing import (
    Any,
    Dict,
    Mapping,
    Sequence,
    Union,
)

from ..decisions import Decision
from ..jobtable import JobTable
from ..model import Worker
from .epochs import _gpus
from .journal import JournalMismatch
from .loans import _drain_event
from .parts import ControllerParts


class Journaling(ControllerParts):
    """The journal side of ``Controller`` (see the module)."""

    def _header(self, load: Any) -> Dict[str, Any]:
        """The journal's first line: what makes a run this one (``_check_header``)."""
        from ..engine.provenance import aryl_version, fingerprint_jobs

        policy = (
            self.policy
            if isinstance(self.policy, str)
            else f"{self.name} ({type(self.policy).__module__}."
            f"{type(self.policy).__qualname__})"
        )
        times, loads = self.load.series()
        if not self.config.loaning or load is None:
            load_print = "none"
        elif callable(load):
            load_print = "a callable"
        else:
            load_print = f"{len(times)} points, {_digest([times, loads])}"
        servers = [[s.id, s.pool, s.gpus, s.gpu_type] for s in self.servers]
        return {
            "event": "header",
            "t": 0.0,
            "aryl": aryl_version(),
            "run": {
                "jobs": f"{len(self.jobs)} jobs, "
                f"{fingerprint_jobs(JobTable.of(self.jobs))}",
                "servers": f"{len(servers)} servers, {_digest(servers)}",
                "policy": policy,
                "reclaim": str(self.reclaim_policy),
                "config": _digest(dataclasses.asdict(self.config)),
                "load": load_print,
                "seed": self.seed,
            },
        }

    def _emit(self, event: Dict[str, Any]) -> None:
        """Journal the event, then apply it to the record (the run's one path)."""
        self._journal.append(event)
        self.record.apply(event)
        if event["event"] in ("workers", "lost"):  # the record holds it now
            self._progress.pop(event["job"], None)

    def _resume(self) -> None:
        """Rebuild the state from the replayed record and reconcile the backend: a
        job already running keeps its workers (set again, idempotently)."""
        arrived = [
            self.jobs[self._job_index[j]]
            for j in self.record.arrived
            if j not in self.record.finished
        ]
        for job in arrived:
            self.backend.submit(job, self.programs[job.id])
        if self.record.reclaiming is not None:  # journal its stops, make them
            self.record.reclaiming = _drain_event(
                0.0,
                [],
                self.record,
                self.jobs,
                self._job_index,
                [],
                self.record.reclaiming,
            )
            self._stop_for_reclaim(self.record.reclaiming)
        self.state.add_jobs(arrived)
        if self.record.on_loan:
            self.state.set_on_loan(list(self.record.on_loan), True)
        starts = [
            Worker(j, s, None, f)
            for j in self.record.running()
            for s, f in self.record.workers[j]
        ]
        Decision(self.name, starts, []).apply(self.state)
        # every arrived job as the journal has it: running ones keep their workers
        # (set again, idempotently), and one it shows stopped is stopped
        self.backend.set_workers_many(
            {
                job.id: [
                    _gpus(Worker(job.id, s, None, f), job)
                    for s, f in self.record.workers.get(job.id, [])
                ]
                for job in arrived
            }
        )
        self._epochs = int(self.record.totals["epochs_run"])
        self._dirty = self.record.dirty
        # servers lent before the crash and not joined yet: asked again (a backend
        # keeps a lend under way), they join when it reports them
        self._joining = list(self.record.joining)
        if self._joining:
            ready = self.backend.lend(list(self._joining))
            self._rejoined = list(self._joining) if ready is None else list(ready)

    def _resumed_at(self) -> float:
        """Where the clock starts: the record's time, plus, for a controller that
        restarts on a wall clock, the time it was down (the jobs ran on meanwhile:
        the journal's last write is the record's time)."""
        if self.clock.virtual or not self._resuming or self.journal_path is None:
            return self.record.now
        self._resuming = False
        down = max(0.0, time.time() - os.path.getmtime(self.journal_path))
        return self.record.now + down * self.clock.compression


def _digest(value: Any) -> str:
    """16 hex digits of SHA-256 over ``value`` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_header(
    journal: Union[str, os.PathLike[str]],
    events: Sequence[Mapping[str, Any]],
    header: Mapping[str, Any],
) -> None:
    """A ``JournalMismatch`` unless the journal's ``events`` begin with this run's
    header (an empty journal has none yet: it is written first)."""
    if not events:
        return
    if events[0]["event"] != "header":
        raise JournalMismatch(
            f"{journal}: has no header line (written by an aryl before 0.3?), so "
            "nothing tells that it is this run's journal; start a new run"
        )
    theirs, ours = events[0].get("run", {}), header["run"]
    differ = [
        f"{key}: {theirs.get(key)!r} in the journal, {ours[key]!r} here"
        for key in ours
        if theirs.get(key) != ours[key]
    ]
    if differ:
        raise JournalMismatch(
            f"{journal}: is another run's journal, so this one cannot resume from "
            f"it (give the same jobs, cluster, policy, options, load and seed): "
            + "; ".join(differ)
        )
