"""Scenario presets of the paper's §7.1, as seeded transformations of a job list.

The simulator never decides which jobs are elastic or heterogeneous; these functions do, in
the open, and return new jobs as a ``JobTable`` (inputs are untouched, order and ids are kept). Every
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

import math
import warnings
from typing import Any, Dict, get_args

import numpy as np

from aryl.defaults import (
    ELASTIC_GPU_SHARE,
    HETERO_EFFICIENCY,
    HETERO_SHARE,
    PREDICTION_ERROR_FRACTION,
    PREDICTION_MAX_ERROR,
)
from aryl.jobtable import JobTable
from aryl.model import Records
from aryl.typing import ScenarioName
from aryl.validation import did_you_mean

SCENARIOS = get_args(ScenarioName)

_CONFIG = {
    "baseline": {"policy": "fifo", "loaning": False},
    # basic has no hetero jobs: the factor has no effect there
    "basic": {"policy": "aryl", "hetero_efficiency": HETERO_EFFICIENCY},
    "advanced": {"policy": "aryl", "hetero_efficiency": HETERO_EFFICIENCY},
    "ideal": {"policy": "aryl", "hetero_efficiency": 1.0},
}


def _check_share(share: float, what: str) -> None:
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {share!r}")


def _count(share: float, n: int, what: str) -> int:
    """``round(share * n)``, half up, after checking ``share`` is in [0, 1]."""
    _check_share(share, what)
    return int(math.floor(share * n + 0.5))


def _gpu_time(jobs: JobTable) -> np.ndarray:
    """GPU-seconds of each job at the worker count ``duration`` was measured at."""
    time: np.ndarray = jobs.column("duration") * jobs.column("gpus_per_worker")
    time = time * jobs.column("reference_workers")
    return time


def _inelastic(jobs: JobTable, checkpoint: bool) -> JobTable:
    """Every job fixed at the worker count its ``duration`` was measured at."""
    w = jobs.column("reference_workers")
    return jobs.replace(
        min_workers=w,
        max_workers=w,
        hetero=np.zeros(len(jobs), dtype=bool),
        checkpoint=np.full(len(jobs), bool(checkpoint)),
    )


def _elastic(jobs: JobTable, chosen: np.ndarray, hetero: bool = False) -> JobTable:
    """The ``chosen`` jobs (a mask) over ``[w, 2w]``, anchored at their reference ``w``,
    any GPU type."""
    w = jobs.column("reference_workers")
    types = jobs.column("gpu_type").copy()
    types[chosen] = None
    return jobs.replace(
        min_workers=np.where(chosen, w, jobs.column("min_workers")),
        max_workers=np.where(chosen, 2 * w, jobs.column("max_workers")),
        gpu_type=types,
        hetero=np.where(chosen, hetero, jobs.column("hetero")),
    )


def _elastic_draw(
    jobs: JobTable, target: float, rng: np.random.Generator, name: str
) -> np.ndarray:
    """Indices made elastic: the shortest prefix, in Efraimidis–Spirakis key order, of the
    >= 8-GPU candidates whose GPU-time reaches ``target`` of all jobs' GPU-time."""
    gpu_time = _gpu_time(jobs)
    candidates = np.flatnonzero(
        jobs.column("gpus_per_worker") * jobs.column("max_workers") >= 8
    )
    weights = gpu_time[candidates]
    with np.errstate(divide="ignore"):
        # w == 0 -> -inf, drawn last
        keys = np.log(rng.random(len(candidates))) / weights
    total = float(np.cumsum(gpu_time)[-1]) if len(gpu_time) else 0.0  # summed in order
    goal = target * total
    order = np.argsort(-keys, kind="stable")
    reached = np.cumsum(weights[order])  # in draw order, as the draw adds them up
    # Take candidates while the share reached before each one is short of the goal.
    before = np.r_[0.0, reached[:-1]]
    taken = int(np.count_nonzero(before < goal)) if len(order) else 0
    final = float(reached[taken - 1]) if taken else 0.0
    if final < goal:
        warnings.warn(
            f"scenario {name!r}: the {len(candidates)} jobs with >= 8 GPUs hold only "
            f"{final / total:.1%} of the GPU-time, short of the "
            f"elastic_gpu_share {target:.1%}; all of them are elastic",
            stacklevel=3,
        )
    return candidates[order[:taken]]


def scenario(
    jobs: Records,
    name: ScenarioName,
    seed: int = 0,
    elastic_gpu_share: float = ELASTIC_GPU_SHARE,
    hetero_share: float = HETERO_SHARE,
    checkpoint: bool = True,
) -> JobTable:
    """The jobs of preset ``name`` (see the module docstring for the exact rules).

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts, a DataFrame or a ``JobTable``); not modified.
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
    JobTable
        The new jobs (a read-only sequence of ``Job`` held as columns), same order and
        ids. Elastic jobs keep their work.
    """
    if name not in SCENARIOS:
        raise ValueError(
            f"unknown scenario {name!r}{did_you_mean(str(name), SCENARIOS)}; expected "
            f"one of {', '.join(SCENARIOS)}"
        )
    _check_share(elastic_gpu_share, "elastic_gpu_share")
    given = JobTable.of(jobs)
    n_hetero, rng = (
        _count(hetero_share, len(given), "hetero_share"),
        np.random.default_rng(seed),
    )
    out = _inelastic(given, checkpoint)
    if name == "ideal":
        return _elastic(out, np.ones(len(out), dtype=bool), hetero=True)
    if name == "baseline":
        return out
    chosen = np.zeros(len(out), dtype=bool)
    chosen[_elastic_draw(out, elastic_gpu_share, rng, name)] = True
    out = _elastic(out, chosen)
    if name == "advanced":
        unpinned = np.flatnonzero(out.column("gpu_type") == None)  # noqa: E711 (elementwise)
        picked = rng.choice(unpinned, size=min(n_hetero, len(unpinned)), replace=False)
        hetero = out.column("hetero").copy()
        hetero[picked] = True
        out = out.replace(hetero=hetero)
    return out


def scenario_config(name: ScenarioName) -> Dict[str, Any]:
    """Simulator settings preset ``name`` implies (a new dict of ``Config`` overrides).

    ``baseline``: FIFO without loaning; ``basic`` and ``advanced``: the aryl policy with
    ``hetero_efficiency`` 0.7 (only ``advanced`` has hetero jobs); ``ideal``: aryl at 1.0.
    """
    if name not in SCENARIOS:
        raise ValueError(
            f"unknown scenario {name!r}{did_you_mean(str(name), SCENARIOS)}; expected "
            f"one of {', '.join(SCENARIOS)}"
        )
    return dict(_CONFIG[name])


def apply_prediction_error(
    jobs: Records,
    fraction: float = PREDICTION_ERROR_FRACTION,
    max_error: float = PREDICTION_MAX_ERROR,
    seed: int = 0,
) -> JobTable:
    """Wrong running-time estimates, as in the paper's ``table:inaccurate_profiler``.

    Parameters
    ----------
    jobs
        The jobs (``Job``, dicts, a DataFrame or a ``JobTable``); not modified.
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
    JobTable
        New jobs; those not drawn get ``estimated_duration = duration``.
    """
    if not 0.0 <= max_error < 1.0:
        raise ValueError(f"max_error must be in [0, 1), got {max_error!r}")
    table = JobTable.of(jobs)
    estimate = table.column("duration").copy()
    rng = np.random.default_rng(seed)
    wrong = rng.choice(
        len(table), size=_count(fraction, len(table), "fraction"), replace=False
    )
    estimate[wrong] *= 1.0 + rng.uniform(-max_error, max_error, size=len(wrong))
    return table.replace(estimated_duration=estimate)


def describe(jobs: Records) -> Dict[str, float]:
    """Counts and shares (of jobs and of GPU-time) of elastic, hetero and checkpointed jobs.

    GPU-time is ``duration * gpus_per_worker * reference_workers`` (GPU-seconds at the worker
    count ``duration`` was measured at). Returns ``jobs``, ``gpu_time`` and, for each kind in
    ``elastic``, ``hetero``, ``checkpoint``: ``{kind}_jobs``, ``{kind}_share`` (of the jobs)
    and ``{kind}_gpu_time_share`` (shares are 0 for an empty list).
    """
    table = JobTable.of(jobs)
    gpu_time = _gpu_time(table)
    total = float(gpu_time.sum())
    out: Dict[str, float] = {"jobs": len(table), "gpu_time": total}
    elastic = table.column("max_workers") > table.column("min_workers")
    for kind, chosen in (
        ("elastic", elastic),
        ("hetero", table.column("hetero")),
        ("checkpoint", table.column("checkpoint")),
    ):
        count = int(np.count_nonzero(chosen))
        out[f"{kind}_jobs"] = count
        out[f"{kind}_share"] = count / len(table) if len(table) else 0.0
        out[f"{kind}_gpu_time_share"] = (
            float(gpu_time[chosen].sum()) / total if total else 0.0
        )
    return out
