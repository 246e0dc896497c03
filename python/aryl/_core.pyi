"""
aryl's compiled core: the model, reclaim, scheduling, simulation, goodput and Tiresias kernels.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Application', 'ClusterState', 'Decision', 'GoodputModel', 'PolluxJobModel', 'ReclaimPlan', 'advance_remaining', 'allocation_placement', 'base_demands', 'exact_subset_limit', 'fit_objective', 'fit_perf_params', 'fixed_batch', 'history_changes', 'id_rows', 'job_rooms', 'knapsack', 'max_cluster_gpus', 'max_job_gpus', 'max_server_gpus', 'pollux_optimize', 'predict_step_time', 'preemption_costs', 'reclaim', 'record_columns', 'schedule', 'simulate', 'spare_servers', 'tiresias_default_threshold', 'tiresias_round', 'validate']
class ClusterState:
    """
    Servers, jobs and worker placement, as the kernels see them.
    """
    def __init__(self, servers: dict, jobs: dict, workers: dict) -> None:
        """
        Build and validate from three dicts of equal-length columns (ids and GPU types as strings, pool as 0 = training / 1 = inference, workers by index). Raises ValueError naming the first bad record or column, TypeError for a column of the wrong type.
        """
    @property
    def n_jobs(self) -> int:
        ...
    @property
    def n_servers(self) -> int:
        ...
    @property
    def n_workers(self) -> int:
        ...
class ReclaimPlan:
    """
    Indices of the servers returned and jobs hit.
    """
    @property
    def collateral_gpus(self) -> int:
        ...
    @property
    def demand_gpus(self) -> int:
        ...
    @property
    def preempted(self) -> list[int]:
        ...
    @property
    def scaled_in(self) -> list[tuple[int, int]]:
        ...
    @property
    def servers(self) -> list[int]:
        ...
    @property
    def work_lost(self) -> float:
        ...
class GoodputModel:
    """
    Throughput, efficiency and goodput of fitted parameters (see aryl.agents.PolluxAgent).
    """
    def __init__(self, perf_params: typing.Any, grad_sqr: typing.SupportsFloat | typing.SupportsIndex, grad_var: typing.SupportsFloat | typing.SupportsIndex, init_batch_size: typing.SupportsFloat | typing.SupportsIndex, max_batch_size: typing.SupportsFloat | typing.SupportsIndex, min_atomic_bsz: typing.SupportsInt | typing.SupportsIndex, max_atomic_bsz: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def configure(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex, batch_size: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> tuple:
        """
        The batch a job runs (adaptive when batch_size <= 0), capped as the artifact does.
        """
    def efficiency(self, batch_size: typing.SupportsFloat | typing.SupportsIndex) -> float:
        ...
    def goodput(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex, atomic_bsz: typing.SupportsFloat | typing.SupportsIndex, accum_steps: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def optimize(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex) -> tuple:
        """
        (goodput, atomic_bsz, accum_steps, throughput, efficiency) of the best batch.
        """
    def speedup(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def throughput(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex, atomic_bsz: typing.SupportsFloat | typing.SupportsIndex, accum_steps: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    @property
    def perf_params(self) -> tuple:
        ...
class PolluxJobModel:
    """
    A Pollux job's profiles, fitted model and batch choice (see aryl.agents.PolluxAgent).
    """
    def __init__(self, init_batch_size: typing.SupportsFloat | typing.SupportsIndex, max_batch_size: typing.SupportsFloat | typing.SupportsIndex, min_atomic_bsz: typing.SupportsInt | typing.SupportsIndex, max_atomic_bsz: typing.SupportsInt | typing.SupportsIndex, batch_size: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> None:
        ...
    def batch(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex) -> tuple:
        """
        (goodput, atomic_bsz, accum_steps, throughput, efficiency) the job runs with.
        """
    def model(self) -> GoodputModel:
        ...
    def observe(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex, atomic_bsz: typing.SupportsInt | typing.SupportsIndex, step_time: typing.SupportsFloat | typing.SupportsIndex, sync_time: typing.SupportsFloat | typing.SupportsIndex) -> bool:
        """
        Record a measured step; True when new and the model was refitted.
        """
    def observe_grad(self, grad_sqr: typing.SupportsFloat | typing.SupportsIndex, grad_var: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def profile(self) -> dict:
        """
        The profiles as fit columns, in the order first seen.
        """
    def speedup(self, num_nodes: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    @property
    def grad_params(self) -> typing.Any:
        ...
    @property
    def has_model(self) -> bool:
        ...
    @property
    def max_profiled_replicas(self) -> int:
        ...
    @property
    def max_replicas(self) -> int:
        ...
    @property
    def perf_params(self) -> typing.Any:
        ...
class Application:
    """
    One Pollux application's measured tables.
    """
    def __init__(self, name: str, placements: dict, scalability: dict, validation: list, max_epochs: typing.SupportsInt | typing.SupportsIndex = 0, max_local_bsz: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def epoch_at(self, progress: typing.SupportsFloat | typing.SupportsIndex) -> int:
        ...
    def epoch_progress(self, epoch: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def grad_stats(self, batch_size: typing.SupportsFloat | typing.SupportsIndex, epoch: typing.SupportsInt | typing.SupportsIndex) -> tuple[float, float]:
        """
        (grad_sqr, grad_var) at a batch and epoch.
        """
    def max_progress_rate(self) -> float:
        """
        An upper bound on progress_rate over every placement, batch and epoch.
        """
    def profile(self) -> dict:
        """
        Every measured row as fit columns (num_nodes, num_replicas, atomic_bsz, accum_time, step_time).
        """
    def progress_rate(self, placement: typing.Any, atomic_bsz: typing.SupportsInt | typing.SupportsIndex, accum_steps: typing.SupportsInt | typing.SupportsIndex, epoch: typing.SupportsInt | typing.SupportsIndex) -> float:
        """
        True progress (M0-equivalent steps) per second.
        """
    def step_time(self, placement: typing.Any, local_bsz: typing.SupportsFloat | typing.SupportsIndex) -> tuple[float, float]:
        """
        (step_time, sync_time) of one step.
        """
    @property
    def completion_epoch(self) -> int:
        ...
    @property
    def init_batch_size(self) -> float:
        ...
    @property
    def max_batch_size(self) -> float:
        ...
    @property
    def max_epochs(self) -> int:
        ...
    @property
    def max_local_bsz(self) -> int:
        ...
    @property
    def min_local_bsz(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
class Decision:
    """
    Index-based scheduling decision (see aryl.schedule).
    """
    @property
    def allocation(self) -> list[int]:
        ...
    @property
    def allocation_array(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def pending(self) -> list[int]:
        ...
    @property
    def pending_array(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def start(self) -> list:
        ...
    @property
    def start_flexible(self) -> numpy.typing.NDArray[numpy.bool]:
        ...
    @property
    def start_job(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def start_server(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
    @property
    def stop(self) -> list[int]:
        ...
    @property
    def stop_array(self) -> numpy.typing.NDArray[numpy.int32]:
        ...
def advance_remaining(state: typing.Any, remaining: typing.Any, seconds: typing.Any, speed: typing.Any = [], hetero_efficiency: typing.Any = 0.7, throughput: typing.Any = []) -> list[float]:
    """
    Each job's remaining work after `seconds` more on its workers, as the simulator moves it (see aryl.ClusterState.advance).
    """
def allocation_placement(allocation: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> list[int]:
    """
    GPUs per node of an allocation's consecutive runs ([0, 0, 3] -> [2, 1]).
    """
def base_demands(state: typing.Any, policy: typing.Any) -> list[int]:
    """
    Workers each job must get to start under `policy` (the kernel's rule).
    """
def fit_objective(perf_params: typing.Any, num_nodes: typing.Any, num_replicas: typing.Any, atomic_bsz: typing.Any, accum_time: typing.Any, step_time: typing.Any) -> float:
    """
    The fit's objective at perf_params.
    """
def fit_perf_params(num_nodes: typing.Any, num_replicas: typing.Any, atomic_bsz: typing.Any, accum_time: typing.Any, step_time: typing.Any) -> dict:
    """
    Fit the 7 throughput parameters to profiles (equal-length columns; accum_time = step - sync). Returns {'params', 'objective', 'iterations', 'pinned'}.
    """
def fixed_batch(init_batch_size: typing.SupportsFloat | typing.SupportsIndex, max_batch_size: typing.SupportsFloat | typing.SupportsIndex, min_atomic_bsz: typing.SupportsInt | typing.SupportsIndex, max_atomic_bsz: typing.SupportsInt | typing.SupportsIndex, num_replicas: typing.SupportsInt | typing.SupportsIndex, batch_size: typing.SupportsFloat | typing.SupportsIndex) -> tuple[int, int]:
    """
    (atomic_bsz, accum_steps) of a fixed global batch on num_replicas replicas.
    """
def id_rows(ids: typing.Any, index: dict) -> numpy.typing.NDArray[numpy.int64]:
    """
    Each id's row in `index` (a dict of id -> row) as an int64 array, -1 where the id is not in it or cannot be (unhashable).
    """
def job_rooms(state: typing.Any, lendable: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = []) -> list[int]:
    """
    Workers of each job that fit on an empty cluster: training servers plus the on-loan inference servers, or with `lendable` (one count per job) that many inference servers of each GPU type (the most roomy). A job whose base demand (base_demands) exceeds its room can never start.
    """
def knapsack(groups: typing.Any, capacity: typing.Any) -> list[int]:
    """
    Multiple-choice knapsack over lists of (weight, value) pairs: per group the chosen item's index or -1 (see aryl.knapsack).
    """
def pollux_optimize(models: list, max_replicas: typing.Any, current: list, attained_service: typing.Any, submit_time: typing.Any, age: typing.Any, num_restarts: typing.Any, node_gpus: typing.Any, population: typing.Any = 100, generations: typing.Any = 100, seed: typing.Any = 0, min_replicas: typing.Any = None, threads: typing.Any = 1, reference: bool = False) -> tuple[list[list[int]], float]:
    """
    One round of the Pollux policy's genetic search: (replicas per node of each job, objective). models: a GoodputModel or None (not yet profiled) per job; current: replicas per node now ([] for none); min_replicas: per job, 0 for none (None: none for all); threads: the search's threads (the result does not depend on them); reference: the dense search this one replaced (for comparisons).
    """
def predict_step_time(perf_params: typing.Any, num_nodes: typing.Any, num_replicas: typing.Any, atomic_bsz: typing.Any) -> numpy.typing.NDArray[numpy.float64]:
    """
    Predicted step time (no accumulation) per (nodes, replicas, atomic batch), as an array.
    """
def preemption_costs(state: typing.Any) -> list[float]:
    """
    Algorithm 1's preemption cost of each on-loan server, in server order.
    """
def reclaim(state: typing.Any, n: typing.Any, policy: typing.Any = 'aryl', seed: typing.Any = 0, among: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, unsaved: typing.Any = None, restart_overhead: typing.Any = 0.0) -> ReclaimPlan:
    """
    Choose n on-loan servers to return (see aryl.reclaim); `among`: server indices to choose from (default: every on-loan server); `unsaved`: per job, the GPU-seconds a preemption throws away (default: none), and `restart_overhead` (s), for the least-work and exact-work policies and the plan's work_lost.
    """
def record_columns(records: list, names: collections.abc.Sequence[str], kinds: str) -> list:
    """
    Fields `names` of a list of records in one pass: per field, (its column, whether every value is None). The column is an array of kind 'i' int64, 'f' float64 or 'b' bool when every value is exactly of that kind, else (or for kind 'O') a 1-d object array of the values.
    """
def schedule(state: typing.Any, policy: typing.Any = 'aryl', placement: typing.Any = 'aryl', backfill: typing.Any = False, remaining: typing.Any = [], speed: typing.Any = [], hetero_efficiency: typing.Any = 0.7, throughput: typing.Any = [], queue: typing.Any = None, may_grow: typing.Any = []) -> Decision:
    """
    One scheduling epoch on a validated state (see aryl.schedule): per-server relative GPU speeds (empty = all 1.0), the mixed-type efficiency, per-job throughput curves (empty = linear), the caller's queue (queued jobs to admit, in order; None = the policy's) and the jobs that may grow (per-job flags; empty = all).
    """
def simulate(servers: dict, jobs: dict, throughput: typing.Any, load_time: typing.Any, load: typing.Any, config: dict, progress: typing.Any = None, applications: collections.abc.Sequence[Application] = [], job_application: typing.Any = [], job_batch_size: typing.Any = [], job_work_scale: typing.Any = [], hooks: typing.Any = None) -> dict:
    """
    Run the event simulator (see aryl.sim.simulate); returns a dict of arrays and totals. Goodput-driven jobs: `applications` (aryl._core.Application) and, per job, the index of its application, its global batch size and (optionally) the fraction of its application's work it does. `progress(fraction, now)`: the run's progress in [0, 1] and the simulated time in s. `hooks`: a policy of the caller's (aryl.engine.hooks.CoreHooks), asked instead of the built-in kernels.
    """
def spare_servers(load: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], inference_servers: typing.SupportsInt | typing.SupportsIndex, headroom: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> list[int]:
    """
    Inference servers each load spares out of `inference_servers`: N - min(N, ceil(min(1, load x (1 + headroom)) x N - 1e-9)), the simulator's lending rule.
    """
def tiresias_round(gpus: typing.Any, executed_time: typing.Any, allocations: list, queue0: typing.Any, queue1: typing.Any, node_gpus: typing.Any, threshold: typing.SupportsFloat | typing.SupportsIndex = 57600.0) -> dict:
    """
    One Tiresias round (two queues, demotion at threshold GPU-seconds, preemptive): {'queue0', 'queue1', 'running', 'allocations', 'demoted'} with per-job node lists.
    """
def validate(state: typing.Any) -> None:
    """
    Raise ValueError naming the first bad record of the state.
    """
exact_subset_limit: float = 10000000.0
history_changes: tuple = ('start', 'scale_out', 'scale_in', 'move', 'reclaim_scale_in', 'reclaim_preemption', 'preemption', 'finish', 'end')
max_cluster_gpus: int = 4194304
max_job_gpus: int = 1048576
max_server_gpus: int = 65536
tiresias_default_threshold: float = 57600.0
