"""The paper's comparison, replicated through ``aryl.sim.sweep``: cached, on Ray or locally.

``replicate_paper(frame, load, training_servers, inference_servers, seeds=5)`` runs the
rows of ``paper_runs`` (``PAPER_POINTS``: each row as sweep parameters, which build the
same jobs, policy, reclaim and config as ``paper_runs`` does for the same seed) once
per seed and window, through ``sweep``: on the engine it is given (threads, processes
or Ray), each run cached under its (configuration, seed, window) fingerprint. Running
it again with more seeds runs only the new ones. It returns the same ``Comparison`` as
``compare(..., seeds=..., windows=...)`` (``aryl.sim.replications``: the windows, the
warm-up rule and the intervals).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import pandas as pd

from ..defaults import ANY_TYPE_SHARE
from ..typing import SweepEngine
from .comparison import Comparison
from .paper import LOANING_ROWS
from .replications import (
    DEFAULT_WARMUP,
    Seeds,
    assemble,
    seed_list,
    time_windows,
    window_load,
    window_slice,
)
from .result import Result
from .result import load as load_result
from .sweep import sweep

#: The rows of ``paper_runs`` (its Pollux rows aside) as ``sweep`` parameters.
PAPER_POINTS: Dict[str, Dict[str, Any]] = {
    "Baseline (FIFO)": {"scenario": "baseline"},
    "Aryl Basic": {"scenario": "basic"},
    "Aryl Advanced": {"scenario": "advanced"},
    "Aryl Ideal": {"scenario": "ideal"},
    **{
        f"Loaning only, {name} reclaim": {
            "scenario": "baseline",
            "policy": "aryl",
            "reclaim": reclaim,
            "loaning": True,
        }
        for name, reclaim in (("random", "random"), ("SCF", "scf"), ("aryl", "aryl"))
    },
    **{
        f"Elastic only, {name}": {
            "scenario": "basic",
            "policy": policy,
            "loaning": False,
        }
        for name, policy in (("Gandiva", "gandiva"), ("AFS", "afs"), ("aryl", "aryl"))
    },
    "Control: SJF, no loaning": {"scenario": "baseline", "policy": "sjf"},
    "Control: FIFO + backfill": {"scenario": "baseline", "backfill": True},
    "Ablation: Basic, imperfect": {"scenario": "basic", "scaling": "imperfect"},
    "Ablation: Basic, plain BFD": {"scenario": "basic", "placement": "bfd"},
}


def replicate_paper(
    frame: pd.DataFrame,
    load: Any,
    training_servers: int,
    inference_servers: int,
    seeds: Seeds,
    *,
    windows: Optional[int] = None,
    warmup: float = DEFAULT_WARMUP,
    seed: int = 0,
    config: Optional[Mapping[str, Any]] = None,
    scenario_options: Optional[Mapping[str, Any]] = None,
    any_type_share: float = ANY_TYPE_SHARE,
    reference: Optional[str] = None,
    engine: SweepEngine = "threads",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    cache: Union[bool, str, Path] = True,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Comparison:
    """The paper's rows, once per seed (and window), through ``sweep``; with intervals.

    Parameters
    ----------
    frame, load
        The trace: a job frame (``aryl.traces.read_jobs`` / ``load_default``) and its
        load (a frame, pairs or None: then the loaning rows are left out, as in
        ``paper_runs``).
    training_servers, inference_servers
        The cluster (8-GPU V100 and T4 servers).
    seeds
        How many seeds (from ``seed`` on) or which; every row runs with each, and
        converts the frame to jobs with it (``to_jobs(any_type_share, seed)``).
    windows, warmup
        ``K`` disjoint time slices, each after ``warmup`` seconds of warm-up
        (``aryl.sim.replications``).
    config
        ``Config`` fields given to every row (a row's own settings win).
    scenario_options
        The scenario's sweep parameters given to every row (``elastic_selection``,
        ``elastic_job_share``, ``elastic_range``, ``elastic_gpu_share``,
        ``hetero_share``; ``aryl.sim.PARAMETERS``).
    reference
        The row speed-ups are over (default the Baseline).
    engine, workers, address, cache
        As for ``sweep`` (default: threads; the cache in ``default_cache_dir()``).
        ``cache=False`` keeps the runs in a temporary folder only.
    progress
        Called with (runs done, runs in all) after each row's replications.

    Returns
    -------
    Comparison
        As ``compare(..., seeds=...)`` returns it.
    """
    chosen = seed_list(seeds, seed)
    traces, measured = _traces(frame, load, windows, warmup)
    points = {
        name: point
        for name, point in PAPER_POINTS.items()
        if load is not None or name not in LOANING_ROWS
    }
    names = list(points)
    reference = reference or names[0]
    if reference not in points:
        raise ValueError(f"reference row {reference!r} is not a row: {names}")
    common = {
        **dict(config or {}),
        **dict(scenario_options or {}),
        "training_servers": int(training_servers),
        "inference_servers": int(inference_servers),
        "any_type_share": float(any_type_share),
    }
    grid: Dict[str, List[Any]] = {"seed": list(chosen), "trace": list(traces)}
    total, done = len(points) * len(chosen) * len(traces), 0
    results: Dict[Tuple[str, int, int], Result] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = scratch if cache is False else cache
        for name, point in points.items():
            table = sweep(
                {**common, **point},
                grid,
                traces=traces,
                engine=engine,
                address=address,
                workers=workers,
                cache=folder,
                progress=False,
            )
            for _, row in table.iterrows():
                window = list(traces).index(row["trace"])
                result = load_result(row["saved"])
                ids = measured[window]
                if ids is not None:
                    keep = result.jobs["id"].isin(ids).to_numpy()
                    result.jobs = result.jobs[keep].reset_index(drop=True)
                result.label = name
                results[(name, int(row["seed"]), window)] = result
            done += len(table)
            if progress is not None:
                progress(done, total)
    return assemble(results, names, reference)


def _traces(
    frame: pd.DataFrame, load: Any, windows: Optional[int], warmup: float
) -> Tuple[Dict[str, Tuple[pd.DataFrame, Any]], List[Optional[List[Any]]]]:
    """The sweep's traces (the whole trace, or one per window) and, per window, the ids
    of the jobs it measures (None: all)."""
    if windows is None:
        return {"trace": (frame, load)}, [None]
    times = frame["submit_time_s"].to_numpy(dtype=float)
    last = float(times.max())
    traces: Dict[str, Tuple[pd.DataFrame, Any]] = {}
    measured: List[Optional[List[Any]]] = []
    for w in time_windows(times, windows, warmup):
        rows = slice(*window_slice(times, w))
        part = frame.iloc[rows].reset_index(drop=True)
        measured.append(part["job_id"][times[rows] >= w.start].tolist())
        part["submit_time_s"] = part["submit_time_s"] - w.run_start
        traces[f"window {w.index + 1}/{windows}"] = (part, window_load(load, w, last))
    return traces, measured
