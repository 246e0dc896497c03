"""The live controller: one writer of the cluster state, decisions turned into actions.

``Controller`` keeps an ``aryl.ClusterState`` whose ``on_loan`` flags are the paper's
whitelist: the servers training may use. It runs the simulator's loop on a clock:
within a tick, arrivals, then completions, then the loan decision (every
``loan_interval``), then the scheduling epoch (every ``schedule_interval``, skipped
when nothing changed), as ``aryl.sim.simulate`` orders them. A policy is a built-in
name (``state.schedule(name, ...)``, ``state.reclaim(...)``) or any object with the
hooks ``simulate(policy=obj)`` calls (``aryl.sim.Policy``), shown the same
read-only view (running jobs in trace order, then the queue in arrival order).

Reclaim, as the paper does it: the policy's reclaim chooses the servers; each is
drained (no new worker starts there); the jobs hit save and stop (preempted) or
lose their workers there (scaled in); the controller waits until the backend
confirms no aryl worker runs there, killing what is left at ``grace`` seconds (the
work since the last checkpoint is journaled as lost); only then do the servers
leave the whitelist and go back to the inference side. A lend does not wait: a lent
server joins the whitelist when the backend reports its node joined.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
import warnings
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

import numpy as np
import pandas as pd

from .. import _core
from ..decisions import Decision
from ..defaults import (
    SCHEDULE_POLICIES,
    SIMULATION_RECLAIM_POLICIES,
    UNLISTED_GPU_SPEED,
)
from ..jobtable import JobTable
from ..model import Job, Records, Server, Worker, as_records
from ..sim.config import Cluster, Config
from ..sim.hooks import (
    Epoch,
    check_policy,
    decision_rows,
    has_hook,
    policy_name,
    reclaim_rows,
)
from ..state import ClusterState
from ..typing import AllocationPolicy, SimulationReclaimPolicy
from .backend import Backend, Report
from .jobs import TrainingJob, emulated_programs, throughput
from .record import (
    Journal,
    JournalMismatch,
    JournalRepaired,
    Record,
    load_integral,
    restore,
)
from .timing import Clock, LoadSource, VirtualClock

#: Simulated seconds a reclaim waits for stopped workers before killing them.
RECLAIM_GRACE_S = 120.0
#: Times a job's dead worker is restarted in place before the job is requeued.
WORKER_RESTARTS = 2


class Controller:
    """Runs a trace (or live submissions) on a backend under one policy.

    Parameters
    ----------
    jobs
        The jobs (``aryl.Job`` records, dicts or a DataFrame), submitted at their
        ``submit_time``.
    cluster
        A ``aryl.sim.Cluster`` or ``aryl.Server`` records: training servers and the
        inference servers the load lends and reclaims.
    backend
        Where workers run (``FakeBackend``, ``RayBackend``).
    policy, reclaim
        A built-in policy name, or a policy object (``aryl.sim.Policy``), whose
        ``reclaim`` hook, if any, replaces ``reclaim`` (a built-in reclaim policy).
    load
        The inference load: ``(time_s, load)`` rows or a callable ``load(t)``.
    config
        ``aryl.sim.Config`` (intervals, hold, headroom, GPU speeds, scaling...).
    clock
        ``Clock(compression=C)``; ``VirtualClock()`` on the in-process backend.
    journal
        A path for the JSON-lines journal (``None``: none kept).
    programs
        Job id -> ``TrainingJob``; jobs not named run as ``EmulatedJob``s.
    grace
        Simulated seconds a reclaim waits for workers to stop.
    worker_restarts
        Restarts in place of a job whose worker died, before it is requeued.
    resume
        Restore the run from ``journal`` (a restarted controller) and go on, from
        wherever the earlier one stopped (in mid-reclaim: the reclaim is finished
        first). A journal of another run (other jobs, servers, policy, config, load
        or seed: its header says) is a ``JournalMismatch``; a torn last line is cut
        off (``JournalRepaired`` warns).
    seed
        Seeds the random reclaim policy, as in ``simulate``.
    """

    def __init__(
        self,
        jobs: Records,
        cluster: Union[Cluster, Records],
        backend: Backend,
        policy: Any = "aryl",
        reclaim: SimulationReclaimPolicy = "aryl",
        load: Any = None,
        config: Optional[Config] = None,
        clock: Optional[Clock] = None,
        journal: Optional[Union[str, os.PathLike[str]]] = None,
        programs: Optional[Mapping[Any, TrainingJob]] = None,
        grace: float = RECLAIM_GRACE_S,
        worker_restarts: int = WORKER_RESTARTS,
        resume: bool = False,
        seed: int = 0,
    ) -> None:
        """See the class."""
        self.config = config if config is not None else Config()
        if not isinstance(self.config, Config):
            raise TypeError(f"config must be an aryl.sim.Config, got {config!r}")
        if self.config.start_on_loan:
            raise ValueError(
                "start_on_loan moves running jobs to faster GPUs, which aryl live does "
                "not do yet: run it in aryl.sim.simulate (aryl simulate --start-on-loan)"
            )
        if isinstance(policy, str):
            if policy not in SCHEDULE_POLICIES:
                raise ValueError(
                    f"unknown policy {policy!r}; expected one of {SCHEDULE_POLICIES}"
                )
        else:
            check_policy(policy)
        if reclaim not in SIMULATION_RECLAIM_POLICIES:
            raise ValueError(
                f"unknown reclaim policy {reclaim!r}; expected one of "
                f"{SIMULATION_RECLAIM_POLICIES}"
            )
        if not (grace >= 0.0):
            raise ValueError(f"grace must be >= 0 seconds, got {grace}")
        if isinstance(worker_restarts, bool) or not isinstance(worker_restarts, int):
            raise TypeError(f"worker_restarts must be an int, got {worker_restarts!r}")
        table = JobTable.of(jobs)
        if not self.config.elasticity:
            w = table.column("reference_workers")
            table = table.replace(min_workers=w, max_workers=w)
        self.jobs: List[Job] = list(table)
        self.servers = _servers(cluster)
        self.policy = policy
        self.reclaim_policy = reclaim
        self.backend = backend
        self.clock = clock if clock is not None else VirtualClock()
        self.grace = float(grace)
        self.worker_restarts = worker_restarts
        self.seed = int(seed)
        self.name = policy if isinstance(policy, str) else policy_name(policy)
        inference = [s for s in self.servers if s.pool == "inference"]
        self.load = LoadSource(
            load if self.config.loaning else None,
            len(inference),
            self.config.headroom,
            self.config.lend_hold,
        )
        last_submit = max((j.submit_time for j in self.jobs), default=0.0)
        self.load_note = self.load.extend(last_submit)
        programs = dict(programs or {})
        _check_programs(programs, {j.id for j in self.jobs})
        if resume and journal is None:
            raise ValueError("resume=True needs the journal to resume from")
        if not resume and journal is not None and _nonempty(journal):
            raise ValueError(
                f"{journal}: holds the journal of an earlier run; resume=True continues "
                "it, or give a new path (a new run never appends to an old journal)"
            )
        speed = {
            s.gpu_type: float(self.config.gpu_speed.get(s.gpu_type, UNLISTED_GPU_SPEED))
            for s in self.servers
        }
        self.gpu_speed = speed
        emulated = emulated_programs(
            [j for j in self.jobs if j.id not in programs],
            speed,
            self.config.hetero_efficiency,
            self.config.scaling,
            self.config.restart_overhead,
        )
        self.programs: Dict[Any, TrainingJob] = {**emulated, **programs}
        frames = pd.DataFrame([dataclasses.asdict(s) for s in self.servers])
        # The trace in trace order: the simulator's views are built from it.
        self._trace = ClusterState.from_frames(frames, table.to_frame())
        self._job_index = {j.id: i for i, j in enumerate(self.jobs)}
        self.state = ClusterState.from_records(self.servers)  # the whitelist's state
        self.journal_path = journal
        if journal is not None and os.path.exists(journal):
            if not os.path.isfile(journal):
                raise ValueError(f"journal {journal}: not a file")
        keep: Optional[int] = None
        header = self._header(load)
        if resume and journal is not None and os.path.exists(journal):
            self.record, keep = restore(
                journal,
                self.jobs,
                self.servers,
                self.config.scaling,
                lambda events: _check_header(journal, events, header),
            )
        else:
            self.record = Record(self.jobs, self.servers, self.config.scaling)
        self._resuming = resume and os.path.exists(journal or "")
        self._journal = Journal(journal, keep)
        try:
            if not self.record.events:  # a new journal (or nothing of one was whole)
                self._emit(header)
            if self._journal.repaired:
                warnings.warn(
                    f"{journal}: cut off its last {self._journal.repaired} bytes, "
                    "written in part when the controller stopped (never acted on)",
                    JournalRepaired,
                    stacklevel=2,
                )
            # restarts in place per job, as journaled (the cap holds across resumes)
            self.restarts: Dict[Any, int] = self.record.restarts
            self._dirty = False
            self._epochs = 0
            self._progress: Dict[Any, float] = {}  # job -> fraction done, last reported
            self._joining: List[Any] = []  # lent servers not yet joined, in lend order
            self._rejoined: List[Any] = []  # of those, ready when a resume lent again
            self._pending = sorted(
                (
                    j
                    for j in self.jobs
                    if j.id not in self.record.arrived
                    and j.id not in self.record.rejected
                ),
                key=lambda j: (j.submit_time, self._job_index[j.id]),
            )
            if resume:
                self.backend.resume()
            self.backend.register(self.servers)
            if resume:
                self._resume()
        except BaseException:
            self._journal.close()
            raise

    def _header(self, load: Any) -> Dict[str, Any]:
        """The journal's first line: what makes a run this one (``_check_header``)."""
        from ..sim.provenance import aryl_version, fingerprint_jobs

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

    # ------------------------------------------------------------------ run

    def run(self, until: float = math.inf) -> Any:
        """Run until every job has finished (or can never start, or the horizon);
        returns the run as an ``aryl.sim.Result``.

        ``until``: stop at that simulated time without ending the run (the journal
        then ends as if the controller had crashed; a ``resume=True`` controller
        goes on from it).
        """
        start = self._resumed_at()
        self.clock.start(start)
        interval, loan_every = self.config.schedule_interval, self.config.loan_interval
        # the instant the journal ends in is due again unless it ended (its sample:
        # an epoch tick's last event); its loan decision and epoch are idempotent
        due = self.record.sampled_at < start
        next_epoch = _next_multiple(start, interval, inclusive=due)
        next_loan = (
            _next_multiple(start, loan_every, inclusive=due)
            if self.load.active
            else math.inf
        )
        if start == 0.0 and not self.record.arrived:
            self._dirty = True
        try:
            if self._rejoined:
                self._joined(start, self._rejoined)
                self._rejoined = []
            began = None
            if self.record.reclaiming is not None:  # a crash in mid-reclaim
                began = float(self.record.reclaiming["t"])
                self._release_reclaimed(self.record.reclaiming)
            elif self.record.reclaimed is not None:
                began, ended = self.record.reclaimed
                began = began if ended >= self.record.now else None
            if began is not None and began > self.record.sampled_at:
                # the rest of the instant the reclaim began in, as _tick goes on
                # after a loan decision (the reclaim) that waited: its epoch, if one
                # was due, at the time the wait ended (no poll before it)
                now = max(began, self.clock.now())
                if _next_multiple(began, loan_every, inclusive=True) == began:
                    next_loan = _next_multiple(now, loan_every, inclusive=False)
                    if now >= self.load.settled():
                        next_loan = math.inf
                if _next_multiple(began, interval, inclusive=True) == began:
                    if self._dirty and self.record.epoch_at < now:
                        self._epoch(now)
                    self._sample(now)
                    next_epoch = _next_multiple(now, interval, inclusive=False)
            while not self._over():
                now = self.clock.now()
                t = min(
                    self._pending[0].submit_time if self._pending else math.inf,
                    next_epoch,
                    next_loan,
                    self.backend.next_event(now),
                    self.config.horizon,
                )
                if not self.clock.virtual:  # wake often enough to see completions
                    t = min(t, now + interval / 4)
                if t > min(self.config.horizon, until) or math.isinf(t):
                    break
                self.clock.wait_until(t)
                now = self.clock.now()
                loaned = now >= next_loan
                # a loan decision at or after the series' end (plus the hold) is
                # the simulator's last: nothing can change after it
                last_loan = loaned and now >= self.load.settled()
                now = self._tick(now, loaned, now >= next_epoch)
                # the next ones after now, however far the clock jumped (a stalled
                # process, a resume after a long stop): not step by step
                if next_loan <= now:
                    next_loan = _next_multiple(now, loan_every, inclusive=False)
                if last_loan:
                    next_loan = math.inf
                if next_epoch <= now:
                    next_epoch = _next_multiple(now, interval, inclusive=False)
                if self._stuck(now, next_loan):
                    break
            if until == math.inf:
                self._emit({"event": "end", "t": self.clock.now()})
        finally:
            self._journal.close()
        return self.result()

    def result(self) -> Any:
        """The run so far as an ``aryl.sim.Result``."""
        from ..sim.provenance import Provenance, aryl_version, fingerprint_jobs

        end = self.record.ended if self.record.ended is not None else self.record.now
        times, loads = self.load.series()
        gpus = sum(s.gpus for s in self.servers if s.pool == "inference")
        result = self.record.result(
            f"{self.name} (live)",
            load_integral(times, loads, end) * gpus,
            rejected=not isinstance(self.policy, str),
        )
        result.provenance = Provenance(
            jobs=len(self.jobs),
            jobs_fingerprint=fingerprint_jobs(JobTable.of(self.jobs)),
            cluster=_describe(self.servers),
            policy=self.name,
            reclaim=self.name
            if has_hook(self.policy, "reclaim")
            else str(self.reclaim_policy),
            config=dataclasses.asdict(self.config),
            seed=self.seed,
            aryl_version=aryl_version(),
            load_extended=self.load_note,
        )
        return result

    # ----------------------------------------------------------------- tick

    def _tick(self, now: float, loan: bool, epoch: bool) -> float:
        """One instant: arrivals < completions (and faults) < lent servers that
        joined < loan < epoch. Returns the time after it (a reclaim waits for its
        servers to empty)."""
        report = self.backend.poll(now)
        self._progress.update(report.done)
        while self._pending and self._pending[0].submit_time <= now:
            self._arrive(self._pending.pop(0))
        for job, t in sorted(report.finished.items(), key=lambda kv: kv[1]):
            if job in self.record.finished:  # journaled before a crash: forget it
                self.backend.forget(job)
            else:
                self._finish(job, t)
        self._faults(now, report)
        self._joined(now, report.joined)
        if loan:
            self._loan(now)
            now = max(now, self.clock.now())
        if epoch:
            if self._dirty and self.record.epoch_at < now:  # one epoch an instant
                self._epoch(now)
            self._sample(now)
        return now

    def _arrive(self, job: Job) -> None:
        t = job.submit_time
        if has_hook(self.policy, "admit"):
            answer = self.policy.admit(job, Epoch(self._epochs, t, self._options([])))
            if not isinstance(answer, (bool, np.bool_)):
                raise TypeError(
                    f"{Epoch(self._epochs, t, {}).where()}: admit must answer True or "
                    f"False, got {answer!r}"
                )
            if not answer:
                self._emit({"event": "reject", "t": t, "job": job.id})
                return
        self._emit({"event": "arrive", "t": t, "job": job.id})
        self.state.add_jobs([job])
        self.backend.submit(job, self.programs[job.id])
        self._dirty = True

    def _finish(self, job: Any, t: float) -> None:
        self._workers(job, [], "finish", t, 1.0)
        self.state.remove_jobs([job])
        self.backend.forget(job)
        self._dirty = True

    # ----------------------------------------------------------------- epochs

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

    # ---------------------------------------------------------- loans

    def _loan(self, now: float) -> None:
        lent = len(self.record.on_loan) + len(self._joining)
        spare = self.load.spare(now)
        lendable = min(spare, self.load.lendable(now))
        if lent > spare:
            # servers still joining hold no worker: they go back first, unreclaimed
            keep = max(0, len(self._joining) - (lent - spare))
            back, self._joining = self._joining[keep:], self._joining[:keep]
            if back:
                self._emit({"event": "unlend", "t": now, "servers": back})
                self.backend.release(back)
            if lent - len(back) > spare:
                self._reclaim(now, lent - len(back) - spare)
        elif lent < lendable:
            taken = set(self.record.on_loan) | set(self._joining)
            idle = [
                s.id
                for s in self.servers
                if s.pool == "inference" and s.id not in taken
            ][: lendable - lent]
            if not idle:
                return
            self._emit({"event": "lend", "t": now, "servers": idle})
            self._joining += idle
            ready = self.backend.lend(idle)  # the rest join later (poll)
            self._joined(now, idle if ready is None else ready)  # None: it waited

    def _joined(self, now: float, servers: Sequence[Any]) -> None:
        """Lent servers that have joined go on the whitelist now."""
        ready = set(servers)
        joined = [s for s in self._joining if s in ready]
        if not joined:
            return
        self._joining = [s for s in self._joining if s not in ready]
        self._emit({"event": "loan", "t": now, "servers": joined, "on_loan": True})
        self.state.set_on_loan(joined, True)
        self._dirty = True

    def _reclaim(self, now: float, n: int) -> None:
        """Take ``n`` lent servers back: choose, drain, stop, confirm, whitelist."""
        own = has_hook(self.policy, "reclaim")
        view = self._view(own)
        if own:
            epoch = Epoch(self._epochs, now, self._options(view.job_ids))
            rows = reclaim_rows(self.policy.reclaim(view, n, epoch), view, epoch)
            chosen = [view.server_ids[r] for r in rows]
        else:
            seed = self.seed + int(self.record.totals["reclaims"])
            result = view.reclaim(
                n,
                self.reclaim_policy,
                seed,
                unsaved=self._unsaved(view),
                restart_overhead=self.config.restart_overhead,
            )
            chosen = list(result.plan.servers)
        self._take_back(now, chosen, view)

    def _unsaved(self, view: ClusterState) -> Dict[Any, float]:
        """GPU-seconds a preemption of each running job would throw away, as the
        record books a loss: a job without checkpoint its progress, one with a
        checkpoint nothing (it saves as it stops; least-work adds its restart)."""
        unsaved: Dict[Any, float] = {}
        for j in view.job_ids:
            row = self._job_index[j]
            job = self.jobs[row]
            if not job.checkpoint:
                work = float(self.record.work[row]) * job.gpus_per_worker
                unsaved[j] = self._done(j) * work
        return unsaved

    def _take_back(self, now: float, servers: List[Any], view: ClusterState) -> None:
        """Journal the reclaim's plan with its drain (a resumed controller finishes
        it from there), then carry it out."""
        drain = _drain_event(
            now, servers, self.record, self.jobs, self._job_index, view.workers()
        )
        # the jobs' progress now, which their stops journal (a resume has no poll)
        drain["done"] = [
            [j, self._done(j)] for j in drain["preempted"] + drain["scaled"]
        ]
        self._emit(drain)
        self._stop_for_reclaim(drain)
        self._release_reclaimed(drain)

    def _stop_for_reclaim(self, drain: Mapping[str, Any]) -> None:
        """Drain the servers, then save and stop (or scale in) the jobs there: those
        the journal does not yet show stopped (all of them, but after a crash)."""
        now, servers = float(drain["t"]), list(drain["servers"])
        done = {j: float(d) for j, d in drain.get("done", [])}
        self.backend.drain(servers)
        for j in drain["preempted"]:
            if j in self.record.workers:
                fraction = done.get(j, self._done(j))
                self._workers(j, [], "reclaim_preemption", now, fraction)
        for j in drain["scaled"]:
            placed = self.record.workers.get(j, [])
            left = [Worker(j, s, None, f) for s, f in placed if s not in servers]
            if len(left) < len(placed):
                fraction = done.get(j, self._done(j))
                self._workers(j, left, "reclaim_scale_in", now, fraction)

    def _release_reclaimed(self, drain: Mapping[str, Any]) -> None:
        """Confirm the drained servers are empty (killing what is left past the
        grace), take them off the whitelist and give them back."""
        now, servers = float(drain["t"]), list(drain["servers"])
        preempted = set(drain["preempted"])
        self._confirm(now, servers)
        confirmed = max(now, self.clock.now())
        stops = [
            w for w in self.state.workers() if w.server in servers or w.job in preempted
        ]
        Decision(self.name, [], stops).apply(self.state)
        if any(s in self.record.on_loan for s in servers):  # one event: all or none
            self.state.set_on_loan(servers, False)
            self._emit(
                {"event": "loan", "t": confirmed, "servers": servers, "on_loan": False}
            )
        self._emit(
            {
                "event": "reclaim",
                "t": confirmed,
                "servers": servers,
                "demand_gpus": drain["demand_gpus"],
                "collateral_gpus": drain["collateral_gpus"],
                "free": drain["free"],
            }
        )
        self.backend.release(servers)
        self._dirty = True

    def _confirm(self, now: float, servers: Sequence[Any]) -> None:
        """Wait until no aryl worker runs on ``servers``; kill what is left at the
        deadline, journaling the work lost."""
        deadline = now + self.grace
        waiting = [s for s in servers if self.backend.busy(s)]
        while waiting and self.clock.now() < deadline:
            self.clock.wait_until(min(deadline, self.clock.now() + 1.0))
            waiting = [s for s in waiting if self.backend.busy(s)]
        for s in waiting:
            for job, fraction in self.backend.kill(s).items():
                killed = max(now, self.clock.now())
                self._emit(
                    {"event": "lost", "t": killed, "job": job, "fraction": fraction}
                )

    # ---------------------------------------------------------- faults

    def _faults(self, now: float, report: Report) -> None:
        for server in report.dead_servers:
            self._server_died(now, server, report.lost)
        for job, _ in report.dead_workers.items():
            if job not in self.record.workers:
                continue
            lost = self.backend.restart(job)
            self._emit(
                {
                    "event": "lost",
                    "t": now,
                    "job": job,
                    "fraction": lost,
                    "restart": True,
                }
            )
            if self.restarts[job] > self.worker_restarts:
                self._workers(job, [], "preemption", now, self._done(job))
                stops = [w for w in self.state.workers() if w.job == job]
                Decision(self.name, [], stops).apply(self.state)
                self._dirty = True

    def _server_died(self, now: float, server: Any, lost: Mapping[Any, float]) -> None:
        """Its jobs go back to the queue from their checkpoints; a lent server counts
        as reclaimed; a training server leaves the cluster."""
        hit = [
            j
            for j in self.record.running()
            if any(s == server for s, _ in self.record.workers[j])
        ]
        for j in hit:
            self._emit(
                {
                    "event": "lost",
                    "t": now,
                    "job": j,
                    "fraction": float(lost.get(j, 0.0)),
                }
            )
        lent = server in self.record.on_loan
        for j in hit:
            self._workers(
                j,
                [],
                "reclaim_preemption" if lent else "preemption",
                now,
                self._done(j),
            )
        stops = [w for w in self.state.workers() if w.job in hit]
        Decision(self.name, [], stops).apply(self.state)
        if lent:
            self.state.set_on_loan([server], False)
            self._emit(
                {"event": "loan", "t": now, "servers": [server], "on_loan": False}
            )
            gpus = self.record.server[server].gpus
            self._emit(
                {
                    "event": "reclaim",
                    "t": now,
                    "servers": [server],
                    "demand_gpus": gpus,
                    "collateral_gpus": 0,
                    "free": int(not hit),
                }
            )
        else:
            self._lose_server(server)
        self._dirty = True

    def _lose_server(self, server: Any) -> None:
        """A dead training server leaves the state and the views."""
        self.state.remove_servers([server])
        frames = self._trace.frames()
        servers = frames["servers"]
        servers = servers[servers["id"] != server]
        self._trace = ClusterState.from_frames(servers, frames["jobs"])
        self.servers = [s for s in self.servers if s.id != server]
        self.record.server_row = {s.id: i for i, s in enumerate(self.servers)}

    # ---------------------------------------------------------- journal

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

    # ---------------------------------------------------------- ending

    def _over(self) -> bool:
        gone = len(self.record.finished) + len(self.record.rejected)
        return gone >= len(self.jobs)

    def _stuck(self, now: float, next_loan: float) -> bool:
        """Nothing runs, nothing will arrive, loans will not change: jobs still
        queued can never start."""
        return (
            not self._pending
            and not self._dirty
            and not self.record.workers
            and not self._joining
            and math.isinf(next_loan)
        )


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


def _check_programs(programs: Mapping[Any, Any], ids: set[Any]) -> None:
    """A ``ValueError`` for a program of an unknown job, a ``TypeError`` for one that
    is not a ``TrainingJob``."""
    for job, program in programs.items():
        if job not in ids:
            raise ValueError(f"programs: unknown job {job!r}")
        if not isinstance(program, TrainingJob):
            raise TypeError(
                f"programs[{job!r}]: a job needs resize, step, save and load methods, "
                f"got {type(program).__name__}"
            )


def _nonempty(path: Union[str, os.PathLike[str]]) -> bool:
    """Whether ``path`` is a file with something in it."""
    return os.path.isfile(path) and os.path.getsize(path) > 0


def _next_multiple(t: float, step: float, inclusive: bool) -> float:
    """The first multiple of ``step`` at or after (``inclusive``) or after ``t``."""
    k = math.ceil(t / step) if inclusive else math.floor(t / step) + 1
    out = k * step
    return out if out > t or (inclusive and out == t) else (k + 1) * step


def _gpus(worker: Worker, job: Job) -> Worker:
    return Worker(worker.job, worker.server, job.gpus_per_worker, worker.flexible)


def _servers(cluster: Union[Cluster, Records]) -> List[Server]:
    if isinstance(cluster, Cluster):
        servers = cluster.servers()
    else:
        servers = as_records(cluster, Server, "server")
    return [dataclasses.replace(s, on_loan=False) for s in servers]


def _describe(servers: Sequence[Server]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for pool in ("training", "inference"):
        mine = [s for s in servers if s.pool == pool]
        out[f"{pool}_servers"] = len(mine)
        out[f"{pool}_gpus"] = sum(s.gpus for s in mine)
        out[f"{pool}_gpu"] = "+".join(sorted({s.gpu_type for s in mine}))
    return out


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


def _drain_event(
    now: float,
    servers: List[Any],
    record: Record,
    jobs: List[Job],
    index: Mapping[Any, int],
    held: Sequence[Worker],
    journaled: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The ``drain`` event of a reclaim of ``servers`` at ``now``: its plan (the
    jobs it preempts and scales in) and its figures (demand, collateral GPUs,
    servers freed without a preemption there) from the workers ``held`` before it.
    ``journaled``: a drain event read back, completed when an older journal wrote it
    without them (from what the record holds now)."""
    if journaled is not None:
        now, servers = float(journaled["t"]), list(journaled["servers"])
        if "preempted" in journaled:
            return dict(journaled)
        held = [
            Worker(j, s, jobs[index[j]].gpus_per_worker, f)
            for j in record.running()
            for s, f in record.workers[j]
        ]
    preempted, scaled = _plan(record, jobs, index, servers)
    gone = set(preempted)
    placed = [(w.job, w.server, w.gpus or 0) for w in held]
    return {
        "event": "drain",
        "t": now,
        "servers": servers,
        "preempted": preempted,
        "scaled": scaled,
        "demand_gpus": sum(record.server[s].gpus for s in servers),
        # GPUs preempted elsewhere; servers returned without preempting a job there
        "collateral_gpus": sum(
            g for j, srv, g in placed if j in gone and srv not in servers
        ),
        "free": sum(
            not any(j in gone and srv == s for j, srv, _ in placed) for s in servers
        ),
    }


def _plan(
    record: Record, jobs: List[Job], index: Mapping[Any, int], servers: Sequence[Any]
) -> Tuple[List[Any], List[Any]]:
    """Jobs a return of ``servers`` preempts (left below ``min_workers``) and scales in."""
    preempted: List[Any] = []
    scaled: List[Any] = []
    for j in record.running():
        placed = record.workers[j]
        left = sum(s not in servers for s, _ in placed)
        if left == len(placed):
            continue
        (
            scaled if left >= jobs[index[j]].min_workers and left > 0 else preempted
        ).append(j)
    return preempted, scaled
