"""Draws docs/figures/gantt.png, the allocation history shown in docs/model.md.

The embedded trace's Aryl Ideal row (``aryl.sim.paper_runs``) on the cluster
``aryl compare`` sizes (``aryl.sim.size_cluster``), recorded with ``history=True``;
the chart shows the hours around the first reclaim that hit a job: the jobs a
reclaim preempted or scaled in, then the jobs the allocator resized most then, up
to ``JOBS`` in all. (Ideal, because in Aryl Basic no reclaim hits a job: training
uses 6 of the 485,654 GPU-hours lent there.)

Run: python docs/figures/gantt.py  (tests/py/test_history.py runs ``figure()`` too)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Tuple

JOBS = 14
BEFORE, AFTER = 6 * 3600.0, 4 * 3600.0  # s shown before and after that reclaim
OUT = Path(__file__).with_name("gantt.png")


ROW = "Aryl Ideal"


def basic_run() -> Any:
    """The ``ROW`` row of the embedded trace, with its allocation history."""
    from aryl import sim, traces

    frame, load = traces.load_default()
    jobs = traces.to_jobs(frame, seed=0)
    cluster = sim.size_cluster(jobs).cluster
    row = sim.paper_runs(jobs, load)[ROW]
    return sim.simulate(cluster=cluster, label=ROW, history=True, **row)


def chosen(result: Any) -> Tuple[List[Any], Tuple[float, float]]:
    """The jobs to draw, in order of first start, and the window around the reclaim."""
    from aryl.engine.history import RECLAIMS, intervals

    spans = intervals(result.history())
    reclaimed = spans[spans["closed"].isin(RECLAIMS)]
    at = float(reclaimed["end"].min())
    window = (at - BEFORE, at + AFTER)
    near = spans[(spans["end"] > window[0]) & (spans["start"] < window[1])]
    resized = near.groupby("job").size().sort_values(ascending=False, kind="stable")
    hit = reclaimed["job"].unique().tolist()
    jobs = hit + [j for j in resized.index if j not in hit]
    starts = result.jobs.set_index("id")["start_time"]
    return sorted(jobs[:JOBS], key=lambda j: starts[j]), window


def figure() -> Any:
    """The figure (a matplotlib ``Figure``)."""
    from aryl import plot

    result = basic_run()
    jobs, window = chosen(result)
    return plot.gantt(result, jobs=jobs, window=window)


if __name__ == "__main__":
    figure().savefig(OUT, dpi=100)
    print(f"wrote {OUT}")
