"""What the kernels decide, by id: ``Decision`` (scheduling) and ``ReclaimPlan`` (reclaiming)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, overload

from .model import Records, Worker, as_records
from .typing import ReclaimPolicy, SchedulePolicy

if TYPE_CHECKING:
    from .state import ClusterState


@dataclass
class Decision:
    """What to change at this epoch.

    ``start`` are new workers to launch (``Worker.flexible`` marks those beyond the
    job's ``min_workers``); ``stop`` are existing workers to remove (scale-ins);
    ``allocation`` maps every job id to its worker count after the decision (0 for
    jobs left queued); ``pending`` lists the queued jobs left queued, in queue order.
    ``unplaceable`` maps the queued jobs whose base demand can never be placed on
    these servers (not even on an empty cluster) to the reason; they were left out
    of the epoch, are not in ``pending``, and have allocation 0.
    """

    policy: SchedulePolicy
    start: List[Worker] = field(default_factory=list)
    stop: List[Worker] = field(default_factory=list)
    allocation: Dict[Any, int] = field(default_factory=dict)
    pending: List[Any] = field(default_factory=list)
    unplaceable: Dict[Any, str] = field(default_factory=dict)

    @overload
    def apply(self, workers: ClusterState) -> None: ...

    @overload
    def apply(self, workers: Records) -> List[Worker]: ...

    def apply(self, workers: Any) -> Optional[List[Worker]]:
        """The workers after the decision: ``workers`` less ``stop``, plus ``start``.

        Workers are matched by value, so ``workers`` may be the dicts or DataFrame
        the decision was computed from. Given an ``aryl.ClusterState`` instead, the
        decision is applied to it in place (validated and atomic: a worker to stop
        that is not there, or a start that over-commits a server, is a
        ``ValueError`` and the state is unchanged) and None is returned.
        """
        from .state import ClusterState

        if isinstance(workers, ClusterState):
            workers._apply_workers(self.stop, self.start)
            return None
        to_stop = Counter(self.stop)
        kept = []
        for w in as_records(workers, Worker, "worker"):
            if to_stop[w] > 0:
                to_stop[w] -= 1
            else:
                kept.append(w)
        return kept + list(self.start)

    def _repr_html_(self) -> str:
        from ._display import html_table

        running = {j: n for j, n in self.allocation.items() if n}
        flexible = sum(w.flexible for w in self.start)
        total = len(self.allocation)
        rows = [
            ("policy", self.policy),
            (
                "workers started",
                f"{len(self.start)} ({flexible} flexible, beyond min_workers)",
            ),
            ("workers stopped", f"{len(self.stop)} (scale-ins)"),
            (
                "jobs running",
                f"{len(running)} of {total} ({len(running) / total:.0%})"
                if total
                else "0",
            ),
            (
                "workers per job",
                ", ".join(f"{j}: {n}" for j, n in running.items()) or "—",
            ),
            (
                "jobs pending",
                f"{len(self.pending)}: " + (", ".join(map(str, self.pending)) or "—"),
            ),
            ("jobs unplaceable", ", ".join(map(str, self.unplaceable)) or "—"),
        ]
        return html_table(rows, "Decision")


@dataclass
class ReclaimPlan:
    """The answer to a reclaim request.

    ``servers`` are the ids of the returned servers in the order chosen;
    ``preempted`` the ids of jobs that must be preempted (they would fall below
    ``min_workers``); ``scaled_in`` maps job id to workers removed for jobs that keep
    at least ``min_workers``. ``collateral_gpus`` are GPUs freed by preempted jobs
    on servers that are *not* returned (vacated beyond the demand);
    ``collateral_damage`` is that as a fraction of ``demand_gpus``, the GPUs of the
    returned servers.
    """

    policy: ReclaimPolicy
    servers: List[Any]
    preempted: List[Any]
    scaled_in: Dict[Any, int] = field(default_factory=dict)
    demand_gpus: int = 0
    collateral_gpus: int = 0

    def apply(self, state: Any) -> None:
        """Apply the plan to an ``aryl.ClusterState`` in place.

        The returned servers go back to the inference cluster (``on_loan`` False),
        the preempted jobs lose all their workers (they are queued again) and the
        scaled-in jobs their workers on the returned servers. Validated and atomic:
        a plan that does not match the state (unknown ids, a job with a different
        number of workers on the returned servers) is a ``ValueError`` and the state
        is unchanged.
        """
        servers = state._rows(self.servers, state._server_index, "server")
        preempted = state._rows(self.preempted, state._job_index, "job")
        scaled = state._rows(list(self.scaled_in), state._job_index, "job")
        state._apply_reclaim(
            servers, preempted, dict(zip(scaled.tolist(), self.scaled_in.values()))
        )

    @property
    def collateral_damage(self) -> float:
        """Collateral GPUs as a fraction of the GPUs returned (0 when nothing is returned)."""
        return self.collateral_gpus / self.demand_gpus if self.demand_gpus else 0.0

    def _repr_html_(self) -> str:
        from ._display import html_table

        scaled = sum(self.scaled_in.values())
        rows = [
            ("policy", self.policy),
            (
                "servers returned",
                f"{len(self.servers)} ({self.demand_gpus} GPUs): "
                + (", ".join(map(str, self.servers)) or "—"),
            ),
            (
                "jobs preempted",
                f"{len(self.preempted)}: "
                + (", ".join(map(str, self.preempted)) or "—"),
            ),
            (
                "jobs scaled in",
                f"{len(self.scaled_in)} ({scaled} workers): "
                + (
                    ", ".join(f"{j} (−{w} workers)" for j, w in self.scaled_in.items())
                    or "—"
                ),
            ),
            (
                "collateral damage",
                f"{self.collateral_damage:.1%} ({self.collateral_gpus} GPUs freed "
                f"beyond the {self.demand_gpus} returned)",
            ),
        ]
        return html_table(rows, "ReclaimPlan")
