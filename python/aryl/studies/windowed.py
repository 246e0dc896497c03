"""One configuration over a trace's time windows: a trace too long for one process.

``simulate_windows(frame, load, run, windows=K)`` runs one configuration (``run``: one
point of ``aryl.studies.sweep``'s parameters and ``Config`` fields, the recipe of
``aryl simulate``) on each of ``K`` disjoint time windows of the trace, with the cut
and the warm-up rule of ``aryl compare --windows`` (``aryl.studies.windows``). Each
window is a run of ``sweep_points`` with its own slice of the jobs and of the load as
its trace (``window_traces``), so a worker is sent its window, never the whole trace;
on the engine given (Ray, on a cluster with ``address``, or local), each run cached as
soon as it finishes, so that an interrupted call continues from the cache.

It returns one row per window (``WINDOW_COLUMNS``: its span, jobs run and measured,
finished and unfinished, means, and the run's wall, CPU and peak memory) and the
measured jobs of all windows pooled (``windows.pooled``: each statistic with its
window-bootstrap interval). ``each`` is called with every window's run as it is read
back, to keep or write what it needs without holding every window's jobs at once.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..engine.result import Result
from ..engine.result import load as load_result
from ..typing import SweepEngine
from .confidence import LEVEL, Estimate
from .sweep import SweepReport, sweep_points
from .windows import DEFAULT_WARMUP, Window, pooled, window_traces

#: The columns of ``Windowed.table``, one row per window. Times in the trace's own
#: seconds; ``jobs_run`` counts the warm-up's jobs too, the rest the measured jobs
#: only; ``wall_seconds``, ``cpu_seconds`` and ``peak_memory_bytes`` are the run's
#: (``sweep``'s columns: NaN where not known); ``saved`` its cache entry.
WINDOW_COLUMNS = (
    "window",
    "start_s",
    "end_s",
    "run_start_s",
    "jobs_run",
    "jobs_measured",
    "jobs_finished",
    "jobs_unfinished",
    "queuing_mean",
    "jct_mean",
    "wall_seconds",
    "cpu_seconds",
    "peak_memory_bytes",
    "cached",
    "saved",
)

#: The columns of a measured job ``pooled`` needs (``Result.jobs``).
_POOLED_COLUMNS = ["queuing_time", "jct", "scaling_ops"]


@dataclass
class WindowRun:
    """One window's run: its ``window``, the run's ``result`` (every job it ran, the
    warm-up's too, times from the run's start), which of them are ``measured`` (a
    boolean mask over ``result.jobs``) and its row of ``Windowed.table``."""

    window: Window
    result: Result
    measured: np.ndarray
    row: Dict[str, Any]

    def measured_result(self) -> Result:
        """The run's ``Result`` with its measured jobs alone (``summary()`` is theirs;
        the timeline and GPU totals cover the whole run, warm-up included)."""
        jobs = self.result.jobs[self.measured].reset_index(drop=True)
        return replace(self.result, jobs=jobs)


@dataclass
class Windowed:
    """``simulate_windows``' answer: ``table`` (one row per window,
    ``WINDOW_COLUMNS``), ``pooled`` (``windows.pooled`` over every window's measured
    jobs: ``POOLED_KEYS`` with intervals, ``scaling_ops``, ``jobs``) and the measured
    jobs' counts over all windows (``jobs_finished``, ``jobs_unfinished``: an
    unfinished job has no JCT, so the pooled times are over the finished ones)."""

    table: pd.DataFrame
    pooled: Dict[str, Estimate]

    @property
    def jobs_measured(self) -> int:
        """Measured jobs over all windows."""
        return int(self.table["jobs_measured"].sum())

    @property
    def jobs_finished(self) -> int:
        """Measured jobs that finished, over all windows."""
        return int(self.table["jobs_finished"].sum())

    @property
    def jobs_unfinished(self) -> int:
        """Measured jobs that did not finish, over all windows."""
        return int(self.table["jobs_unfinished"].sum())


def simulate_windows(
    frame: pd.DataFrame,
    load: Any,
    run: Mapping[str, Any],
    windows: int,
    *,
    warmup: float = DEFAULT_WARMUP,
    engine: SweepEngine = "threads",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    cache: Union[bool, str, Path] = True,
    progress: Optional[SweepReport] = None,
    each: Optional[Callable[[WindowRun], None]] = None,
    level: float = LEVEL,
) -> Windowed:
    """Run one configuration on each of ``windows`` time windows of a trace, pooled.

    Parameters
    ----------
    frame, load
        The trace: a job frame sorted by submit time (``aryl.traces.read_jobs``) and
        its load (a frame, ``(time_s, load)`` pairs, or None: no loaning).
    run
        The configuration: ``aryl.studies.sweep``'s parameters (``scenario``,
        ``policy``, ``reclaim``, ``seed``, ``training_servers``,
        ``inference_servers`` or ``servers``, the ``elastic_*`` options,
        ``any_type_share``) and ``Config`` fields; not ``trace`` nor
        ``first_jobs`` (the windows are the traces).
    windows, warmup
        ``K`` disjoint time slices of the trace, each run after ``warmup`` seconds of
        warm-up whose jobs run but are not measured (``aryl.studies.windows``).
    engine, workers, address, cache, progress
        As for ``sweep_points``: where the windows run (``"ray"`` with ``address``
        for a cluster), and their cache (``True``: ``default_cache_dir()``; a folder;
        ``False``: a temporary folder only). An interrupted call keeps every window
        that finished in the cache; the same call runs only the others.
    each
        Called with each window's ``WindowRun``, in window order, once every window
        has run.
    level
        The pooled intervals' confidence level.

    Returns
    -------
    Windowed
    """
    given = dict(run)
    for name in ("trace", "first_jobs"):
        if name in given:
            raise ValueError(
                f"run: {name!r} is not a setting of a windowed run (each window's "
                "jobs are its trace)"
            )
    cut = window_traces(frame, load, windows, warmup)
    points = [{**given, "trace": name} for name in cut.traces]
    rows: List[Dict[str, Any]] = []
    slims: List[Result] = []
    with tempfile.TemporaryDirectory() as scratch:
        table = sweep_points(
            points,
            traces=cut.traces,
            engine=engine,
            address=address,
            workers=workers,
            cache=scratch if cache is False else cache,
            progress=progress or False,
        )
        cut.traces.clear()  # the windows' jobs: their runs are done with them
        for window, ids, entry in zip(
            cut.windows, cut.measured, table.to_dict("records")
        ):
            result = load_result(entry["saved"])
            measured = _measured(result.jobs["id"], ids)
            done = WindowRun(window, result, measured, {})
            done.row.update(_row(done, entry, cache is not False))
            if each is not None:
                each(done)
            rows.append(done.row)
            slims.append(_slim(done))
    return Windowed(
        pd.DataFrame(rows, columns=list(WINDOW_COLUMNS)), pooled(slims, level)
    )


def _measured(run: pd.Series, ids: List[Any]) -> np.ndarray:
    """Which jobs of a window's run (their ids, ``run``) are measured (``ids``); by
    a hash of the ids (``Series.isin`` on text ids took seconds a million)."""
    index = pd.Index(ids)
    if not index.is_unique:
        return run.isin(ids).to_numpy()
    found: np.ndarray = index.get_indexer(run) >= 0
    return found


def _row(done: WindowRun, entry: Mapping[Any, Any], kept: bool) -> Dict[str, Any]:
    """A window's row of ``Windowed.table``, from its run and its sweep row."""
    w, summary = done.window, done.measured_result().summary()
    return {
        "window": w.index + 1,
        "start_s": w.start,
        "end_s": w.end,
        "run_start_s": w.run_start,
        "jobs_run": len(done.result.jobs),
        "jobs_measured": int(done.measured.sum()),
        "jobs_finished": int(summary["jobs_finished"]),
        "jobs_unfinished": int(summary["jobs_unfinished"]),
        "queuing_mean": summary["queuing_mean"],
        "jct_mean": summary["jct_mean"],
        "wall_seconds": entry["seconds"],
        "cpu_seconds": entry["cpu_seconds"],
        "peak_memory_bytes": entry.get("peak_memory_bytes", math.nan),
        "cached": bool(entry["cached"]),
        "saved": entry["saved"] if kept else None,
    }


def _slim(done: WindowRun) -> Result:
    """A window's measured jobs with only what ``pooled`` reads: a fleet's windows
    pooled hold a few columns of their jobs, not every window's tables."""
    jobs = done.result.jobs.loc[done.measured, _POOLED_COLUMNS].reset_index(drop=True)
    return replace(done.result, jobs=jobs, timeline=done.result.timeline.iloc[:0])
