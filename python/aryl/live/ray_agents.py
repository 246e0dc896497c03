"""The jobs' agents on Ray: one ``AgentHost`` actor steps, checkpoints and starts them.

Each job has a ``JobAgent`` (``jobs.py``: its program's resizes, steps, checkpoints
and restores); all of them live in one ``AgentHost`` actor on the controller's node
(no CPU; one process, not one per job), named and detached (``HOST_NAME``), whose
thread steps their programs at the clock's compression. A job whose new workers start
is resized by the host once their actors are up (``AgentHost.start``), without the
controller waiting, and makes no progress meanwhile; the waits are the cluster's
start latency (``Agents.start_overhead``).
"""

from __future__ import annotations

import math
import threading
import time
from typing import (
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
)

from ..model import Job, Worker
from .jobs import DONE, JobAgent, TrainingJob
from .ray_gangs import _actor
from .ray_nodes import _ray
from .ray_parts import RayParts

#: Wall seconds between an agent's progress steps (its job's reports).
AGENT_TICK_S = 1 / 5
#: Wall seconds new worker actors may take to start (a process each; slow on a busy
#: machine) before a start is given up as a fault.
START_TIMEOUT_S = 120.0
#: The name of the agent host (detached, namespaced).
HOST_NAME = "aryl-agents"


class _Stepped:
    """A job's ``JobAgent`` stepped on wall time at the clock's compression; no step
    while its new workers start (``starting``: the simulator's ``start_overhead``)."""

    def __init__(self, agent: JobAgent, compression: float) -> None:
        self.agent = agent
        self.compression = compression
        self.finished_wall: Optional[float] = None
        self.last = time.time()
        self.starting = 0  # the start under way (a number), 0 for none
        self.start_workers: List[Worker] = []  # the workers it starts

    def advance(self) -> None:
        now = time.time()
        seconds = (now - self.last) * self.compression
        self.last = now
        if not self.agent.workers or self.finished_wall is not None or self.starting:
            return
        left_of = getattr(self.agent.program, "seconds_left", None)
        left = float(left_of()) if callable(left_of) else math.inf
        if left <= seconds:
            self.agent.step(left)
            self.finished_wall = now - (seconds - left) / self.compression
        elif self.agent.step(seconds) >= DONE:
            self.finished_wall = now


def _host_class() -> Any:
    ray = _ray()

    @ray.remote(num_cpus=0, max_concurrency=4)
    class AgentHost:
        """Every job's ``JobAgent`` in one process on the controller's node (one
        process, not one per job: on a busy node each process takes seconds to
        start, and a compressed clock counts them C-fold); a thread steps them all."""

        def __init__(
            self,
            checkpoints: str,
            every: float,
            compression: float,
            tick: float,
            run: str,
        ) -> None:
            self.checkpoints, self.every, self.run = checkpoints, every, run
            self.compression, self.tick = compression, tick
            self.agents: Dict[Any, _Stepped] = {}
            self.lock = threading.Lock()
            self.starts = 0  # starts asked so far: each one's number
            self.waits: List[float] = []  # wall seconds each job's start waited
            self.failed: List[Tuple[Any, str]] = []  # (job, why) of starts that failed
            threading.Thread(target=self._loop, daemon=True).start()

        def _loop(self) -> None:
            while True:
                time.sleep(self.tick)
                with self.lock:
                    for agent in self.agents.values():
                        agent.advance()

        def _agent(self, job: Any) -> _Stepped:
            agent = self.agents[job]
            agent.advance()
            return agent

        def add(self, job: Job, program: TrainingJob) -> None:
            with self.lock:
                if job.id not in self.agents:
                    agent = JobAgent(
                        job.id,
                        program,
                        self.checkpoints,
                        self.every,
                        job.checkpoint,
                        self.run,
                    )
                    self.agents[job.id] = _Stepped(agent, self.compression)

        def jobs(self) -> List[Any]:
            return list(self.agents)

        def resize(self, job: Any, workers: List[Worker], servers: Any) -> None:
            with self.lock:
                agent = self._agent(job)
                if agent.starting and _same(workers, agent.start_workers):
                    return  # asked again (a resumed controller): it goes on
                agent.starting = 0  # a start under way is overtaken
                agent.agent.resize(workers, servers)

        def start(
            self,
            job: Any,
            workers: List[Worker],
            servers: Any,
            actors: List[Any],
            began: float,
        ) -> None:
            """Resize the job's agent to ``workers`` once the new ``actors`` are up,
            in a thread: the controller goes on meanwhile, and the job makes no
            progress (``_Stepped.starting``), as the simulator's start overhead."""
            with self.lock:
                self.starts += 1
                number = self.starts
                agent = self._agent(job)
                agent.starting, agent.start_workers = number, list(workers)
            threading.Thread(
                target=self._started,
                args=(job, workers, servers, actors, began, number),
                daemon=True,
            ).start()

        def _started(
            self,
            job: Any,
            workers: List[Worker],
            servers: Any,
            actors: List[Any],
            began: float,
            number: int,
        ) -> None:
            try:
                ray.get([a.where.remote() for a in actors], timeout=START_TIMEOUT_S)
                failed = ""
            except Exception as error:  # GetTimeoutError, ActorDiedError
                failed = f"{type(error).__name__}: {error}"
            with self.lock:
                agent = self.agents.get(job)
                if agent is None or agent.starting != number:
                    return  # stopped, lost or resized meanwhile
                if failed:
                    self.failed.append((job, failed))
                    return
                agent.advance()  # up to now, while it started: no progress
                agent.starting = 0
                agent.agent.resize(workers, servers)
                self.waits.append(time.time() - began)

        def lose(self, job: Any) -> float:
            with self.lock:
                agent = self._agent(job)
                agent.starting = 0
                return float(agent.agent.lose())

        def report(
            self, jobs: List[Any]
        ) -> Tuple[
            List[Tuple[float, Optional[float]]], List[float], List[Tuple[Any, str]]
        ]:
            """Each job's (done, wall time it finished), and the starts' waits and
            failures since the last report."""
            with self.lock:
                answers = [
                    (self._agent(j).agent.done, self.agents[j].finished_wall)
                    for j in jobs
                ]
                waits, self.waits = self.waits, []
                failed, self.failed = self.failed, []
                return answers, waits, failed

        def remove(self, job: Any) -> None:
            with self.lock:
                self.agents.pop(job, None)

    return AgentHost


class Agents(RayParts):
    """The jobs' agents of ``RayBackend`` (see the module)."""

    def submit(self, job: Job, program: TrainingJob) -> None:
        """Add the job's agent to the agent host (kept if it is there: adopted from an
        earlier controller after ``resume``)."""
        if job.id in self.agents:
            return
        _ray().get(self._host().add.remote(job, program))
        self.agents.add(job.id)

    def _host(self) -> Any:
        """The agent host: adopted after ``resume``, else made on the controller's
        node (named and detached, as the workers are)."""
        if self._host_handle is None and self._adopting:
            self._host_handle = _actor(HOST_NAME)
        if self._host_handle is None:
            self._host_handle = (
                _host_class()
                .options(
                    name=HOST_NAME, lifetime="detached", scheduling_strategy=self._home
                )
                .remote(
                    self.checkpoints,
                    self.checkpoint_every,
                    self.compression,
                    self.tick,
                    self.run,
                )
            )
        return self._host_handle

    def start_overhead(self) -> float:
        """The mean time a job's start waited for Ray so far, in simulated seconds
        (``RayBackend.waits``: from the decision until the job's new workers were up,
        times the compression); 0.0 before any start. As ``Config.start_overhead`` it
        teaches the simulator this cluster's start latency, booked alike: the job
        holds its workers without progress meanwhile and the controller goes on. The
        mean, since the simulator charges it at every start and the waits are skewed
        (a run's first starts wait for Ray's worker processes to come up)."""
        starts = [(n, w) for kind, n, w in self.waits if kind == "start"]
        jobs = sum(n for n, _ in starts)
        return self.compression * sum(n * w for n, w in starts) / jobs if jobs else 0.0

    def restart(self, job: Any) -> float:
        """Restart the job in place from its checkpoint."""
        ray = _ray()
        lost = float(ray.get(self._host().lose.remote(job)))
        workers = [w for w, _ in self.running[job]]
        ray.get(self._host().resize.remote(job, workers, self.servers))
        self.log.append(("restart", job))
        return lost

    def forget(self, job: Any) -> None:
        """Stop a finished job's workers and agent."""
        self._drop(job)
        if job in self.agents:
            self.agents.discard(job)
            _ray().get(self._host().remove.remote(job))


def _same(a: Sequence[Worker], b: Sequence[Worker]) -> bool:
    """Whether ``a`` and ``b`` are the same workers, in any order."""
    return sorted(map(repr, a)) == sorted(map(repr, b))
