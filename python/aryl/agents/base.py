"""The hook interface of a job agent: what a scheduler asks a job about itself."""

from __future__ import annotations

import abc
import math
from typing import List, NamedTuple


class BatchChoice(NamedTuple):
    """A batch configuration on an allocation and what it is worth.

    ``goodput`` is throughput × statistical efficiency (samples per second, scaled to
    the initial batch), ``batch_size`` = replicas × ``atomic_bsz`` × (``accum_steps`` + 1).
    """

    goodput: float
    atomic_bsz: int
    accum_steps: int
    batch_size: int
    throughput: float
    efficiency: float


def packed_nodes(gpus: int, gpus_per_node: int) -> int:
    """Nodes that ``gpus`` GPUs occupy when packed onto nodes of ``gpus_per_node``."""
    return math.ceil(gpus / gpus_per_node) if gpus > 0 else 0


class JobAgent(abc.ABC):
    """A per-job agent: it watches its job run and answers a scheduler's questions.

    A live scheduler or the simulator calls ``observe`` with what the job measured
    after each stretch of training, and ``goodput`` / ``speedup`` /
    ``throughput_curve`` when it decides allocations. Subclass it and implement the
    three abstract methods to write another agent (an Optimus-style fitted curve, a
    lookup table, an oracle); ``throughput_curve`` then comes for free.

    Allocations are (``num_nodes``, ``num_replicas``): one replica per GPU, spread over
    ``num_nodes`` nodes (``0 <= num_nodes <= num_replicas``, both 0 or both positive).
    """

    @abc.abstractmethod
    def observe(
        self,
        num_nodes: int,
        num_replicas: int,
        atomic_bsz: int,
        step_time: float,
        sync_time: float,
        **statistics: float,
    ) -> bool:
        """Record one measured step time (and any job statistics); ``True`` if the
        agent's model changed."""

    @abc.abstractmethod
    def goodput(self, num_nodes: int, num_replicas: int) -> BatchChoice:
        """The best batch configuration on this allocation and its goodput."""

    @abc.abstractmethod
    def speedup(self, num_nodes: int, num_replicas: int) -> float:
        """Goodput on this allocation relative to one GPU (0 for no GPU)."""

    def throughput_curve(
        self, max_workers: int, gpus_per_worker: int = 1, gpus_per_node: int = 4
    ) -> List[float]:
        """Relative throughput with 1..``max_workers`` workers, for ``aryl.sim.simulate(...,
        throughput={job_id: curve})`` and aryl's knapsack.

        A worker is ``gpus_per_worker`` GPUs (replicas); w workers are packed onto
        ``ceil(w · gpus_per_worker / gpus_per_node)`` nodes. Values are speedups
        divided by the one-worker speedup, so the curve starts at 1.0 like aryl's linear
        default (throughput(w) = w): the running-time reduction of an extra worker
        comes from goodput, not a fixed scaling rule.
        """
        if (
            isinstance(max_workers, bool)
            or not isinstance(max_workers, int)
            or max_workers < 1
        ):
            raise ValueError(
                f"max_workers must be an integer >= 1, got {max_workers!r}"
            )
        for name, value in (
            ("gpus_per_worker", gpus_per_worker),
            ("gpus_per_node", gpus_per_node),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        speedups = []
        for w in range(1, max_workers + 1):
            gpus = w * gpus_per_worker
            speedups.append(self.speedup(packed_nodes(gpus, gpus_per_node), gpus))
        if speedups[0] <= 0:
            raise ValueError(
                "the one-worker speedup is not positive; no curve can be formed"
            )
        return [s / speedups[0] for s in speedups]
