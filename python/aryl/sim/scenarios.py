"""Scenario presets of the paper's §7.1, as seeded transformations of a job list.

The simulator never decides which jobs are elastic or heterogeneous; these functions do, in
the open, and return new ``Job`` objects (inputs are untouched, order and ids are kept). Every
rule below is exact: the same jobs, name, seed and options give the same output.

**GPU-time** of a job is ``duration * gpus_per_worker * reference_workers``: GPU-seconds at
the worker count its ``duration`` was measured at (the trace's), unchanged by elasticity.

* ``baseline`` — every job inelastic as in the trace, fixed at its ``reference_workers``
  (whose ``duration`` it carries), ``hetero=False``; run with FIFO and no loaning
  (``scenario_config``).
* ``basic`` (the paper's default) — "only large jobs with good scalability (~5% of all jobs)
  support elastic scaling", and those jobs "account for 36% of training cluster resources"
  (§2.2). The target is the GPU-time share, ``elastic_gpu_share`` (default 0.36): the
  *candidates* are the jobs with ``gpus_per_worker * reference_workers >= 8``; each gets an
  Efraimidis–Spirakis key ``log(u) / w`` with ``w`` its GPU-time and ``u ~ U(0, 1)`` drawn
  from ``np.random.default_rng(seed)`` (one draw per candidate, in input order); candidates
  are taken in decreasing key order (ties: input order) — a seeded weighted sample without
  replacement — and **the draw stops at the first candidate whose addition brings the elastic
  GPU-time to at least ``elastic_gpu_share`` of the total GPU-time of all jobs** (that
  candidate is included, so the share reaches or just passes the target; a target of 0 makes
  nothing elastic). If all candidates together fall short, all become elastic and a
  ``UserWarning`` says so. Long, wide jobs are thus very likely chosen, but the pick varies
  with the seed. On the embedded ITP trace 1.5% of the jobs (237) reach 36% (its large jobs
  are heavier than the paper's); ``describe`` reports both shares.
* ``advanced`` — ``basic`` (the same elastic jobs for the same seed) plus
  ``round(hetero_share * n)`` jobs (half up; ``n`` = all jobs) drawn uniformly without
  replacement (same generator, after the elastic draw) among the jobs with ``gpu_type is
  None`` (elastic jobs included) get ``hetero=True``. Mixed-type jobs run at 70% efficiency.
* ``ideal`` — every job elastic as below **and** heterogeneous, at 100% efficiency: pinned
  jobs too lose their ``gpu_type`` (the paper's Ideal: "all jobs support scaling and
  heterogeneous training with ideal performance").

Efficiency is the simulator ``Config`` field ``hetero_efficiency``; ``scenario_config(name)``
returns these overrides.

**Elastic range.** The paper gives ranges, not a rule. A job that runs ``w`` workers in the
trace gets ``[w, 2w]`` workers of the same ``gpus_per_worker`` (a single 8-GPU worker gets
``[1, 2]``), ``reference_workers = w`` and its trace ``duration``: at ``w`` workers it runs
exactly as in the trace, and the throughput curve (linear by default, so ``duration / 2`` at
``2w``) is anchored there. Base demand stays the trace's demand, so Basic never needs more
GPUs than Baseline to start a job; extra workers only ever shorten it. An elastic job may run
on any GPU type (``gpu_type=None``): the paper places elastic jobs on loaned inference
servers first (§5.3), which a job pinned to the training GPU could not use.

**Checkpoints.** Every scenario sets ``checkpoint`` on every job to its ``checkpoint`` option
(default True, as the paper's evaluation assumes: a preempted job resumes after the 63-s
restart overhead; False makes it start over).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Dict, List, Tuple, get_args

import numpy as np

from aryl.model import Job, Records, as_records
from aryl.typing import ScenarioName

SCENARIOS = get_args(ScenarioName)

_CONFIG = {
    "baseline": {"policy": "fifo", "loaning": False},
    "basic": {"policy": "aryl", "hetero_efficiency": 0.7},  # no hetero jobs: no effect
    "advanced": {"policy": "aryl", "hetero_efficiency": 0.7},
    "ideal": {"policy": "aryl", "hetero_efficiency": 1.0},
}


def _check_share(share: float, what: str) -> None:
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {share!r}")


def _count(share: float, n: int, what: str) -> int:
    """``round(share * n)``, half up, after checking ``share`` is in [0, 1]."""
    _check_share(share, what)
    return int(math.floor(share * n + 0.5))


def _gpu_time(job: Job) -> float:
    """GPU-seconds at the worker count ``duration`` was measured at."""
    return job.duration * job.gpus_per_worker * job.reference_workers


def _inelastic(job: Job, **changes: Any) -> Job:
    """``job`` fixed at the worker count its ``duration`` was measured at (plus ``changes``)."""
    w = job.reference_workers
    return dataclasses.replace(job, min_workers=w, max_workers=w, hetero=False, **changes)


def _elastic(job: Job, **changes: Any) -> Job:
    """``job`` over ``[w, 2w]``, anchored at its reference ``w``, any GPU type (plus ``changes``)."""
    w = job.reference_workers
    return dataclasses.replace(job, min_workers=w, max_workers=2 * w, reference_workers=w,
                               gpu_type=None, **{"hetero": False, **changes})


def _elastic_draw(jobs: List[Job], target: float, rng: np.random.Generator, name: str) -> List[int]:
    """Indices made elastic: the shortest prefix, in Efraimidis–Spirakis key order, of the
    >= 8-GPU candidates whose GPU-time reaches ``target`` of all jobs' GPU-time."""
    candidates = [i for i, j in enumerate(jobs) if j.gpus_per_worker * j.max_workers >= 8]
    weights = np.array([_gpu_time(jobs[i]) for i in candidates], dtype=float)
    with np.errstate(divide="ignore"):
        keys = np.log(rng.random(len(candidates))) / weights  # w == 0 -> -inf, drawn last
    goal = target * sum(_gpu_time(j) for j in jobs)
    chosen: List[int] = []
    reached = 0.0
    for k in np.argsort(-keys, kind="stable"):
        if reached >= goal:
            break
        chosen.append(candidates[k])
        reached += weights[k]
    if reached < goal:
        warnings.warn(f"scenario {name!r}: the {len(candidates)} jobs with >= 8 GPUs hold only "
                      f"{reached / (goal / target):.1%} of the GPU-time, short of the "
                      f"elastic_gpu_share {target:.1%}; all of them are elastic", stacklevel=3)
    return chosen


def scenario(jobs: Records, name: ScenarioName, seed: int = 0, elastic_gpu_share: float = 0.36,
             hetero_share: float = 0.10, checkpoint: bool = True) -> List[Job]:
    """The jobs of preset ``name`` (see the module docstring for the exact rules).

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts or a DataFrame); not modified.
    name
        One of ``SCENARIOS``; anything else is a ``ValueError``.
    seed
        Seeds the elastic (``basic``, ``advanced``) and hetero (``advanced``) draws.
    elastic_gpu_share
        ``basic``/``advanced``: share of all jobs' GPU-time, in ``[0, 1]``, that the elastic
        jobs reach (the paper: 36%).
    hetero_share
        ``advanced``: fraction of *all* jobs made heterogeneous, in ``[0, 1]``.
    checkpoint
        Every job's ``checkpoint`` flag (default True: preempted jobs resume).

    Returns
    -------
    list of Job
        New jobs, same order and ids. Elastic jobs keep their work.
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    _check_share(elastic_gpu_share, "elastic_gpu_share")
    given = as_records(jobs, Job, "job")
    n_hetero, rng = _count(hetero_share, len(given), "hetero_share"), np.random.default_rng(seed)
    if name == "ideal":  # one replace per job: this runs on traces of 100k jobs
        return [_elastic(j, hetero=True, checkpoint=bool(checkpoint)) for j in given]
    out = [_inelastic(j, checkpoint=bool(checkpoint)) for j in given]
    if name == "baseline":
        return out
    for i in _elastic_draw(out, elastic_gpu_share, rng, name):
        out[i] = _elastic(out[i])
    if name == "advanced":
        unpinned = [i for i, j in enumerate(out) if j.gpu_type is None]
        for i in rng.choice(unpinned, size=min(n_hetero, len(unpinned)), replace=False):
            out[i] = dataclasses.replace(out[i], hetero=True)
    return out


def scenario_config(name: ScenarioName) -> Dict[str, Any]:
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
    """Counts and shares (of jobs and of GPU-time) of elastic, hetero and checkpointed jobs.

    GPU-time is ``duration * gpus_per_worker * reference_workers`` (GPU-seconds at the worker
    count ``duration`` was measured at). Returns ``jobs``, ``gpu_time`` and, for each kind in
    ``elastic``, ``hetero``, ``checkpoint``: ``{kind}_jobs``, ``{kind}_share`` (of the jobs)
    and ``{kind}_gpu_time_share`` (shares are 0 for an empty list).
    """
    jobs = as_records(jobs, Job, "job")
    total = sum(_gpu_time(j) for j in jobs)
    out: Dict[str, float] = {"jobs": len(jobs), "gpu_time": total}
    kinds: Tuple[Tuple[str, Callable[[Job], bool]], ...] = (
        ("elastic", lambda j: j.elastic), ("hetero", lambda j: j.hetero),
        ("checkpoint", lambda j: j.checkpoint))
    for kind, pick in kinds:
        chosen = [j for j in jobs if pick(j)]
        out[f"{kind}_jobs"] = len(chosen)
        out[f"{kind}_share"] = len(chosen) / len(jobs) if jobs else 0.0
        out[f"{kind}_gpu_time_share"] = sum(map(_gpu_time, chosen)) / total if total else 0.0
    return out
