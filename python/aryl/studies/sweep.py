"""Sweeps: every combination of a parameter grid, run in parallel on Ray, cached on disk.

``sweep(base, grid)`` builds one run per combination of ``grid``'s values (on top of the
fixed parameters ``base``), runs the runs not in the cache on Ray (a local Ray by
default, ``address=`` for an existing cluster), shows one progress bar with an ETA, and
returns one tidy ``DataFrame``: a row per run with its parameters and summary.

A run's parameters (``PARAMETERS``, plus any ``aryl.sim.Config`` field such as
``headroom`` or ``lend_hold``) say how it is built, with the recipe ``aryl simulate``
uses (``aryl.engine.runs``): the trace's job frame (its first ``first_jobs`` rows) becomes jobs with
``aryl.traces.to_jobs(any_type_share, seed)``, ``aryl.sim.scenario(scenario, seed,
elastic_gpu_share, hetero_share)`` makes some of them elastic, and ``aryl.sim.simulate``
replays them on ``Cluster(training_servers, inference_servers)`` with the trace's load,
the scenario's preset settings (``scenario_config``) overridden by the Config fields
given, and ``seed``. So a sweep's row equals ``aryl simulate`` with the same options.

Every finished run is saved (``Result.save``) in the cache under a fingerprint of the
trace's contents, the run's resolved parameters and the code (the compiled module and
the Python sources, ``code_fingerprint``; not the version string): running the same
sweep again reads the rows back without simulating, an interrupted sweep resumes where
it stopped, and a changed aryl computes afresh. An entry is written whole and at once
(concurrent sweeps may share a cache); a damaged one is recomputed, with a warning
naming it. ``aryl.sim.load(row.saved)`` gives a row's full ``Result``.

Engines: ``"ray"`` (``pip install 'aryl[ray]'``); ``"threads"`` (the simulator releases
the GIL), the fallback ``"auto"`` takes when Ray is not installed; ``"processes"``, a
local process pool (a script using it needs an ``if __name__ == "__main__":`` guard);
and ``"serial"`` for small sweeps and debugging.

``sweep_summary(table)`` gives each point of a sweep with a ``seed`` axis (every other
parameter equal) its mean over the seeds and 95% Student-t interval
(``aryl.studies.confidence``), and ``csv_frame(table)`` is a table as ``aryl sweep`` writes
it to CSV (``sweep.csv``, ``sweep_points.csv``).

Here: the sweep and its progress line. A run's parameters and recipe are in
``aryl.studies.sweep_runs``, the engines in ``aryl.studies.sweep_engines``, the cache's
entries in ``aryl.studies.sweep_cache`` and the table's summary and CSV form in
``aryl.studies.sweep_tables`` (their public names are importable from here too).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ..engine.metrics import SUMMARY_KEYS
from ..engine.provenance import aryl_version
from ..engine.result import Result
from ..typing import SweepEngine
from .sweep_cache import (
    _cached,
    _check_writable,
    _run_by,
    _store,
    default_cache_dir,
)
from .sweep_engines import check_shippable, choose_engine, run_local, run_ray
from .sweep_runs import (  # the runs' parameters and recipe, documented here too
    CONFIG_FIELDS,
    PARAMETERS,
    Trace,
    check_gpu_names,
    check_names,
    display_value,
    embedded_fingerprint,
    grid_points,
    resolve,
    run_fingerprint,
    run_point,
    trace_fingerprint,
    trace_name,
)
from .sweep_tables import RUN_COLUMNS, csv_frame, interval_note, sweep_summary

__all__ = [
    "PARAMETERS",
    "SweepProgress",
    "SweepReport",
    "csv_frame",
    "default_cache_dir",
    "grid_points",
    "interval_note",
    "resolve",
    "run_keys",
    "run_point",
    "sweep",
    "sweep_points",
    "sweep_summary",
    "trace_fingerprint",
]


# ---- progress ------------------------------------------------------------------------------


class SweepProgress:
    """One line on stderr across a sweep's runs: done/total, cached, elapsed, ETA."""

    def __init__(self, total: int, cached: int, enabled: bool, stream: Any = None):
        self.total, self.cached, self.done = total, cached, cached
        self.enabled, self.stream = enabled, stream or sys.stderr
        self.start = time.perf_counter()
        self.first: Optional[float] = None
        self.show()

    def step(self) -> None:
        """One more run finished."""
        self.done += 1
        if self.first is None:
            self.first = time.perf_counter()
        self.show()

    def stop(self) -> None:
        """The sweep stopped early: end the bar's line, so what follows starts on its own."""
        if self.enabled and self.total and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()

    def eta(self) -> Optional[float]:
        """Seconds left, None before the first run finished.

        From the pace since the first run finished (so starting the engine, e.g. Ray, does
        not count), or from the elapsed time while only one has.
        """
        computed = self.done - self.cached
        if computed == 0 or self.first is None:
            return None
        now = time.perf_counter()
        pace = (now - self.first) / (computed - 1) if computed > 1 else now - self.start
        return pace * (self.total - self.done)

    def show(self) -> None:
        """Redraw the line."""
        if not self.enabled or not self.total:
            return
        filled = int(30 * self.done / self.total)
        eta = self.eta()
        elapsed = time.perf_counter() - self.start
        self.stream.write(
            f"\rsweep {self.done:>4}/{self.total} runs [{'#' * filled}{'.' * (30 - filled)}] "
            f"{self.done / self.total:4.0%}  {self.cached} cached  {_clock(elapsed)} elapsed"
            f"  ETA {'?' if eta is None else _clock(eta)}  "
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def _default_progress() -> bool:
    return sys.stderr.isatty() or "ipykernel" in sys.modules


# ---- the sweep -------------------------------------------------------------------------------


def sweep(
    base: Optional[Mapping[str, Any]] = None,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    *,
    traces: Optional[Mapping[str, Trace]] = None,
    engine: SweepEngine = "auto",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    cache: Union[bool, str, os.PathLike[str]] = True,
    progress: Optional[bool] = None,
    check: bool = True,
) -> pd.DataFrame:
    """Run every combination of ``grid`` on top of ``base``; one row per run.

    Parameters
    ----------
    base
        Parameters shared by every run: names of ``PARAMETERS`` (``trace``,
        ``first_jobs``, ``training_servers``, ``inference_servers``, ``scenario``,
        ``elastic_gpu_share``, ``hetero_share``, ``policy``, ``reclaim``, ``seed``,
        ``any_type_share``) or ``aryl.sim.Config`` fields (``headroom``, ``lend_hold``,
        ``loaning``, ...). Missing ones take their defaults.
    grid
        Parameter name -> list of values; every combination is one run (the first
        name varies slowest). E.g. ``{"inference_servers": [0, 16, 32], "headroom":
        [0.0, 0.2]}`` is 6 runs.
    traces
        Trace name -> ``(jobs, load)``: ``jobs`` a job frame (``aryl.traces.read_jobs``)
        or a list of ``aryl.Job``, ``load`` a load frame, ``(time_s, load)`` pairs or
        ``None`` (no loaning). ``"embedded"`` is ``aryl.traces.load_default()`` unless
        given here. Sweep over traces with ``grid={"trace": [...]}``.
    engine
        ``"auto"`` (Ray if installed, else local threads, with a warning),
        ``"ray"``, ``"processes"``, ``"threads"`` or ``"serial"``.
    address
        An existing Ray cluster (``"ray://host:10001"``, ``"auto"``); default: a
        local Ray started with ``workers`` CPUs (it stays up for the next sweep of this
        process; ``ray.shutdown()`` stops it). Ray workers must have aryl installed.
    workers
        Runs at once on a local engine (default: the CPU count).
    cache
        ``True``: ``default_cache_dir()``; a folder; or ``False`` for none. A
        read-only cache is read; when a run is not in it, the sweep raises
        ``PermissionError`` before anything runs.
    progress
        Show a progress bar on stderr (default: in a terminal or a notebook).
    check
        Check every run's invariants (``Result.check``).

    Returns
    -------
    pandas.DataFrame
        One row per run, in grid order: the grid's parameters, then every other
        parameter (resolved: the policy the scenario implies, ``Config`` fields given),
        the summary's keys (``aryl.sim.SUMMARY_KEYS``), and ``label``, ``jobs``
        (simulated), ``trace_fingerprint``, ``fingerprint`` (the cache key),
        ``aryl_version``, ``cached`` (read from the cache), ``seconds`` (the run's wall
        time when it ran), ``cpu_seconds`` (its CPU time: NaN on several threads, which
        share one process's clock), ``peak_memory_bytes`` (the peak resident memory
        of the process it ran in, during the run: NaN on several threads, or where
        Linux's ``/proc`` does not say) and ``saved`` (the cached ``Result``'s folder, or
        ``None``). A cache entry's ``row.json`` also keeps ``run_by``: the commit of
        aryl's source (``+dirty`` if changed), the command, the machine, the engine and
        when the run finished.
    """
    return sweep_points(
        grid_points(base, grid),
        varied=list(grid or {}),
        traces=traces,
        engine=engine,
        address=address,
        workers=workers,
        cache=cache,
        progress=progress,
        check=check,
    )


#: ``sweep_points``' progress callback: (runs done, of which found in the cache, runs in all).
SweepReport = Callable[[int, int, int], None]


def run_keys(
    points: Sequence[Mapping[str, Any]], traces: Optional[Mapping[str, Trace]] = None
) -> List[str]:
    """The cache keys of ``points`` (their entries' folder names in the cache), as
    ``sweep_points`` computes them: the trace's contents, the resolved run and the code.

    Bad parameters are a ``ValueError``, as in ``sweep``.
    """
    return _keys(points, traces)[0]


def _keys(
    points: Sequence[Mapping[str, Any]], traces: Optional[Mapping[str, Trace]]
) -> Tuple[List[str], List[str]]:
    """(each run's cache key, each run's trace fingerprint)."""
    check_names(points)
    traces = dict(traces or {})
    needed = {trace_name(p) for p in points}
    embedded = "embedded" in needed and "embedded" not in traces
    missing = sorted(needed - set(traces) - ({"embedded"} if embedded else set()))
    if missing:
        raise ValueError(
            f"unknown trace(s) {missing}; give them in traces= (known: {sorted(traces)})"
        )
    resolved = [resolve(p) for p in points]
    check_gpu_names(points, resolved, traces)
    fps = {name: trace_fingerprint(traces[name]) for name in needed if name in traces}
    if embedded:
        fps["embedded"] = embedded_fingerprint()
    trace_fps = [fps[trace_name(p)] for p in points]
    return [run_fingerprint(r, t) for r, t in zip(resolved, trace_fps)], trace_fps


def sweep_points(
    points: Sequence[Mapping[str, Any]],
    *,
    varied: Sequence[str] = (),
    traces: Optional[Mapping[str, Trace]] = None,
    engine: SweepEngine = "auto",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    cache: Union[bool, str, os.PathLike[str]] = True,
    progress: Union[None, bool, SweepReport] = None,
    check: bool = True,
) -> pd.DataFrame:
    """Run the given runs (each a mapping of ``sweep``'s parameters); one row per run.

    ``sweep`` for a list of runs that need not form a grid (e.g. the rows of a
    comparison, each with its own settings): every run not in the cache runs on the
    engine, all at once, and is saved as soon as it finishes. ``varied``: parameter
    names to put first in the table. ``progress``: as ``sweep``'s, or a function
    called with (runs done, of which found in the cache, runs in all) once before
    anything runs and after every run. The rest as ``sweep``.
    """
    given: List[Dict[str, Any]] = [dict(p) for p in points]
    resolved = [resolve(p) for p in given]
    traces = dict(traces or {})
    keys, trace_fps = _keys(given, traces)
    folder = (
        None
        if cache is False
        else (default_cache_dir() if cache is True else Path(cache))
    )
    rows: List[Optional[Dict[str, Any]]] = [None] * len(points)
    for i, key in enumerate(keys):
        summary = _cached(folder, key)
        if summary is not None:
            rows[i] = {
                **summary,
                "cached": True,
                "seconds": summary.get("seconds", np.nan),
                "cpu_seconds": summary.get("cpu_seconds", np.nan),
                "peak_memory_bytes": summary.get("peak_memory_bytes", np.nan),
            }
    todo = [(i, given[i]) for i in range(len(points)) if rows[i] is None]
    found = len(points) - len(todo)
    if callable(progress):
        report, bar = progress, None
    else:
        enabled = _default_progress() if progress is None else progress
        report, bar = None, SweepProgress(len(points), found, enabled)
    if report is not None:
        report(found, found, len(points))
    if todo and folder is not None:
        _check_writable(folder, len(todo), len(points))
    try:
        if todo:
            names = {trace_name(p) for _, p in todo}
            if "embedded" in names and "embedded" not in traces:
                from ..traces import load_default

                traces["embedded"] = load_default()
            traces = {name: traces[name] for name in names}
            which = choose_engine(engine, address)
            check_shippable([p for _, p in todo], which)
            n = int(workers or os.cpu_count() or 1)
            runs = (
                run_ray(todo, traces, address, n, check)
                if which == "ray"
                else run_local(todo, traces, which, n, check)
            )
            shared = which == "threads" and n > 1  # one process's CPU for several runs
            for done, (i, result, seconds, cpu, peak) in enumerate(runs, found + 1):
                fresh = {
                    **_row(result, keys[i], trace_fps[i]),
                    "cached": False,
                    "seconds": seconds,
                    "cpu_seconds": math.nan if shared else cpu,
                    "peak_memory_bytes": math.nan if shared else peak,
                    "run_by": _run_by(which, n),
                }
                rows[i] = fresh
                if folder is not None:
                    _store(folder / keys[i], result, fresh)
                if report is not None:
                    report(done, found, len(points))
                else:
                    bar.step()  # type: ignore[union-attr]  # set when report is None
    except BaseException:  # Ctrl-C, a run's error: end the bar's line first
        if bar is not None:
            bar.stop()
        raise
    for i, row in enumerate(rows):
        row["saved"] = None if folder is None else str(folder / keys[i])  # type: ignore[index]
    return _frame(given, resolved, rows, list(varied))


def _row(result: Result, key: str, trace_fp: str) -> Dict[str, Any]:
    p = result.provenance
    return {
        **result.summary(),
        "label": result.label,
        "jobs": len(result.jobs),
        "trace_fingerprint": trace_fp,
        "fingerprint": key,
        "aryl_version": p.aryl_version if p else aryl_version(),
    }


def _frame(
    points: List[Dict[str, Any]],
    resolved: List[Dict[str, Any]],
    rows: List[Any],
    varied: List[str],
) -> pd.DataFrame:
    given = [
        k for k in dict.fromkeys(k for p in points for k in p) if k in CONFIG_FIELDS
    ]
    params = (
        varied
        + [k for k in PARAMETERS if k not in varied]
        + [k for k in given if k not in varied]
    )
    records = []
    for r, row in zip(resolved, rows):
        values = {
            k: display_value(r["config"][k] if k in CONFIG_FIELDS else r[k])
            for k in params
        }
        records.append(
            {
                **values,
                **{k: row[k] for k in SUMMARY_KEYS},
                **{k: row[k] for k in RUN_COLUMNS},
            }
        )
    return pd.DataFrame.from_records(records)
