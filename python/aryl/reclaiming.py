"""Choosing which on-loan inference servers to return (paper §4, Algorithm 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, get_args

import numpy as np

from . import _core, validation
from .model import Records, State
from .typing import ReclaimPolicy

POLICIES = get_args(ReclaimPolicy)


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


def reclaim(
    servers: Records,
    jobs: Records,
    workers: Records,
    n: int,
    policy: ReclaimPolicy = "aryl",
    seed: int = 0,
) -> ReclaimPlan:
    """Choose ``n`` on-loan inference servers to return to the inference cluster.

    Parameters
    ----------
    servers
        All servers (``Server``, dicts or a DataFrame). Only those with
        ``on_loan=True`` are candidates.
    jobs
        The running jobs (their ``gpus_per_worker``, ``min_workers`` and
        ``max_workers`` decide between scaling in and preemption).
    workers
        Where each worker runs (``Worker(job, server)``).
    n
        How many servers to return; more than are on loan is a ``ValueError``.
    policy
        ``"aryl"`` (default): servers whose loss preempts nothing first (idle ones,
        then those whose jobs can scale in), then Algorithm 1's greedy on
        preemption cost ``sum(1/|S_j|)`` over the jobs a server would preempt,
        recomputed after every pick; ties go to fewer preempted jobs, fewer
        scaled-in workers, then input order; the last pick minimises preempted jobs
        first (Algorithm 1's ``N_R = 1`` case). ``"scf"``: the servers hosting the
        fewest jobs. ``"random"``: uniformly at random with ``seed``. ``"exact"``:
        fewest preempted jobs by branch and bound over all on-loan servers (ties:
        fewer collateral GPUs, then fewer scaled-in workers, then input order),
        refused with a ``ValueError`` when the search space exceeds
        ``aryl._core.exact_subset_limit`` server sets.
    seed
        Seed of the ``"random"`` policy.

    Raises
    ------
    ValueError
        On bad input (naming the record) or an impossible request; nothing is
        changed and no partial plan is returned.
    """
    validation.text(policy, "reclaim policy", POLICIES)
    n = validation.integer(n, "n", -validation.MAX_INT)
    seed = validation.seed(seed)
    state = State.build(servers, jobs, workers)
    plan = _core.reclaim(state.core, n, policy, seed)
    return ReclaimPlan(
        policy=policy,
        servers=[state.servers[i].id for i in plan.servers],
        preempted=[state.jobs[j].id for j in plan.preempted],
        scaled_in={state.jobs[j].id: w for j, w in plan.scaled_in},
        demand_gpus=plan.demand_gpus,
        collateral_gpus=plan.collateral_gpus,
    )


class ReclaimResult:
    """The outcome of ``ClusterState.reclaim``, as index arrays into the state's rows.

    ``servers`` are the rows of the returned servers (in the order chosen),
    ``preempted`` the rows of the preempted jobs, ``scaled_in`` (job row, workers
    removed) pairs; ``demand_gpus`` and ``collateral_gpus`` as in ``ReclaimPlan``.
    ``plan`` is the same as an ``aryl.ReclaimPlan`` (built on first access);
    ``apply(state)`` applies it to the state it was computed on.
    """

    __slots__ = (
        "policy",
        "_raw",
        "_state",
        "_version",
        "_server_ids",
        "_job_ids",
        "_plan",
    )

    def __init__(self, state: Any, policy: ReclaimPolicy, raw: Any) -> None:
        """Keep the kernel's answer and the ids it refers to (no conversion yet)."""
        self.policy, self._raw = policy, raw
        self._state, self._version = state, state.version
        self._server_ids, self._job_ids = state._servers["id"], state._jobs["id"]
        self._plan: Optional[ReclaimPlan] = None

    @property
    def servers(self) -> np.ndarray:
        """Rows of the returned servers, in the order chosen."""
        return np.asarray(self._raw.servers, dtype=np.int64)

    @property
    def preempted(self) -> np.ndarray:
        """Rows of the preempted jobs."""
        return np.asarray(self._raw.preempted, dtype=np.int64)

    @property
    def scaled_in(self) -> List[Tuple[int, int]]:
        """(job row, workers removed) for the jobs that keep ``min_workers``."""
        return list(self._raw.scaled_in)

    @property
    def demand_gpus(self) -> int:
        """GPUs of the returned servers."""
        return int(self._raw.demand_gpus)

    @property
    def collateral_gpus(self) -> int:
        """GPUs freed by preempted jobs on servers that are not returned."""
        return int(self._raw.collateral_gpus)

    @property
    def plan(self) -> ReclaimPlan:
        """The friendly ``aryl.ReclaimPlan`` (ids), built once."""
        if self._plan is None:
            raw = self._raw
            self._plan = ReclaimPlan(
                policy=self.policy,
                servers=self._server_ids[self.servers].tolist(),
                preempted=self._job_ids[self.preempted].tolist(),
                scaled_in={self._job_ids[j]: w for j, w in raw.scaled_in},
                demand_gpus=raw.demand_gpus,
                collateral_gpus=raw.collateral_gpus,
            )
        return self._plan

    def apply(self, state: Any) -> None:
        """Apply the plan to ``state``: the state it was computed on, unchanged."""
        if state is not self._state or state.version != self._version:
            raise ValueError(
                "the state changed since this plan was computed; "
                "reclaim again (or use result.plan.apply(state))"
            )
        state._apply_reclaim(self.servers, self.preempted, dict(self._raw.scaled_in))

    def __repr__(self) -> str:
        return (
            f"ReclaimResult(policy={self.policy!r}, {len(self._raw.servers)} servers, "
            f"{len(self._raw.preempted)} jobs preempted)"
        )


def reclaim_state(
    state: Any, n: int, policy: ReclaimPolicy, seed: int
) -> ReclaimResult:
    """``ClusterState.reclaim``: the kernel on the state's compiled copy."""
    validation.text(policy, "reclaim policy", POLICIES)
    n = validation.integer(n, "n", -validation.MAX_INT)
    seed = validation.seed(seed)
    return ReclaimResult(state, policy, _core.reclaim(state._core, n, policy, seed))
