"""The Ray backend's health: what still runs, what died, and a reclaim's end.

A server's node that is gone from the cluster's listing (checked every
``NODE_CHECK_S``) is dead, with its workers: their jobs go back to their last
checkpoint. A reclaim's confirmation is that no aryl worker answers on the server any
more (``busy``); past its grace, what is left is killed (``kill``). A start whose
workers failed on live nodes is an error (``_check_started``).
"""

from __future__ import annotations

from typing import (
    Any,
    Dict,
    Mapping,
    Sequence,
    Tuple,
)

from ..model import Worker
from .backend import Report
from .ray_nodes import _ray
from .ray_parts import RayParts

#: Wall seconds between two checks of the nodes' health (a GCS call).
NODE_CHECK_S = 1.0


class Health(RayParts):
    """What still runs for ``RayBackend`` (see the module)."""

    def _dead_nodes(
        self, report: Report, nodes: Mapping[str, Tuple[str, bool]]
    ) -> None:
        """Servers of running workers whose node is gone from ``nodes`` (not drained):
        into ``report``, with the progress their jobs lost (back to the checkpoint)."""
        ray = _ray()
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
