"""Replicated comparisons: every row once per seed and per window, paired, with intervals.

``compare(..., seeds=N, windows=K)`` (``aryl.sim.compare``) lands here. It runs every
row of the comparison once per **replication**: a seed (``seeds``: an int ``N`` is the
``N`` seeds ``seed, seed + 1, ...``, or give a list) and, with ``windows``, each of
``K`` disjoint time slices of the trace. All rows of one replication use the same seed
(the same scenario draws, the same GPU-type draws, the same random reclaim stream) and
the same window, so a difference between two rows is a paired comparison (common
random numbers): the draws that favour one row favour the other alike and cancel in
their ratio.

**Windows**: ``aryl.studies.windows`` (the seeds, the time windows and their
warm-up rule, and a row's windows pooled).

**Intervals** (``aryl.studies.confidence``): each metric's mean over replications with its
95% Student-t interval, and each row's speed-up over a reference row as a paired ratio
(interval on the log-ratio, ``aryl.studies.pairing``). With windows the windows are the
replications (batch means: a window's seeds are averaged first, since they share its
jobs); without, the seeds are. What each feature buys and the paper's orderings judged
over the replications are ``aryl.studies.contributions``'.

Here: the replicated comparison and its table (``compare_replicated``, ``assemble``);
the names of those three modules are importable from here too.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np
import pandas as pd

from .. import validation
from ..engine.metrics import SHARE_OF, SUMMARY_KEYS, defined_runs
from ..engine.result import Result
from ..engine.simulation import simulate
from ..jobtable import JobTable
from ..model import Records
from ..policy import run_copy
from .comparison import Comparison
from .confidence import LEVEL, MIN_REPLICATIONS, Estimate, mean_interval
from .contributions import (
    CONTRIBUTIONS,
    check_orderings,
    contributions,
    ordering_verdicts,
)
from .pairing import (
    JOB_COLUMN,
    Basis,
    _groups,
    _ordered,
    common_ratio,
    finished_by_both,
    paired_difference,
    paired_ratio,
)
from .paper import BASELINE
from .windows import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    DEFAULT_WARMUP,
    POOLED_KEYS,
    Seeds,
    Window,
    pooled,
    seed_list,
    time_windows,
    window_jobs,
    window_load,
    window_slice,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.config import Cluster

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONTRIBUTIONS",
    "DEFAULT_WARMUP",
    "JOB_COLUMN",
    "POOLED_KEYS",
    "SPEEDUPS",
    "Basis",
    "Progress",
    "Runs",
    "Seeds",
    "Window",
    "assemble",
    "check_orderings",
    "common_ratio",
    "compare_replicated",
    "contributions",
    "finished_by_both",
    "ordering_verdicts",
    "paired_difference",
    "paired_ratio",
    "pooled",
    "replications_over",
    "seed_list",
    "time_windows",
    "window_jobs",
    "window_load",
    "window_slice",
]

#: The rows of a comparison, or a function of the seed that builds them.
Runs = Union[
    Mapping[str, Mapping[str, Any]], Callable[[int], Mapping[str, Mapping[str, Any]]]
]
#: Called after every run with (runs done, runs in all).
Progress = Callable[[int, int], None]

#: The speed-up columns: (column, summary key).
SPEEDUPS = (("speed-up JCT", "jct_mean"), ("speed-up queue", "queuing_mean"))


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
