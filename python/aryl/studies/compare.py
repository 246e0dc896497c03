"""``compare``: several configurations on the same input, one row per run, or per
replication when seeds or windows are given (``aryl.studies.replications``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Optional, Union

import pandas as pd

from ..engine.config import Cluster
from ..engine.metrics import SUMMARY_KEYS
from ..engine.result import Result
from ..engine.simulation import simulate
from ..model import Records
from ..policy import run_copy
from .comparison import Comparison
from .paper import BASELINE
from .replications import DEFAULT_WARMUP, Progress, Runs, Seeds, compare_replicated
from .sizing import warn_if_too_small


def compare(
    jobs: Records,
    cluster: Union[Cluster, Records],
    runs: Runs,
    inference_load: Any = None,
    seed: int = 0,
    threads: int = 1,
    seeds: Optional[Seeds] = None,
    windows: Optional[int] = None,
    *,
    warmup: Optional[float] = None,
    reference: Optional[str] = None,
    progress: Optional[Progress] = None,
) -> Comparison:
    """Run several configurations on the same input; one row per run.

    ``runs`` maps a row name to keyword arguments of ``simulate`` (``policy``,
    ``reclaim``, ``config``, or ``jobs`` to replace the input jobs, e.g. with a
    scenario's). Columns are the summary's keys, as in the paper's Table 3.
    ``threads`` > 1 runs that many at once (the simulator releases the GIL).

    Returns a ``Comparison``: that table as a ``DataFrame``, with ``.results``
    (row name -> ``Result``) to plot, save or inspect the runs without re-running.
    A Baseline row (``aryl.sim.BASELINE``) whose mean queue is longer than the trace
    spans warns that the cluster is far too small (``sizing.warn_if_too_small``).

    With ``seeds`` (how many, from ``seed`` on, or a list) and/or ``windows`` (``K``
    disjoint time slices of the trace) every row runs once per replication, all rows
    of a replication on the same seed and window, and each metric is the mean over
    replications with a 95% Student-t interval (``<key>_low``, ``<key>_high``), plus
    speed-ups over ``reference`` as paired ratios with intervals. ``runs`` may then
    be a function of the seed (``lambda s: paper_runs(jobs, load, seed=s)``) so that
    every replication draws its own scenarios. ``warmup``: seconds of warm-up before
    each window (default one day); ``reference``: the row speed-ups are over (default
    the Baseline, else the first row); ``progress(done, total)``: called after each
    run. The rules: ``aryl.studies.replications``.
    """
    if seeds is not None or windows is not None:
        return compare_replicated(
            jobs,
            cluster,
            runs,
            inference_load,
            seed,
            threads,
            seeds,
            windows,
            DEFAULT_WARMUP if warmup is None else warmup,
            reference,
            progress,
        )
    given = {"warmup": warmup, "reference": reference, "progress": progress}
    if any(v is not None for v in given.values()):
        names = sorted(k for k, v in given.items() if v is not None)
        raise TypeError(f"{names} need seeds= or windows=")
    if callable(runs):
        raise TypeError("runs as a function of the seed needs seeds= or windows=")
    if not runs:
        raise ValueError("runs is empty: give at least one named run")

    def run(name: str, kwargs: Mapping[str, Any]) -> Result:
        kwargs = dict(kwargs)
        run_jobs = kwargs.pop("jobs", jobs)
        kwargs.setdefault("inference_load", inference_load)
        kwargs.setdefault("seed", seed)
        if "policy" in kwargs:
            kwargs["policy"] = run_copy(kwargs["policy"])
        return simulate(run_jobs, cluster, label=name, **kwargs)

    with ThreadPoolExecutor(max(1, int(threads))) as pool:
        futures = {
            name: pool.submit(run, name, kwargs) for name, kwargs in runs.items()
        }
        results = {name: f.result() for name, f in futures.items()}
    if BASELINE in results:  # the row the speed-ups are over
        warn_if_too_small(results[BASELINE])
    rows = {name: r.summary() for name, r in results.items()}
    return Comparison.of(
        pd.DataFrame.from_dict(rows, orient="index")[list(SUMMARY_KEYS)], results
    )
