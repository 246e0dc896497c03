"""Start on loan on the main job (issue 43, item 4): how many jobs start on a loaned
server, how many of those move to their fast GPU type later, and how many a reclaim
preempts, in the rows "Aryl Basic" and "Loaning only, aryl reclaim" of ``aryl compare``
(seed 0, 85 training + 100 inference servers, ``Config.start_on_loan``), at each
loaned-GPU speed and any-type share of benchmarks/README.md's table.

    nice python benchmarks/start_on_loan.py

The JCT figures and their intervals come from ``aryl compare --seeds 5 --start-on-loan``
(benchmarks/README.md, "Start on loan"); this counts what the option did in one run.
"""

from __future__ import annotations

import itertools

from aryl import sim, traces
from aryl.defaults import ANY_TYPE_SHARE
from aryl.engine.runs import trace_jobs
from aryl.studies.paper import paper_runs

ROWS = ["Aryl Basic", "Loaning only, aryl reclaim"]


def counts(result: sim.Result) -> str:
    """Jobs started on a loaned (T4) server, moved later, preempted by a reclaim."""
    h = result.history()
    on_loan = set(h.loc[(h["opened"] == "start") & (h["gpu_type"] == "T4"), "job"])
    moved = set(h.loc[h["opened"] == "move", "job"])
    reclaimed = set(h.loc[h["closed"] == "reclaim_preemption", "job"])
    return (
        f"{len(on_loan):>5} started on loan, {len(moved & on_loan):>5} of them moved, "
        f"{len(reclaimed):>3} preempted by a reclaim"
    )


def main() -> None:
    frame, load = traces.load_default()
    for speed, share in itertools.product((0.25, 0.5), (ANY_TYPE_SHARE, 1.0)):
        jobs = trace_jobs(frame, any_type_share=share, seed=0)
        config = {"gpu_speed": {"V100": 1.0, "T4": speed}, "start_on_loan": True}
        runs = paper_runs(jobs, load, seed=0, config=config, rows=ROWS)
        for name, arguments in runs.items():
            result = sim.simulate(
                cluster=sim.Cluster(85, 100), history=True, **arguments
            )
            print(f"T4={speed:g} any-type {share:g}  {name:<27} {counts(result)}")


if __name__ == "__main__":
    main()
