"""Running the compiled event simulator: `simulate` (one run; `aryl.studies.compare` runs several)."""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from typing import (
    Any,
    Callable,
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
from ..defaults import PLACEMENTS, SIMULATION_RECLAIM_POLICIES
from ..defaults import SCHEDULE_POLICIES as POLICIES
from ..jobtable import JobTable
from ..model import Records, Server, server_columns
from ..policy import policy_record
from ..typing import JobAgent, SimulationPolicy, SimulationReclaimPolicy
from .config import Cluster, Config
from .core_io import (
    _NO_WORKERS,
    _config,
    _core_config,
    _curves,
    _describe_cluster,
    _load,
    _load_integral,
    _result,
    _servers,
)
from .gpu_types import _mixed, gpu_types, published_speeds, unlisted_gpu_types
from .hooks import CoreHooks, Policy, check_policy, has_hook, policy_name
from .pollux_runs import _is_pollux_workload, _simulate_pollux
from .provenance import (
    Provenance,
    aryl_version,
    extend_to_jobs,
    fingerprint_jobs,
    fingerprint_load,
)
from .result import Result
from .scenarios import apply_prediction_error

#: ``simulate``'s ``progress``: ``progress(fraction)`` or ``progress(fraction, now)``.
ProgressCallback = Union[
    Callable[[float], Optional[bool]], Callable[[float, float], Optional[bool]]
]
#: Job agents a goodput-driven run under policy "aryl" may give its jobs.
AGENTS = get_args(JobAgent)
RECLAIM_POLICIES = (
    SIMULATION_RECLAIM_POLICIES  # aryl.engine.simulation.RECLAIM_POLICIES
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
        ``aryl.engine.hooks.Policy`` (``allocate(state, epoch)``, optionally
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
        (``aryl.engine.provenance.extend_to_jobs``), and ``provenance.load_extended``
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
    history = validation.flag(history, "history")
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
    config = published_speeds(config, servers)
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
            "lent inference servers reclaimed), or it was never lent"
        )
        warnings.warn(
            f"{len(left)} job(s) never finished ({shown}): {why}",
            RuntimeWarning,
            stacklevel=3,
        )
    return result
