"""The live controller's faults: dead nodes and dead workers.

A dead node's jobs go back to the queue from their last checkpoint (the work since is
journaled as lost); a dead lent node counts as a reclaim; a dead training server
leaves the cluster. A dead worker's job restarts in place, at most
``worker_restarts`` times, then goes back to the queue.
"""

from __future__ import annotations

from typing import (
    Any,
    Mapping,
)

from ..decisions import Decision
from ..state import ClusterState
from .backend import Report
from .parts import ControllerParts


class Faults(ControllerParts):
    """What ``Controller`` does when the backend reports a fault (see the module)."""

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
