"""``ClusterState.reclaim``: the reclaim kernel on the state's compiled copy."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

import numpy as np

from .. import _core, validation
from ..decisions import ReclaimPlan
from ..defaults import RECLAIM_POLICIES as POLICIES
from ..defaults import RESTART_OVERHEAD_S
from ..model import Worker, trusted_records
from ..typing import ReclaimPolicy


class ReclaimResult:
    """The outcome of ``ClusterState.reclaim``, as index arrays into the state's rows.

    ``servers`` are the rows of the returned servers (in the order chosen),
    ``preempted`` the rows of the preempted jobs, ``scaled_in`` (job row, workers
    removed) pairs; ``demand_gpus``, ``collateral_gpus`` and ``work_lost`` as in
    ``ReclaimPlan``.
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
        "_workers",
        "_gpus",
        "_plan",
    )

    def __init__(
        self, state: Any, version: int, policy: ReclaimPolicy, raw: Any
    ) -> None:
        """Keep the kernel's answer and the ids it refers to (no conversion yet).

        ``version``: the state's version before the kernel ran.
        """
        self.policy, self._raw = policy, raw
        self._state, self._version = state, version
        self._server_ids, self._job_ids = state._servers["id"], state._jobs["id"]
        self._workers, self._gpus = state._workers, state._jobs["gpus_per_worker"]
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
    def work_lost(self) -> float:
        """GPU-seconds the preempted jobs throw away (their unsaved work and, with a
        checkpoint, restart overhead x GPUs), whatever the policy."""
        return float(self._raw.work_lost)

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
                stop=self._stop(),
                work_lost=float(raw.work_lost),
            )
        return self._plan

    def _stop(self) -> List[Worker]:
        """The workers the plan stops: a preempted job's all, the others' on the
        returned servers (the tables of the version it was computed on)."""
        w = self._workers
        returned = np.zeros(len(self._server_ids), dtype=bool)
        returned[self.servers] = True
        preempted = np.zeros(len(self._job_ids), dtype=bool)
        preempted[self.preempted] = True
        rows = np.flatnonzero(returned[w["server"]] | preempted[w["job"]])
        jobs, servers = w["job"][rows], w["server"][rows]
        return trusted_records(
            Worker,
            [
                self._job_ids[jobs].tolist(),
                self._server_ids[servers].tolist(),
                self._gpus[jobs].tolist(),
                w["flexible"][rows].tolist(),
            ],
        )

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
    state: Any,
    n: int,
    policy: ReclaimPolicy,
    seed: int,
    among: Any = None,
    unsaved: Optional[Mapping[Any, float]] = None,
    restart_overhead: float = RESTART_OVERHEAD_S,
) -> ReclaimResult:
    """``ClusterState.reclaim`` (and so ``aryl.reclaim``): the kernel on the state's
    compiled copy, among every on-loan server or the ids ``among`` names, with each
    job's work at risk (``unsaved``, ``restart_overhead``; see ``aryl.reclaim``)."""
    version = state.version  # before the kernel: a later change makes it stale
    validation.text(policy, "reclaim policy", POLICIES)
    n = validation.integer(n, "n", -validation.MAX_INT)
    seed = validation.seed(seed)
    overhead = validation.real(restart_overhead, "restart_overhead", 0.0)
    rows = None
    if among is not None:
        rows = state._rows(among, state._server_index, "server").tolist()
    work = unsaved_work(state, unsaved)
    raw = _core.reclaim(state._core, n, policy, seed, rows, work, overhead)
    return ReclaimResult(state, version, policy, raw)


def unsaved_work(state: Any, unsaved: Optional[Mapping[Any, float]]) -> np.ndarray:
    """Each job's GPU-seconds a preemption throws away, in the state's row order.

    ``unsaved`` (job id -> GPU-seconds) names the jobs it knows; the others, and
    every job when it is ``None``, get the state's estimate: none for a job with a
    checkpoint (it saves as it stops, as the simulator and ``aryl live`` model it),
    and for one without, the progress the state knows it made, ``(1 - remaining)
    x estimated_duration x reference workers x gpus_per_worker`` (the GPU-seconds
    that progress took at its reference workers; 0 for a job the state has not
    advanced, such as one built from records).
    """
    jobs = state._jobs
    reference = np.where(
        jobs["reference_workers"] > 0, jobs["reference_workers"], jobs["max_workers"]
    )
    done = 1.0 - np.clip(state._remaining_column(), 0.0, 1.0)
    work = np.where(
        jobs["checkpoint"],
        0.0,
        done * jobs["estimated_duration"] * reference * jobs["gpus_per_worker"],
    ).astype(float)
    if unsaved is None:
        return work
    if not isinstance(unsaved, Mapping):
        raise TypeError(
            "unsaved must be a mapping of job id to GPU-seconds, got "
            f"{type(unsaved).__name__}"
        )
    index = state._job_index
    for job, value in unsaved.items():
        if job not in index:
            raise ValueError(f"unsaved work: unknown job {job!r}")
        work[index[job]] = validation.real(value, f"unsaved work of job {job!r}", 0.0)
    return work
