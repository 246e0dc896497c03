"""Running the compiled event simulator: `simulate` and `compare`."""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
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
from ..defaults import (
    DEFAULT_GPU_SPEED,
    PLACEMENTS,
    SIMULATION_RECLAIM_POLICIES,
    UNLISTED_GPU_SPEED,
)
from ..defaults import SCHEDULE_POLICIES as POLICIES
from ..jobtable import JobTable
from ..model import Job, Records, Server, as_records, job_columns, server_columns
from ..policy import policy_record
from ..state import ClusterState
from ..traces.pollux_mapping import (
    aryl_policy_jobs,
    optional_column,
    pollux_policy_jobs,
)
from ..typing import (
    GoodputPolicy,
    JobAgent,
    SimulationPolicy,
    SimulationReclaimPolicy,
)
from .config import Cluster, Config
from .history import history_frame
from .hooks import CoreHooks, Policy, check_policy, has_hook, policy_name
from .provenance import (
    Provenance,
    aryl_version,
    extend_to_jobs,
    fingerprint_frame,
    fingerprint_jobs,
    fingerprint_load,
)
from .result import TIMELINE_COLUMNS, Result
from .scenarios import apply_prediction_error

#: ``simulate``'s ``progress``: ``progress(fraction)`` or ``progress(fraction, now)``.
ProgressCallback = Union[
    Callable[[float], Optional[bool]], Callable[[float, float], Optional[bool]]
]

#: Allocation policies of goodput-driven (Pollux workload) runs.
GOODPUT_POLICIES = get_args(GoodputPolicy)
#: Job agents a goodput-driven run under policy "aryl" may give its jobs.
AGENTS = get_args(JobAgent)
RECLAIM_POLICIES = SIMULATION_RECLAIM_POLICIES  # aryl.sim.simulation.RECLAIM_POLICIES
#: The start of ``unlisted_gpu_types``' warning, as ``warnings.filterwarnings`` takes it.
UNLISTED_WARNING = r"GPU types? .* no speed in gpu_speed"
#: GPU types that run at their own speed when ``gpu_speed`` does not list them: the
#: reference, the V100 (1.0 by definition).
REFERENCE_GPUS = frozenset(
    t for t, v in DEFAULT_GPU_SPEED.items() if v == UNLISTED_GPU_SPEED
)


def simulate(
    jobs: Records,
    cluster: Union[Cluster, Records],
    policy: Union[SimulationPolicy, Policy] = "aryl",
    reclaim: SimulationReclaimPolicy = "aryl",
    inference_load: Any = None,
    config: Union[Config, Mapping[str, Any], None] = None,
    seed: int = 0,
    progress: Optional[ProgressCallback] = None,
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
        Allocation policy (``aryl``, ``fifo``, ``sjf``, ``gandiva``, ``afs``,
        ``tiresias``; for a Pollux workload ``tiresias`` or ``pollux``) and reclaim
        policy (``aryl``, ``scf``, ``random``, ``least-work``: each running job's
        progress without a checkpoint, or its restart overhead with one, is the work
        a preemption throws away). ``tiresias`` on fixed-duration jobs is
        the preemptive least-attained-service baseline (two queues, demotion at
        ``Config.tiresias_threshold`` GPU-seconds of attained service, checkpoint
        rules on preemption): each job runs at its trace's size
        (``reference_workers``) on the training servers; it lends nothing, so pass
        ``Config(loaning=False)`` with a load series.
        ``policy`` may also be a policy of your own: any object with the hooks of
        ``aryl.sim.hooks.Policy`` (``allocate(state, epoch)``, optionally
        ``reclaim(state, n, epoch)`` and ``admit(job, epoch)``), called with a
        read-only ``aryl.ClusterState`` where the engine would run its kernels; every
        answer is checked before it is applied (a ``ValueError`` naming the epoch
        and the job otherwise). Its ``reclaim``, if any, replaces ``reclaim``;
        ``Result.jobs`` then has a ``rejected`` column.
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
        Called with the run's progress in [0, 1] (half the simulated time up to the
        last arrival, half the share of jobs finished, so it keeps moving while a queue
        drains), every 1% of it and at least every quarter second; return
        ``False`` to stop early (the rest is reported unfinished). A callback with
        two required positional parameters, ``progress(fraction, now)``, also gets
        the simulated time in seconds (a long run can say which day it is at);
        any other callable is called as ``progress(fraction)``.
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
    # A policy of your own runs under the engine's rules of "aryl" for base demand
    # and base workers; `kernel` is the built-in policy's name otherwise.
    own: Optional[Policy] = None if isinstance(policy, str) else policy
    if own is not None:
        check_policy(own)
    # Which code runs (class, file, hashes of its code and attributes), as it starts.
    own_record = None if own is None else policy_record(own)
    kernel: str = "aryl" if own is not None else str(policy)
    if isinstance(jobs, pd.DataFrame) and _is_pollux_workload(jobs):
        if own is not None:
            raise ValueError(
                "a policy of your own schedules fixed-duration jobs; a Pollux "
                "workload runs under policy 'tiresias', 'pollux' or 'aryl'"
            )
        if config.arrival_scale != 1.0:
            raise ValueError(
                "arrival_scale applies to fixed-duration jobs; scale a Pollux "
                "workload's 'time' column instead"
            )
        result = _simulate_pollux(
            jobs, cluster, kernel, config, seed, progress, label, history
        )
        return _warn_unfinished(result, config, stopped)
    _check_fixed_duration_run(kernel, reclaim, config, inference_load)
    las = kernel == "tiresias"
    servers = _servers(cluster)
    table = _run_table(JobTable.of(jobs), servers, config, las, seed)
    unlisted = unlisted_gpu_types(servers, config.gpu_speed)
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
    validation.check_can_run(  # Tiresias asks every worker, as FIFO does
        servers,
        table,
        core,
        "fifo" if las else kernel,
        load_time,
        load,
        config.headroom,
    )
    del core  # the engine keeps its own copy of the jobs; at 500k jobs this is ~100 MB
    hooks = (
        None
        if own is None
        else CoreHooks(own, servers, table.to_frame(), config, served)
    )
    raw = _core.simulate(
        server_table,
        columns,
        curves,
        load_time,
        load,
        _core_config(config, kernel, reclaim, seed, history or _mixed(servers)),
        progress,
        hooks=hooks,
    )
    if hooks is not None:
        hooks.idle.warn(float(raw["end_time"]))
    name = kernel if own is None else policy_name(own)
    # A policy's own reclaim hook chose the servers returned.
    own_reclaim = own is not None and has_hook(own, "reclaim")
    if not config.loaning:
        gpus = sum(s.gpus for s in servers if s.pool == "inference")
        raw["inference_gpu_seconds"] = _load_integral(*served, raw["end_time"]) * gpus
    result = _result(
        servers,
        table.ids,
        table.column("submit_time"),
        raw,
        label or name,
        table.column("gpus_per_worker"),
        (table.column("user"), table.column("vc")),
        history,
    )
    result.provenance = Provenance(
        jobs=len(table),
        jobs_fingerprint=fingerprint_jobs(table),
        cluster=_describe_cluster(cluster, servers, unlisted),
        policy=name,
        reclaim=name if own_reclaim else reclaim,
        config=dataclasses.asdict(config),
        seed=int(seed),
        aryl_version=aryl_version(),
        load_fingerprint=fingerprint_load(*served),
        load_rows=len(served[0]),
        load_extended=extended,
        throughput=throughput is not None,
        own_policy=own_record,
    )
    return _warn_unfinished(result, config, stopped, own is not None)


def _check_fixed_duration_run(
    kernel: str, reclaim: str, config: Config, inference_load: Any
) -> None:
    """Refuse what a run of fixed-duration jobs cannot do (``ValueError``)."""
    if config.agent is not None:
        raise ValueError(
            f"agent {config.agent!r} tunes goodput-driven jobs: pass a Pollux workload "
            "(aryl.traces.pollux_workload or pollux_profiles)"
        )
    if kernel == "pollux":
        raise ValueError(
            f"policy {kernel!r} runs goodput-driven jobs: pass a Pollux workload "
            "(aryl.traces.read_pollux_workload)"
        )
    if kernel == "tiresias" and config.loaning and inference_load is not None:
        raise ValueError(
            "policy 'tiresias' runs on the training servers and lends nothing: pass "
            "config=Config(loaning=False) to run it beside a load series, or no "
            "inference_load"
        )
    validation.text(kernel, "policy", (*POLICIES, "tiresias"))
    validation.text(reclaim, "reclaim policy", RECLAIM_POLICIES)


def _run_table(
    table: JobTable, servers: List[Server], config: Config, las: bool, seed: int
) -> JobTable:
    """The jobs as the run sees them: arrivals scaled, worker ranges fixed when
    elasticity is off (or under Tiresias: each job at its trace's size), estimates
    with the prediction error."""
    validation.run_gpu_speeds(config.gpu_speed, gpu_types(servers, table))
    if config.arrival_scale != 1.0:
        submit = table.column("submit_time")
        table = table.replace(submit_time=arrival_times(submit, config.arrival_scale))
    if not config.elasticity or las:
        w = table.column("reference_workers")
        table = table.replace(min_workers=w, max_workers=w)
    if config.prediction_error is not None:
        table = apply_prediction_error(table, *config.prediction_error, seed=seed)
    return table


def arrival_times(submit: Any, scale: float) -> np.ndarray:
    """Submission times with every inter-arrival time divided by ``scale`` (from the
    first submission on): ``Config.arrival_scale``'s rule."""
    times = np.asarray(submit, dtype=float)
    if not times.size or scale == 1.0:
        return times
    first = times.min()
    out: np.ndarray = first + (times - first) / scale
    return out


def gpu_types(servers: Sequence[Server], jobs: JobTable) -> List[str]:
    """The GPU types of a run: its servers' and those its jobs require."""
    required = pd.unique(pd.Series(jobs.column("gpu_type"), dtype=object).dropna())
    return sorted({s.gpu_type for s in servers} | {str(t) for t in required if t})


def _watched(
    progress: Optional[ProgressCallback],
) -> Tuple[Optional[Callable[[float, float], Optional[bool]]], List[bool]]:
    """``progress`` as the engine calls it, ``(fraction, now)``, and a list that holds
    True once it asked to stop."""
    stopped: List[bool] = []
    if progress is None:
        return None, stopped
    user = progress
    with_time = _wants_time(user)

    def watched(fraction: float, now: float) -> Optional[bool]:
        keep = user(fraction, now) if with_time else user(fraction)  # type: ignore[call-arg]
        if keep is not None and not keep:
            stopped.append(True)
        return keep

    return watched, stopped


def _wants_time(progress: Callable[..., Any]) -> bool:
    """Whether ``progress`` takes the simulated time too: it has two required
    positional parameters (one argument does not bind, two do). Every callback that
    took one argument before still gets one."""
    try:
        signature = inspect.signature(progress)
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return False

    def binds(*args: float) -> bool:
        try:
            signature.bind(*args)
        except TypeError:
            return False
        return True

    return not binds(0.0) and binds(0.0, 0.0)


def _warn_unfinished(
    result: Result, config: Config, stopped: List[bool], own: bool = False
) -> Result:
    """Warn when jobs are left unfinished although neither a horizon nor the progress
    callback stopped the run.

    The engine stops when nothing can change: a job whose only fit was a window of low
    inference load that closed while it waited stays queued for ever, and so does one
    a policy of your own (``own``) never starts. That is allowed, but never silent.
    """
    jobs = result.jobs
    unfinished = jobs["finish_time"].isna()
    if "rejected" in jobs:
        unfinished &= ~jobs["rejected"]
    left = jobs.loc[unfinished, "id"]
    if len(left) and math.isinf(config.horizon) and not stopped:
        shown = ", ".join(repr(i) for i in left[:5]) + (
            ", ..." if len(left) > 5 else ""
        )
        why = (
            "the policy left them queued when nothing more was to happen"
            if own
            else "they could not start once the capacity they needed was gone (e.g. "
            "lent inference servers reclaimed)"
        )
        warnings.warn(
            f"{len(left)} job(s) never finished ({shown}): {why}",
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
    cluster: Union[Cluster, Records],
    servers: List[Server],
    unlisted: Optional[Dict[str, int]] = None,
) -> Dict[str, Any]:
    """The cluster as counts (a ``Cluster``'s fields, or counted from the servers),
    and, when some of its servers' GPU types have no speed in ``gpu_speed``,
    ``unlisted_gpu_types``: their server counts by type (they ran at
    ``UNLISTED_GPU_SPEED``)."""
    out: Dict[str, Any] = {}
    if isinstance(cluster, Cluster):
        out = dataclasses.asdict(cluster)
    else:
        for pool in ("training", "inference"):
            mine = [s for s in servers if s.pool == pool]
            out[f"{pool}_servers"] = len(mine)
            out[f"{pool}_gpus"] = sum(s.gpus for s in mine)
            out[f"{pool}_gpu"] = "+".join(sorted({s.gpu_type for s in mine}))
    if unlisted:
        out["unlisted_gpu_types"] = dict(unlisted)
    return out


def unlisted_gpu_types(
    servers: Sequence[Server], gpu_speed: Mapping[str, float], stacklevel: int = 3
) -> Dict[str, int]:
    """The servers' GPU types that ``gpu_speed`` does not list, with their server
    counts (``{"P100": 10}``), in name order; a ``UserWarning`` names them once per
    message (Python shows a repeated warning once), since the engine runs them at
    ``UNLISTED_GPU_SPEED`` (1.0, the V100's speed): aryl gives no speed it has no
    source for (only the paper's V100 and T4, docs/model.md), so the user gives
    theirs (``--gpu-speed P100=0.5`` / ``Config(gpu_speed=...)``)."""
    counts: Dict[str, int] = {}
    gpus: Dict[str, int] = {}
    for s in servers:
        # the V100, the reference, is 1.0 listed or not
        if s.gpu_type not in gpu_speed and s.gpu_type not in REFERENCE_GPUS:
            counts[s.gpu_type] = counts.get(s.gpu_type, 0) + 1
            gpus[s.gpu_type] = gpus.get(s.gpu_type, 0) + s.gpus
    if not counts:
        return {}
    counts = dict(sorted(counts.items()))
    named = ", ".join(
        f"{t} ({n:,} server{'s' * (n != 1)}, {gpus[t]:,} GPUs)"
        for t, n in counts.items()
    )
    example = ",".join(f"{t}=0.5" for t in counts)
    listed = ", ".join(f"{t}={v:g}" for t, v in gpu_speed.items()) or "none"
    many = len(counts) != 1
    warnings.warn(
        f"GPU type{'s' * many} {named} {'have' if many else 'has'} no speed in "
        f"gpu_speed ({listed}), so {'they run' if many else 'it runs'} at a V100's "
        f"speed ({UNLISTED_GPU_SPEED:.1f}); aryl has no published speed for "
        f"{'them' if many else 'it'}: give {'each' if many else 'it'} relative to "
        f"the V100, e.g. --gpu-speed {example} for half a V100's "
        "(Config(gpu_speed=...) in Python)",
        UserWarning,
        stacklevel=stacklevel,
    )
    return counts


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
    progress: Optional[Callable[[float, float], Optional[bool]]],
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
    unlisted = unlisted_gpu_types(servers, config.gpu_speed, stacklevel=4)
    scale = optional_column(workload, "work_scale", 1.0)
    if policy == "pollux":  # the policy decides replicas; jobs choose their batch
        jobs, batch = pollux_policy_jobs(workload, servers)
    elif policy == "aryl":
        node_gpus = max((s.gpus for s in servers if s.pool == "training"), default=1)
        tuned = config.agent is not None
        jobs, batch = aryl_policy_jobs(workload, apps, node_gpus, scale, tuned)
    else:
        # duration is not used by goodput-driven jobs (their applications decide).
        replicas = workload["num_replicas"].astype(int).tolist()
        batch = workload["batch_size"].astype(float).tolist()
        jobs = [
            Job(str(name), 1, r, r, 1.0, float(t))
            for name, r, t in zip(workload["name"], replicas, workload["time"])
        ]
    ClusterState.from_records(servers, jobs)  # validates ids and records
    raw = _core.simulate(
        server_columns(servers),
        job_columns(jobs),
        [],
        [],
        [],
        _core_config(config, policy, "aryl", seed, history or _mixed(servers)),
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
        (
            np.array([j.user for j in jobs], dtype=object),
            np.array([j.vc for j in jobs], dtype=object),
        ),
        history,
    )
    result.provenance = Provenance(
        jobs=len(jobs),
        jobs_fingerprint=fingerprint_frame(workload) or "",
        cluster=_describe_cluster(cluster, servers, unlisted),
        policy=policy,
        reclaim="none",
        config=dataclasses.asdict(config),
        seed=int(seed),
        aryl_version=aryl_version(),
    )
    return result


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
        "start_overhead": float(config.start_overhead),
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
    groups: Tuple[np.ndarray, np.ndarray],
    history: bool = True,
) -> Result:
    """The run's ``Result`` from the engine's columns; ``history``: keep the
    allocation history (recorded also, and then dropped, to say each job's GPU types
    on a cluster whose pool mixes types: ``job_gpu_types``)."""
    start, finish = raw["start_time"], raw["finish_time"]
    on_training, on_inference = (
        raw["ran_on_training"].astype(bool),
        raw["ran_on_inference"].astype(bool),
    )
    types = job_gpu_types(servers, on_training, on_inference, raw.get("history"))
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
            "gpu_types": types,
            "user": pd.Series(groups[0], dtype=object),  # None: not recorded
            "vc": pd.Series(groups[1], dtype=object),
        }
    )
    if "rejected" in raw:  # a policy of your own (hooks): its admit's answers
        frame["rejected"] = raw.pop("rejected").astype(bool)
    timeline = pd.DataFrame({k: raw[k] for k in TIMELINE_COLUMNS})
    totals = {k: v for k, v in raw.items() if np.isscalar(v)}
    inference = [s.gpus for s in servers if s.pool == "inference"]
    capacity = {
        "training_gpus": sum(s.gpus for s in servers if s.pool == "training"),
        "inference_gpus": sum(inference),
        "max_inference_server_gpus": max(inference, default=0),
    }
    result = Result(frame, timeline, totals, capacity, label, list(raw["violations"]))
    result.engine_counters = {
        k: int(v) for k, v in raw.get("engine_counters", {}).items()
    }
    if "history" in raw and history:
        result.allocations = history_frame(
            raw["history"], ids, gpus_per_worker, servers
        )
    return result


def _mixed(servers: Sequence[Server]) -> bool:
    """Whether a pool of the servers has more than one GPU type: then which pool a
    job ran on does not say on which types (``job_gpu_types``)."""
    return any(
        len({s.gpu_type for s in servers if s.pool == pool}) > 1
        for pool in ("training", "inference")
    )


def job_gpu_types(
    servers: Sequence[Server],
    on_training: np.ndarray,
    on_inference: np.ndarray,
    history: Optional[Dict[str, np.ndarray]] = None,
) -> np.ndarray:
    """``Result.jobs``' ``gpu_types``: the GPU types each job's workers ran on,
    ``+``-joined, its training servers' types first, then its lent inference
    servers' (each in name order, none twice: ``V100+T4``); ``""`` for a job that
    never ran.

    The engine records per job only which pools it ran on, which says its types
    when each pool has one type. When a pool mixes types (``_mixed``) ``simulate``
    records the allocation history (``history``: the engine's ``job`` and
    ``server`` columns, one row per interval and server), and the types are read
    from it. An object column of shared ``str``, one per combination of types.
    """
    pools = [s.pool == "inference" for s in servers]
    # (pool, type): training (False) first, then by name
    order = sorted({(pool, s.gpu_type) for pool, s in zip(pools, servers)})
    if history is None or not _mixed(servers):
        names = {pool: [t for p, t in order if p == pool] for pool in (False, True)}
        # Four possible values: an object column of shared str, not one per job.
        table = np.array(
            [
                "",
                "+".join(names[False]),
                "+".join(names[True]),
                "+".join(dict.fromkeys(names[False] + names[True])),
            ],
            dtype=object,
        )
        out: np.ndarray = table[
            on_training.astype(np.intp) + 2 * on_inference.astype(np.intp)
        ]
        return out
    code = {pair: i for i, pair in enumerate(order)}
    server_code = np.array(
        [code[(pool, s.gpu_type)] for pool, s in zip(pools, servers)], dtype=np.int64
    )
    jobs = len(on_training)
    pairs = np.unique(
        np.asarray(history["job"], dtype=np.int64) * len(order)
        + server_code[np.asarray(history["server"], dtype=np.intp)]
    )
    job, which = np.divmod(pairs, len(order))
    ran: List[List[int]] = [[] for _ in range(jobs)]
    for j, c in zip(job.tolist(), which.tolist()):  # in code order per job
        ran[j].append(c)
    shared: Dict[Tuple[int, ...], str] = {}
    out = np.empty(jobs, dtype=object)
    for j, codes in enumerate(ran):
        key = tuple(codes)
        if key not in shared:
            shared[key] = "+".join(dict.fromkeys(order[c][1] for c in codes))
        out[j] = shared[key]
    return out
