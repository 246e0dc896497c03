"""Replicated comparisons: every row once per seed and per window, paired, with intervals.

``compare(..., seeds=N, windows=K)`` (``aryl.sim.compare``) lands here. It runs every
row of the comparison once per **replication**: a seed (``seeds``: an int ``N`` is the
``N`` seeds ``seed, seed + 1, ...``, or give a list) and, with ``windows``, each of
``K`` disjoint time slices of the trace. All rows of one replication use the same seed
(the same scenario draws, the same GPU-type draws, the same random reclaim stream) and
the same window, so a difference between two rows is a paired comparison (common
random numbers): the draws that favour one row favour the other alike and cancel in
their ratio.

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

**Intervals** (``aryl.studies.confidence``): each metric's mean over replications with its
95% Student-t interval, and each row's speed-up over a reference row as a paired ratio
(interval on the log-ratio). With windows the windows are the replications (batch
means: a window's seeds are averaged first, since they share its jobs); without, the
seeds are.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Sized,
    Tuple,
    Union,
)

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import validation
from ..engine.metrics import SHARE_OF, SUMMARY_KEYS, defined_runs
from ..engine.provenance import extend_to_jobs
from ..engine.result import Result, job_times
from ..engine.simulation import _load, simulate
from ..jobtable import JobTable
from ..model import Records
from ..policy import run_copy
from .comparison import Comparison
from .confidence import (
    LEVEL,
    MIN_REPLICATIONS,
    Estimate,
    difference_interval,
    mean_interval,
    ratio_interval,
    reading,
    verdict,
)
from .paper import BASELINE, ORDERING_MECHANISMS, ORDERINGS, TABLE3_KEYS

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.config import Cluster

#: Seeds of a replicated comparison: how many (from ``seed`` on), or which.
Seeds = Union[int, Sequence[int]]
#: The rows of a comparison, or a function of the seed that builds them.
Runs = Union[
    Mapping[str, Mapping[str, Any]], Callable[[int], Mapping[str, Mapping[str, Any]]]
]
#: Called after every run with (runs done, runs in all).
Progress = Callable[[int, int], None]

#: Seconds before a window the run of that window starts (its warm-up): one day.
DEFAULT_WARMUP = 86400.0

#: The speed-up columns: (column, summary key).
SPEEDUPS = (("speed-up JCT", "jct_mean"), ("speed-up queue", "queuing_mean"))


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


@dataclass(frozen=True)
class _Task:
    """One run of a replicated comparison: ``simulate``'s keyword arguments and, in a
    window, which of its jobs are measured (None: all)."""

    row: str
    seed: int
    window: int
    kwargs: Dict[str, Any]
    measured: Optional[np.ndarray] = None


def compare_replicated(
    jobs: Records,
    cluster: Union[Cluster, Records],
    runs: Runs,
    inference_load: Any = None,
    seed: int = 0,
    threads: int = 1,
    seeds: Optional[Seeds] = None,
    windows: Optional[int] = None,
    warmup: float = DEFAULT_WARMUP,
    reference: Optional[str] = None,
    progress: Optional[Progress] = None,
) -> Comparison:
    """``aryl.sim.compare`` with replications (module docstring); its parameters, and:

    ``runs`` may be a function of the seed returning the rows (e.g. ``lambda s:
    sim.paper_runs(jobs, load, seed=s)``), so that each replication draws its own
    scenarios; a mapping keeps its rows' jobs and only the simulator's seed changes.
    ``warmup``: seconds of warm-up before each window. ``reference``: the row speed-ups
    are measured against (default ``"Baseline (FIFO)"``, or the first row).
    ``progress(done, total)`` is called after every run.
    """
    chosen = seed_list(1 if seeds is None else seeds, seed)
    table = JobTable.of(jobs)
    slices = (
        [None]
        if windows is None
        else time_windows(table.column("submit_time"), windows, warmup)
    )
    last_submit = float(table.column("submit_time").max()) if len(table) else 0.0
    tasks: List[_Task] = []
    names: List[str] = []
    for s in chosen:
        rows = runs(s) if callable(runs) else runs
        if not rows:
            raise ValueError("runs is empty: give at least one named run")
        names = names or list(rows)
        if list(rows) != names:
            raise ValueError(
                f"seed {s}: runs gave rows {list(rows)}, seed {chosen[0]} gave {names}"
            )
        for name, given in rows.items():
            kwargs = {"inference_load": inference_load, **dict(given), "seed": s}
            kwargs.setdefault("jobs", table)
            for w in slices:
                tasks.append(_windowed(name, s, w, kwargs, last_submit))
    reference = reference or (BASELINE if BASELINE in names else names[0])
    if reference not in names:
        raise ValueError(f"reference row {reference!r} is not a row: {names}")

    def run(task: _Task) -> Result:
        kwargs = dict(task.kwargs)
        if "policy" in kwargs:
            kwargs["policy"] = run_copy(kwargs["policy"])
        result = simulate(cluster=cluster, label=task.row, **kwargs)
        if task.measured is None:
            return result
        return replace(result, jobs=result.jobs[task.measured].reset_index(drop=True))

    results: Dict[Tuple[str, int, int], Result] = {}
    threads = validation.integer(threads, "threads", 1)
    with ThreadPoolExecutor(threads) as pool:
        for done, (task, result) in enumerate(zip(tasks, pool.map(run, tasks)), 1):
            results[(task.row, task.seed, task.window)] = result
            if progress is not None:
                progress(done, len(tasks))
    return assemble(results, names, reference)


def _windowed(
    name: str,
    seed: int,
    window: Optional[Window],
    kwargs: Dict[str, Any],
    last_submit: float,
) -> _Task:
    """A run's task: its kwargs cut to ``window`` (and which jobs it measures)."""
    if window is None:
        return _Task(name, seed, 0, kwargs)
    part, measured = window_jobs(kwargs["jobs"], window)
    load = window_load(kwargs["inference_load"], window, last_submit)
    cut = {**kwargs, "jobs": part, "inference_load": load}
    return _Task(name, seed, window.index, cut, measured)


def assemble(
    results: Mapping[Tuple[str, int, int], Result],
    names: Sequence[str],
    reference: str,
    level: float = LEVEL,
) -> Comparison:
    """The ``Comparison`` of replicated runs: ``results`` maps (row, seed, window) to
    each run's ``Result``; one row per name, in ``names``' order.

    Columns: for each summary key its mean over replications and ``<key>_low``,
    ``<key>_high`` (the interval); ``speed-up JCT`` and ``speed-up queue`` over
    ``reference`` (paired ratios of the means, ``... low`` / ``... high``); and
    ``replications`` (how many the intervals rest on). ``.samples`` holds one row
    per run (row, seed, window and its summary), ``.runs`` every run's ``Result``,
    ``.results`` each row's first run.
    """
    samples = pd.DataFrame.from_records(
        [
            {"run": name, "seed": s, "window": w, **r.summary()}
            for (name, s, w), r in results.items()
        ]
    )
    rows: Dict[str, Dict[str, float]] = {}
    for name in names:
        mine = _ordered(samples, name)
        row: Dict[str, float] = {}
        for key in SUMMARY_KEYS:
            e = _defined_mean(mine, key, level)
            row.update({key: e.value, f"{key}_low": e.low, f"{key}_high": e.high})
        for column, key in SPEEDUPS:
            e, basis = common_ratio(results, samples, reference, name, key, level)
            row.update(
                {column: e.value, f"{column} low": e.low, f"{column} high": e.high}
            )
        # the jobs the speed-ups rest on: NaN where both rows finished the same jobs
        row["speed-up jobs"] = math.nan if basis.jobs is None else float(basis.jobs)
        row["replications"] = e.n
        rows[name] = row
    _warn_few(samples, rows[reference]["replications"])
    table = pd.DataFrame.from_dict(rows, orient="index")
    firsts = {
        name: next(r for k, r in results.items() if k[0] == name) for name in names
    }
    out = Comparison.of(table, firsts)
    out.samples = samples
    out.runs = dict(results)
    out.reference = reference
    return out


def _defined_mean(mine: pd.DataFrame, key: str, level: float) -> Estimate:
    """``key``'s mean and interval over one row's replications (``mine``), over those
    where it is defined: a share (``metrics.SHARE_OF``) is 0 / 0 in a run without what
    it is a share of, and such runs are left out; NaN when none is left."""
    if key in SHARE_OF:
        mine = defined_runs(key, mine)
        if mine.empty:
            return Estimate(math.nan, math.nan, math.nan, 0)
    return mean_interval(mine[key].to_numpy(dtype=float), level, _groups(mine))


def replications_over(samples: pd.DataFrame) -> str:
    """What a comparison's intervals are over, from its ``samples`` (one row per run):
    ``"5 seeds"``, ``"2 windows"`` (``"..., each the mean of 3 seeds"`` when several
    seeds ran in each window), or ``"one run"``."""
    seeds, windows = samples["seed"].nunique(), samples["window"].nunique()
    if windows > 1:
        each = f", each the mean of {seeds} seeds" if seeds > 1 else ""
        return f"{windows} windows{each}"
    return f"{seeds} seeds" if seeds > 1 else "one run"


def _warn_few(samples: pd.DataFrame, n: float) -> None:
    """A ``UserWarning`` when the intervals rest on fewer than ``MIN_REPLICATIONS``
    replications (none at all with one)."""
    if n >= MIN_REPLICATIONS:
        return
    over = replications_over(samples)
    what = (
        "no intervals at all"
        if n < 2
        else f"95% intervals over n = {int(n)} only, wide and unreliable"
    )
    warnings.warn(
        f"{what} ({over}): use {MIN_REPLICATIONS} or more replications (seeds, or "
        "windows with --windows) for intervals worth reading (docs/confidence.md)",
        UserWarning,
        stacklevel=3,
    )


def _ordered(samples: pd.DataFrame, name: str) -> pd.DataFrame:
    """One row's samples sorted by (window, seed), the pairing order."""
    return samples[samples["run"] == name].sort_values(["window", "seed"])


def _groups(samples: pd.DataFrame) -> Optional[List[int]]:
    """The windows as batch labels when there are several, else None (seeds)."""
    windows = samples["window"].tolist()
    return windows if len(set(windows)) > 1 else None


def _pair(
    samples: pd.DataFrame, first: str, second: str, key: str
) -> Tuple[np.ndarray, np.ndarray, Optional[List[int]]]:
    a, b = _ordered(samples, first), _ordered(samples, second)
    if list(zip(a["seed"], a["window"])) != list(zip(b["seed"], b["window"])):
        raise ValueError(f"rows {first!r} and {second!r} ran different replications")
    return a[key].to_numpy(dtype=float), b[key].to_numpy(dtype=float), _groups(a)


def paired_ratio(
    samples: pd.DataFrame,
    numerator: str,
    denominator: str,
    key: str = "jct_mean",
    level: float = LEVEL,
) -> Estimate:
    """``numerator``'s ``key`` over ``denominator``'s, replication by replication, and
    its interval (``confidence.ratio_interval``). ``samples``: a ``Comparison``'s."""
    a, b, groups = _pair(samples, numerator, denominator, key)
    return ratio_interval(a, b, level, groups)


#: The job column behind each summary key a speed-up is taken of.
JOB_COLUMN = {"jct_mean": "jct", "queuing_mean": "queuing_time"}


@dataclass(frozen=True)
class Basis:
    """The jobs a paired ratio of two rows rests on: ``jobs`` None when both rows
    finished the same jobs in every replication (their summaries' means); else the
    fewest jobs both rows finished in one replication, and how many jobs each row
    left unfinished (mean over replications)."""

    jobs: Optional[int] = None
    unfinished: Tuple[Tuple[str, float], ...] = ()

    def note(self) -> str:
        """``"'starver' left 71 jobs unfinished; on the 6,090 jobs both finished"``,
        or ``""`` on every job."""
        if self.jobs is None:
            return ""
        left = "; ".join(
            f"{row} left {_count(count)} jobs unfinished"
            for row, count in self.unfinished
            if count > 0
        )
        first = left or "the rows finished different jobs"
        return f"{first}; on the {self.jobs:,} jobs both finished"


def _count(x: float) -> str:
    """A count, or a mean of counts over replications: ``71``, ``70.4``."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def common_ratio(
    runs: Mapping[Tuple[str, int, int], Result],
    samples: pd.DataFrame,
    numerator: str,
    denominator: str,
    key: str = "jct_mean",
    level: float = LEVEL,
) -> Tuple[Estimate, Basis]:
    """``paired_ratio`` of two rows on a common basis: where they finished different
    jobs in some replication (a row that leaves jobs unfinished), each replication's
    means are taken over the jobs both rows finished, since a mean over a row's own
    finished jobs drops exactly the jobs it failed (``key``: a ``JOB_COLUMN``)."""
    order = _ordered(samples, numerator)
    pairs = [
        (runs.get((numerator, s, w)), runs.get((denominator, s, w)))
        for s, w in zip(order["seed"], order["window"])
    ]
    if key not in JOB_COLUMN or not any(
        a is not None and b is not None and not _same_finished(a, b) for a, b in pairs
    ):
        return paired_ratio(samples, numerator, denominator, key, level), Basis()
    column = JOB_COLUMN[key]
    tops, bottoms, counts = [], [], []
    for a, b in pairs:
        assert a is not None and b is not None
        both = finished_by_both(a, b, [column])
        tops.append(float(both[f"{column}_a"].mean()) if len(both) else math.nan)
        bottoms.append(float(both[f"{column}_b"].mean()) if len(both) else math.nan)
        counts.append(len(both))
    groups = _groups(order)
    unfinished = tuple(
        (row, float(_ordered(samples, row)["jobs_unfinished"].mean()))
        for row in (numerator, denominator)
    )
    estimate = ratio_interval(tops, bottoms, level, groups)
    return estimate, Basis(min(counts), unfinished)


def finished_by_both(a: Result, b: Result, columns: Sequence[str]) -> pd.DataFrame:
    """The jobs both runs finished, indexed by job id: ``columns`` of ``a``'s jobs and
    of ``b``'s, suffixed ``_a`` and ``_b``."""

    def finished(result: Result) -> pd.DataFrame:
        jobs = result.jobs
        return jobs[jobs["finish_time"].notna()][["id", *columns]].set_index("id")

    return pd.merge(
        finished(a),
        finished(b),
        left_index=True,
        right_index=True,
        suffixes=("_a", "_b"),
    )


def _same_finished(a: Result, b: Result) -> bool:
    """Whether two runs finished the same jobs (their job lists in one order)."""
    ja, jb = a.jobs, b.jobs
    if len(ja) != len(jb) or not (ja["id"].to_numpy() == jb["id"].to_numpy()).all():
        return False
    return bool(
        (
            ja["finish_time"].notna().to_numpy() == jb["finish_time"].notna().to_numpy()
        ).all()
    )


def paired_difference(
    samples: pd.DataFrame, first: str, second: str, key: str, level: float = LEVEL
) -> Estimate:
    """``first``'s ``key`` minus ``second``'s, paired, and its interval."""
    a, b, groups = _pair(samples, first, second, key)
    return difference_interval(a, b, level, groups)


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
    every = np.concatenate(values)
    order = np.argsort(every, kind="stable")
    ordered = every[order]
    window = np.repeat(np.arange(len(values)), counts.astype(int))[order]
    out = np.full(len(draws), math.nan)
    for b, times in enumerate(draws):
        upto = np.cumsum(times[window])  # the drawn multiset's ranks, in value order
        if upto[-1] == 0:
            continue
        at = q * (upto[-1] - 1)  # numpy's linear rule on the multiset
        lo, hi = ordered[
            np.searchsorted(upto, [math.floor(at), math.ceil(at)], "right")
        ]
        out[b] = lo + (hi - lo) * (at - math.floor(at))
    return out


#: Each feature's own gain: (feature, row with it, row without it; otherwise alike).
#: The gain is the row without's mean over the row with's: above 1, the feature helps.
CONTRIBUTIONS = (
    ("loaning, given elasticity", "Aryl Basic", "Elastic only, aryl"),
    ("loaning alone", "Loaning only, aryl reclaim", "Control: SJF, no loaning"),
    ("elasticity, given loaning", "Aryl Basic", "Loaning only, aryl reclaim"),
    ("reordering alone (SJF over FIFO)", "Control: SJF, no loaning", "Baseline (FIFO)"),
    ("imperfect scaling (vs linear)", "Ablation: Basic, imperfect", "Aryl Basic"),
    ("aryl placement (vs plain BFD)", "Aryl Basic", "Ablation: Basic, plain BFD"),
)


def contributions(
    comparison: Comparison,
    level: float = LEVEL,
    features: Sequence[Tuple[str, str, str]] = CONTRIBUTIONS,
) -> pd.DataFrame:
    """What each feature buys (``features``: ``CONTRIBUTIONS``, plus for rows of
    your own ``paper.own_policy_features``), from a replicated comparison.

    One row per feature whose two rows both ran: ``with`` and ``without`` (the rows),
    ``JCT gain`` and ``queue gain`` (the paired ratio without / with of the mean JCT
    and mean queuing time, with ``... low`` / ``... high``) and ``reading``: a plain
    reading of the JCT gain (``"no detectable gain"`` when its interval includes 1).
    """
    samples = _samples(comparison)
    rows = []
    for feature, with_row, without_row in features:
        if not {with_row, without_row} <= set(samples["run"]):
            continue
        row: Dict[str, Any] = {
            "feature": feature,
            "with": with_row,
            "without": without_row,
        }
        for column, key in (("JCT gain", "jct_mean"), ("queue gain", "queuing_mean")):
            e, basis = common_ratio(
                comparison.runs, samples, without_row, with_row, key, level
            )
            row.update(
                {column: e.value, f"{column} low": e.low, f"{column} high": e.high}
            )
            if key == "jct_mean":
                first = basis.note()
                row["reading"] = f"{first}: {reading(e)}" if first else reading(e)
                row["jobs compared"] = (
                    math.nan if basis.jobs is None else float(basis.jobs)
                )
        rows.append(row)
    return pd.DataFrame.from_records(rows)


def ordering_verdicts(
    comparison: Comparison, level: float = LEVEL
) -> Dict[str, Dict[str, Any]]:
    """``aryl.sim.ORDERINGS`` judged over replications: claim -> ``{"verdict": "holds" |
    "reversed" | "not resolved" | "tied" | "not tested", "holds": verdict == "holds",
    "why", "metric", "values": {row: mean}, "links": [(row, op, row, difference
    Estimate, verdict)]}``.

    Each link ``a < b`` (or ``<=``) is judged on the paired difference ``a - b``
    (``confidence.verdict``); a chain holds if every link does, is reversed if any link
    is, tied if any is, and is not resolved otherwise. A claim whose rows show no
    event of what it compares (``paper.ORDERING_MECHANISMS``: no preemption, no loaned
    server used, no elastic job scaled) is ``not tested``, ``why`` saying what did
    not happen (None otherwise). Claims naming a missing row are left out.
    """
    samples = _samples(comparison)
    present = set(samples["run"])
    out: Dict[str, Dict[str, Any]] = {}
    for claim, metric, chain in ORDERINGS:
        if not set(chain[::2]) <= present:
            continue
        links = []
        for a, op, b in zip(chain[:-1:2], chain[1::2], chain[2::2]):
            d = paired_difference(samples, a, b, metric, level)
            links.append((a, op, b, d, verdict(d, strict=op == "<")))
        verdicts = [link[-1] for link in links]
        overall = next(
            (v for v in ("reversed", "tied") if v in verdicts),
            "holds" if set(verdicts) == {"holds"} else "not resolved",
        )
        why = _untested(samples, claim, chain[::2])
        if why is not None:
            overall = "not tested"
        means = comparison[metric].astype(float)
        values = {r: float(means[r]) for r in chain[::2]}
        out[claim] = {
            "verdict": overall,
            "holds": overall == "holds",
            "why": why,
            "metric": metric,
            "values": values,
            "links": links,
        }
    return out


def _untested(samples: pd.DataFrame, claim: str, rows: Sequence[str]) -> Optional[str]:
    """What did not happen in ``rows`` for ``claim`` to be tested
    (``paper.ORDERING_MECHANISMS``), or None when it happened in some replication."""
    if claim not in ORDERING_MECHANISMS:
        return None
    row, key, missing = ORDERING_MECHANISMS[claim]
    runs = samples[samples["run"].isin(rows if row is None else [row])]
    if key not in runs or (runs[key].to_numpy(dtype=float) > 0).any():
        return None
    return missing


def _samples(comparison: Comparison) -> pd.DataFrame:
    samples: Optional[pd.DataFrame] = getattr(comparison, "samples", None)
    if samples is None:
        raise ValueError(
            "this comparison has no replications: run compare(..., seeds=N or windows=K)"
        )
    return samples


def check_orderings(
    summaries: Union[Mapping[str, Mapping[str, float]], Comparison],
) -> Dict[str, Dict[str, Any]]:
    """Which of ``ORDERINGS`` hold for one set of rows (name -> ``Result.summary()``).

    Returns claim -> ``{"holds": bool, "values": {row: value}}``; claims naming a row that is
    missing (e.g. the loaning rows without a load series) are left out. Given a replicated
    ``Comparison`` (``compare(..., seeds=N)``), each claim is judged over the replications
    instead: ``"verdict"`` is ``holds``, ``reversed``, ``tied`` or ``not resolved``
    (``ordering_verdicts``).
    """
    if getattr(summaries, "samples", None) is not None:
        return ordering_verdicts(summaries)  # type: ignore[arg-type]
    out: Dict[str, Dict[str, Any]] = {}
    for claim, metric, chain in ORDERINGS:
        rows = chain[::2]
        if not all(r in summaries for r in rows):
            continue
        values = {r: float(summaries[r][metric]) for r in rows}
        holds = all(
            values[a] < values[b] if op == "<" else values[a] <= values[b]
            for a, op, b in zip(chain[:-1:2], chain[1::2], chain[2::2])
        )
        out[claim] = {"holds": holds, "metric": metric, "values": values}
    return out
