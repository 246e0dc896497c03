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
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import signal
import sys
import threading
import time
from typing import (
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
)

from ..loopback import LOOPBACK, QUIET_RAY, on_loopback
from ..model import Job, Server, Worker
from .backend import Report, _without
from .jobs import DONE, JobAgent, TrainingJob, run_id

#: Node labels: the aryl server id and its pool.
SERVER_LABEL, POOL_LABEL = "aryl.server", "aryl.pool"
#: Wall seconds a gang may wait to be placed before the start is refused.
PLACEMENT_TIMEOUT_S = 60.0
#: Wall seconds between an agent's progress steps (its job's reports).
AGENT_TICK_S = 1 / 5
#: Wall seconds between two checks of the nodes' health (a GCS call).
NODE_CHECK_S = 1.0
#: Tries to start a node (Ray gives up on a raylet a busy machine starts slowly).
START_ATTEMPTS = 3
#: Wall seconds new worker actors may take to start (a process each; slow on a busy
#: machine) before a start is given up as a fault.
START_TIMEOUT_S = 120.0
#: Wall seconds a lent node may take to join.
JOIN_TIMEOUT_S = 60.0
#: Names of the backend's actors and placement groups (detached, namespaced).
HOST_NAME, WORKER_NAME, GANG_NAME = "aryl-agents", "aryl-worker-{}", "aryl-gang-{}"


def _ray(module: str = "") -> Any:
    """Ray, or one of its modules (``"util.placement_group"``), untyped: parts of
    what is used here are internal and carry no types."""
    try:
        return importlib.import_module("ray" + (f".{module}" if module else ""))
    except ImportError:  # pragma: no cover - Ray is in the test extra
        raise ImportError(
            "the Ray backend needs Ray: pip install 'aryl[test]' (or ray)"
        ) from None


class NodeProvider(Protocol):
    """Starts and stops the node of an inference server (lending)."""

    def add(self, server: Server) -> None:
        """Start ``server``'s node, labelled (not a second one: a resumed controller
        may ask again for a server whose node is still joining)."""

    def remove(self, server: Server) -> None:
        """Stop ``server``'s node (if it has not exited already)."""


class LocalCluster:
    """A Ray cluster on this machine (``ray.cluster_utils.Cluster``): a head node
    for the controller and the agents, a node per training server, and nodes for
    inference servers started when lent. Declared GPUs only: nothing needs a GPU.

    Every node binds and is reached on the loopback (``LOOPBACK``) only, with no
    dashboard, no metrics port and no usage statistics sent; the machine's "current"
    Ray cluster (``ray.init()`` with no address joins it) stays the one it was.
    Use as a context manager, or call ``shutdown()``: no Ray process is left.
    """

    def __init__(
        self,
        servers: Sequence[Server],
        health_check_ms: int = 500,
        log: Optional[str] = None,
    ) -> None:
        """Start the head and the training servers' nodes, and connect to it.

        ``log``: a file for the output of the nodes' processes (appended to), which
        otherwise shares this process's stderr: a drained node exiting, as it should,
        has its agents print a page on Ray's "unexpected" raylet termination."""
        self.log = log
        ray = _ray()
        Cluster = _ray("cluster_utils").Cluster
        # no usage statistics sent, as from ray.init's local Ray (cluster_utils
        # leaves them to Ray's default), unless the environment says otherwise
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        self.servers = list(servers)
        config = {
            "health_check_period_ms": health_check_ms,
            "health_check_failure_threshold": 3,
            **QUIET_RAY,
        }
        self._current = _CurrentCluster()
        handlers = _signal_handlers()
        try:
            with _child_output(self.log):
                self.cluster = Cluster(
                    initialize_head=True,
                    head_node_args={
                        "num_cpus": 2,
                        "num_gpus": 0,
                        "include_dashboard": False,
                        "node_ip_address": LOOPBACK,
                        "_system_config": config,
                    },
                )
        finally:
            self._current.restore()  # Cluster names its head there
            _restore_signal_handlers(handlers)  # and sets Ray's SIGTERM handler
        self.nodes: Dict[Any, Any] = {}
        try:
            training = [s for s in self.servers if s.pool == "training"]
            for s in training:  # started together; joined below
                self.add(s)
            with on_loopback():
                ray.init(
                    address=self.cluster.address,
                    namespace="aryl",
                    log_to_driver=False,
                )
            wait_joined([s.id for s in training])
        except BaseException:
            self.shutdown()
            raise
        finally:  # Ray's head node puts its own SIGTERM handler over the caller's
            _restore_signal_handlers(handlers)

    @property
    def address(self) -> str:
        """The cluster's address (``aryl live --address``): ``127.0.0.1:port``."""
        return str(self.cluster.address)

    def add(self, server: Server) -> None:
        """Start ``server``'s node (it joins a moment later); one it started already,
        and did not remove, is not started twice."""
        if server.id in self.nodes:
            return
        handlers = _signal_handlers()
        try:
            with _child_output(self.log):
                self._add(server)
        finally:  # a node started in this process sets Ray's SIGTERM handler
            _restore_signal_handlers(handlers)

    def _add(self, server: Server) -> None:
        for attempt in range(START_ATTEMPTS):
            try:
                self.nodes[server.id] = self.cluster.add_node(
                    wait=False,  # whoever needs it waits for it to join (wait_joined)
                    num_cpus=1,
                    num_gpus=server.gpus,
                    labels={SERVER_LABEL: str(server.id), POOL_LABEL: server.pool},
                    node_ip_address=LOOPBACK,
                )
                return
            except Exception:  # a raylet that timed out starting on a busy machine
                if attempt + 1 == START_ATTEMPTS:
                    raise
                time.sleep(1.0)

    def remove(self, server: Server) -> None:
        """Stop ``server``'s node (a drained one is exiting already: its processes
        are reaped). Gracefully (SIGTERM, then SIGKILL after a second): a raylet
        killed while it stops its agents leaves them to report it died unexpectedly,
        a page of its log on the driver's output."""
        node = self.nodes.pop(server.id, None)
        if node is not None:
            self.cluster.remove_node(node, allow_graceful=True)

    def kill(self, server_id: Any) -> None:
        """Kill a node abruptly (tests: a node failure)."""
        node = self.nodes.pop(server_id)
        self.cluster.remove_node(node, allow_graceful=False)

    def shutdown(self) -> None:
        """Disconnect and stop every process of the cluster."""
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()
        try:
            self.cluster.shutdown()
        finally:
            self._current.restore()  # Cluster's shutdown deletes the file

    def __enter__(self) -> LocalCluster:
        """The cluster."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """``shutdown()``."""
        self.shutdown()


class _CurrentCluster:
    """Ray's file naming the machine's "current" cluster, kept as it was:
    ``ray.cluster_utils.Cluster`` writes its head's address there when it starts and
    deletes the file when it stops, repointing the user's own ``ray.init()``."""

    def __init__(self) -> None:
        try:
            utils = _ray("_common.utils")
            self.path: Optional[str] = str(utils.get_ray_address_file(None))
        except (ImportError, AttributeError):  # another Ray: leave it to Ray
            self.path = None
        self.text = self._read()

    def _read(self) -> Optional[str]:
        if self.path is None:
            return None
        try:
            with open(self.path) as f:
                return f.read()
        except OSError:
            return None

    def restore(self) -> None:
        """Write the file back as it was (or delete it if there was none)."""
        if self.path is None or self._read() == self.text:
            return
        try:
            if self.text is None:
                os.remove(self.path)
            else:
                with open(self.path, "w") as f:
                    f.write(self.text)
        except OSError:  # best effort: the file is a convenience of Ray's
            pass


def labelled_nodes() -> Dict[str, Tuple[str, bool]]:
    """Labelled nodes: server id -> (node id, alive); a live node wins over dead ones."""
    out: Dict[str, Tuple[str, bool]] = {}
    for node in _ray().nodes():
        server = (node.get("Labels") or {}).get(SERVER_LABEL)
        if server is not None and (node["Alive"] or server not in out):
            out[server] = (node["NodeID"], bool(node["Alive"]))
    return out


def wait_joined(servers: Sequence[Any], timeout: float = JOIN_TIMEOUT_S) -> None:
    """Wait until every server in ``servers`` has a live labelled node."""
    deadline = time.monotonic() + timeout
    while any(not labelled_nodes().get(str(s), ("", False))[1] for s in servers):
        if time.monotonic() > deadline:
            raise TimeoutError(f"servers {list(servers)} did not join the Ray cluster")
        time.sleep(0.1)


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


def _worker_class() -> Any:
    ray = _ray()

    @ray.remote(num_cpus=0)
    class GpuWorker:
        """One worker: holds its GPUs on its server (a real job runs its shard here)."""

        def __init__(self, identity: Tuple[Any, Any, Optional[int], bool]) -> None:
            # plain values: unpickling an aryl.Worker would import aryl in every
            # worker process, seconds of start-up on a busy node
            self.worker = identity

        def identity(self) -> Tuple[Any, Any, Optional[int], bool]:
            """(job, server, gpus, flexible): a restarted controller adopts it by this."""
            return self.worker

        def where(self) -> Tuple[str, List[Any]]:
            context = ray.get_runtime_context()
            return context.get_node_id(), [str(g) for g in ray.get_gpu_ids()]

    return GpuWorker


class RayBackend:
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

    # -------------------------------------------------------------- nodes

    def _nodes(self) -> Dict[str, Tuple[str, bool]]:
        return labelled_nodes()

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
        first clears the actors an earlier controller left, see ``resume``)."""
        if not self._adopting:
            _clear_leftovers()
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

    def lend(self, servers: Sequence[Any]) -> List[Any]:
        """Start the servers' nodes (provider) without waiting: ``poll`` reports each
        as it joins. A server whose labelled node is up already is ready now, and one
        whose lend is under way (its node joining) is not started again: a resumed
        controller asks again for the servers it lent before it stopped."""
        nodes = self._nodes()
        ready: List[Any] = []
        for s in servers:
            self.log.append(("lend", s))
            if nodes.get(str(s), ("", False))[1] and s not in self.drained:
                ready.append(s)
            elif s not in self._joining:
                if self.provider is not None:
                    self.provider.add(self.servers[s])
                self._joining[s] = time.monotonic()
        return ready

    def _joined(self, nodes: Dict[str, Tuple[str, bool]]) -> List[Any]:
        """Lent servers whose labelled node is up in ``nodes`` (each join's wait kept
        in ``waits``); one that takes over ``JOIN_TIMEOUT_S`` is an error."""
        wall = time.monotonic()
        joined = [s for s in self._joining if nodes.get(str(s), ("", False))[1]]
        for s in joined:
            self.drained.pop(s, None)
            self.waits.append(("lend", 1, wall - self._joining.pop(s)))
        late = [
            s for s, began in self._joining.items() if wall - began > JOIN_TIMEOUT_S
        ]
        if late:
            raise TimeoutError(f"servers {late} did not join the Ray cluster")
        return joined

    def drain(self, servers: Sequence[Any]) -> None:
        """Drain the servers' nodes: running workers go on, new ones cannot start."""
        reasons = _ray("core.generated.autoscaler_pb2").DrainNodeReason
        gcs = _ray("_raylet").GcsClient(
            address=_ray().get_runtime_context().gcs_address
        )
        nodes = self._nodes()
        deadline_ms = int((time.time() + 3600) * 1000)
        for s in servers:
            node_id, alive = nodes.get(str(s), ("", False))
            if alive:
                gcs.drain_node(
                    node_id,
                    reasons.Value("DRAIN_NODE_REASON_PREEMPTION"),
                    "aryl reclaims this inference server",
                    deadline_ms,
                )
            self.drained[s] = node_id
            self.log.append(("drain", s))

    def busy(self, server: Any) -> int:
        """aryl workers still alive on ``server``."""
        count = 0
        ray = _ray()
        for placed in self.running.values():
            for w, actor in placed:
                if w.server == server and _alive(ray, actor):
                    count += 1
        count += sum(
            1
            for w, actor in self._stopping
            if w.server == server and _alive(ray, actor)
        )
        self.log.append(("confirm", server, count))
        return count

    def kill(self, server: Any) -> Dict[Any, float]:
        """Kill the workers left on ``server``."""
        ray = _ray()
        lost: Dict[Any, float] = {}
        for w, actor in [p for p in self._stopping if p[0].server == server]:
            ray.kill(actor)
            self._stopping.remove((w, actor))
            if w.job not in self.running:
                lost[w.job] = ray.get(self._host().lose.remote(w.job))
        self.log.append(("kill", server))
        return lost

    def release(self, servers: Sequence[Any]) -> None:
        """The drained (or still joining) nodes exit once idle; make sure they are
        gone."""
        for s in servers:
            self._joining.pop(s, None)
            if self.provider is not None:
                self.provider.remove(self.servers[s])
            self.log.append(("release", s))

    # --------------------------------------------------------------- jobs

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

    def set_workers(self, job: Any, workers: Sequence[Worker]) -> None:
        """Start and stop actors so that ``job`` holds ``workers``."""
        self.set_workers_many({job: workers})

    def set_workers_many(self, changes: Mapping[Any, Sequence[Worker]]) -> None:
        """Start and stop actors so that each job holds its workers: every stop
        first, then the new actors of every job at once, so that one epoch's starts
        wait for Ray together rather than one job after another (each wait counts
        ``compression``-fold). A gang that cannot be placed holds nothing; the jobs
        whose gangs could not be placed are named in one ``RuntimeError`` after the
        others have started."""
        ray = _ray()
        began = time.time()  # the agent host, on this node, times the starts from it
        plans = {job: self._diff(job, workers) for job, workers in changes.items()}
        emptied = [job for job, workers in changes.items() if not workers]
        host = self._host()
        ray.get([host.resize.remote(j, [], self.servers) for j in emptied])
        for job, (_, leaving, _) in plans.items():  # leaving; the emptied save first
            for w, actor in leaving:
                ray.kill(actor)
                self._stopping.append((w, actor))
                self.log.append(("stop", job, w.server))
        for job in emptied:
            self.running.pop(job, None)
            self._remove_group(job)
        starting = {j: p for j, p in plans.items() if changes[j]}
        gangs = {j: self._reserve(j, p[2]) for j, p in starting.items() if not p[0]}
        unplaced = self._wait_placed(gangs)
        started = {
            job: (
                self._gang(joining, gangs[job]) if not keep else self._singles(joining)
            )
            for job, (keep, _, joining) in starting.items()
            if job not in unplaced
        }
        for job, new in started.items():
            self.log.append(
                (
                    "gang" if not starting[job][0] else "join",
                    job,
                    tuple(w.server for w, _ in new),
                )
            )
            self.running[job] = starting[job][0] + new
        # a job with new actors is resized by the host once they are up (a pinned
        # single waits for its GPUs), without the controller waiting; the others now
        ray.get(
            [
                host.start.remote(
                    j, self._placed(j), self.servers, [a for _, a in new], began
                )
                if new
                else host.resize.remote(j, self._placed(j), self.servers)
                for j, new in started.items()
            ]
        )
        if unplaced:
            raise RuntimeError(
                f"job(s) {sorted(map(str, unplaced))}: their gangs could not be placed"
            )

    def _placed(self, job: Any) -> List[Worker]:
        """The workers ``job`` holds (its actors' records)."""
        return [w for w, _ in self.running.get(job, [])]

    def _diff(
        self, job: Any, workers: Sequence[Worker]
    ) -> Tuple[List[Tuple[Worker, Any]], List[Tuple[Worker, Any]], List[Worker]]:
        """(kept actors, leaving actors, joining workers) for ``job`` to hold
        ``workers``."""
        placed = list(self.running.get(job, []))
        keep: List[Tuple[Worker, Any]] = []
        for w in workers:
            match = next(
                (
                    p
                    for p in placed
                    if p[0].server == w.server and p[0].flexible == w.flexible
                ),
                None,
            )
            if match is not None:
                placed.remove(match)
                keep.append(match)
        return keep, placed, _without(list(workers), [k[0] for k in keep])

    def _reserve(self, job: Any, workers: List[Worker]) -> Any:
        """The job's gang reserved as one placement group (not waited for)."""
        groups = _ray("util.placement_group")
        self._remove_group(job)
        self.groups[job] = groups.placement_group(
            [{"GPU": w.gpus} for w in workers],
            bundle_label_selector=[{SERVER_LABEL: str(w.server)} for w in workers],
            name=GANG_NAME.format(job),
            lifetime="detached",
        )
        return self.groups[job]

    def _wait_placed(self, gangs: Mapping[Any, Any]) -> List[Any]:
        """Wait until every gang is placed or the timeout; the jobs whose gangs were
        not (their groups removed: all or nothing)."""
        if not gangs:
            return []
        ray = _ray()
        waits = {group.ready(): job for job, group in gangs.items()}
        ready, _ = ray.wait(
            list(waits), num_returns=len(waits), timeout=self.placement_timeout
        )
        placed = {waits[r] for r in ready}
        unplaced = [job for job in gangs if job not in placed]
        for job in unplaced:
            self._remove_group(job)
        return unplaced

    def _remove_group(self, job: Any) -> None:
        group = self.groups.pop(job, None)
        if group is not None:
            _ray("util.placement_group").remove_placement_group(group)

    def _gang(self, workers: List[Worker], group: Any) -> List[Tuple[Worker, Any]]:
        """The actors of a placed gang, one per bundle."""
        strategies = _ray("util.scheduling_strategies")
        return [
            (
                w,
                self._worker.options(
                    **self._worker_options(w),
                    scheduling_strategy=strategies.PlacementGroupSchedulingStrategy(
                        group, k
                    ),
                ).remote(_identity(w)),
            )
            for k, w in enumerate(workers)
        ]

    def _singles(self, workers: List[Worker]) -> List[Tuple[Worker, Any]]:
        """Workers joining a running job, one actor each, pinned by label."""
        return [
            (
                w,
                self._worker.options(
                    **self._worker_options(w),
                    label_selector={SERVER_LABEL: str(w.server)},
                ).remote(_identity(w)),
            )
            for w in workers
        ]

    def _worker_options(self, worker: Worker) -> Dict[str, Any]:
        """A new worker actor's name, lifetime and GPUs."""
        self._started += 1
        return {
            "name": WORKER_NAME.format(self._started - 1),
            "lifetime": "detached",
            "num_gpus": worker.gpus,
        }

    def where(self, job: Any) -> List[Tuple[Any, List[str]]]:
        """``(node id, GPU ids)`` of each of the job's workers (tests)."""
        ray = _ray()
        where: List[Tuple[Any, List[str]]] = ray.get(
            [a.where.remote() for _, a in self.running.get(job, [])]
        )
        return where

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
        for server in {w.server for p in self.running.values() for w, _ in p}:
            if server in self._dead or server in self.drained:
                continue
            if not nodes.get(str(server), ("", False))[1]:
                self._dead.add(server)
                report.dead_servers.append(server)
                for job in [
                    j
                    for j, p in self.running.items()
                    if any(w.server == server for w, _ in p)
                ]:
                    if job in report.finished:
                        continue
                    report.lost[job] = ray.get(self._host().lose.remote(job))
                    self._drop(job)
        return report

    def _drop(self, job: Any) -> None:
        ray = _ray()
        for _, actor in self.running.pop(job, []):
            ray.kill(actor)
        self._remove_group(job)

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


@contextlib.contextmanager
def _child_output(log: Optional[str]) -> Iterator[None]:
    """With ``log``, the processes started meanwhile write their stdout and stderr
    there (they inherit file descriptors 1 and 2, pointed at it for the while)."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def _signal_handlers() -> Dict[int, Any]:
    """SIGINT's and SIGTERM's handlers now (none off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: Mapping[int, Any]) -> None:
    """Put back the handlers ``_signal_handlers`` saw (Ray's in-process head node
    installs its own, which drains and exits 1: ``aryl live`` promises 143)."""
    for signum, handler in handlers.items():
        if handler is not None and signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)


def _alive(ray: Any, actor: Any) -> bool:
    """Whether ``actor`` still answers."""
    try:
        ray.get(actor.where.remote(), timeout=5.0)
    except Exception:  # ActorDiedError, ActorUnavailableError, timeouts
        return False
    return True


def _check_started(
    failed: Sequence[Tuple[Any, str]],
    running: Mapping[Any, Sequence[Tuple[Worker, Any]]],
    nodes: Mapping[str, Tuple[str, bool]],
) -> None:
    """A ``RuntimeError`` naming the jobs whose workers did not start (``failed``:
    job, why) on live nodes; a start that failed with its node is the dead-node
    check's, and one of a job stopped meanwhile is no one's."""
    errors = [
        f"{job!r}: {why}"
        for job, why in failed
        if job in running
        and all(nodes.get(str(w.server), ("", False))[1] for w, _ in running[job])
    ]
    if errors:
        raise RuntimeError("the workers of job(s) did not start: " + "; ".join(errors))


def _same(a: Sequence[Worker], b: Sequence[Worker]) -> bool:
    """Whether ``a`` and ``b`` are the same workers, in any order."""
    return sorted(map(repr, a)) == sorted(map(repr, b))


def _identity(worker: Worker) -> Tuple[Any, Any, Optional[int], bool]:
    """A worker as the plain values its actor keeps."""
    return (worker.job, worker.server, worker.gpus, worker.flexible)


def _named(prefix: str) -> List[Tuple[str, Any]]:
    """(name, handle) of the live named actors of the namespace whose name starts
    with ``prefix``."""
    names = [n for n in _ray("util").list_named_actors() if n.startswith(prefix)]
    found = [(n, _actor(n)) for n in sorted(names)]
    return [(n, a) for n, a in found if a is not None]


def _actor(name: str) -> Any:
    """The named actor of the namespace, or None."""
    try:
        return _ray().get_actor(name)
    except ValueError:
        return None


def _placement_group(name: str) -> Any:
    """The named placement group of the namespace, or None."""
    try:
        return _ray("util").get_placement_group(name)
    except ValueError:
        return None


def _clear_leftovers() -> None:
    """Kill the agents and workers and remove the gangs an earlier controller of this
    namespace left: a new run starts on an empty cluster."""
    ray = _ray()
    for prefix in (HOST_NAME, WORKER_NAME.format("")):
        for _, actor in _named(prefix):
            ray.kill(actor)
    _remove_gangs(keep=set())


def _remove_gangs(keep: set[str]) -> None:
    """Remove the namespace's live gangs (named placement groups) not in ``keep``."""
    for info in _ray("util").placement_group_table().values():
        name = info.get("name") or ""
        if (
            name.startswith(GANG_NAME.format(""))
            and name not in keep
            and info.get("state") != "REMOVED"
        ):
            group = _placement_group(name)
            if group is not None:
                _ray("util.placement_group").remove_placement_group(group)
