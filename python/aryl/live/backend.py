"""Where workers run: the ``Backend`` protocol and the in-process ``FakeBackend``.

A backend turns the controller's desired state into running workers and reports
what it observes. The controller says *what* each job should hold
(``set_workers``: the whole set, so a repeated call is harmless), never how; the
backend diffs it against what runs. The protocol is small on purpose, so that a
Kubernetes backend can follow the Ray one (``docs/live.md``):

============================  ==========================================================
``resume()``                   a restarted controller: keep what an earlier one started
``register(servers)``          check that every server is there (a node, labelled)
``submit(job, program)``       create the job's agent (``JobAgent``) around ``program``
``set_workers(job, workers)``  start / stop workers so the job holds exactly ``workers``;
                               a job that had none starts its base workers as one gang
                               and restores its checkpoint; one left with none saves
                               and stops
``set_workers_many(changes)``  the same for several jobs at once (job -> workers): the
                               controller's one call per decision, so starts can wait
                               together
``poll(now)``                  progress, completions and failures since the last poll
``drain(servers)``             no new worker may start there; running ones go on
``busy(server)``               aryl workers still running there (the confirmation)
``kill(server)``               kill them (the reclaim deadline); the fraction each job lost
``release(servers)``           hand drained (or still joining) servers back to the
                               inference side
``lend(servers)``              start taking servers from it without waiting; returns
                               those ready now (labelled, schedulable; ``None``: it
                               waited for all), ``poll`` reports the others as they
                               join; a resumed controller asks again for those it
                               lent that had not joined: one under way goes on
``restart(job)``               restart a job's workers in place from its checkpoint
``forget(job)``                drop a finished job's agent
``next_event(now)``            the next completion, when the backend can tell (virtual time)
``shutdown()``                 stop everything this backend started
============================  ==========================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Set,
    Tuple,
)

from ..model import Job, Server, Worker
from .jobs import DONE, JobAgent, TrainingJob


@dataclass
class Report:
    """What a backend observed since the last poll.

    ``done``: each running job's fraction done; ``finished``: job -> simulated time
    it finished; ``dead_servers``: servers whose node died (their workers with
    them); ``dead_workers``: job -> workers of it that died on live servers;
    ``lost``: job -> fraction of it lost with a dead server (back to its checkpoint);
    ``joined``: lent servers that have joined (schedulable now).
    """

    done: Dict[Any, float] = field(default_factory=dict)
    finished: Dict[Any, float] = field(default_factory=dict)
    dead_servers: List[Any] = field(default_factory=list)
    dead_workers: Dict[Any, int] = field(default_factory=dict)
    lost: Dict[Any, float] = field(default_factory=dict)
    joined: List[Any] = field(default_factory=list)


class Backend(Protocol):
    """The operations a controller uses (the module lists what each must do)."""

    def resume(self) -> None:
        """A restarted controller follows: keep the agents and workers that run."""

    def register(self, servers: Sequence[Server]) -> None:
        """Check every server is there."""

    def submit(self, job: Job, program: TrainingJob) -> None:
        """Create ``job``'s agent."""

    def set_workers(self, job: Any, workers: Sequence[Worker]) -> None:
        """Make job ``job`` hold exactly ``workers``."""

    def set_workers_many(self, changes: Mapping[Any, Sequence[Worker]]) -> None:
        """``set_workers`` for several jobs at once (one epoch's decision)."""

    def poll(self, now: float) -> Report:
        """What happened up to simulated time ``now``."""

    def drain(self, servers: Sequence[Any]) -> None:
        """Block new workers on ``servers``."""

    def busy(self, server: Any) -> int:
        """aryl workers still running on ``server``."""

    def kill(self, server: Any) -> Dict[Any, float]:
        """Kill the workers on ``server``: job -> fraction of it lost."""

    def release(self, servers: Sequence[Any]) -> None:
        """Give drained (or still joining) ``servers`` back to the inference side."""

    def lend(self, servers: Sequence[Any]) -> Optional[List[Any]]:
        """Start taking ``servers`` for training; those ready now (``poll`` reports
        the others in ``Report.joined``), or ``None`` when it waited for all."""

    def restart(self, job: Any) -> float:
        """Restart ``job``'s workers in place; the fraction of it lost."""

    def forget(self, job: Any) -> None:
        """Drop a finished job's agent."""

    def next_event(self, now: float) -> float:
        """The next completion's time, or ``inf`` when unknown."""

    def shutdown(self) -> None:
        """Stop everything started."""


class FakeBackend:
    """Workers as bookkeeping and agents in this process: fast, exact unit tests.

    Jobs step forward when polled, by the simulated time since the last poll, so
    with a ``VirtualClock`` a live run has no timing slack. ``log`` lists every
    action in order (``("drain", server)``, ``("stop", job, server)``, ...), for tests.
    Faults to test with: ``fail_server(id)`` (the node dies at the next poll),
    ``fail_worker(job)`` (one of its workers dies) and ``hang(job)`` (its workers
    ignore stops until killed).
    """

    def __init__(
        self,
        checkpoints: str,
        checkpoint_every: float = math.inf,
        join: float = 0.0,
        start: float = 0.0,
    ) -> None:
        """``checkpoints``: the folder for the jobs' checkpoints; ``join``: simulated
        seconds a lent server takes to join (0: ready when lent); ``start``: simulated
        seconds new workers take to start, during which their job makes no progress
        and the controller goes on (as on Ray: ``Config.start_overhead``'s rule)."""
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every
        self.join = join
        self.start = start
        self._starting: Dict[Any, float] = {}  # job -> when its new workers are up
        self._joining: Dict[Any, float] = {}  # lent server -> when it joins
        self._joined: Set[Any] = set()  # lent servers that joined, until released
        self.servers: Dict[Any, Server] = {}
        self.agents: Dict[Any, JobAgent] = {}
        self.running: Dict[Any, List[Worker]] = {}  # what runs, per job
        self.drained: Set[Any] = set()
        self.log: List[Tuple[Any, ...]] = []
        self._hung: Set[Any] = set()
        self._stuck: Dict[Any, List[Worker]] = {}  # workers that ignored a stop
        self._failing_servers: List[Any] = []
        self._failing_workers: Dict[Any, int] = {}
        self._last = 0.0

    # ------------------------------------------------------------- protocol

    def resume(self) -> None:
        """Nothing to find: this backend's agents live in the object itself."""

    def register(self, servers: Sequence[Server]) -> None:
        """Know the servers."""
        self.servers.update({s.id: s for s in servers})

    def submit(self, job: Job, program: TrainingJob) -> None:
        """Create the job's agent (kept if it exists: a resumed controller submits
        its jobs again)."""
        if job.id in self.agents:
            return
        self.agents[job.id] = JobAgent(
            job.id, program, self.checkpoints, self.checkpoint_every, job.checkpoint
        )

    def set_workers_many(self, changes: Mapping[Any, Sequence[Worker]]) -> None:
        """``set_workers`` job by job (nothing here waits)."""
        for job, workers in changes.items():
            self.set_workers(job, workers)

    def set_workers(self, job: Any, workers: Sequence[Worker]) -> None:
        """Start and stop workers so that ``job`` holds ``workers``."""
        now = list(self.running.get(job, []))
        for w in workers:
            if w.server in self.drained:
                raise RuntimeError(
                    f"worker of job {job!r} on drained server {w.server!r}"
                )
        wanted = list(workers)
        leaving = _without(now, wanted)
        joining = _without(wanted, now)
        hung = job in self._hung
        if not wanted and not hung:
            self.agents[job].resize([], self.servers)  # saves first
        for w in leaving:
            if hung:
                self._stuck.setdefault(job, []).append(w)
                self.log.append(("ignored", job, w.server))
            else:
                self.log.append(("stop", job, w.server))
        if joining:
            self.log.append(
                ("gang" if not now else "join", job, tuple(w.server for w in joining))
            )
            if self.start > 0.0:
                self._starting[job] = self._last + self.start
        if wanted:
            self.agents[job].resize(wanted, self.servers)
            self.running[job] = wanted
        else:
            self.running.pop(job, None)
            self._starting.pop(job, None)

    def poll(self, now: float) -> Report:
        """Step every running job to ``now``; report completions and faults."""
        report = Report()
        now = max(now, self._last)  # a resumed controller's clock may lag the jobs
        for job in list(self.running):
            agent = self.agents[job]
            began = max(self._last, self._starting.get(job, self._last))
            seconds = max(0.0, now - began)  # none while its new workers start
            left = _seconds_left(agent)
            if left <= seconds:
                agent.step(left)
                report.finished[job] = began + left
            else:
                agent.step(seconds)
            report.done[job] = agent.done
            if agent.done >= DONE and job not in report.finished:
                report.finished[job] = now
        self._last = now
        report.joined = [s for s, t in self._joining.items() if t <= now]
        for s in report.joined:
            del self._joining[s]
            self._joined.add(s)
        report.dead_servers, self._failing_servers = self._failing_servers, []
        report.dead_workers, self._failing_workers = self._failing_workers, {}
        for server in report.dead_servers:
            report.lost.update(self._drop_server(server))
        return report

    def drain(self, servers: Sequence[Any]) -> None:
        """Block new workers on ``servers``."""
        for s in servers:
            self.drained.add(s)
            self.log.append(("drain", s))

    def busy(self, server: Any) -> int:
        """Workers on ``server``, stuck ones included."""
        count = sum(
            int(w.server == server)
            for workers in list(self.running.values()) + list(self._stuck.values())
            for w in workers
        )
        self.log.append(("confirm", server, count))
        return count

    def kill(self, server: Any) -> Dict[Any, float]:
        """Kill what runs on ``server``; the jobs restart from their last checkpoint."""
        self.log.append(("kill", server))
        lost: Dict[Any, float] = {}
        for job in list(self._stuck):
            self._stuck[job] = [w for w in self._stuck[job] if w.server != server]
            if not self._stuck[job]:
                del self._stuck[job]
                if job not in self.running:
                    lost[job] = self.agents[job].lose()
        return lost

    def release(self, servers: Sequence[Any]) -> None:
        """Hand servers back (a joining one stops joining)."""
        for s in servers:
            self.drained.discard(s)
            self._joining.pop(s, None)
            self._joined.discard(s)
            self.log.append(("release", s))

    def lend(self, servers: Sequence[Any]) -> List[Any]:
        """Take servers for training: ready now, or ``join`` seconds after the last
        poll (the controller's now)."""
        for s in servers:
            self.log.append(("lend", s))
        if self.join <= 0:
            self._joined.update(servers)
            return list(servers)
        for s in servers:  # one already joining keeps its time (a resumed controller)
            if s not in self._joined:
                self._joining.setdefault(s, self._last + self.join)
        return [s for s in servers if s in self._joined]

    def restart(self, job: Any) -> float:
        """Restart the job's workers in place from its checkpoint."""
        workers = self.running[job]
        agent = self.agents[job]
        lost = agent.lose()
        agent.resize(workers, self.servers)
        self._starting.pop(job, None)
        self.log.append(("restart", job))
        return lost

    def forget(self, job: Any) -> None:
        """Drop the agent of a finished job."""
        self.running.pop(job, None)
        self.agents.pop(job, None)
        self._starting.pop(job, None)

    def next_event(self, now: float) -> float:
        """The next completion at the jobs' current rates."""
        ends = [
            max(self._last, self._starting.get(j, self._last))
            + _seconds_left(self.agents[j])
            for j in self.running
        ]
        return min([*ends, *self._joining.values()], default=math.inf)

    def shutdown(self) -> None:
        """Nothing runs outside this object."""
        self.running.clear()

    # -------------------------------------------------------------- faults

    def fail_server(self, server: Any) -> None:
        """The server's node dies (seen at the next poll)."""
        self._failing_servers.append(server)

    def fail_worker(self, job: Any) -> None:
        """One worker of ``job`` dies (seen at the next poll)."""
        self._failing_workers[job] = self._failing_workers.get(job, 0) + 1

    def hang(self, job: Any) -> None:
        """``job``'s workers ignore stops from now on."""
        self._hung.add(job)

    def _drop_server(self, server: Any) -> Dict[Any, float]:
        """Its workers die; their jobs go back to their checkpoints."""
        self.log.append(("dead", server))
        self.drained.discard(server)
        self._joined.discard(server)
        lost = {}
        for job, workers in list(self.running.items()):
            if any(w.server == server for w in workers):
                lost[job] = self.agents[job].lose()
                del self.running[job]
                self._starting.pop(job, None)
        return lost


def _without(workers: Sequence[Worker], remove: Sequence[Worker]) -> List[Worker]:
    """``workers`` less one match of each of ``remove`` (by server and flexible)."""
    out = list(workers)
    for r in remove:
        for i, w in enumerate(out):
            if w.server == r.server and w.flexible == r.flexible:
                del out[i]
                break
    return out


def _seconds_left(agent: JobAgent) -> float:
    """Simulated seconds until ``agent``'s job finishes, when its program can tell."""
    if not agent.workers:
        return math.inf
    left = getattr(agent.program, "seconds_left", None)
    return float(left()) if callable(left) else math.inf
