"""The live controller's loop: one writer of the cluster state, on a clock.

``Controller`` keeps an ``aryl.ClusterState`` whose ``on_loan`` flags are the paper's
whitelist: the servers training may use. It runs the simulator's loop on a clock:
within a tick, arrivals, then completions (and faults), then the loan decision (every
``loan_interval``), then the scheduling epoch (every ``schedule_interval``, skipped
when nothing changed), as ``aryl.sim.simulate`` orders them. This module holds the
loop and the run's set-up and result; what the loop decides and records is in its
parts (``parts.py`` names them): ``Epochs`` (``epochs.py``), ``Loans``
(``loans.py``), ``Faults`` (``faults.py``) and ``Journaling`` (``journaling.py``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

import numpy as np
import pandas as pd

from ..defaults import (
    SCHEDULE_POLICIES,
    SIMULATION_RECLAIM_POLICIES,
    UNLISTED_GPU_SPEED,
)
from ..engine.config import Cluster, Config
from ..engine.hooks import (
    Epoch,
    check_policy,
    has_hook,
    policy_name,
)
from ..jobtable import JobTable
from ..model import Job, Records, Server, as_records
from ..state import ClusterState
from ..typing import SimulationReclaimPolicy
from .backend import Backend
from .epochs import Epochs
from .faults import Faults
from .jobs import TrainingJob, emulated_programs
from .journal import Journal, JournalRepaired
from .journaling import Journaling, _check_header
from .loans import Loans
from .record import (
    Record,
    load_integral,
    restore,
)
from .timing import Clock, LoadSource, VirtualClock

#: Simulated seconds a reclaim waits for stopped workers before killing them.
RECLAIM_GRACE_S = 120.0
#: Times a job's dead worker is restarted in place before the job is requeued.
WORKER_RESTARTS = 2


class Controller(Epochs, Loans, Faults, Journaling):
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
        from ..engine.provenance import Provenance, aryl_version, fingerprint_jobs

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
