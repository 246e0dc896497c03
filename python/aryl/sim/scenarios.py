"""Scenario presets of the paper's §7.1, as seeded transformations of a job list.

The simulator never decides which jobs are elastic or heterogeneous; these functions do, in
the open, and return new ``Job`` objects (inputs are untouched, order and ids are kept).

* ``baseline`` — every job inelastic as in the trace (an elastic input job is fixed at its
  ``max_workers``, whose ``duration`` it already carries), no heterogeneous training;
  run with FIFO and no loaning (``scenario_config``).
* ``basic`` (the paper's default) — "only large jobs with good scalability (~5% of all jobs)
  support elastic scaling within a given range". ``round(elastic_share * n)`` jobs (half up)
  are drawn among the *candidates*, jobs with ``gpus_per_worker * max_workers >= 8``, by a
  seeded weighted random sample without replacement with weight = GPU-time
  (``duration * gpus_per_worker * max_workers``): Efraimidis–Spirakis keys ``log(u) / w``,
  ``u ~ U(0, 1)`` from ``np.random.default_rng(seed)``, the largest keys win, ties by input
  order. Long, wide jobs are thus very likely chosen, but the pick varies with the seed.
  With fewer candidates than wanted, all candidates become elastic and a ``UserWarning``
  says so.
* ``advanced`` — ``basic`` (the same elastic jobs for the same seed) plus
  ``round(hetero_share * n)`` jobs drawn uniformly (same generator, after the elastic draw)
  among jobs with ``gpu_type is None`` (not pinned to a GPU type) get ``hetero=True``; the
  two sets may overlap. The simulator runs mixed-type jobs at 70% efficiency.
* ``ideal`` — every job elastic as below and ``hetero=True`` (jobs pinned to a GPU type stay
  ``hetero=False``: they cannot mix types by definition); the simulator runs mixed-type jobs
  at 100% efficiency. Efficiency is the simulator ``Config`` field ``hetero_efficiency``;
  ``scenario_config(name)`` returns these overrides.

**Elastic range.** The paper gives ranges, not a rule. A job that runs ``w`` workers in the
trace gets ``[w, 2w]`` workers of the same ``gpus_per_worker`` (a single 8-GPU worker gets
``[1, 2]``) and ``duration * w / (2w)`` at ``2w`` workers, so its work
``W = duration x max_workers`` is unchanged and at ``w`` workers it runs exactly as long as
in the trace. Base demand stays the trace's demand, so Basic never needs more GPUs than
Baseline to start a job; the extra workers only ever shorten it (linear scaling). An elastic
job may run on any GPU type (``gpu_type=None``): the paper places elastic jobs on loaned
inference servers first (§5.3), which a job pinned to the training GPU could not use.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Dict, List

import numpy as np

from aryl.model import Job, Records, as_records

SCENARIOS = ("baseline", "basic", "advanced", "ideal")

_CONFIG = {
    "baseline": {"policy": "fifo", "loaning": False},
    "basic": {"policy": "aryl", "hetero_efficiency": 0.7},  # no hetero jobs: no effect
    "advanced": {"policy": "aryl", "hetero_efficiency": 0.7},
    "ideal": {"policy": "aryl", "hetero_efficiency": 1.0},
}


def _count(share: float, n: int, what: str) -> int:
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {share!r}")
    return int(math.floor(share * n + 0.5))


def _gpu_time(job: Job) -> float:
    return job.duration * job.gpus_per_worker * job.max_workers


def _inelastic(job: Job) -> Job:
    """``job`` fixed at the worker count its ``duration`` was measured at."""
    w = job.reference_workers
    return dataclasses.replace(job, min_workers=w, max_workers=w, hetero=False)


def _elastic(job: Job) -> Job:
    """``job`` (inelastic, ``w`` workers) over ``[w, 2w]``, anchored at ``w``, any GPU type."""
    w = job.max_workers
    return dataclasses.replace(job, min_workers=w, max_workers=2 * w, reference_workers=w,
                               gpu_type=None)


def scenario(jobs: Records, name: str, seed: int = 0, elastic_share: float = 0.05,
             hetero_share: float = 0.10) -> List[Job]:
    """The jobs of preset ``name`` (see the module docstring for the exact rules).

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts or a DataFrame); not modified.
    name
        One of ``SCENARIOS``; anything else is a ``ValueError``.
    seed
        Seeds the elastic (``basic``, ``advanced``) and hetero (``advanced``) draws.
    elastic_share, hetero_share
        Fractions of *all* jobs made elastic / heterogeneous, in ``[0, 1]``.

    Returns
    -------
    list of Job
        New jobs, same order and ids. Elastic jobs keep their work ``W``.
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    out = [_inelastic(j) for j in as_records(jobs, Job, "job")]
    n, rng = len(out), np.random.default_rng(seed)
    n_elastic = _count(elastic_share, n, "elastic_share")
    n_hetero = _count(hetero_share, n, "hetero_share")
    if name == "baseline":
        return out
    if name == "ideal":
        return [dataclasses.replace(_elastic(j), hetero=j.gpu_type is None) for j in out]
    candidates = [i for i, j in enumerate(out) if j.gpus_per_worker * j.max_workers >= 8]
    if n_elastic > len(candidates):
        warnings.warn(f"scenario {name!r}: only {len(candidates)} jobs have >= 8 GPUs, fewer than "
                      f"the {n_elastic} elastic jobs wanted; all of them are elastic", stacklevel=2)
    weights = np.array([_gpu_time(out[i]) for i in candidates], dtype=float)
    with np.errstate(divide="ignore"):
        keys = np.log(rng.random(len(candidates))) / weights  # w == 0 -> -inf, drawn last
    for k in np.argsort(-keys, kind="stable")[:n_elastic]:
        out[candidates[k]] = _elastic(out[candidates[k]])
    if name == "advanced":
        unpinned = [i for i, j in enumerate(out) if j.gpu_type is None]
        for i in rng.choice(unpinned, size=min(n_hetero, len(unpinned)), replace=False):
            out[i] = dataclasses.replace(out[i], hetero=True)
    return out


def scenario_config(name: str) -> Dict[str, Any]:
    """Simulator settings preset ``name`` implies (a new dict of ``Config`` overrides).

    ``baseline``: FIFO without loaning; ``basic`` and ``advanced``: the aryl policy with
    ``hetero_efficiency`` 0.7 (only ``advanced`` has hetero jobs); ``ideal``: aryl at 1.0.
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    return dict(_CONFIG[name])


def apply_prediction_error(jobs: Records, fraction: float = 0.2, max_error: float = 0.25,
                           seed: int = 0) -> List[Job]:
    """Wrong running-time estimates, as in the paper's ``table:inaccurate_profiler``.

    Parameters
    ----------
    jobs
        The jobs (``Job``, dicts or a DataFrame); not modified.
    fraction
        Share of jobs, in ``[0, 1]``, with a wrong estimate: ``round(fraction * n)`` (half up)
        jobs drawn uniformly without replacement.
    max_error
        In ``[0, 1)``: a wrong job gets ``estimated_duration = duration * (1 + e)`` with
        ``e ~ U[-max_error, +max_error]``.
    seed
        Seeds the draws (``np.random.default_rng``).

    Returns
    -------
    list of Job
        New jobs; those not drawn get ``estimated_duration = duration``.
    """
    if not 0.0 <= max_error < 1.0:
        raise ValueError(f"max_error must be in [0, 1), got {max_error!r}")
    out = [dataclasses.replace(j, estimated_duration=j.duration)
           for j in as_records(jobs, Job, "job")]
    rng = np.random.default_rng(seed)
    wrong = rng.choice(len(out), size=_count(fraction, len(out), "fraction"), replace=False)
    for i, e in zip(wrong, rng.uniform(-max_error, max_error, size=len(wrong))):
        out[i] = dataclasses.replace(out[i], estimated_duration=out[i].duration * (1.0 + e))
    return out


def describe(jobs: Records) -> Dict[str, float]:
    """Counts and GPU-time shares of elastic and hetero jobs.

    GPU-time is ``duration * gpus_per_worker * max_workers`` (GPU-seconds at full size).
    Returns ``jobs``, ``gpu_time``, ``elastic_jobs``, ``elastic_share``,
    ``elastic_gpu_time_share``, ``hetero_jobs``, ``hetero_share``, ``hetero_gpu_time_share``
    (shares are 0 for an empty list).
    """
    jobs = as_records(jobs, Job, "job")
    total = sum(_gpu_time(j) for j in jobs)
    out: Dict[str, float] = {"jobs": len(jobs), "gpu_time": total}
    for kind, pick in (("elastic", lambda j: j.elastic), ("hetero", lambda j: j.hetero)):
        chosen = [j for j in jobs if pick(j)]
        out[f"{kind}_jobs"] = len(chosen)
        out[f"{kind}_share"] = len(chosen) / len(jobs) if jobs else 0.0
        out[f"{kind}_gpu_time_share"] = sum(map(_gpu_time, chosen)) / total if total else 0.0
    return out
