"""What the Ray backend's parts share: its state, and the methods one part calls on
another, declared once for the type checker.

``RayBackend`` (``ray_backend.py``: the ``Backend`` protocol, its polls and resume)
is made of parts, one module each: ``Nodes`` (``ray_nodes.py``: servers as labelled
nodes, lending, draining), ``Gangs`` (``ray_gangs.py``: a job's workers as actors,
its base workers as one placement group), ``Agents`` (``ray_agents.py``: the jobs'
agents, their steps and checkpoints, in one host actor) and ``Health``
(``ray_health.py``: what still runs, dead nodes, the reclaim's confirmation and
kill). They share one object's state, set by ``RayBackend.__init__``; this base only
names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..model import Server, Worker

if TYPE_CHECKING:
    from .ray_nodes import NodeProvider


class RayParts:
    """The Ray backend's state (``RayBackend`` documents it) and the methods its parts
    call on one another; each part defines its own, so these never run."""

    checkpoints: str
    run: str
    compression: float
    provider: Optional[NodeProvider]
    checkpoint_every: float
    tick: float
    placement_timeout: float
    servers: Dict[Any, Server]
    agents: set[Any]  # jobs with an agent in the host
    running: Dict[Any, List[Tuple[Worker, Any]]]  # job -> [(worker, actor)]
    groups: Dict[Any, Any]  # job -> its placement group, if any
    drained: Dict[Any, str]  # server -> its node id
    log: List[Tuple[Any, ...]]
    waits: List[Tuple[str, int, float]]  # (what, count, wall seconds) of Ray's waits
    _home: Any  # the scheduling strategy onto the controller's node
    _host_handle: Any
    _worker: Any  # the worker actor class
    _dead: set[Any]
    _stopping: List[Tuple[Worker, Any]]  # killed, not yet confirmed gone
    _joining: Dict[Any, float]  # lent server -> wall time it was lent
    _checked: float  # wall time nodes were last checked
    _adopting: bool  # resume(): keep what an earlier controller started
    _started: int  # workers started: their names

    def _host(self) -> Any:
        """The agent host actor (``Agents``)."""
        raise NotImplementedError

    def _nodes(self) -> Dict[str, Tuple[str, bool]]:
        """Labelled nodes: server id -> (node id, alive) (``Nodes``)."""
        raise NotImplementedError

    def _drop(self, job: Any) -> None:
        """Kill a job's actors and remove its gang (``Gangs``)."""
        raise NotImplementedError
