"""The live controller's epochs: what its policy decides, turned into workers.

A policy is a built-in name (``state.schedule(name, ...)``) or any object with the
hooks ``simulate(policy=obj)`` calls (``aryl.sim.Policy``), shown the view the
simulator gives it (``Epochs._view``: running jobs in trace order, then the queue in
arrival order, with each job's remaining work). Its decision is checked whole,
applied to the state, journaled job by job (``workers`` events) and handed to the
backend in one call, so that one epoch's starts wait together.
"""

from __future__ import annotations

from typing import (
    Any,
    Dict,
    List,
    Sequence,
    cast,
)

import numpy as np

from .. import _core
from ..decisions import Decision
from ..engine.hooks import (
    Epoch,
    decision_rows,
)
from ..model import Job, Worker
from ..state import ClusterState
from ..typing import AllocationPolicy
from .jobs import throughput
from .parts import ControllerParts


class Epochs(ControllerParts):
    """The scheduling epoch of ``Controller`` (see the module)."""

    def _options(self, ids: Sequence[Any]) -> Dict[str, Any]:
        """``ClusterState.schedule``'s options for this run (``Epoch.schedule_options``)."""
        options: Dict[str, Any] = {
            "placement": self.config.placement,
            "backfill": bool(self.config.backfill),
            "gpu_speed": dict(self.gpu_speed),
            "hetero_efficiency": float(self.config.hetero_efficiency),
        }
        if self.config.scaling != "linear" and ids:
            options["throughput"] = {
                i: self._curve(self.jobs[self._job_index[i]]) for i in ids
            }
        return options

    def _curve(self, job: Job) -> List[float]:
        return [
            throughput(job, w, self.config.scaling)
            for w in range(1, job.max_workers + 1)
        ]

    def _done(self, job: Any) -> float:
        """The fraction of ``job`` done, as its agent last reported it."""
        return self._progress.get(job, float(self.record.done[self._job_index[job]]))

    def _view(self, queued: bool) -> ClusterState:
        """What the simulator shows the kernels: running jobs in trace order, then
        (``queued``) the queue in arrival order; servers on the whitelist."""
        ids = self.record.running() + (self.record.queued() if queued else [])
        rows = np.array([self._job_index[i] for i in ids], dtype=np.int64)
        position = {i: k for k, i in enumerate(ids)}
        server_row = self.record.server_row
        pairs = [
            (position[j], server_row[s], f)
            for j in self.record.running()
            for s, f in self.record.workers[j]
        ]
        workers = {
            "job": np.array([p[0] for p in pairs], dtype=np.int64),
            "server": np.array([p[1] for p in pairs], dtype=np.int64),
            "flexible": np.array([p[2] for p in pairs], dtype=bool),
        }
        on_loan = np.zeros(len(self.servers), dtype=bool)
        for s in self.record.on_loan:
            if s not in self.record.draining:
                on_loan[server_row[s]] = True
        remaining = np.array([max(1e-9, 1.0 - self._done(i)) for i in ids])
        return self._trace.simulation_view(rows, workers, on_loan, remaining)

    def _epoch(self, now: float) -> None:
        self._dirty = False
        view = self._view(True)
        if view.n_jobs == 0:
            return
        options = self._options(view.job_ids)
        epoch = Epoch(self._epochs, now, options)
        self._epochs += 1
        if isinstance(self.policy, str):
            name = cast(AllocationPolicy, self.policy)
            decision = view.schedule(name, now=now, **options).decision
        else:
            rows = decision_rows(self.policy.allocate(view, epoch), view, epoch)
            decision = _decision_of(rows, view)
        self._apply(decision, view, epoch)

    def _apply(
        self,
        decision: Decision,
        view: ClusterState,
        epoch: Epoch,
    ) -> None:
        """Check the decision whole, update the state, then act job by job."""
        new = {
            j: [Worker(j, s, None, f) for s, f in self.record.workers.get(j, [])]
            for j in view.job_ids
        }
        for w in decision.stop:
            placed = new[w.job]
            match = next(
                k
                for k, p in enumerate(placed)
                if p.server == w.server and p.flexible == w.flexible
            )
            del placed[match]
        for w in decision.start:
            new[w.job].append(Worker(w.job, w.server, None, w.flexible))
        touched = sorted(
            {w.job for w in decision.stop} | {w.job for w in decision.start},
            key=view.job_ids.index,
        )
        for j in touched:
            job = self.jobs[self._job_index[j]]
            if new[j] and not job.min_workers <= len(new[j]) <= job.max_workers:
                raise ValueError(
                    f"{epoch.where()}: the decision leaves job {j!r} with "
                    f"{len(new[j])} workers, outside [{job.min_workers}, {job.max_workers}]"
                )
        try:
            Decision(self.name, list(decision.start), list(decision.stop)).apply(
                self.state
            )
        except ValueError as error:
            raise ValueError(f"{epoch.where()}: the decision: {error}") from None
        # the epoch with the number of changes that follow it: a resume drops an
        # epoch journaled in part (nothing of it was acted on) and decides again
        self._emit({"event": "epoch", "t": epoch.now, "changes": len(touched)})
        changes: Dict[Any, Sequence[Worker]] = {}
        for j in touched:
            before = len(self.record.workers.get(j, []))
            after = len(new[j])
            if before == 0:
                why = "start"
            elif after == 0:
                why = "preemption"
                self._dirty = True
            else:
                why = (
                    "scale_out"
                    if after > before
                    else "scale_in"
                    if after < before
                    else "move"
                )
            changes[j] = self._workers(
                j, new[j], why, epoch.now, self._done(j), act=False
            )
        self.backend.set_workers_many(changes)  # the epoch's starts wait together

    def _workers(
        self,
        job: Any,
        workers: Sequence[Worker],
        why: str,
        t: float,
        done: float,
        act: bool = True,
    ) -> List[Worker]:
        """Journal a job's new workers, then make the backend run them (``act``;
        else the caller does, with others). Returns them as the backend takes them."""
        self._emit(
            {
                "event": "workers",
                "t": t,
                "job": job,
                "workers": [[w.server, bool(w.flexible)] for w in workers],
                "why": why,
                "done": float(done),
            }
        )
        sized = [_gpus(w, self.jobs[self._job_index[job]]) for w in workers]
        if act and why != "finish":
            self.backend.set_workers(job, sized)
        return sized

    def _sample(self, now: float) -> None:
        training, loaned = self.record.used_gpus()
        lent = len(self.record.on_loan)
        self._emit(
            {
                "event": "sample",
                "t": now,
                "training_gpus_used": training,
                "loaned_gpus_used": loaned,
                "on_loan": lent,
                "inference_needed": max(0, self.load.servers - lent),
                "queue_length": len(self.record.queued()),
                "running_jobs": len(self.record.workers),
            }
        )


def _gpus(worker: Worker, job: Job) -> Worker:
    return Worker(worker.job, worker.server, job.gpus_per_worker, worker.flexible)


def _decision_of(rows: Any, view: ClusterState) -> Decision:
    """A ``Decision`` by id from ``decision_rows``' answer on ``view``: its four row
    arrays, or the kernel's own ``_core.Decision`` (an untouched
    ``state.schedule(...)`` result, whose rows are the view's)."""
    if isinstance(rows, _core.Decision):
        rows = (rows.start_job, rows.start_server, rows.start_flexible, rows.stop_array)
    start_job, start_server, start_flexible, stop = rows
    jobs, servers = view.job_ids, view.server_ids
    start = [
        Worker(jobs[j], servers[s], None, bool(f))
        for j, s, f in zip(
            start_job.tolist(), start_server.tolist(), start_flexible.tolist()
        )
    ]
    workers = view.workers()
    return Decision(
        "policy", start, [workers[int(r)] for r in np.asarray(stop).tolist()]
    )
