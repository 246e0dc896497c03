"""Where a testbed row's live run and its simulation part, job by job (issue 34).

Reads what ``python benchmarks/testbed.py --out DIR`` kept of a row (``DIR/ROW/live``,
``simulated``, ``calibrated``: saved results) and prints:

- the split of the mean-JCT difference into queuing and running time (JCT = queuing +
  running), and how many jobs each side has the longer;
- the running time of the jobs neither run preempted nor rescaled, against the simulator's
  (what a start, the emulated progress and the checkpoints cost live, and nothing else);
- the jobs whose JCT differs most, with their submit, start and finish times, workers'
  changes and preemptions on each side;
- the cluster over time: servers on loan, queue length, training GPUs in use, as
  time-weighted means of each run's timeline;
- the simulator again with what live measured taught to it: the mean extra running time
  of the steady jobs as a uniform ``start_overhead``, then each job's own extra running
  time as extra work at its start. If the second comes close to live, the difference was
  that latency (and how the queue passes it on), not the decisions.

Run: python benchmarks/testbed_diff.py DIR [--row aryl] [--against simulated|calibrated]
[--top 12]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, List, Tuple

import numpy as np
import pandas as pd

from _common import table


def joined(live: Any, sim: Any) -> pd.DataFrame:
    """One row per job finished in both runs: live and simulated times side by side."""
    keep = ["id", "submit_time", "start_time", "finish_time", "queuing_time", "jct"]
    keep += ["preemptions", "scaling_ops"]
    both = live.jobs[keep].merge(
        sim.jobs[keep], on="id", suffixes=("_live", "_sim"), validate="one_to_one"
    )
    both = both.dropna(subset=["jct_live", "jct_sim"])
    for side in ("live", "sim"):
        both[f"running_{side}"] = both[f"jct_{side}"] - both[f"queuing_time_{side}"]
    both["jct_diff"] = both["jct_live"] - both["jct_sim"]
    return both


def split(both: pd.DataFrame) -> List[List[str]]:
    """Mean JCT difference = mean queuing difference + mean running difference."""
    rows = []
    for what, column in (
        ("queuing", "queuing_time"),
        ("running", "running"),
        ("JCT", "jct"),
    ):
        d = both[f"{column}_live"] - both[f"{column}_sim"]
        rows.append(
            [
                what,
                f"{both[f'{column}_sim'].mean():,.0f}",
                f"{both[f'{column}_live'].mean():,.0f}",
                f"{d.mean():+,.0f}",
                f"{(d > 1).sum()}",
                f"{(d < -1).sum()}",
                f"{d.median():+,.0f}",
            ]
        )
    return rows


def steady(both: pd.DataFrame) -> pd.DataFrame:
    """Jobs neither run preempted nor rescaled: their running times compare like for like."""
    calm = (both["preemptions_live"] == 0) & (both["preemptions_sim"] == 0)
    calm &= (both["scaling_ops_live"] == 0) & (both["scaling_ops_sim"] == 0)
    return both[calm]


def timeline_means(result: Any) -> dict[str, float]:
    """Time-weighted means of the timeline's columns over the run."""
    t = result.timeline
    dt = np.diff(t["t"].to_numpy(dtype=float), append=float(t["t"].iloc[-1]))
    span = dt.sum() or 1.0
    return {
        c: float((t[c].to_numpy(dtype=float) * dt).sum() / span)
        for c in ("on_loan", "queue_length", "training_gpus_used", "loaned_gpus_used")
    }


def replayed(row: str, both: pd.DataFrame) -> Tuple[float, Any, Any]:
    """The row simulated again, taught live's extra running time: (the steady jobs'
    mean extra, the run with it as a uniform ``start_overhead``, the run with each
    job's own extra as extra work at its start, at its simulated rate)."""
    import dataclasses

    from aryl import sim
    from testbed import row_arguments, testbed_trace

    frame, load = testbed_trace()
    run, cluster, config = row_arguments(row, frame, load)
    if set(both["id"]) - {j.id for j in run["jobs"]}:
        raise ValueError("these results are not of the testbed's jobs")
    calm = steady(both)
    overhead = float((calm["running_live"] - calm["running_sim"]).mean())
    uniform = sim.simulate(
        cluster=cluster,
        **{**run, "config": dataclasses.replace(config, start_overhead=overhead)},
    )
    # running = duration / rate, so e more seconds of running are e / running times
    # the job's work more at the same rate
    extra = dict(
        zip(both["id"], (both["running_live"] - both["running_sim"]).clip(lower=0.0))
    )
    running = dict(zip(both["id"], both["running_sim"]))
    longer = [
        dataclasses.replace(
            j, duration=j.duration * (1.0 + extra.get(j.id, 0.0) / running[j.id])
        )
        if j.id in running
        else j
        for j in run["jobs"]
    ]
    each = sim.simulate(cluster=cluster, **{**run, "jobs": longer, "config": config})
    return overhead, uniform, each


def main() -> None:
    from aryl import sim
    from aryl.engine.metrics import METRICS
    from aryl.studies.paper import TABLE3_KEYS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="testbed.py's --out folder")
    parser.add_argument("--row", default="aryl")
    parser.add_argument(
        "--against", default="simulated", choices=("simulated", "calibrated")
    )
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    live = sim.load(args.folder / args.row / "live")
    other = sim.load(args.folder / args.row / args.against)
    both = joined(live, other)
    print(f"{args.row}: {len(both)} jobs finished in both runs; live vs {args.against}")
    print(
        table(
            [
                "time",
                args.against,
                "live",
                "mean diff",
                "live longer",
                "live shorter",
                "median diff",
            ],
            split(both),
        )
    )
    calm = steady(both)
    d = calm["running_live"] - calm["running_sim"]
    print(
        f"\n{len(calm)} jobs neither preempted nor rescaled in either run: running time live - "
        f"{args.against}: mean {d.mean():+,.0f} s, median {d.median():+,.0f} s, "
        f"p5 {d.quantile(0.05):+,.0f} s, p95 {d.quantile(0.95):+,.0f} s; "
        f"relative mean {100 * d.sum() / calm['running_sim'].sum():+.1f}%"
    )
    for column in ("preemptions", "scaling_ops"):
        print(
            f"{column}: live {int(both[f'{column}_live'].sum())}, "
            f"{args.against} {int(both[f'{column}_sim'].sum())}"
        )
    top = both.reindex(both["jct_diff"].abs().sort_values(ascending=False).index)
    rows = [
        [
            str(r.id),
            f"{r.submit_time_live:,.0f}",
            f"{r.start_time_sim:,.0f} / {r.start_time_live:,.0f}",
            f"{r.running_sim:,.0f} / {r.running_live:,.0f}",
            f"{r.jct_sim:,.0f} / {r.jct_live:,.0f}",
            f"{r.preemptions_sim:.0f} / {r.preemptions_live:.0f}",
            f"{r.scaling_ops_sim:.0f} / {r.scaling_ops_live:.0f}",
        ]
        for r in top.head(args.top).itertuples()
    ]
    print(f"\nThe {args.top} jobs whose JCT differs most ({args.against} / live):")
    print(
        table(
            ["job", "submit", "start", "running", "JCT", "preempted", "rescaled"],
            rows,
        )
    )
    if args.against == "simulated":
        overhead, uniform, each = replayed(args.row, both)
        runs = [
            (args.against, other),
            (f"start overhead {overhead:,.0f} s (steady jobs' mean extra)", uniform),
            ("each job's own extra running time", each),
        ]
        keys = TABLE3_KEYS[:6]
        mine = live.summary()
        print(
            "\nThe simulator taught what live measured (live vs each: relative difference):"
        )
        print(
            table(
                ["simulated with", *(METRICS[k].header for k in keys)],
                [
                    [label]
                    + [
                        f"{s[k]:,.0f} ({100 * (mine[k] - s[k]) / s[k]:+.1f}%)"
                        for k in keys
                    ]
                    for label, s in ((label, r.summary()) for label, r in runs)
                ],
            )
        )
    a, b = timeline_means(other), timeline_means(live)
    print("\nThe cluster over time (time-weighted means):")
    print(
        table(
            ["", args.against, "live"],
            [[k, f"{a[k]:.2f}", f"{b[k]:.2f}"] for k in a],
        )
    )


if __name__ == "__main__":
    main()
