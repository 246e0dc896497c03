"""The Ray backend: servers are labelled nodes, workers are actors pinned by label.

A server is a Ray node started with ``--num-gpus G --labels
aryl.server=ID,aryl.pool=POOL``. A job's base workers start as one placement group,
one ``{"GPU": g}`` bundle per worker pinned by ``bundle_label_selector``: all or
nothing; a flexible worker is a single actor with ``label_selector``, so each can
leave alone. Each job has a ``JobAgent``; all of them live in one ``AgentHost`` actor
on the controller's node (no CPU; one process, not one per job), whose thread steps
their programs at the clock's compression. Reclaim drains a node through the GCS (``drain_node`` with a preemption
reason and a deadline: Ray-internal, see ``docs/live.md``); a drained raylet exits
once idle, which is the confirmation. Lending starts a node through a
``NodeProvider``: ``LocalCluster`` (``ray.cluster_utils.Cluster``, one machine) or
none (an external system starts labelled nodes; the backend waits for them).

The agent host, workers and gangs are named and detached (``aryl-agents``,
``aryl-worker-<n>``, ``aryl-gang-<id>`` in the connection's namespace), so they outlive
the controller's process: a restarted controller (``resume=True``) adopts them and its
jobs run on without a restart; a new run clears what an earlier one left. One
controller per Ray namespace.

This module holds ``RayBackend``: its set-up, resume and polls; its parts are in their
own modules (``ray_parts.py`` names them): ``Nodes`` (``ray_nodes.py``, with
``LocalCluster``), ``Gangs`` (``ray_gangs.py``), ``Agents`` (``ray_agents.py``) and
``Health`` (``ray_health.py``). The names the docs and tests import from here are
re-exported.
"""

from __future__ import annotations

import math
import time
from typing import (
    Any,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
)

from ..model import Server, Worker
from .backend import Report
from .jobs import run_id
from .ray_agents import AGENT_TICK_S, HOST_NAME, START_TIMEOUT_S, Agents
from .ray_gangs import (
    GANG_NAME,
    PLACEMENT_TIMEOUT_S,
    WORKER_NAME,
    Gangs,
    _named,
    _placement_group,
    _remove_gangs,
    _worker_class,
)
from .ray_health import NODE_CHECK_S, Health, _check_started
from .ray_nodes import (
    JOIN_TIMEOUT_S,
    POOL_LABEL,
    SERVER_LABEL,
    START_ATTEMPTS,
    LocalCluster,
    NodeProvider,
    Nodes,
    _child_output,
    _ray,
    _restore_signal_handlers,
    _signal_handlers,
    labelled_nodes,
    wait_joined,
)

__all__ = [
    "AGENT_TICK_S",
    "GANG_NAME",
    "HOST_NAME",
    "JOIN_TIMEOUT_S",
    "LocalCluster",
    "NODE_CHECK_S",
    "NodeProvider",
    "PLACEMENT_TIMEOUT_S",
    "POOL_LABEL",
    "RayBackend",
    "SERVER_LABEL",
    "START_ATTEMPTS",
    "START_TIMEOUT_S",
    "WORKER_NAME",
    "_child_output",
    "_ray",
    "_restore_signal_handlers",
    "_signal_handlers",
    "labelled_nodes",
    "wait_joined",
]


#: Wall seconds a new run waits for the names of an earlier run's actors to be free.
CLEAR_TIMEOUT_S = 10.0


class RayBackend(Nodes, Gangs, Agents, Health):
    """The ``Backend`` protocol on a Ray cluster (see the module).

    Parameters
    ----------
    checkpoints
        A folder every node can read and write (one machine: any folder).
    compression
        The controller clock's compression (the agents step at it).
    provider
        Starts inference servers' nodes when lent (``LocalCluster``), or ``None``.
    checkpoint_every
        Simulated seconds between periodic checkpoints.
    tick
        Wall seconds between an agent's steps.
    placement_timeout
        Wall seconds a gang may wait to be placed before its start is refused.
    run
        The run the jobs' checkpoints belong to (their names end in ``.<run>.ckpt``;
        default a new id, ``self.run``): a job restores only its run's checkpoint, so
        a new run never starts from an earlier run's progress left in the folder. A
        resumed controller adopts the agents, which keep their run; give the earlier
        ``run`` for agents lost with their host to restore their checkpoints.
    """

    def __init__(
        self,
        checkpoints: str,
        compression: float = 1.0,
        provider: Optional[NodeProvider] = None,
        checkpoint_every: float = math.inf,
        tick: float = AGENT_TICK_S,
        placement_timeout: float = PLACEMENT_TIMEOUT_S,
        run: Optional[str] = None,
    ) -> None:
        """Connects to the Ray cluster already initialised (``ray.init``)."""
        ray = _ray()
        if not ray.is_initialized():
            raise RuntimeError("connect to a Ray cluster first (ray.init(address=...))")
        strategies = _ray("util.scheduling_strategies")
        self.checkpoints = checkpoints
        self.run = run_id(run)
        self.compression = float(compression)
        self.provider = provider
        self.checkpoint_every = checkpoint_every
        self.tick = tick
        self.placement_timeout = placement_timeout
        self.servers: Dict[Any, Server] = {}
        self.agents: set[Any] = set()  # jobs with an agent in the host
        # job -> [(worker, actor)], and the job's placement group, if any
        self.running: Dict[Any, List[Tuple[Worker, Any]]] = {}
        self.groups: Dict[Any, Any] = {}
        self.drained: Dict[Any, str] = {}
        self.log: List[Tuple[Any, ...]] = []
        self._home = strategies.NodeAffinitySchedulingStrategy(
            ray.get_runtime_context().get_node_id(), soft=False
        )
        self._host_handle: Any = None  # the AgentHost, made or adopted on first use
        self._worker = _worker_class()
        self._dead: set[Any] = set()
        self._stopping: List[Tuple[Worker, Any]] = []  # killed, not yet confirmed gone
        self._joining: Dict[Any, float] = {}  # lent server -> wall time it was lent
        self._checked = 0.0  # wall time nodes were last checked
        # (what, count, wall seconds) of each wait for Ray: "start" (a job's new
        # workers up, from its decision, timed by the agent host), "lend" (a lent
        # node, until joined)
        self.waits: List[Tuple[str, int, float]] = []
        self._adopting = False  # resume(): keep what an earlier controller started
        self._started = 0  # workers started: their names
        if not ray.get_runtime_context().namespace:
            raise RuntimeError(
                "connect with a namespace (ray.init(..., namespace='aryl')): the "
                "backend's actors are named there, so a restarted controller finds them"
            )

    def resume(self) -> None:
        """A restarted controller: adopt the agents, workers and gangs an earlier one
        started (call before ``register``); ``submit``/``set_workers`` then keep them."""
        self._adopting = True
        ray = _ray()
        self.agents = set(ray.get(self._host().jobs.remote()))
        for name, actor in _named(WORKER_NAME.format("")):
            try:
                worker = Worker(*ray.get(actor.identity.remote(), timeout=30.0))
            except Exception:  # died with its node meanwhile: the job's poll sees it
                continue
            self.running.setdefault(worker.job, []).append((worker, actor))
            self._started = max(self._started, int(name.rsplit("-", 1)[1]) + 1)
        for job in self.running:
            group = _placement_group(GANG_NAME.format(job))
            if group is not None:
                self.groups[job] = group
        # a gang of a job that no longer runs (the controller died removing it) goes
        _remove_gangs(keep={GANG_NAME.format(job) for job in self.groups})

    def register(self, servers: Sequence[Server]) -> None:
        """Check every training server has a live node with its GPUs (a new run
        first clears the actors an earlier controller left, see ``resume``), and
        start the agent host: its process starts now, before the controller's clock
        does, not at the first job's arrival, where every job arriving meanwhile
        would wait for it."""
        if not self._adopting and self._host_handle is None:
            _clear_leftovers()
        _ray().get(self._host().jobs.remote())  # made (or adopted) and answering
        self.servers.update({s.id: s for s in servers})
        nodes = self._nodes()
        missing = [
            s.id
            for s in servers
            if s.pool == "training" and not nodes.get(str(s.id), ("", False))[1]
        ]
        if missing:
            raise ValueError(
                f"no live Ray node labelled {SERVER_LABEL}=<id> for training "
                f"server(s) {missing}; start them with ray start --labels "
                f"{SERVER_LABEL}=<id>,{POOL_LABEL}=training --num-gpus <gpus>"
            )

    def poll(self, now: float) -> Report:
        """Progress and completions from the agents; dead nodes and workers."""
        ray = _ray()
        report = Report()
        jobs = list(self.running)
        answers: List[Tuple[float, Optional[float]]] = []
        failed: List[Tuple[Any, str]] = []
        if jobs:
            answers, waits, failed = ray.get(self._host().report.remote(jobs))
            self.waits += [("start", 1, w) for w in waits]
        wall = time.time()
        for job, (done, finished) in zip(jobs, answers):
            report.done[job] = done
            if finished is not None:
                report.finished[job] = min(
                    now, now - (wall - finished) * self.compression
                )
        # a failed start is a dead node's (seen below) or an error
        check = wall - self._checked >= NODE_CHECK_S or bool(failed)
        if not (check or self._joining):
            return report
        nodes = self._nodes()  # one listing for the joins and the dead-node check
        report.joined = self._joined(nodes)
        if not check:
            return report
        _check_started(failed, self.running, nodes)
        self._checked = wall
        self._dead_nodes(report, nodes)
        return report

    def next_event(self, now: float) -> float:
        """Unknown ahead of time on a real cluster."""
        return math.inf

    def shutdown(self) -> None:
        """Kill every actor and placement group this backend started."""
        for job in list(self.running):
            self._drop(job)
        if self._host_handle is not None:
            _ray().kill(self._host_handle)
            self._host_handle = None
        self.agents.clear()


def _clear_leftovers() -> None:
    """Kill the agents and workers and remove the gangs an earlier controller of this
    namespace left: a new run starts on an empty cluster. Waits (at most
    ``CLEAR_TIMEOUT_S``) until their names are free: the new agent host takes its name
    at once."""
    ray = _ray()
    prefixes = (HOST_NAME, WORKER_NAME.format(""))
    for prefix in prefixes:
        for _, actor in _named(prefix):
            ray.kill(actor)
    _remove_gangs(keep=set())
    deadline = time.monotonic() + CLEAR_TIMEOUT_S
    while time.monotonic() < deadline and any(
        name.startswith(prefixes) for name in _ray("util").list_named_actors()
    ):
        time.sleep(0.1)
