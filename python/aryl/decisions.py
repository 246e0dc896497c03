"""What the kernels decide, by id: ``Decision`` (scheduling) and ``ReclaimPlan`` (reclaiming)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union, overload

from ._display import html_table
from .model import Records, Worker, as_records
from .typing import Id, ReclaimPolicy, SchedulePolicy


class Appliable:
    """What a ``Decision`` or a ``ReclaimPlan`` applies to in place.

    ``aryl.ClusterState`` is the one implementation; it lives above this module
    (it builds decisions), so the decisions know it only by this base.
    """

    def _apply_workers(self, stop: List[Worker], start: List[Worker]) -> None:
        raise NotImplementedError

    def _apply_plan(self, plan: ReclaimPlan) -> None:
        raise NotImplementedError


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

    policy: Union[SchedulePolicy, str]  # a built-in policy, or your own's name
    start: List[Worker] = field(default_factory=list)
    stop: List[Worker] = field(default_factory=list)
    allocation: Dict[Any, int] = field(default_factory=dict)
    pending: List[Any] = field(default_factory=list)
    unplaceable: Dict[Any, str] = field(default_factory=dict)

    @overload
    def apply(self, workers: Appliable) -> None: ...

    @overload
    def apply(self, workers: Records) -> List[Worker]: ...

    def apply(self, workers: Any) -> Optional[List[Worker]]:
        """The workers after the decision: ``workers`` less ``stop``, plus ``start``.

        Workers are matched on (job, server, flexible), and on ``gpus`` only where
        both sides give it, so ``workers`` may be the records, dicts or DataFrame
        the decision was computed from; a worker to stop that is not there is a
        ``ValueError``. Given an ``aryl.ClusterState`` instead, the decision is
        applied to it in place (validated and atomic: a worker to stop that is not
        there, or a start that over-commits a server, is a ``ValueError`` and the
        state is unchanged) and None is returned.
        """
        if isinstance(workers, Appliable):
            workers._apply_workers(self.stop, self.start)
            return None
        return _without(as_records(workers, Worker, "worker"), self.stop) + list(
            self.start
        )

    def _repr_html_(self) -> str:
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
    returned servers. ``stop`` names the workers to stop, ``gpus`` filled in: every
    worker of a preempted job and the scaled-in jobs' workers on the returned servers
    (``aryl.reclaim`` and ``ClusterState.reclaim`` fill it; ``apply`` does not need it).
    ``work_lost``: GPU-seconds the preempted jobs throw away (their unsaved work
    and, with a checkpoint, restart overhead x GPUs; see ``aryl.reclaim``), whatever
    the policy; what ``"least-work"`` keeps small.
    """

    policy: ReclaimPolicy
    servers: List[Any]
    preempted: List[Any]
    scaled_in: Dict[Any, int] = field(default_factory=dict)
    demand_gpus: int = 0
    collateral_gpus: int = 0
    stop: List[Worker] = field(default_factory=list)
    work_lost: float = 0.0

    def apply(self, state: Any) -> None:
        """Apply the plan to an ``aryl.ClusterState`` in place.

        The returned servers go back to the inference cluster (``on_loan`` False),
        the preempted jobs lose all their workers (they are queued again) and the
        scaled-in jobs their workers on the returned servers. Validated and atomic:
        a plan that does not match the state (unknown ids, a server not on loan, a
        preempted job with no worker on the returned servers, a job with a
        different number of workers on the returned servers, a scale-in below
        ``min_workers``) is a ``ValueError`` and the state is unchanged. Anything
        but a ``ClusterState`` is a ``TypeError`` (a plan says nothing about
        where the workers of a list of records would go).
        """
        if not isinstance(state, Appliable):
            raise TypeError(
                "ReclaimPlan.apply takes an aryl.ClusterState, got "
                f"{type(state).__name__}"
            )
        state._apply_plan(self)

    @property
    def collateral_damage(self) -> float:
        """Collateral GPUs as a fraction of the GPUs returned (0 when nothing is returned)."""
        return self.collateral_gpus / self.demand_gpus if self.demand_gpus else 0.0

    def _repr_html_(self) -> str:
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


def _without(workers: List[Worker], stop: List[Worker]) -> List[Worker]:
    """``workers`` less ``stop``, matched on (job, server, flexible) and on ``gpus``
    where both give it; a worker to stop that is not there is a ValueError."""
    free: Dict[Tuple[Id, Id, bool], List[int]] = {}
    for index, w in enumerate(workers):
        free.setdefault((w.job, w.server, w.flexible), []).append(index)
    gone = set()
    for worker in stop:
        rows = free.get((worker.job, worker.server, worker.flexible), [])
        row: Optional[int] = next(
            (
                r
                for r in rows
                if worker.gpus is None
                or workers[r].gpus is None
                or workers[r].gpus == worker.gpus
            ),
            None,
        )
        if row is None:
            raise ValueError(f"no worker {worker!r} among the workers to stop")
        rows.remove(row)
        gone.add(row)
    return [w for index, w in enumerate(workers) if index not in gone]
