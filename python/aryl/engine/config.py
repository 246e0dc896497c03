"""The simulator's settings: ``Config`` (defaults from the paper) and ``Cluster``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .. import validation
from ..defaults import (
    DEFAULT_GPU_SPEED,
    HETERO_EFFICIENCY,
    LEND_HOLD_S,
    LOAN_INTERVAL_S,
    PAPER_TRAINING_SERVERS,
    PLACEMENTS,
    POLLUX_GENERATIONS,
    POLLUX_POPULATION,
    REALLOCATION_OVERHEAD_S,
    RESTART_OVERHEAD_S,
    SCHEDULE_INTERVAL_S,
    START_OVERHEAD_S,
    TIRESIAS_THRESHOLD_GPU_S,
)
from ..model import Server
from ..typing import JobAgent, Placement, Scaling


@dataclass
class Config:
    """Simulator settings (defaults from the paper).

    ``schedule_interval`` / ``loan_interval``: seconds between scheduling epochs
    and loan/reclaim decisions. ``restart_overhead``: seconds without progress
    when a checkpointed job restarts (63 s, measured in the paper's testbed).
    ``start_overhead``: seconds without progress when a fixed-duration job starts
    workers otherwise — its first start (or a restart without checkpoint), a
    scale-out or a move; its workers hold their GPUs meanwhile (default 0, as the
    paper's simulator; ``aryl live`` measures it on a real cluster).
    ``headroom``: the inference cluster keeps ``ceil(load * (1 + headroom) * N)``
    servers and lends the rest. ``lend_hold``: a server is lent only after the
    load has left it spare for this many seconds (default 1 hour), so 5-minute
    load noise does not lend and reclaim the same servers back and forth;
    reclaiming stays immediate. ``hetero_efficiency``: throughput factor of a job
    whose workers span GPU types (70%, Appendix A). ``gpu_speed``: relative speed
    per GPU type (T4 = 1/4 of a V100, Appendix A; the dict replaces the default,
    and a server type it does not list runs at 1.0, a V100's speed: ``simulate``
    warns, naming the types, and records them in ``provenance.cluster``'s
    ``unlisted_gpu_types``; the V100, the reference, is 1.0 listed or not).
    ``scaling``: ``"linear"`` or ``"imperfect"`` (−10% of ideal throughput per
    worker beyond the middle of [min, max], §7.2). ``loaning`` / ``elasticity``
    turn those features off (without elasticity every job runs at its
    ``reference_workers``; without loaning nothing is lent, but the inference load
    still counts in ``gpu_usage_overall``, as in the paper's Baseline).
    ``prediction_error``: ``(fraction, max_error)`` of jobs whose estimated
    duration is off by up to ±max_error (seeded). ``arrival_scale``: the factor on
    the jobs' arrival rate: every inter-arrival time is divided by it (from the first
    submission on), so 2 offers twice the load and 0.5 half; the inference load keeps
    its times. ``horizon``: stop time.
    ``start_on_loan`` (off by default): a queued job whose only open GPUs are slower
    than its fastest type (loaned T4s) starts on them instead of waiting for that
    type, and moves to it (checkpointed: its progress kept, then
    ``restart_overhead`` seconds without progress) once it has room for the job's
    base demand and the move pays — its remaining time there plus the overhead is
    shorter than where it runs. Movers take freed GPUs in the policy's queue order
    among the queued jobs (shortest remaining time first under SJF and aryl). The
    built-in ``aryl``, ``sjf``, ``fifo``, ``gandiva`` and ``afs`` policies only: a
    policy of your own, ``tiresias``, ``pollux`` and goodput-driven runs ignore it,
    and ``aryl.live`` refuses it (it does not move jobs).
    ``audit``: check the invariants after every event (slow; tests use it).
    A bad value is refused when the ``Config`` is made, as ``simulate`` and
    ``sweep`` refuse it: a ``TypeError`` for a wrong type (``loaning='yes'``), a
    ``ValueError`` out of range (``lend_hold=-1``), naming the field.

    Goodput-driven (Pollux workload) runs: ``reallocation_overhead`` is the time
    without progress after every (re)allocation, first start included (30 s, the
    Pollux artifact's; ``restart_overhead`` is not used by them);
    ``tiresias_threshold`` the GPU-seconds of executed time after which Tiresias
    demotes a job to its second queue (16 GPU-hours, the artifact's);
    ``pollux_population`` and ``pollux_generations`` size the Pollux policy's
    genetic search per round (100 x 100, the artifact's; the paper says 250
    generations). ``agent``: ``None``, or ``"pollux"`` for Aryl+TunedJobs (policy
    ``aryl`` on a Pollux workload): every job carries a Pollux agent that fits its
    goodput model to the steps it runs; the knapsack values its extra replicas by
    the running times that model predicts, and the job re-chooses its batch on
    every allocation. Without it, policy ``aryl`` keeps the user's batch.
    """

    placement: Placement = "aryl"
    backfill: bool = False
    scaling: Scaling = "linear"
    schedule_interval: float = SCHEDULE_INTERVAL_S
    loan_interval: float = LOAN_INTERVAL_S
    restart_overhead: float = RESTART_OVERHEAD_S
    headroom: float = 0.0
    lend_hold: float = LEND_HOLD_S
    hetero_efficiency: float = HETERO_EFFICIENCY
    gpu_speed: Dict[str, float] = field(default_factory=lambda: dict(DEFAULT_GPU_SPEED))
    loaning: bool = True
    elasticity: bool = True
    prediction_error: Optional[Tuple[float, float]] = None
    arrival_scale: float = 1.0
    horizon: float = math.inf
    audit: bool = False
    reallocation_overhead: float = REALLOCATION_OVERHEAD_S
    tiresias_threshold: float = TIRESIAS_THRESHOLD_GPU_S
    pollux_population: int = POLLUX_POPULATION
    pollux_generations: int = POLLUX_GENERATIONS
    agent: Optional[JobAgent] = None
    start_overhead: float = START_OVERHEAD_S
    start_on_loan: bool = False

    def __post_init__(self) -> None:
        # Every field checked here, as simulate and sweep check them: a bad value is
        # the same error (type and message) through every door, and is found before
        # any run (a field changed later is checked again when a run starts).
        validation.check_config(self, PLACEMENTS)


@dataclass
class Cluster:
    """A cluster built from counts: 8-GPU V100 training and T4 inference servers by default."""

    training_servers: int = PAPER_TRAINING_SERVERS
    inference_servers: int = 0
    gpus_per_server: int = 8
    training_gpu: str = "V100"
    inference_gpu: str = "T4"

    def __post_init__(self) -> None:
        validation.check_cluster_counts(self)  # before any server record exists

    def servers(self) -> List[Server]:
        """The servers, training first (ids ``t0..``, inference ``i0..``)."""
        return [
            Server(f"t{i}", "training", self.gpus_per_server, self.training_gpu)
            for i in range(self.training_servers)
        ] + [
            Server(f"i{i}", "inference", self.gpus_per_server, self.inference_gpu)
            for i in range(self.inference_servers)
        ]


def describe_config(config: Mapping[str, Any]) -> str:
    """The ``Config`` fields that differ from the defaults, ``name=value`` (``defaults`` if none)."""
    default = Config()
    changed = [
        f"{k}={v!r}" for k, v in config.items() if getattr(default, k, object()) != v
    ]
    return ", ".join(changed) or "defaults"
