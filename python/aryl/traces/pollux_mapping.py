"""Pollux applications for aryl's traces: a seeded mapping by GPU-time.

The paper runs Aryl+TunedJobs on its own traces by "adopting the model
distribution listed by Pollux": each trace job becomes a goodput-driven job of
one of the Pollux artifact's six applications, chosen by the job's GPU-time as
the artifact's workload generator chooses them:

============================  ======================================
GPU-time (GPU-hours)          application
============================  ======================================
below 1                       ``cifar10`` or ``ncf`` (even odds)
1 to 10                       ``deepspeech2`` or ``bert`` (even odds)
10 to 100                     ``yolov3``
100 and more                  ``imagenet``
============================  ======================================

A job of ``D`` GPUs per worker and ``[min, max]`` workers becomes ``[D min, D max]``
one-GPU replicas (its reference worker count gives the user's ``num_replicas``,
capped at what the application's batch can spread over), with the user's batch
``min(M0 K, M_max)`` (``M0`` replicated, as the artifact's generator once did).
Under policy ``aryl`` a job without an agent keeps that batch, so it runs at most
``split_cap`` replicas (each at the application's minimum local batch or more);
a job with its Pollux agent re-chooses its batch and may use its whole range.
Its work is scaled (``work_scale``: every epoch shortened or stretched alike) so
that, alone on the fewest servers that hold its ``K`` replicas with that batch,
it runs exactly its trace duration.

The simulator's builders of a Pollux workload's jobs live here too:
``pollux_policy_jobs`` (policy ``pollux``: replica ranges, fixed-batch
applications) and ``aryl_policy_jobs`` (policy ``aryl``, with or without agents).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import _core
from ..model import Job, Server, as_records
from .pollux import Profiles, pollux_applications

#: Upper GPU-hour bound of each bucket and the applications drawn in it (evenly).
POLLUX_GPU_TIME_BUCKETS: Tuple[Tuple[float, Tuple[str, ...]], ...] = (
    (1.0, ("cifar10", "ncf")),
    (10.0, ("deepspeech2", "bert")),
    (100.0, ("yolov3",)),
    (math.inf, ("imagenet",)),
)

#: Columns ``pollux_profiles`` adds to a Pollux workload's.
MAPPING_COLUMNS = ("min_replicas", "max_replicas", "duration", "work_scale")


def pollux_app_choice(gpu_hours: Sequence[float], seed: int = 0) -> np.ndarray:
    """The application of each job by its GPU-hours (``POLLUX_GPU_TIME_BUCKETS``),
    ties within a bucket broken by a ``numpy`` generator seeded with ``seed``."""
    hours = np.asarray(gpu_hours, dtype=float)
    if hours.ndim != 1 or not np.all(np.isfinite(hours)) or np.any(hours < 0):
        raise ValueError("gpu_hours must be a 1-d sequence of finite values >= 0")
    draws = np.random.default_rng(seed).random(len(hours))
    out = np.empty(len(hours), dtype=object)
    low = 0.0
    for high, apps in POLLUX_GPU_TIME_BUCKETS:
        inside = (hours >= low) & (hours < high)
        pick = np.minimum((draws[inside] * len(apps)).astype(int), len(apps) - 1)
        out[inside] = np.asarray(apps, dtype=object)[pick]
        low = high
    return out


def compact_placement(replicas: int, node_gpus: int) -> List[int]:
    """GPUs per server of ``replicas`` one-GPU replicas on the fewest servers."""
    full, rest = divmod(int(replicas), int(node_gpus))
    return [node_gpus] * full + ([rest] if rest else [])


def _limits(app: Any) -> Tuple[float, float, int, int]:
    return (
        app.init_batch_size,
        app.max_batch_size,
        app.min_local_bsz,
        app.max_local_bsz,
    )


def user_batch(app: Any, replicas: int) -> int:
    """The user's global batch of a mapped job: ``M0`` per replica, at most ``M_max``."""
    return int(min(app.init_batch_size * replicas, app.max_batch_size))


def solo_time(app: Any, replicas: int, batch_size: float, node_gpus: int) -> float:
    """Seconds the whole application takes alone on ``compact_placement`` at a
    fixed global batch (no restart): the sum over its epochs of their length over
    the true progress rate."""
    args = (int(replicas), float(batch_size), int(node_gpus))
    return float(_cached(_solo_time, app, *args))


def max_mapped_replicas(app: Any, node_gpus: int) -> int:
    """The most replicas a mapped job of ``app`` may get: each keeps at least the
    minimum local batch within ``M_max``, and the profiles cover the placement."""
    return int(_cached(_most_replicas, app, int(node_gpus)))


_CACHE: Dict[Tuple[Any, ...], Tuple[Any, Any]] = {}


def _cached(compute: Callable[..., Any], app: Any, *args: Any) -> Any:
    """``compute(app, *args)``, computed once per application and arguments (the
    application is kept beside the value, so its id is never reused)."""
    key = (compute, id(app), *args)
    if key not in _CACHE:
        _CACHE[key] = (app, compute(app, *args))
    return _CACHE[key][1]


def _solo_time(app: Any, replicas: int, batch_size: float, node_gpus: int) -> float:
    core = app.core
    placement = compact_placement(replicas, node_gpus)
    atomic, accum = _core.fixed_batch(*_limits(app), replicas, batch_size)
    total = 0.0
    for epoch in range(core.completion_epoch + 1):
        length = core.epoch_progress(epoch + 1) - core.epoch_progress(epoch)
        total += length / core.progress_rate(placement, atomic, accum, epoch)
    return total


def _most_replicas(app: Any, node_gpus: int) -> int:
    most = max(1, int(app.max_batch_size // app.min_local_bsz))
    for k in range(most, 0, -1):
        try:
            app.core.step_time(compact_placement(k, node_gpus), app.min_local_bsz)
            return k
        except ValueError:
            continue
    return 1


def pollux_profiles(
    jobs: Any, seed: int = 0, node_gpus: int = 8, profiles: Profiles = None
) -> pd.DataFrame:
    """A Pollux workload for aryl jobs: each job gets an application by GPU-time.

    Parameters
    ----------
    jobs
        ``aryl.Job`` records (or dicts / a DataFrame of them), e.g. a scenario's.
    seed
        Seeds the choice within a GPU-time bucket; the same input and seed give
        the same workload.
    node_gpus
        GPUs per server of the cluster the jobs will run on (sizes the compact
        placement behind ``work_scale``).
    profiles
        The applications (see ``read_pollux_workload``; ``None``: the embedded six).

    Returns
    -------
    pandas.DataFrame
        A Pollux workload (``name, time, application, num_replicas, batch_size``)
        plus ``min_replicas``, ``max_replicas`` (the job's elastic range in
        replicas), ``duration`` (its trace duration: the scheduler's estimate at
        ``num_replicas``) and ``work_scale``. ``.attrs["applications"]`` holds
        the applications used. Run it with ``aryl.sim.simulate(..., policy="aryl")``
        and ``config={"agent": "pollux"}`` for Aryl+TunedJobs.
    """
    if (
        isinstance(node_gpus, bool)
        or not isinstance(node_gpus, (int, np.integer))
        or node_gpus < 1
    ):
        raise ValueError(f"node_gpus must be an integer >= 1, got {node_gpus!r}")
    records = as_records(jobs, Job, "job")
    apps = pollux_applications(profiles)
    gpu_hours = [
        j.duration * j.reference_workers * j.gpus_per_worker / 3600.0 for j in records
    ]
    chosen = pollux_app_choice(gpu_hours, seed)
    missing = sorted(set(chosen) - set(apps))
    if missing:
        raise ValueError(f"no profiles for application(s) {missing}")
    rows = [_mapped_row(j, apps[a], int(node_gpus)) for j, a in zip(records, chosen)]
    out = pd.DataFrame(
        rows,
        columns=[
            "name",
            "time",
            "application",
            "num_replicas",
            "batch_size",
            *MAPPING_COLUMNS,
        ],
    )
    out.attrs["applications"] = {a: apps[a] for a in sorted(set(out["application"]))}
    return out


def pollux_elastic(
    workload: pd.DataFrame, node_gpus: int = 4, factor: int = 2
) -> pd.DataFrame:
    """A Pollux workload made elastic for policy ``aryl``, as the paper's scenarios
    make a job elastic: each job keeps its ``num_replicas`` as its base demand and
    may grow to ``factor`` times it, capped by ``max_mapped_replicas`` of its
    application on nodes of ``node_gpus`` GPUs. The applications come from
    ``workload.attrs`` (else the embedded ones)."""
    for value, name in ((factor, "factor"), (node_gpus, "node_gpus")):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, np.integer))
            or value < 1
        ):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    apps = {**pollux_applications(), **dict(workload.attrs.get("applications") or {})}
    out = workload.copy()
    rows = list(zip(out["application"], out["num_replicas"].astype(int)))
    out["min_replicas"] = [k for _, k in rows]
    out["max_replicas"] = [
        max(min(int(factor) * k, max_mapped_replicas(apps[a], int(node_gpus))), k)
        for a, k in rows
    ]
    out.attrs = dict(workload.attrs)
    return out


def split_cap(app: Any, batch_size: float, node_gpus: int) -> int:
    """The most replicas a fixed global batch spreads over with every replica at
    the application's minimum local batch or more (and ``max_mapped_replicas``)."""
    return max(
        1,
        min(max_mapped_replicas(app, node_gpus), int(batch_size // app.min_local_bsz)),
    )


def _mapped_row(job: Job, app: Any, node_gpus: int) -> Dict[str, Any]:
    cap = max_mapped_replicas(app, node_gpus)
    d = job.gpus_per_worker
    low = min(job.min_workers * d, cap)
    high = min(job.max_workers * d, cap)
    replicas = min(max(job.reference_workers * d, low), high)
    batch = user_batch(app, replicas)
    scale = job.duration / solo_time(app, replicas, batch, node_gpus)
    return {
        "name": str(job.id),
        "time": float(job.submit_time),
        "application": app.name,
        "num_replicas": replicas,
        "batch_size": batch,
        "min_replicas": low,
        "max_replicas": high,
        "duration": float(job.estimated_duration),
        "work_scale": scale,
    }


# ---- a workload's jobs, as each policy of the simulator runs them -------------

#: Under policy "pollux", applications whose jobs keep a fixed global batch on one
#: replica (the artifact's ncf: 32,768); the others choose their batch.
POLLUX_FIXED_BATCH = {"ncf": 32768.0}

#: The most replicas a Pollux job may get (the artifact's simulator's cap).
POLLUX_MAX_REPLICAS = 64


def pollux_policy_jobs(
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
    low = optional_column(workload, "min_replicas", math.nan)
    high = optional_column(workload, "max_replicas", math.nan)
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


def optional_column(workload: pd.DataFrame, column: str, default: float) -> List[float]:
    """An optional numeric column of a Pollux workload (``default`` when absent)."""
    if column not in workload:
        return [default] * len(workload)
    return [float(v) for v in workload[column]]


def aryl_policy_jobs(
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
    replicas = workload["num_replicas"].astype(int).tolist()
    user_batch = workload["batch_size"].astype(float).tolist()
    low = optional_column(workload, "min_replicas", math.nan)
    high = optional_column(workload, "max_replicas", math.nan)
    given = optional_column(workload, "duration", math.nan)
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
