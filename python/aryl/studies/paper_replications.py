"""The paper's comparison, replicated through ``aryl.studies.sweep``: cached, on Ray or locally.

``replicate_paper(frame, load, training_servers, inference_servers, seeds=5)`` (or
``replicate_paper(frame, load, seeds=5, servers=read_servers(FILE))``) runs the
rows of ``paper_runs`` (``PAPER_POINTS``: each row as sweep parameters, which build the
same jobs, policy, reclaim and config as ``paper_runs`` does for the same seed; with
``pollux_rows=True`` also ``POLLUX_POINTS``, the Pollux and Aryl+TunedJobs rows) once
per seed and window, through ``sweep_points``: on the engine it is given (threads,
processes or Ray), all rows at once, each run cached under its (configuration, code,
seed, window) fingerprint and saved as soon as it finishes. Running it again with more
seeds runs only the new ones; running it again after an interruption runs only the
runs that had not finished. ``paper_plan`` lists the runs (and their cache entries)
without running them. It returns the same ``Comparison`` as
``compare(..., seeds=..., windows=...)`` (``aryl.studies.replications``: the windows, the
warm-up rule and the intervals).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from ..defaults import ANY_TYPE_SHARE
from ..engine.result import Result
from ..engine.result import load as load_result
from ..model import Records
from ..typing import SweepEngine
from .comparison import Comparison
from .paper import LOANING_ROWS, OWN_POLICY_BASE, chosen_rows
from .replications import (
    DEFAULT_WARMUP,
    Seeds,
    assemble,
    seed_list,
)
from .sweep import SweepReport, run_keys, sweep_points
from .sweep_clusters import server_list
from .windows import window_traces

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


#: The Pollux rows (Table 3 rows 10 and 12, ``paper_runs(..., pollux_rows=True)``) as
#: ``sweep`` parameters: the Basic jobs as goodput-driven Pollux applications on the
#: training servers as 4-GPU nodes, no loaning.
POLLUX_POINTS: Dict[str, Dict[str, Any]] = {
    "Pollux": {
        "scenario": "basic",
        "policy": "pollux",
        "loaning": False,
        "goodput_jobs": True,
    },
    "Aryl+TunedJobs": {
        "scenario": "basic",
        "policy": "aryl",
        "loaning": False,
        "agent": "pollux",
        "goodput_jobs": True,
    },
}


@dataclass
class PaperPlan:
    """The runs of a replicated paper comparison, before any runs (``paper_plan``).

    ``names``: the rows, in order; ``runs``: one ``(row, seed, window)`` per run and
    ``points`` its ``sweep`` parameters (same order); ``traces``: the sweep's traces (the
    whole trace, or one per window); ``measured``: per window, the ids of the jobs it
    measures (None: all).
    """

    names: List[str]
    runs: List[Tuple[str, int, int]]
    points: List[Dict[str, Any]]
    traces: Dict[str, Tuple[pd.DataFrame, Any]]
    measured: List[Optional[List[Any]]]

    def entries(self) -> pd.DataFrame:
        """One row per run: ``row``, ``seed``, ``window`` and ``fingerprint`` (its cache
        entry's name, ``sweep.run_keys``: its configuration, seed, window and the code)."""
        frame = pd.DataFrame(self.runs, columns=["row", "seed", "window"])
        frame["fingerprint"] = run_keys(self.points, self.traces)
        return frame


def paper_plan(
    frame: pd.DataFrame,
    load: Any,
    training_servers: Optional[int] = None,
    inference_servers: Optional[int] = None,
    seeds: Seeds = 1,
    *,
    servers: Optional[Records] = None,
    windows: Optional[int] = None,
    warmup: float = DEFAULT_WARMUP,
    seed: int = 0,
    config: Optional[Mapping[str, Any]] = None,
    any_type_share: float = ANY_TYPE_SHARE,
    rows: Optional[Sequence[str]] = None,
    pollux_rows: bool = False,
    policies: Optional[Mapping[str, Any]] = None,
    scenario_options: Optional[Mapping[str, Any]] = None,
) -> PaperPlan:
    """The runs ``replicate_paper`` makes with these arguments (its parameters), not run.

    Bad seeds, windows or rows are a ``ValueError`` here; bad settings when the runs'
    keys are computed (``PaperPlan.entries``, ``replicate_paper``), before any run.
    """
    chosen = seed_list(seeds, seed)
    traces, measured = _traces(frame, load, windows, warmup)
    available = _available(policies)
    names = _rows(rows, pollux_rows, load is not None, available)
    common = {
        **dict(config or {}),
        **dict(scenario_options or {}),
        **_cluster(training_servers, inference_servers, servers),
        "any_type_share": float(any_type_share),
    }
    runs, points = [], []
    for name in names:
        for s in chosen:
            for window, trace in enumerate(traces):
                runs.append((name, s, window))
                points.append({**common, **available[name], "seed": s, "trace": trace})
    return PaperPlan(names, runs, points, traces, measured)


_POINTS = {**PAPER_POINTS, **POLLUX_POINTS}


def _cluster(
    training: Optional[int], inference: Optional[int], servers: Optional[Records]
) -> Dict[str, Any]:
    """The runs' cluster as sweep parameters: the server counts, or the server list
    (``sweep_runs.server_list``: its content is in every run's cache key)."""
    if servers is not None:
        if training is not None or inference is not None:
            raise ValueError(
                "servers gives the whole cluster: give it, or training_servers and "
                "inference_servers, not both"
            )
        return {"servers": server_list(servers)}
    if training is None or inference is None:
        raise ValueError(
            "give the cluster: training_servers and inference_servers, or servers"
        )
    return {"training_servers": int(training), "inference_servers": int(inference)}


def _available(policies: Optional[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Every row that can run: the paper's, the Pollux rows and each policy of your
    own as ``OWN_POLICY_BASE`` with its allocation policy replaced."""
    points = dict(_POINTS)
    for name, policy in (policies or {}).items():
        if name in points:
            raise ValueError(f"policies: row {name!r} is already a row of the paper's")
        points[name] = {**PAPER_POINTS[OWN_POLICY_BASE], "policy": policy}
    return points


def _rows(
    rows: Optional[Sequence[str]],
    pollux_rows: bool,
    loaning: bool,
    available: Mapping[str, Any],
) -> List[str]:
    """The rows to run: those given (checked), else every paper row that applies and
    the rows of your own."""
    if rows is None:
        names = [n for n in PAPER_POINTS if loaning or n not in LOANING_ROWS]
        pollux = list(POLLUX_POINTS) if pollux_rows else []
        return names + pollux + [n for n in available if n not in _POINTS]
    if isinstance(rows, str) or not rows:
        raise ValueError(f"rows: give a non-empty list of row names, got {rows!r}")
    names = list(rows)
    if len(set(names)) != len(names):
        raise ValueError(f"rows: each row once, got {names}")
    chosen_rows(available, names)  # names the unknown ones
    lending = [n for n in names if n in LOANING_ROWS]
    if lending and not loaning:
        raise ValueError(f"rows {lending} lend servers: they need a load series")
    return names


def replicate_paper(
    frame: pd.DataFrame,
    load: Any,
    training_servers: Optional[int] = None,
    inference_servers: Optional[int] = None,
    seeds: Seeds = 1,
    *,
    servers: Optional[Records] = None,
    windows: Optional[int] = None,
    warmup: float = DEFAULT_WARMUP,
    seed: int = 0,
    config: Optional[Mapping[str, Any]] = None,
    scenario_options: Optional[Mapping[str, Any]] = None,
    any_type_share: float = ANY_TYPE_SHARE,
    rows: Optional[Sequence[str]] = None,
    pollux_rows: bool = False,
    reference: Optional[str] = None,
    engine: SweepEngine = "threads",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    cache: Union[bool, str, Path] = True,
    progress: Optional[SweepReport] = None,
    policies: Optional[Mapping[str, Any]] = None,
) -> Comparison:
    """The paper's rows, once per seed (and window), through ``sweep``; with intervals.

    Parameters
    ----------
    frame, load
        The trace: a job frame (``aryl.traces.read_jobs`` / ``load_default``) and its
        load (a frame, pairs or None: then the loaning rows are left out, as in
        ``paper_runs``).
    training_servers, inference_servers
        The cluster (8-GPU V100 and T4 servers; the Pollux rows run on the training
        servers as 4-GPU nodes, ``pollux_nodes``).
    servers
        Or the cluster as a list of servers (``aryl.traces.read_servers(FILE)``;
        not with the Pollux rows, whose nodes are cut from a cluster of counts).
    seeds
        How many seeds (from ``seed`` on) or which; every row runs with each, and
        converts the frame to jobs with it (``to_jobs(any_type_share, seed)``).
    windows, warmup
        ``K`` disjoint time slices, each after ``warmup`` seconds of warm-up
        (``aryl.studies.replications``).
    config
        ``Config`` fields given to every row (a row's own settings win), e.g.
        ``{"pollux_generations": 100}`` for the Pollux row's search.
    rows, pollux_rows
        Which rows (names of ``PAPER_POINTS`` and ``POLLUX_POINTS``), in order; by
        default every paper row that applies and, with ``pollux_rows``, the Pollux
        rows (``POLLUX_POINTS``: Pollux and Aryl+TunedJobs).
    scenario_options
        The scenario's sweep parameters given to every row (``elastic_selection``,
        ``elastic_job_share``, ``elastic_range``, ``elastic_gpu_share``,
        ``hetero_share``; ``aryl.sim.PARAMETERS``).
    reference
        The row speed-ups are over (default the first row).
    engine, workers, address, cache
        As for ``sweep`` (default: threads; the cache in ``default_cache_dir()``).
        Every run (row, seed, window) is its own cache entry, saved as soon as it
        finishes, so an interrupted call loses only the runs in flight and the same
        call continues from the cache. ``cache=False`` keeps the runs in a temporary
        folder only.
    progress
        Called with (runs done, of which found in the cache, runs in all) before
        anything runs and after each run.
    policies
        Rows of your own, as for ``paper_runs``: row name ->
        a policy object or a ``module:Class`` / ``path.py:Class`` spec (which worker
        processes import by name; cached under the policy's code and settings).

    Returns
    -------
    Comparison
        As ``compare(..., seeds=...)`` returns it.
    """
    plan = paper_plan(
        frame,
        load,
        training_servers,
        inference_servers,
        seeds,
        servers=servers,
        windows=windows,
        warmup=warmup,
        seed=seed,
        config=config,
        any_type_share=any_type_share,
        rows=rows,
        pollux_rows=pollux_rows,
        policies=policies,
        scenario_options=scenario_options,
    )
    reference = reference or plan.names[0]
    if reference not in plan.names:
        raise ValueError(f"reference row {reference!r} is not a row: {plan.names}")
    results: Dict[Tuple[str, int, int], Result] = {}
    with tempfile.TemporaryDirectory() as scratch:
        table = sweep_points(
            plan.points,
            traces=plan.traces,
            engine=engine,
            address=address,
            workers=workers,
            cache=scratch if cache is False else cache,
            progress=progress or False,
        )
        for (name, s, window), saved in zip(plan.runs, table["saved"]):
            result = load_result(saved)
            ids = plan.measured[window]
            if ids is not None:
                keep = result.jobs["id"].isin(ids).to_numpy()
                result.jobs = result.jobs[keep].reset_index(drop=True)
            result.label = name
            results[(name, s, window)] = result
    return assemble(results, plan.names, reference)


def _traces(
    frame: pd.DataFrame, load: Any, windows: Optional[int], warmup: float
) -> Tuple[Dict[str, Tuple[pd.DataFrame, Any]], List[Optional[List[Any]]]]:
    """The sweep's traces (the whole trace, or one per window, ``window_traces``) and,
    per window, the ids of the jobs it measures (None: all)."""
    if windows is None:
        return {"trace": (frame, load)}, [None]
    cut = window_traces(frame, load, windows, warmup)
    measured: List[Optional[List[Any]]] = list(cut.measured)
    return cut.traces, measured
