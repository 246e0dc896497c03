"""A Pollux-style agent: fits a job's throughput model and chooses its batch size."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np
import pandas as pd

from .. import _core
from .base import BatchChoice, JobAgent

#: The seven throughput parameters, in the order of ``PolluxAgent.perf_params``.
PERF_PARAM_NAMES = (
    "alpha_c",
    "beta_c",
    "alpha_n",
    "beta_n",
    "alpha_r",
    "beta_r",
    "gamma",
)


def _integer(name: str, value: Any, low: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < low
    ):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _positive(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return out


class PolluxAgent(JobAgent):
    """The per-job agent of Pollux (Qiao et al., OSDI'21), its model computed in C++.

    A thin layer over ``aryl._core.PolluxJobModel`` (the state a simulator keeps per
    Pollux job). It keeps the job's profiles — one (step time, sync time) per distinct (nodes,
    replicas, atomic batch) it has run with, the first measurement kept, as Pollux
    does — refits the 7-parameter throughput model whenever a new one arrives, and
    tracks the latest gradient-noise statistics. From them it answers:

    - ``goodput(N, K)``: the batch it would choose on N nodes with K replicas (the
      best of 50 geometric global batches, with gradient accumulation beyond
      ``max_local_bsz``) and its goodput;
    - ``speedup(N, K)``: that goodput over the one-GPU goodput (before any profile:
      K, Pollux's optimistic default);
    - ``batch(N, K)``: the batch the job actually runs (adaptive, or the fixed
      ``batch_size`` a non-adaptive job keeps);
    - ``throughput_curve(max_workers, gpus_per_worker=...)``: relative throughput per
      worker count for aryl's scheduler and simulator.

    Parameters
    ----------
    init_batch_size, max_batch_size
        The global batch range (M0 = the smallest validated batch, the largest).
    min_local_bsz, max_local_bsz
        The per-GPU (atomic) batch range.
    batch_size
        ``None``: choose the batch adaptively; a number: keep this global batch.

    Examples
    --------
    >>> from aryl.agents import PolluxAgent
    >>> agent = PolluxAgent(128, 4096, 64, 512)
    >>> agent.observe(1, 1, 128, step_time=0.10, sync_time=0.001, grad_sqr=1.0, grad_var=50.0)
    True
    >>> agent.speedup(1, 1)
    1.0
    """

    def __init__(
        self,
        init_batch_size: float,
        max_batch_size: float,
        min_local_bsz: int,
        max_local_bsz: int,
        *,
        batch_size: Optional[float] = None,
    ) -> None:
        self.init_batch_size = _positive("init_batch_size", init_batch_size)
        self.max_batch_size = _positive("max_batch_size", max_batch_size)
        if self.max_batch_size < self.init_batch_size:
            raise ValueError(
                f"max_batch_size ({max_batch_size}) is below init_batch_size "
                f"({init_batch_size})"
            )
        self.min_local_bsz = _integer("min_local_bsz", min_local_bsz, 1)
        self.max_local_bsz = _integer(
            "max_local_bsz", max_local_bsz, self.min_local_bsz
        )
        self.batch_size = (
            None if batch_size is None else _positive("batch_size", batch_size)
        )
        self._job = _core.PolluxJobModel(
            self.init_batch_size,
            self.max_batch_size,
            self.min_local_bsz,
            self.max_local_bsz,
            self.batch_size or 0.0,
        )

    @classmethod
    def for_application(
        cls, application: Any, *, batch_size: Optional[float] = None
    ) -> PolluxAgent:
        """An agent with an application's batch limits (an ``aryl.traces.PolluxApplication``
        or its name among the embedded ones)."""
        if isinstance(application, str):
            from ..traces import pollux_application

            application = pollux_application(application)
        return cls(
            application.init_batch_size,
            application.max_batch_size,
            application.min_local_bsz,
            application.max_local_bsz,
            batch_size=batch_size,
        )

    # -- observing -------------------------------------------------------------------------

    # The only statistics Pollux keeps are named (any other is a TypeError), so this
    # narrows JobAgent.observe's **statistics on purpose.
    def observe(  # type: ignore[override]
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        *,
        grad_sqr: Optional[float] = None,
        grad_var: Optional[float] = None,
    ) -> bool:
        """Record a measured step (and the current gradient statistics).

        ``step_time`` is one whole step, ``sync_time`` its synchronisation part
        (``0 <= sync_time < step_time``). ``grad_sqr`` / ``grad_var`` replace the
        statistics when given (both or neither). Returns ``True`` when the profile was
        new and the throughput model was refitted; a (nodes, replicas, batch) already
        profiled keeps its first measurement.
        """
        n = _integer("num_nodes", num_nodes, 1)
        k = _integer("num_replicas", num_replicas, n)
        m = _integer("atomic_bsz", atomic_bsz, 1)
        step = _positive("step_time", step_time)
        try:
            sync = float(sync_time)
        except (TypeError, ValueError):
            raise TypeError(f"sync_time must be a number, got {sync_time!r}") from None
        if not (0 <= sync < step):
            raise ValueError(
                f"sync_time must be in [0, step_time = {step}), got {sync_time!r}"
            )
        if (grad_sqr is None) != (grad_var is None):
            raise ValueError("give grad_sqr and grad_var together")
        if grad_sqr is not None:
            self._job.observe_grad(float(grad_sqr), float(grad_var))  # type: ignore[arg-type]
        return bool(self._job.observe(n, k, m, step, sync))

    # -- state -------------------------------------------------------------------------------

    @property
    def perf_params(self) -> Optional[Dict[str, float]]:
        """The fitted throughput parameters by name (``None`` before any profile)."""
        perf = self._job.perf_params
        return None if perf is None else dict(zip(PERF_PARAM_NAMES, perf))

    @property
    def grad_params(self) -> Optional[Tuple[float, float]]:
        """The latest ``(grad_sqr, grad_var)`` (``None`` before any)."""
        latest: Optional[Tuple[float, float]] = self._job.grad_params
        return latest

    @property
    def profile(self) -> pd.DataFrame:
        """The profiles in the order first seen: ``num_nodes, num_replicas, atomic_bsz,
        step_time, sync_time``."""
        raw = self._job.profile()
        return pd.DataFrame(
            {
                "num_nodes": raw["num_nodes"],
                "num_replicas": raw["num_replicas"],
                "atomic_bsz": raw["atomic_bsz"].astype(np.int64),
                "step_time": raw["step_time"],
                "sync_time": raw["step_time"] - raw["accum_time"],
            }
        )

    @property
    def max_profiled_replicas(self) -> int:
        """The most replicas the job has been profiled with (0 before any)."""
        return int(self._job.max_profiled_replicas)

    @property
    def max_replicas(self) -> int:
        """The replica cap Pollux's scheduler gives the job now: twice the most it has been
        profiled with (at least 1), at most 64 and ``max_batch_size // min_local_bsz``."""
        return int(self._job.max_replicas)

    def model(self) -> Any:
        """The fitted ``aryl._core.GoodputModel`` (``ValueError`` before a profile and
        gradient statistics have been observed)."""
        return self._job.model()

    # -- questions ---------------------------------------------------------------------------

    def goodput(self, num_nodes: int, num_replicas: int) -> BatchChoice:
        """The batch Pollux would choose on this allocation and its predicted goodput."""
        return self._choice(
            num_replicas, self.model().optimize(num_nodes, num_replicas)
        )

    def speedup(self, num_nodes: int, num_replicas: int) -> float:
        """Predicted goodput relative to one GPU; ``num_replicas`` before any model."""
        return float(self._job.speedup(num_nodes, num_replicas))

    def batch(self, num_nodes: int, num_replicas: int) -> BatchChoice:
        """The batch the job runs on this allocation: adaptive (or the fixed
        ``batch_size``), with the artifact's cap ``atomic <= max_batch // (K (s + 1))``.
        Before any model an adaptive job starts at ``max(M0, min_local_bsz · K)`` and
        goodput, throughput and efficiency are 0."""
        return self._choice(num_replicas, self._job.batch(num_nodes, num_replicas))

    @staticmethod
    def _choice(
        num_replicas: int, raw: Tuple[float, int, int, float, float]
    ) -> BatchChoice:
        goodput, atomic, accum, throughput, efficiency = raw
        return BatchChoice(
            goodput,
            atomic,
            accum,
            num_replicas * atomic * (accum + 1),
            throughput,
            efficiency,
        )

    def __repr__(self) -> str:
        mode = (
            "adaptive" if self.batch_size is None else f"batch_size={self.batch_size:g}"
        )
        return (
            f"PolluxAgent(batch {self.init_batch_size:g}..{self.max_batch_size:g}, local "
            f"{self.min_local_bsz}..{self.max_local_bsz}, {mode}, "
            f"{len(self._job.profile()['step_time'])} profiles)"
        )
