"""The replications of a comparison: its seeds, and its time windows.

``seed_list`` says which seeds a replicated comparison runs (an int ``N`` is the ``N``
seeds ``seed, seed + 1, ...``, or give a list).

**Windows** (batch means over one long trace). The span from the first to the last
submission is cut into ``K`` equal slices; window ``k`` *measures* the jobs submitted
in its slice (the last slice includes the last job). **Warm-up rule:** its run starts
``warmup`` seconds (default one day) before the slice, with the jobs submitted since
then, so that the cluster is loaded, not empty, when the measured jobs arrive; the
warm-up jobs run but are not counted. The first window starts with the trace, as the
whole-trace run does (no warm-up: the trace itself starts there). Times are shifted so
that each run starts at 0 and the load series with them; a run goes on until its jobs
finish. A window's ``Result`` keeps only the measured jobs in ``jobs`` (so every job
metric is theirs); its ``timeline`` and GPU-use totals cover the whole run, warm-up
included. A slice in which no job is submitted has nothing to measure: it is left out,
with a warning naming it, and the intervals rest on the other windows.

``pooled`` gives one row's windows pooled: each job-time statistic over all their
measured jobs together, with a window-bootstrap interval.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Sequence, Sized, Tuple, Union

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import validation
from ..engine.core_io import _load
from ..engine.provenance import extend_to_jobs
from ..engine.result import Result, job_times
from ..jobtable import JobTable
from ..model import Records
from .confidence import LEVEL, Estimate
from .paper import TABLE3_KEYS

#: Seeds of a replicated comparison: how many (from ``seed`` on), or which.
Seeds = Union[int, Sequence[int]]

#: Seconds before a window the run of that window starts (its warm-up): one day.
DEFAULT_WARMUP = 86400.0


def seed_list(seeds: Seeds, first: int = 0) -> List[int]:
    """The seeds of ``seeds``: an int ``N >= 1`` is ``first .. first + N - 1``; a list is
    taken as given (distinct integers >= 0)."""
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool):
        count = validation.integer(seeds, "seeds", 1, validation.MAX_SEEDS)
        first = validation.seed(first, "seed")
        if first + count - 1 > validation.MAX_SEED:
            raise ValueError(
                f"seeds: {count} seeds from seed {first} go past the largest seed, "
                f"2**64 - 1; give a smaller seed"
            )
        return list(range(first, first + count))
    if isinstance(seeds, (bool, str, bytes)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be an int or a list of ints, got {seeds!r}")
    # one past the limit, never the whole iterable: range(10**8) was listed (39 s, GBs)
    given = list(itertools.islice(seeds, validation.MAX_SEEDS + 1))
    if len(given) > validation.MAX_SEEDS:
        got = len(seeds) if isinstance(seeds, Sized) else "more"
        raise ValueError(f"seeds: at most {validation.MAX_SEEDS} seeds, got {got}")
    for s in given:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ValueError(f"seeds: every seed is an integer >= 0, got {s!r}")
    if not given or len(set(given)) != len(given):
        raise ValueError(f"seeds: give distinct seeds, got {given!r}")
    return [int(s) for s in given]


@dataclass(frozen=True)
class Window:
    """One time slice of a trace: measured jobs are submitted in ``[start, end)``
    (``end`` inclusive for the last window); the run starts at ``run_start``."""

    index: int
    start: float
    end: float
    run_start: float
    last: bool


def time_windows(
    submit_times: ArrayLike, count: int, warmup: float = DEFAULT_WARMUP
) -> List[Window]:
    """``count`` equal slices of ``[first, last submission]`` and each one's run start
    (``warmup`` seconds before it, the first window's at the trace's start)."""
    count = validation.integer(count, "windows", 1, validation.MAX_WINDOWS)
    warmup = validation.real(warmup, "warmup (seconds)", 0.0)
    t = np.asarray(submit_times, dtype=float)
    if len(t) == 0:
        raise ValueError("windows need jobs: the job list is empty")
    if (np.diff(t) < 0).any():
        raise ValueError("windows need the jobs sorted by submit_time")
    first, last = float(t[0]), float(t[-1])
    edges = np.linspace(first, last, int(count) + 1)
    windows = [
        Window(
            k,
            float(edges[k]),
            float(edges[k + 1]),
            first if k == 0 else max(first, float(edges[k]) - float(warmup)),
            k == count - 1,
        )
        for k in range(int(count))
    ]
    return _measuring(windows, t)


def _measuring(windows: List[Window], t: np.ndarray) -> List[Window]:
    """The windows in which at least one job is submitted, with a warning naming the
    others: a window that measures no job has no mean, and would make every mean
    over the windows NaN."""
    empty = {
        w.index
        for w in windows
        if np.searchsorted(t, w.end, "right" if w.last else "left")
        == np.searchsorted(t, w.start, "left")
    }
    if empty:
        warnings.warn(
            f"{len(empty)} of {len(windows)} windows hold no submitted job and are left "
            f"out (windows {', '.join(map(str, sorted(empty)))}); the intervals rest on the "
            f"other {len(windows) - len(empty)}: give fewer windows to avoid this",
            stacklevel=3,
        )
    return [w for w in windows if w.index not in empty]


def window_slice(submit_times: ArrayLike, window: Window) -> Tuple[int, int]:
    """``(lo, hi)``: the jobs (sorted by submit time) a window's run replays are
    ``lo:hi``, those submitted from its run start to its end."""
    t = np.asarray(submit_times, dtype=float)
    lo = int(np.searchsorted(t, window.run_start, side="left"))
    hi = int(np.searchsorted(t, window.end, side="right" if window.last else "left"))
    return lo, hi


def window_jobs(jobs: Records, window: Window) -> Tuple[JobTable, np.ndarray]:
    """The jobs a window's run replays, shifted to start at 0, and which are measured
    (a boolean mask: submitted in the slice, not in the warm-up)."""
    table = JobTable.of(jobs)
    t = table.column("submit_time")
    lo, hi = window_slice(t, window)
    part = table[lo:hi]
    part = part.replace(submit_time=part.column("submit_time") - window.run_start)
    measured = t[lo:hi] >= window.start
    return part, measured


def window_load(load: Any, window: Window, last_submit: float) -> Any:
    """The load series as seen from ``window.run_start`` (time 0 there), after extending
    it to the whole trace as ``simulate`` would (``provenance.extend_to_jobs``)."""
    if load is None:
        return None

    times, values = _load(load)
    times, values, _ = extend_to_jobs(times, values, last_submit)
    t, v = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    if len(t) == 0:
        return None
    # the value in force at run_start (the first one before the series starts)
    at = max(int(np.searchsorted(t, window.run_start, "right")) - 1, 0)
    later = t > window.run_start
    shifted = np.r_[0.0, t[later] - window.run_start]
    return np.column_stack([shifted, np.r_[v[at], v[later]]])


@dataclass
class WindowTraces:
    """A job frame cut into windows, each a trace of its own (``window_traces``).

    ``windows``: the windows that measure a job (``time_windows``); ``traces``: per
    window, in the same order, its name (``"window 2/10"``) -> (its jobs, shifted to
    start at 0; its load, ``window_load``); ``measured``: per window, the ``job_id``
    of the jobs it measures (not its warm-up's).
    """

    windows: List[Window]
    traces: Dict[str, Tuple[pd.DataFrame, Any]]
    measured: List[List[Any]]


def window_traces(
    frame: pd.DataFrame, load: Any, count: int, warmup: float = DEFAULT_WARMUP
) -> WindowTraces:
    """``frame`` (a job frame, ``aryl.traces.read_jobs``, sorted by submit time) and its
    ``load`` cut into ``count`` windows after ``warmup`` seconds of warm-up
    (``time_windows``): each window's jobs and load alone, as a sweep's trace, so that
    a window's run is given its own slice and never the whole trace."""
    times = frame["submit_time_s"].to_numpy(dtype=float)
    last = float(times.max()) if len(times) else 0.0
    windows = time_windows(times, count, warmup)
    traces: Dict[str, Tuple[pd.DataFrame, Any]] = {}
    measured: List[List[Any]] = []
    for w in windows:
        rows = slice(*window_slice(times, w))
        part = frame.iloc[rows].reset_index(drop=True)
        measured.append(part["job_id"][times[rows] >= w.start].tolist())
        part["submit_time_s"] = part["submit_time_s"] - w.run_start
        traces[f"window {w.index + 1}/{count}"] = (part, window_load(load, w, last))
    return WindowTraces(windows, traces, measured)


#: The job-time statistics ``pooled`` gives: Table 3's queuing and JCT columns.
POOLED_KEYS = TABLE3_KEYS[:6]


#: Resamples of the windows behind ``pooled``'s intervals, and their fixed seed (the
#: same files give the same table).
BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED = 2000, 0


def pooled(windows: Sequence[Result], level: float = LEVEL) -> Dict[str, Estimate]:
    """The job times of one row's windows pooled: each ``POOLED_KEYS`` statistic over
    all their measured jobs together, with a window-bootstrap interval.

    The value is the statistic of the pooled jobs (every job counts once, as in a
    whole-trace run). The interval is a percentile bootstrap over the ``K`` windows
    (``docs/confidence.md``): ``BOOTSTRAP_RESAMPLES`` times, draw ``K`` windows with
    replacement, pool their jobs, take the statistic; the bounds are that statistic's
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles. Resampling whole windows keeps
    the jobs that share a window's load together, and a bound is always a value the
    pooled jobs could give (never a negative time); with few windows it is narrow.
    NaN with one window. ``scaling_ops`` (the total over the windows' jobs) and ``jobs``
    (how many) come with ``n`` = the windows pooled.
    """
    if not windows:
        raise ValueError("pooled needs at least one window's result")
    stacked = job_times(pd.concat([r.jobs for r in windows], ignore_index=True))
    k = len(windows)
    draws = None
    if k > 1:
        picks = np.random.default_rng(BOOTSTRAP_SEED).integers(
            0, k, size=(BOOTSTRAP_RESAMPLES, k)
        )
        draws = np.stack([np.bincount(row, minlength=k) for row in picks])
    out: Dict[str, Estimate] = {}
    for key in POOLED_KEYS:
        value = stacked[key]
        low = high = math.nan
        if draws is not None:
            column = "queuing_time" if key.startswith("queuing") else "jct"
            values = [r.jobs[column].dropna().to_numpy(dtype=float) for r in windows]
            again = _resampled(values, key.rsplit("_", 1)[1], draws)
            low, high = np.nanpercentile(again, [50 - 50 * level, 50 + 50 * level])
        out[key] = Estimate(value, float(low), float(high), k)
    total = float(sum(r.jobs["scaling_ops"].sum() for r in windows))
    out["scaling_ops"] = Estimate(total, math.nan, math.nan, k)
    out["jobs"] = Estimate(
        float(sum(len(r.jobs) for r in windows)), math.nan, math.nan, k
    )
    return out


def _resampled(values: List[np.ndarray], stat: str, draws: np.ndarray) -> np.ndarray:
    """``stat`` (``mean``, ``median``, ``p95``) of the pooled jobs for each row of
    ``draws`` (how many times each window is drawn), as ``np.mean`` / ``np.percentile``
    would give on the drawn windows' values concatenated; NaN where none are drawn."""
    counts = np.array([len(v) for v in values], dtype=float)
    if stat == "mean":
        sums = np.array([v.sum() for v in values])
        with np.errstate(invalid="ignore", divide="ignore"):
            means: np.ndarray = (draws @ sums) / (draws @ counts)
        return means
    q = {"median": 50.0, "p95": 95.0}[stat] / 100.0
    out = np.full(len(draws), math.nan)
    totals = draws @ counts
    drawn = totals > 0
    if not drawn.any():
        return out
    parts = [np.sort(v) for v in values]
    ordered = np.sort(np.concatenate(values))
    weights = draws[drawn]
    at = q * (totals[drawn] - 1)  # numpy's linear rule on the drawn multiset
    low = _at_rank(parts, ordered, weights, np.floor(at))
    high = _at_rank(parts, ordered, weights, np.ceil(at))
    out[drawn] = low + (high - low) * (at - np.floor(at))
    return out


def _at_rank(
    parts: List[np.ndarray], ordered: np.ndarray, draws: np.ndarray, rank: np.ndarray
) -> np.ndarray:
    """For each row of ``draws`` (how many times each window is drawn), the value of
    rank ``rank`` (from 0) in the drawn windows' values together: the least value
    ``v`` of ``ordered`` (every value, sorted) that more than ``rank`` drawn values
    do not exceed. A binary search over ``ordered`` for every draw at once, each
    step counting per window (``parts``: each window's values, sorted): time in
    draws x windows x log(values), not draws x values."""
    lo = np.zeros(len(draws), dtype=np.int64)
    hi = np.full(len(draws), len(ordered) - 1, dtype=np.int64)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        at = ordered[mid]
        below = sum(
            draws[:, k] * np.searchsorted(part, at, "right")
            for k, part in enumerate(parts)
        )
        above = below > rank
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid + 1)
    values: np.ndarray = ordered[lo]
    return values
