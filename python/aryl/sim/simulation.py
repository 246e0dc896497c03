"""Running the compiled event simulator: `simulate` and `compare`."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    get_args,
)

import numpy as np
import pandas as pd

from .. import _core, validation
from ..jobtable import JobTable
from ..model import Job, Records, Server, State, as_records, job_columns, server_columns
from ..scheduling import DEFAULT_GPU_SPEED, PLACEMENTS, POLICIES
from ..typing import (
    GoodputPolicy,
    JobAgent,
    Placement,
    Scaling,
    SimulationPolicy,
    SimulationReclaimPolicy,
)
from .comparison import Comparison
from .history import history_frame
from .provenance import (
    Provenance,
    aryl_version,
    extend_to_jobs,
    fingerprint_frame,
    fingerprint_jobs,
    fingerprint_load,
)
from .result import SUMMARY_KEYS, Result
from .scenarios import apply_prediction_error


@dataclass
class Config:
    """Simulator settings (defaults from the paper).

    ``schedule_interval`` / ``loan_interval``: seconds between scheduling epochs
    and loan/reclaim decisions. ``restart_overhead``: seconds without progress
    when a checkpointed job restarts (63 s, measured in the paper's testbed).
    ``headroom``: the inference cluster keeps ``ceil(load * (1 + headroom) * N)``
    servers and lends the rest. ``lend_hold``: a server is lent only after the
    load has left it spare for this many seconds (default 1 hour), so 5-minute
    load noise does not lend and reclaim the same servers back and forth;
    reclaiming stays immediate. ``hetero_efficiency``: throughput factor of a job
    whose workers span GPU types (70%, Appendix A). ``gpu_speed``: relative speed
    per GPU type (T4 = 1/4 of a V100, Appendix A; unknown types run at 1.0).
    ``scaling``: ``"linear"`` or ``"imperfect"`` (−10% of ideal throughput per
    worker beyond the middle of [min, max], §7.2). ``loaning`` / ``elasticity``
    turn those features off (without elasticity every job runs at its
    ``reference_workers``; without loaning nothing is lent, but the inference load
    still counts in ``gpu_usage_overall``, as in the paper's Baseline).
    ``prediction_error``: ``(fraction, max_error)`` of jobs whose estimated
    duration is off by up to ±max_error (seeded). ``horizon``: stop time.
    ``audit``: check the invariants after every event (slow; tests use it).

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
    schedule_interval: float = 60.0
    loan_interval: float = 300.0
    restart_overhead: float = 63.0
    headroom: float = 0.0
    lend_hold: float = 3600.0
    hetero_efficiency: float = 0.7
    gpu_speed: Dict[str, float] = field(default_factory=lambda: dict(DEFAULT_GPU_SPEED))
    loaning: bool = True
    elasticity: bool = True
    prediction_error: Optional[Tuple[float, float]] = None
    horizon: float = math.inf
    audit: bool = False
    reallocation_overhead: float = 30.0
    tiresias_threshold: float = 16 * 3600.0
    pollux_population: int = 100
    pollux_generations: int = 100
    agent: Optional[JobAgent] = None


#: Allocation policies of goodput-driven (Pollux workload) runs.
GOODPUT_POLICIES = get_args(GoodputPolicy)
#: Job agents a goodput-driven run under policy "aryl" may give its jobs.
AGENTS = get_args(JobAgent)
#: Reclaim policies the simulator runs.
RECLAIM_POLICIES = get_args(SimulationReclaimPolicy)

#: Under policy "pollux", applications whose jobs keep a fixed global batch on one
#: replica (the artifact's ncf: 32,768); the others choose their batch.
POLLUX_FIXED_BATCH = {"ncf": 32768.0}

#: The most replicas a Pollux job may get (the artifact's simulator's cap).
POLLUX_MAX_REPLICAS = 64


@dataclass
class Cluster:
    """A cluster built from counts: 8-GPU V100 training and T4 inference servers by default."""

    training_servers: int = 443
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


def simulate(
    jobs: Records,
    cluster: Union[Cluster, Records],
    policy: SimulationPolicy = "aryl",
    reclaim: SimulationReclaimPolicy = "aryl",
    inference_load: Any = None,
    config: Union[Config, Mapping[str, Any], None] = None,
    seed: int = 0,
    progress: Optional[Callable[[float], Optional[bool]]] = None,
    throughput: Optional[Mapping[Any, Sequence[float]]] = None,
    label: str = "",
    history: bool = False,
) -> Result:
    """Replay ``jobs`` on ``cluster`` with capacity loaning and elastic scaling.

    Parameters
    ----------
    jobs
        ``aryl.Job`` records (or dicts / a DataFrame). ``duration`` drives
        progress; the scheduler sees ``estimated_duration``. Or a Pollux workload
        (``aryl.traces.read_pollux_workload`` / ``pollux_workload``): goodput-driven
        jobs that complete when their progress passes their application's last
        epoch, each running the user's ``num_replicas`` one-GPU replicas at the
        user's ``batch_size``, in rounds of ``schedule_interval`` as the Pollux
        artifact runs them (first round at ``schedule_interval``); ``policy`` must
        then be ``"tiresias"`` or ``"pollux"`` and the cluster a node cluster such
        as ``Cluster(16, 0, gpus_per_server=4)``. Under ``"pollux"`` the jobs
        ignore the user's replicas and batch: each round a genetic search gives
        them replicas per node, and each job profiles its steps, fits its goodput
        model and chooses its batch (ncf keeps 32,768 on one replica, as in the
        artifact).
    cluster
        A ``Cluster`` or a list of ``Server``s: training servers plus inference
        servers that can be lent (their ``on_loan`` flag is ignored: the
        simulator lends and reclaims them).
    policy, reclaim
        Allocation policy (``aryl``, ``fifo``, ``sjf``, ``gandiva``, ``afs``; for a
        Pollux workload ``tiresias`` or ``pollux``) and reclaim policy (``aryl``, ``scf``, ``random``).
    inference_load
        ``(time_s, load)`` rows (a DataFrame with those columns, or an array of
        pairs): the fraction of inference capacity needed from that time on. Without
        it, or without inference servers, nothing is lent. A series that ends
        before the last submission is repeated to cover the trace
        (``aryl.sim.provenance.extend_to_jobs``), and ``provenance.load_extended``
        says so.
    config
        A ``Config`` or a dict of its fields.
    seed
        Seeds the random reclaim policy and the prediction error.
    progress
        Called with the fraction of simulated time done (about every 1%); return
        ``False`` to stop early (the rest is reported unfinished).
    throughput
        Optional per-job throughput curves: job id -> throughput with 1..max_workers
        workers (overrides ``config.scaling`` for that job).
    label
        A name for the run, shown in tables.
    history
        Record every job's allocation intervals (``Result.history()``, drawn by
        ``aryl.plot.gantt``); off by default, and the run is the same either way.

    Returns
    -------
    Result
        ``.jobs``, ``.timeline`` (DataFrames), ``.summary()``, ``.check()``,
        ``.provenance`` (what produced it), ``.save(path)``.
    """
    if not isinstance(history, bool):
        raise TypeError(f"history must be True or False, got {history!r}")
    config = _config(config)
    validation.check_config(config, PLACEMENTS)
    validation.check_progress(progress)
    progress, stopped = _watched(progress)
    seed = validation.seed(seed)
    if isinstance(cluster, Cluster):
        validation.check_cluster_counts(cluster)
    if isinstance(jobs, pd.DataFrame) and _is_pollux_workload(jobs):
        result = _simulate_pollux(
            jobs, cluster, policy, config, seed, progress, label, history
        )
        return _warn_unfinished(result, config, stopped)
    if config.agent is not None:
        raise ValueError(
            f"agent {config.agent!r} tunes goodput-driven jobs: pass a Pollux workload "
            "(aryl.traces.pollux_workload or pollux_profiles)"
        )
    if policy in GOODPUT_POLICIES:
        raise ValueError(
            f"policy {policy!r} runs goodput-driven jobs: pass a Pollux workload "
            "(aryl.traces.read_pollux_workload)"
        )
    if policy not in POLICIES:
        raise ValueError(
            f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}"
        )
    if reclaim not in RECLAIM_POLICIES:
        raise ValueError(
            f"unknown reclaim policy {reclaim!r}; expected aryl, scf or random"
        )
    if config.placement not in PLACEMENTS:
        raise ValueError(
            f"unknown placement {config.placement!r}; expected aryl or bfd"
        )
    servers = _servers(cluster)
    table = JobTable.of(jobs)
    if not config.elasticity:
        w = table.column("reference_workers")
        table = table.replace(min_workers=w, max_workers=w)
    if config.prediction_error is not None:
        table = apply_prediction_error(table, *config.prediction_error, seed=seed)
    server_table, columns = server_columns(servers), table.core_columns()
    # Validates the records once; check_can_run reads its base demands.
    core = _core.ClusterState(server_table, columns, _NO_WORKERS)
    load_time, load = _load(inference_load)
    last_submit = float(table.column("submit_time").max()) if len(table) else 0.0
    load_time, load, extended = extend_to_jobs(
        load_time, load, last_submit, config.horizon
    )
    served = (load_time, load)
    if not config.loaning:
        # Nothing is lent; the load still occupies the inference cluster.
        load_time, load = [], []
    curves = _curves(table, throughput)
    validation.check_durations(table)
    validation.check_can_run(
        servers, table, core, policy, load_time, load, config.headroom
    )
    del core  # the engine keeps its own copy of the jobs; at 500k jobs this is ~100 MB
    raw = _core.simulate(
        server_table,
        columns,
        curves,
        load_time,
        load,
        _core_config(config, policy, reclaim, seed, history),
        progress,
    )
    if not config.loaning:
        gpus = sum(s.gpus for s in servers if s.pool == "inference")
        raw["inference_gpu_seconds"] = _load_integral(*served, raw["end_time"]) * gpus
    result = _result(
        servers,
        table.ids,
        table.column("submit_time"),
        raw,
        label or policy,
        table.column("gpus_per_worker"),
    )
    result.provenance = Provenance(
        jobs=len(table),
        jobs_fingerprint=fingerprint_jobs(table),
        cluster=_describe_cluster(cluster, servers),
        policy=policy,
        reclaim=reclaim,
        config=dataclasses.asdict(config),
        seed=int(seed),
        aryl_version=aryl_version(),
        load_fingerprint=fingerprint_load(*served),
        load_rows=len(served[0]),
        load_extended=extended,
        throughput=throughput is not None,
    )
    return _warn_unfinished(result, config, stopped)


def _watched(
    progress: Optional[Callable[[float], Optional[bool]]],
) -> Tuple[Optional[Callable[[float], Optional[bool]]], List[bool]]:
    """``progress`` passed through, and a list that holds True once it asked to stop."""
    stopped: List[bool] = []
    if progress is None:
        return None, stopped
    user = progress

    def watched(fraction: float) -> Optional[bool]:
        keep = user(fraction)
        if keep is not None and not keep:
            stopped.append(True)
        return keep

    return watched, stopped


def _warn_unfinished(result: Result, config: Config, stopped: List[bool]) -> Result:
    """Warn when jobs are left unfinished although neither a horizon nor the progress
    callback stopped the run.

    The engine stops when nothing can change: a job whose only fit was a window of low
    inference load that closed while it waited stays queued for ever. That is allowed,
    but never silent.
    """
    left = result.jobs.loc[result.jobs["finish_time"].isna(), "id"]
    if len(left) and math.isinf(config.horizon) and not stopped:
        shown = ", ".join(repr(i) for i in left[:5]) + (
            ", ..." if len(left) > 5 else ""
        )
        warnings.warn(
            f"{len(left)} job(s) never finished ({shown}): they could not start once "
            "the capacity they needed was gone (e.g. lent inference servers reclaimed)",
            RuntimeWarning,
            stacklevel=3,
        )
    return result


_NO_WORKERS: Dict[str, List[Any]] = {"job": [], "server": [], "flexible": []}


def _servers(cluster: Union[Cluster, Records]) -> List[Server]:
    """The cluster's servers, none on loan (the simulator lends them)."""
    servers = (
        cluster.servers()
        if isinstance(cluster, Cluster)
        else as_records(cluster, Server, "server")
    )
    return [dataclasses.replace(s, on_loan=False) for s in servers]


def _curves(
    table: JobTable, throughput: Optional[Mapping[Any, Sequence[float]]]
) -> List[List[float]]:
    """Per-job throughput curves in the table's order (empty list: none given)."""
    if not throughput:
        return []
    index = {id_: i for i, id_ in enumerate(table.ids.tolist())}
    curves: List[List[float]] = [[] for _ in range(len(table))]
    for job_id, curve in throughput.items():
        if job_id not in index:
            raise ValueError(f"throughput: unknown job {job_id!r}")
        curves[index[job_id]] = [float(v) for v in curve]
    return curves


def _describe_cluster(
    cluster: Union[Cluster, Records], servers: List[Server]
) -> Dict[str, Any]:
    """The cluster as counts (a ``Cluster``'s fields, or counted from the servers)."""
    if isinstance(cluster, Cluster):
        return dataclasses.asdict(cluster)
    out: Dict[str, Any] = {}
    for pool in ("training", "inference"):
        mine = [s for s in servers if s.pool == pool]
        out[f"{pool}_servers"] = len(mine)
        out[f"{pool}_gpus"] = sum(s.gpus for s in mine)
        out[f"{pool}_gpu"] = "+".join(sorted({s.gpu_type for s in mine}))
    return out


def _is_pollux_workload(jobs: Any) -> bool:
    from ..traces.pollux import WORKLOAD_COLUMNS

    return isinstance(jobs, pd.DataFrame) and all(
        c in jobs.columns for c in WORKLOAD_COLUMNS
    )


def _simulate_pollux(
    workload: pd.DataFrame,
    cluster: Union[Cluster, Records],
    policy: str,
    config: Config,
    seed: int,
    progress: Optional[Callable[[float], Optional[bool]]],
    label: str,
    history: bool = False,
) -> Result:
    """A Pollux workload's goodput-driven jobs; the applications' tables cross to C++ once."""
    from ..traces.pollux import check_workload, pollux_applications

    if policy not in GOODPUT_POLICIES and policy != "aryl":
        raise ValueError(
            "a Pollux workload runs under policy 'tiresias', 'pollux' or 'aryl', "
            f"got {policy!r}"
        )
    if config.agent is not None and policy != "aryl":
        raise ValueError(f"agent {config.agent!r} needs policy 'aryl', got {policy!r}")
    apps = dict(workload.attrs.get("applications") or {})
    missing = sorted(set(workload["application"]) - set(apps))
    if missing:
        known = pollux_applications()
        if not set(missing) <= set(known):
            raise ValueError(f"no profiles for application(s) {missing}")
        apps.update({a: known[a] for a in missing})
    check_workload(workload, apps)
    names = sorted(set(workload["application"]))
    index = {name: i for i, name in enumerate(names)}
    servers = _servers(cluster)
    scale = _optional(workload, "work_scale", 1.0)
    if policy == "pollux":  # the policy decides replicas; jobs choose their batch
        jobs, batch = _pollux_policy_jobs(workload, servers)
    elif policy == "aryl":
        node_gpus = max((s.gpus for s in servers if s.pool == "training"), default=1)
        tuned = config.agent is not None
        jobs, batch = _kernel_jobs(workload, apps, node_gpus, scale, tuned)
    else:
        # duration is not used by goodput-driven jobs (their applications decide).
        replicas = workload["num_replicas"].astype(int).tolist()
        batch = workload["batch_size"].astype(float).tolist()
        jobs = [
            Job(str(name), 1, r, r, 1.0, float(t))
            for name, r, t in zip(workload["name"], replicas, workload["time"])
        ]
    State.build(servers, jobs, [])  # validates ids and records
    raw = _core.simulate(
        server_columns(servers),
        job_columns(jobs),
        [],
        [],
        [],
        _core_config(config, policy, "aryl", seed, history),
        progress,
        applications=[apps[name].core for name in names],
        job_application=[index[a] for a in workload["application"]],
        job_batch_size=batch,
        job_work_scale=scale,
    )
    ids = np.empty(len(jobs), dtype=object)
    ids[:] = [j.id for j in jobs]
    result = _result(
        servers,
        ids,
        np.array([j.submit_time for j in jobs]),
        raw,
        label or policy,
        np.ones(len(jobs), dtype=np.int64),  # one-GPU replicas
    )
    result.provenance = Provenance(
        jobs=len(jobs),
        jobs_fingerprint=fingerprint_frame(workload) or "",
        cluster=_describe_cluster(cluster, servers),
        policy=policy,
        reclaim="none",
        config=dataclasses.asdict(config),
        seed=int(seed),
        aryl_version=aryl_version(),
    )
    return result


def _pollux_policy_jobs(
    workload: pd.DataFrame, servers: List[Server]
) -> Tuple[List[Job], List[float]]:
    """A Pollux workload's jobs as policy ``pollux`` runs them, and their batches.

    Each job runs on nothing or on ``min_replicas`` to ``max_replicas`` one-GPU
    replicas (optional columns; absent or NaN: no minimum and up to
    ``POLLUX_MAX_REPLICAS``, the artifact's jobs), so a job that the scenario made
    rigid (minimum = maximum) runs at its demand or waits, as under every other
    policy. A ``POLLUX_FIXED_BATCH`` application keeps its batch on one replica, or
    on exactly its minimum when that is more. A minimum becomes the job's
    ``min_workers``; the simulator passes minimums above one to the search (one
    replica is what running means).
    """
    fixed = [POLLUX_FIXED_BATCH.get(a) for a in workload["application"]]
    most = min(
        POLLUX_MAX_REPLICAS, sum(s.gpus for s in servers if s.pool == "training")
    )
    low = _optional(workload, "min_replicas", math.nan)
    high = _optional(workload, "max_replicas", math.nan)
    jobs = []
    for i, (name, t) in enumerate(zip(workload["name"], workload["time"])):
        least = 0 if math.isnan(low[i]) else low[i]
        if not (float(least).is_integer() and 0 <= least <= most):
            raise ValueError(
                f"job {str(name)!r}: min_replicas must be an integer in [0, {most}] "
                f"(the replica cap {POLLUX_MAX_REPLICAS} and the training GPUs), "
                f"got {low[i]!r}"
            )
        cap = POLLUX_MAX_REPLICAS
        if not math.isnan(high[i]):
            if not (float(high[i]).is_integer() and high[i] >= max(least, 1)):
                raise ValueError(
                    f"job {str(name)!r}: max_replicas must be an integer >= "
                    f"max(min_replicas, 1) = {max(int(least), 1)}, got {high[i]!r}"
                )
            cap = min(int(high[i]), POLLUX_MAX_REPLICAS)
        if fixed[i]:
            cap = max(int(least), 1)
        jobs.append(Job(str(name), 1, max(int(least), 1), cap, 1.0, float(t)))
    return jobs, [f or 0.0 for f in fixed]


def _optional(workload: pd.DataFrame, column: str, default: float) -> List[float]:
    """An optional numeric column of a Pollux workload (``default`` when absent)."""
    if column not in workload:
        return [default] * len(workload)
    return [float(v) for v in workload[column]]


def _kernel_jobs(
    workload: pd.DataFrame,
    apps: Mapping[str, Any],
    node_gpus: int,
    scale: List[float],
    tuned: bool,
) -> Tuple[List[Job], List[float]]:
    """A Pollux workload's jobs as policy ``aryl`` schedules them, and their batches.

    A job runs ``min_replicas``..``max_replicas`` one-GPU replicas (its
    ``num_replicas`` when absent); untuned, at most as many as the user's batch
    spreads over at the application's minimum local batch, since it keeps that
    batch. Its ``duration`` (the SJF estimate at ``num_replicas``) is the column's,
    else the time it takes alone there at the user's batch, times its work ``scale``.
    A tuned job chooses its batch (the artifact's ncf keeps its fixed one, as under
    Pollux).
    """
    from ..traces.pollux_mapping import solo_time, split_cap

    replicas = workload["num_replicas"].astype(int).tolist()
    user_batch = workload["batch_size"].astype(float).tolist()
    low = _optional(workload, "min_replicas", math.nan)
    high = _optional(workload, "max_replicas", math.nan)
    given = _optional(workload, "duration", math.nan)
    jobs, batch = [], []
    for i, (name, app_name, t) in enumerate(
        zip(workload["name"], workload["application"], workload["time"])
    ):
        app, k, b = apps[app_name], replicas[i], user_batch[i]
        lo = k if math.isnan(low[i]) else int(low[i])
        hi = k if math.isnan(high[i]) else int(high[i])
        if not tuned:
            hi = max(min(hi, split_cap(app, b, node_gpus)), k)
        duration = given[i]
        if math.isnan(duration):
            duration = solo_time(app, k, b, node_gpus) * scale[i]
        jobs.append(Job(str(name), 1, lo, hi, duration, float(t), reference_workers=k))
        fixed = POLLUX_FIXED_BATCH.get(app_name)
        batch.append((fixed or 0.0) if tuned else b)
    return jobs, batch


def compare(
    jobs: Records,
    cluster: Union[Cluster, Records],
    runs: Mapping[str, Mapping[str, Any]],
    inference_load: Any = None,
    seed: int = 0,
    threads: int = 1,
) -> Comparison:
    """Run several configurations on the same input; one row per run.

    ``runs`` maps a row name to keyword arguments of ``simulate`` (``policy``,
    ``reclaim``, ``config``, or ``jobs`` to replace the input jobs, e.g. with a
    scenario's). Columns are the summary's keys, as in the paper's Table 3.
    ``threads`` > 1 runs that many at once (the simulator releases the GIL).

    Returns a ``Comparison``: that table as a ``DataFrame``, with ``.results``
    (row name -> ``Result``) to plot, save or inspect the runs without re-running.
    """
    if not runs:
        raise ValueError("runs is empty: give at least one named run")

    def run(name: str, kwargs: Mapping[str, Any]) -> Result:
        kwargs = dict(kwargs)
        run_jobs = kwargs.pop("jobs", jobs)
        kwargs.setdefault("inference_load", inference_load)
        kwargs.setdefault("seed", seed)
        return simulate(run_jobs, cluster, label=name, **kwargs)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, int(threads))) as pool:
        futures = {
            name: pool.submit(run, name, kwargs) for name, kwargs in runs.items()
        }
        results = {name: f.result() for name, f in futures.items()}
    rows = {name: r.summary() for name, r in results.items()}
    return Comparison.of(
        pd.DataFrame.from_dict(rows, orient="index")[list(SUMMARY_KEYS)], results
    )


def _config(config: Union[Config, Mapping[str, Any], None]) -> Config:
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    names = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(config) - names)
    if unknown:
        raise ValueError(
            f"unknown config field(s) {unknown}; expected some of {sorted(names)}"
        )
    return Config(**config)


def _core_config(
    config: Config, policy: str, reclaim: str, seed: int, history: bool = False
) -> Dict[str, Any]:
    return {
        "policy": policy,
        "reclaim": reclaim,
        "placement": config.placement,
        "backfill": bool(config.backfill),
        "scaling": config.scaling,
        "schedule_interval": float(config.schedule_interval),
        "loan_interval": float(config.loan_interval),
        "restart_overhead": float(config.restart_overhead),
        "headroom": float(config.headroom),
        "lend_hold": float(config.lend_hold),
        "hetero_efficiency": float(config.hetero_efficiency),
        "gpu_speed": {str(k): float(v) for k, v in config.gpu_speed.items()},
        "horizon": float(config.horizon),
        "seed": int(seed),
        "audit": bool(config.audit),
        "reallocation_overhead": float(config.reallocation_overhead),
        "tiresias_threshold": float(config.tiresias_threshold),
        "pollux_population": int(config.pollux_population),
        "pollux_generations": int(config.pollux_generations),
        "tuned": config.agent == "pollux",
        "history": history,
    }


def _load(inference_load: Any) -> Tuple[List[float], List[float]]:
    """(times, loads) from a DataFrame (time_s/time and load columns) or pairs."""
    if inference_load is None:
        return [], []
    if isinstance(inference_load, pd.DataFrame):
        time_col = "time_s" if "time_s" in inference_load else "time"
        if time_col not in inference_load or "load" not in inference_load:
            raise ValueError(
                "inference_load needs columns 'time_s' (or 'time') and 'load'"
            )
        rows = inference_load[[time_col, "load"]].to_numpy(dtype=float)
    else:
        rows = np.asarray(inference_load, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != 2:
            raise ValueError(
                f"inference_load must be (time_s, load) pairs, got shape {rows.shape}"
            )
    if np.isnan(rows).any():
        raise ValueError(
            f"inference_load row {int(np.isnan(rows).any(axis=1).argmax())} has NaN"
        )
    return rows[:, 0].tolist(), rows[:, 1].tolist()


def _load_integral(times: List[float], loads: List[float], end: float) -> float:
    """Integral over [0, end] of the load step function the engine uses (before the first
    point, the first value; then each value until the next point)."""
    if not times or end <= 0:
        return 0.0
    t = np.clip(np.asarray(times, dtype=float), 0.0, end)
    edges = np.r_[0.0, t[1:], end]
    return float(np.sum(np.asarray(loads, dtype=float) * np.diff(edges)))


def _result(
    servers: List[Server],
    ids: np.ndarray,
    submit: np.ndarray,
    raw: Dict[str, Any],
    label: str,
    gpus_per_worker: np.ndarray,
) -> Result:
    start, finish = raw["start_time"], raw["finish_time"]
    types = {
        p: "+".join(sorted({s.gpu_type for s in servers if s.pool == p}))
        for p in ("training", "inference")
    }
    on_training, on_inference = (
        raw["ran_on_training"].astype(bool),
        raw["ran_on_inference"].astype(bool),
    )
    # Four possible values: an object column of shared str, not one str per job.
    names = np.array(
        ["", types["training"], types["inference"], "+".join(types.values())],
        dtype=object,
    )
    gpu_types = names[on_training.astype(np.intp) + 2 * on_inference]
    frame = pd.DataFrame(
        {
            "id": ids.tolist(),
            "submit_time": submit,
            "start_time": start,
            "finish_time": finish,
            "queuing_time": start - submit,
            "jct": finish - submit,
            "preemptions": raw["preemptions"],
            "scaling_ops": raw["scaling_ops"],
            "work_lost": raw["work_lost"],
            "ran_on_training": on_training,
            "ran_on_inference": on_inference,
            "ran_mixed": raw["ran_mixed"].astype(bool),
            "gpu_types": gpu_types,
        }
    )
    timeline = pd.DataFrame(
        {
            k: raw[k]
            for k in (
                "t",
                "training_gpus_used",
                "loaned_gpus_used",
                "on_loan",
                "inference_needed",
                "queue_length",
                "running_jobs",
            )
        }
    )
    totals = {k: v for k, v in raw.items() if np.isscalar(v)}
    inference = [s.gpus for s in servers if s.pool == "inference"]
    capacity = {
        "training_gpus": sum(s.gpus for s in servers if s.pool == "training"),
        "inference_gpus": sum(inference),
        "max_inference_server_gpus": max(inference, default=0),
    }
    result = Result(frame, timeline, totals, capacity, label, list(raw["violations"]))
    if "history" in raw:
        result.allocations = history_frame(
            raw["history"], ids, gpus_per_worker, servers
        )
    return result
