"""The paper's defaults and the limits every entry point shares, written once.

``aryl.schedule``, ``ClusterState``, ``aryl.sim.simulate`` (``Config``), the sweeps
and the command line all read their defaults from here, so changing one here
changes it everywhere. The values are the paper's (its testbed and appendices)
unless said otherwise.
"""

from __future__ import annotations

from typing import Dict, Iterable, Mapping, Tuple, get_args

from .typing import (
    AllocationPolicy,
    ElasticSelection,
    Placement,
    ReclaimPolicy,
    SimulationReclaimPolicy,
)

#: Allocation policies of ``aryl.schedule`` (``"pollux"`` aside) and the simulator.
SCHEDULE_POLICIES = get_args(AllocationPolicy)
#: Reclaim policies of ``aryl.reclaim``.
RECLAIM_POLICIES = get_args(ReclaimPolicy)
#: Reclaim policies the simulator runs (``exact``, ``exact-work``: one-off requests).
SIMULATION_RECLAIM_POLICIES = get_args(SimulationReclaimPolicy)
#: Placement rules.
PLACEMENTS = get_args(Placement)
#: Names the literature gives the built-in allocation policies, each with the
#: policy's name and what the name means: a name that is not a policy but one of
#: these is answered "did you mean 'tiresias' (least attained service)?". Looked up
#: in lower case, with ``_`` and spaces read as ``-``.
POLICY_ALIASES: Dict[str, Tuple[str, str]] = {
    "las": ("tiresias", "least attained service"),
    "least-attained-service": ("tiresias", "least attained service"),
    "2d-las": ("tiresias", "two-dimensional least attained service"),
    "2das": ("tiresias", "two-dimensional least attained service"),
    "fcfs": ("fifo", "first come, first served"),
    "first-come-first-served": ("fifo", "first come, first served"),
    "first-in-first-out": ("fifo", "first in, first out"),
    "shortest-job-first": ("sjf", "shortest job first"),
}

#: Relative GPU speeds (reference: the training GPU); a T4 is a quarter of a V100
#: (Appendix A).
DEFAULT_GPU_SPEED: Dict[str, float] = {"V100": 1.0, "T4": 0.25}
#: Published relative training speeds (V100 = 1) of GPU types the paper does not
#: give, each the geometric mean of a public benchmark's measured single-GPU
#: training throughputs over its models (docs/model.md, "GPU speeds", has the
#: sources and the spread). A run whose servers have one of these types and whose
#: ``gpu_speed`` does not list it runs it at this speed and says so in its config;
#: a type in neither table (Alibaba's undisclosed G2 and G3) runs at
#: ``UNLISTED_GPU_SPEED`` with a warning.
PUBLISHED_GPU_SPEED: Dict[str, float] = {
    "K80": 0.27,  # Gavel (OSDI'20) measured throughputs, 6 models
    "P100": 0.58,  # same
    "A10": 0.89,  # Lambda deeplearning-benchmark, PyTorch fp16, 10 models
    "A100": 2.2,  # same, A100 40GB PCIe
    "H100": 4.4,  # same, H100 80GB SXM5
}


def with_published_speeds(
    gpu_speed: Mapping[str, float], types: Iterable[str]
) -> Dict[str, float]:
    """``gpu_speed`` plus the ``PUBLISHED_GPU_SPEED`` of each of ``types`` it does not
    list (the run's own GPU types: a speed given always wins)."""
    out = dict(gpu_speed)
    for t in sorted(set(types)):
        if t not in out and t in PUBLISHED_GPU_SPEED:
            out[t] = PUBLISHED_GPU_SPEED[t]
    return out


#: GPU types a ``gpu_speed`` may name although a run has none of them (then it only
#: warns): the data-centre GPUs of the public traces aryl reads and of the peers'
#: cluster configurations. Any other name must be a type of the run's servers or jobs.
KNOWN_GPU_TYPES = (
    "K80",
    "M40",
    "M60",
    "P4",
    "P40",
    "P100",
    "V100",
    "T4",
    "A10",
    "A30",
    "A40",
    "A100",
    "A800",
    "L4",
    "L40",
    "L40S",
    "H100",
    "H800",
    "H200",
    "B200",
)
#: Speed of a GPU type that ``gpu_speed`` does not list.
UNLISTED_GPU_SPEED = 1.0
#: Bounds of a relative GPU speed (both included).
MIN_GPU_SPEED = 1e-3
MAX_GPU_SPEED = 1e3
#: GPU type of a server when none is given, by pool (the paper's testbed).
DEFAULT_GPU_TYPE = {"training": "V100", "inference": "T4"}

#: Throughput factor of a job whose workers span GPU types (70%, Appendix A), and
#: its valid range ``[MIN_HETERO_EFFICIENCY, 1]``.
HETERO_EFFICIENCY = 0.7
MIN_HETERO_EFFICIENCY = 1e-9
#: Seconds without progress when a checkpointed job restarts (the paper's testbed).
RESTART_OVERHEAD_S = 63.0
#: Seconds without progress when a job starts workers otherwise (first start, scale-out,
#: move). 0 in the paper's rows: its simulator charged only the restart after a
#: preemption (§7.2, "We add 63-second overhead whenever a job is preempted");
#: ``aryl live`` calibrates its own (docs/model.md, "Start overhead").
START_OVERHEAD_S = 0.0
#: Seconds the load must leave an inference server spare before it is lent.
LEND_HOLD_S = 3600.0
#: Seconds between scheduling epochs and between loan/reclaim decisions.
SCHEDULE_INTERVAL_S = 60.0
LOAN_INTERVAL_S = 300.0
#: Goodput-driven runs: seconds without progress after each (re)allocation, and the
#: GPU-seconds after which Tiresias demotes a job (the Pollux artifact's).
REALLOCATION_OVERHEAD_S = 30.0
TIRESIAS_THRESHOLD_GPU_S = 16 * 3600.0
#: Size of the Pollux policy's genetic search per round (the artifact's).
POLLUX_POPULATION = 100
POLLUX_GENERATIONS = 100

#: Bounds of ``Config.arrival_scale``, the factor on the arrival rate (both included).
MIN_ARRIVAL_SCALE = 1e-3
MAX_ARRIVAL_SCALE = 1e3

#: The paper's production clusters (§7.1): 443 training and 520 inference 8-GPU servers.
PAPER_TRAINING_SERVERS = 443
PAPER_INFERENCE_SERVERS = 520
#: Share of unknown-type jobs that may run on any GPU type (Appendix E).
ANY_TYPE_SHARE = 0.21
#: Share of the GPU time in elastic jobs (§2.2).
ELASTIC_GPU_SHARE = 0.36
#: Share of all jobs that are elastic under the other reading of Basic (§7.1: "~5% of
#: all jobs").
ELASTIC_JOB_SHARE = 0.05
#: How the Basic scenario picks its elastic jobs: by share of GPU-time (``ELASTIC_GPU_SHARE``)
#: or by share of jobs (``ELASTIC_JOB_SHARE``); docs/model.md says why the first.
ELASTIC_SELECTION: ElasticSelection = "gpu_time"
#: An elastic job trace-run at ``w`` workers may scale to ``ELASTIC_RANGE * w`` (the paper
#: says "within a given range" and gives none).
ELASTIC_RANGE = 2.0
#: Share of jobs whose running-time estimate is wrong, and by how much at most
#: (the paper's inaccurate-profiler experiment).
PREDICTION_ERROR_FRACTION = 0.2
PREDICTION_MAX_ERROR = 0.25
#: Share of all jobs made hetero in the advanced scenario.
HETERO_SHARE = 0.10
#: The Baseline's training GPU use in the paper's Table 3, row 1 (what sizing aims at).
PAPER_BASELINE_USE = 0.72

#: The fastest a live run's clock runs (``aryl.live.Clock``, ``aryl live
#: --compression``): at 10,000x a wall millisecond is 10 simulated seconds, a sixth of
#: the default scheduling interval; faster, the controller's loop (a poll of the
#: cluster takes milliseconds) can no longer follow its epochs.
MAX_COMPRESSION = 1e4
