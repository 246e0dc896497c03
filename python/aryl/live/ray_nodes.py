"""Servers are labelled Ray nodes: finding them, lending, draining, a local cluster.

A server is a Ray node started with ``--num-gpus G --labels
aryl.server=ID,aryl.pool=POOL`` (``SERVER_LABEL``, ``POOL_LABEL``). Lending starts an
inference server's node through a ``NodeProvider``: ``LocalCluster``
(``ray.cluster_utils.Cluster``, every node on this machine's loopback) or none (an
external system starts labelled nodes; the backend waits for them to join). A reclaim
drains a node through the GCS (``drain_node`` with a preemption reason and a
deadline: Ray-internal, see ``docs/live.md``); a drained raylet exits once idle. Also
here: keeping the output of Ray's processes and the caller's signal handlers.
"""

from __future__ import annotations

import contextlib
import importlib
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
from ..model import Server
from .ray_parts import RayParts

#: Node labels: the aryl server id and its pool.
SERVER_LABEL, POOL_LABEL = "aryl.server", "aryl.pool"
#: Tries to start a node (Ray gives up on a raylet a busy machine starts slowly).
START_ATTEMPTS = 3
#: Wall seconds a lent node may take to join.
JOIN_TIMEOUT_S = 60.0


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


class Nodes(RayParts):
    """The servers' nodes for ``RayBackend`` (see the module)."""

    def _nodes(self) -> Dict[str, Tuple[str, bool]]:
        return labelled_nodes()

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

    def release(self, servers: Sequence[Any]) -> None:
        """The drained (or still joining) nodes exit once idle; make sure they are
        gone."""
        for s in servers:
            self._joining.pop(s, None)
            if self.provider is not None:
                self.provider.remove(self.servers[s])
            self.log.append(("release", s))


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
