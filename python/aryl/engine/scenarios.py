"""Scenario presets of the paper's §7.1, as seeded transformations of a job list.

The simulator never decides which jobs are elastic or heterogeneous; these functions do, in
the open, and return new jobs as a ``JobTable`` (inputs are untouched, order and ids are kept). Every
rule below is exact: the same jobs, name, seed and options give the same output.

**GPU-time** of a job is ``duration * gpus_per_worker * reference_workers``: GPU-seconds at
the worker count its ``duration`` was measured at (the trace's), unchanged by elasticity.

* ``baseline`` — every job inelastic as in the trace, fixed at its ``reference_workers``
  (whose ``duration`` it carries), ``hetero=False``; run with FIFO and no loaning
  (``scenario_config``).
* ``basic`` (the paper's default) — "only large jobs with good scalability ... (~5% of all
  jobs) support elastic scaling within a given range" (§7.1), jobs that "account for 36% of
  training cluster resources" (§3). The two figures pick different jobs on most traces, so
  ``elastic_selection`` chooses the reading (docs/model.md says why the default is
  ``"gpu_time"``). The *candidates* are the jobs with ``gpus_per_worker * max_workers >= 8``.

  - ``"gpu_time"`` (default): the target is the GPU-time share, ``elastic_gpu_share``
    (default 0.36). Each candidate gets an Efraimidis–Spirakis key ``log(u) / w`` with ``w``
    its GPU-time and ``u ~ U(0, 1)`` drawn from ``np.random.default_rng(seed)`` (one draw per
    candidate, in input order); candidates are taken in decreasing key order (ties: input
    order) — a seeded weighted sample without replacement — and **the draw stops at the first
    candidate whose addition brings the elastic GPU-time to at least ``elastic_gpu_share`` of
    the total GPU-time of all jobs** (that candidate is included, so the share reaches or just
    passes the target; a target of 0 makes nothing elastic). If all candidates together fall
    short, all become elastic and a ``UserWarning`` says so. Long, wide jobs are thus very
    likely chosen, but the pick varies with the seed. On the embedded ITP trace 1.5% of the
    jobs (237) reach 36% (its large jobs are heavier than the paper's); ``describe`` reports
    both shares.
  - ``"jobs"``: ``round(elastic_job_share * n)`` jobs (half up; ``n`` = all jobs, default
    share 0.05), the candidates of largest GPU-time first (ties: input order); no draw, the
    seed plays no part. If there are fewer candidates, all become elastic and a
    ``UserWarning`` says so. On the embedded ITP trace the 790 jobs hold 80% of the GPU-time.
* ``advanced`` — ``basic`` (the same elastic jobs for the same seed) plus
  ``round(hetero_share * n)`` jobs (half up; ``n`` = all jobs) drawn uniformly without
  replacement (same generator, after the elastic draw) among the jobs with ``gpu_type is
  None`` (elastic jobs included) get ``hetero=True``. Mixed-type jobs run at 70% efficiency.
* ``ideal`` — every job elastic over the same range **and** heterogeneous, at 100% efficiency: pinned
  jobs too lose their ``gpu_type`` (the paper's Ideal: "all jobs support scaling and
  heterogeneous training with ideal performance").

Efficiency is the simulator ``Config`` field ``hetero_efficiency``; ``scenario_config(name)``
returns these overrides.

**Elastic range.** The paper gives ranges, not a rule ("within a given range"). A job that
runs ``w`` workers in the trace gets ``[w, floor(elastic_range * w)]`` workers of the same
``gpus_per_worker`` (default ``elastic_range`` 2: a single 8-GPU worker gets ``[1, 2]``), at
most ``elastic_max_gpus // gpus_per_worker`` when that is given (``elastic_range=math.inf``
with ``elastic_max_gpus`` the cluster's GPUs: "bounded by the cluster"), ``reference_workers
= w`` and its trace ``duration``: at ``w`` workers it runs exactly as in the trace, and the
throughput curve (linear by default, so ``duration / 2`` at ``2w``) is anchored there. Base
demand stays the trace's demand, so Basic never needs more GPUs than Baseline to start a job;
extra workers only ever shorten it. An elastic job may run on any GPU type
(``gpu_type=None``): the paper places elastic jobs on loaned inference servers first (§5.3),
which a job pinned to the training GPU could not use.

**The elastic bound.** ``elastic_bound(jobs)`` is the most elasticity could cut mean running
time on a scenario's jobs: every elastic job at its ``max_workers`` on reference GPUs from
start to end, on the linear curve, every other job at its trace duration.

**Checkpoints.** Every scenario sets ``checkpoint`` on every job to its ``checkpoint`` option
(default True, as the paper's evaluation assumes: a preempted job resumes after the 63-s
restart overhead; False makes it start over).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Dict, Optional, get_args

import numpy as np

from aryl import validation
from aryl.defaults import (
    ELASTIC_GPU_SHARE,
    ELASTIC_JOB_SHARE,
    ELASTIC_RANGE,
    ELASTIC_SELECTION,
    HETERO_EFFICIENCY,
    HETERO_SHARE,
    PREDICTION_ERROR_FRACTION,
    PREDICTION_MAX_ERROR,
)
from aryl.jobtable import JobTable
from aryl.model import Records
from aryl.typing import ElasticSelection, ScenarioName
from aryl.validation import did_you_mean

SCENARIOS = get_args(ScenarioName)
ELASTIC_SELECTIONS = get_args(ElasticSelection)

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


def _elastic(
    jobs: JobTable,
    chosen: np.ndarray,
    hetero: bool = False,
    factor: float = ELASTIC_RANGE,
    max_gpus: Optional[int] = None,
) -> JobTable:
    """The ``chosen`` jobs (a mask) over ``[w, floor(factor * w)]`` (at most ``max_gpus``
    GPUs, never below ``w``), anchored at their reference ``w``, any GPU type."""
    w = jobs.column("reference_workers")
    gpus = jobs.column("gpus_per_worker")
    cap = np.full(len(jobs), np.inf) if max_gpus is None else max_gpus // gpus
    with np.errstate(invalid="ignore"):  # inf * 0 never happens: w >= 1
        top = np.maximum(w, np.minimum(np.floor(factor * w), cap))
    types = jobs.column("gpu_type").copy()
    types[chosen] = None
    return jobs.replace(
        min_workers=np.where(chosen, w, jobs.column("min_workers")),
        max_workers=np.where(chosen, top.astype(np.int64), jobs.column("max_workers")),
        gpu_type=types,
        hetero=np.where(chosen, hetero, jobs.column("hetero")),
    )


def _candidates(jobs: JobTable) -> np.ndarray:
    """Indices of the jobs that can scale: 8 GPUs or more at their largest."""
    return np.flatnonzero(
        jobs.column("gpus_per_worker") * jobs.column("max_workers") >= 8
    )


def _largest_jobs(jobs: JobTable, share: float, name: str) -> np.ndarray:
    """Indices made elastic by share of jobs: ``round(share * n)`` candidates, largest
    GPU-time first (ties: input order)."""
    candidates = _candidates(jobs)
    wanted = _count(share, len(jobs), "elastic_job_share")
    if wanted > len(candidates):
        warnings.warn(
            f"scenario {name!r}: only {len(candidates)} jobs have >= 8 GPUs, fewer than "
            f"the {wanted} that elastic_job_share {share:.1%} asks for; all of them are "
            "elastic",
            stacklevel=3,
        )
    order = np.argsort(-_gpu_time(jobs)[candidates], kind="stable")
    return candidates[order[:wanted]]


def _elastic_draw(
    jobs: JobTable, target: float, rng: np.random.Generator, name: str
) -> np.ndarray:
    """Indices made elastic: the shortest prefix, in Efraimidis–Spirakis key order, of the
    >= 8-GPU candidates whose GPU-time reaches ``target`` of all jobs' GPU-time."""
    gpu_time = _gpu_time(jobs)
    candidates = _candidates(jobs)
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
    *,
    elastic_selection: ElasticSelection = ELASTIC_SELECTION,
    elastic_job_share: float = ELASTIC_JOB_SHARE,
    elastic_range: float = ELASTIC_RANGE,
    elastic_max_gpus: Optional[int] = None,
) -> JobTable:
    """The jobs of preset ``name`` (see the module docstring for the exact rules).

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts, a DataFrame or a ``JobTable``); not modified.
    name
        One of ``SCENARIOS``; anything else is a ``ValueError``.
    seed
        Seeds the elastic (``basic``, ``advanced``, by GPU-time) and hetero (``advanced``)
        draws.
    elastic_gpu_share
        ``basic``/``advanced`` with ``elastic_selection="gpu_time"``: share of all jobs'
        GPU-time, in ``[0, 1]``, that the elastic jobs reach (the paper: 36%).
    hetero_share
        ``advanced``: fraction of *all* jobs made heterogeneous, in ``[0, 1]``.
    checkpoint
        Every job's ``checkpoint`` flag (default True: preempted jobs resume).
    elastic_selection
        How ``basic``/``advanced`` pick their elastic jobs: ``"gpu_time"`` (a seeded draw
        up to ``elastic_gpu_share`` of the GPU-time) or ``"jobs"`` (``elastic_job_share``
        of all jobs, largest GPU-time first).
    elastic_job_share
        With ``elastic_selection="jobs"``: share of all jobs, in ``[0, 1]``, made elastic
        (the paper: "~5% of all jobs").
    elastic_range
        An elastic job trace-run at ``w`` workers scales up to ``floor(elastic_range * w)``
        (>= 1; ``math.inf`` needs ``elastic_max_gpus``). Also ``ideal``'s range.
    elastic_max_gpus
        At most this many GPUs for an elastic job at its largest (e.g. the cluster's);
        None: no cap beyond the range.

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
    _check_share(elastic_job_share, "elastic_job_share")
    if elastic_selection not in ELASTIC_SELECTIONS:
        raise ValueError(
            f"unknown elastic_selection {elastic_selection!r}; expected one of "
            f"{', '.join(ELASTIC_SELECTIONS)}"
        )
    factor = validation.real(elastic_range, "elastic_range", 1.0, finite=False)
    if elastic_max_gpus is not None:
        elastic_max_gpus = validation.integer(elastic_max_gpus, "elastic_max_gpus", 1)
    elif math.isinf(factor):
        raise ValueError(
            "elastic_range=inf needs elastic_max_gpus (the cluster's GPUs)"
        )
    given = JobTable.of(jobs)
    n_hetero, rng = (
        _count(hetero_share, len(given), "hetero_share"),
        np.random.default_rng(seed),
    )
    out = _inelastic(given, checkpoint)
    if name == "ideal":
        everyone = np.ones(len(out), dtype=bool)
        return _elastic(out, everyone, True, factor, elastic_max_gpus)
    if name == "baseline":
        return out
    chosen = np.zeros(len(out), dtype=bool)
    if elastic_selection == "jobs":
        chosen[_largest_jobs(out, elastic_job_share, name)] = True
    else:
        chosen[_elastic_draw(out, elastic_gpu_share, rng, name)] = True
    out = _elastic(out, chosen, False, factor, elastic_max_gpus)
    if name == "advanced":
        unpinned = np.flatnonzero(out.column("gpu_type") == None)  # noqa: E711 (elementwise)
        picked = rng.choice(unpinned, size=min(n_hetero, len(unpinned)), replace=False)
        hetero = out.column("hetero").copy()
        hetero[picked] = True
        out = out.replace(hetero=hetero)
    return out


def elastic_bound(jobs: Records) -> Dict[str, float]:
    """The most elasticity could cut the mean running time of ``jobs`` (a scenario's).

    Every job runs its ``duration`` at ``reference_workers`` on reference GPUs; an elastic
    job (``max_workers > reference_workers``) at its ``max_workers`` from start to end
    would run ``duration * reference_workers / max_workers`` on the linear curve. No
    queue, policy or loaned GPU can make a job shorter than that (imperfect scaling and
    slower GPUs only lengthen it), so the mean running time of any run of these jobs
    falls by at most ``reduction`` seconds.

    Parameters
    ----------
    jobs
        The scenario's jobs (``Job``, dicts, a DataFrame or a ``JobTable``).

    Returns
    -------
    dict
        ``jobs``, ``elastic_jobs``, ``mean_running_time`` (s, every job at its reference
        workers), ``reduction`` (s, the most elasticity removes from that mean) and
        ``reduction_share`` (``reduction / mean_running_time``; 0 for no jobs).
    """
    table = JobTable.of(jobs)
    duration = table.column("duration").astype(float)
    reference = table.column("reference_workers").astype(float)
    top = table.column("max_workers").astype(float)
    elastic = top > reference
    saved = np.where(elastic, duration * (1.0 - reference / top), 0.0)
    n = len(table)
    mean = float(duration.sum()) / n if n else 0.0
    reduction = float(saved.sum()) / n if n else 0.0
    return {
        "jobs": float(n),
        "elastic_jobs": float(np.count_nonzero(elastic)),
        "mean_running_time": mean,
        "reduction": reduction,
        "reduction_share": reduction / mean if mean > 0 else 0.0,
    }


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
