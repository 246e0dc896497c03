"""One cause at a time behind the Pollux row's gap to Table 3 rows 10-12 (issue 31).

``demand``: nothing is run. On the windows of ``benchmarks/results/pollux`` that every
row finished, each row's queuing by the jobs' GPU demand (the trace's ``num_gpus``):
jobs, mean queuing and the share of the row's total queuing. It shows which jobs make
Pollux's mean queuing several times Aryl+TunedJobs'.

``minimums``: the Pollux row on windows of the 16 (``--windows 1 3``: the first and
third) as ``pollux_table.py run`` runs it, but with every job's minimum dropped: the
artifact's simulator has no minimums (a job runs on any number of replicas up to its
cap), while the ITP Pollux row gives each job its base demand as adaptdl's production
policy does (``docs/model.md``, "The Pollux policy"). Each run is kept whole under
``benchmarks/results/pollux-causes/`` (an existing run is read, not run again: about
20-30 CPU minutes a window at 100 generations) and printed beside the row as kept
(with minimums) and Aryl+TunedJobs on the same window's measured jobs.

Run: python benchmarks/pollux_causes.py demand
     python benchmarks/pollux_causes.py minimums --windows 1 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pandas as pd

from _common import machine, table
from pollux_table import PLAN_DEFAULTS, RESULTS, TRAINING_SERVERS, load_runs

CAUSES = RESULTS.parent / "pollux-causes"
#: pollux_table.py run's defaults: the kept table's windows, warm-up and search
WINDOWS = int(PLAN_DEFAULTS["windows"])
WARMUP = PLAN_DEFAULTS["warmup"]
GENERATIONS = int(PLAN_DEFAULTS["generations"])


def plan(windows: int = WINDOWS, generations: int = GENERATIONS) -> Any:
    """The runs of ``pollux_table.py run`` with these settings (nothing run)."""
    from aryl import sim, traces

    frame, _ = traces.load_default()
    return sim.paper_plan(
        frame,
        None,
        TRAINING_SERVERS,
        0,
        seeds=1,
        windows=windows,
        warmup=WARMUP,
        config={"pollux_generations": generations},
        rows=["Pollux"],
    )


def demands(the_plan: Any) -> Dict[str, int]:
    """Every job's GPU demand (the trace's ``num_gpus``) by its id as results give it."""
    out: Dict[str, int] = {}
    for jobs, _ in the_plan.traces.values():
        out.update(zip(jobs["job_id"].astype(str), jobs["num_gpus"].astype(int)))
    return out


def by_demand(jobs: pd.DataFrame, gpus: Dict[str, int]) -> pd.DataFrame:
    """Jobs, mean queuing and share of all queuing, per GPU demand."""
    frame = jobs.assign(gpus=jobs["id"].astype(str).map(gpus))
    grouped = frame.groupby("gpus")["queuing_time"]
    return pd.DataFrame(
        {
            "jobs": grouped.size(),
            "mean": grouped.mean(),
            "share": grouped.sum() / max(frame["queuing_time"].sum(), 1e-9),
        }
    )


def demand_report() -> str:
    """``demand``'s text: queuing by GPU demand on the windows every row finished."""
    runs = load_runs()
    rows = sorted(set(runs["row"]))
    done = [w for w, g in runs.groupby("window") if set(g["row"]) == set(rows)]
    gpus = demands(plan())
    frames = {}
    for row in rows:
        chosen = runs[(runs["row"] == row) & runs["window"].isin(done)]
        jobs = pd.concat([r.jobs for r in chosen["result"]], ignore_index=True)
        frames[row] = by_demand(jobs, gpus)
    return (
        f"Queuing by the jobs' GPU demand, on the windows every row finished "
        f"({', '.join(str(w + 1) for w in done)} of {WINDOWS}); each row's measured jobs "
        "pooled: jobs, mean queuing (s), share of the row's total queuing.\n\n"
        + demand_table(frames)
    )


def demand_table(frames: Dict[str, pd.DataFrame]) -> str:
    """One line per GPU demand: its jobs, then each row's mean queuing and share."""
    sizes = sorted(set().union(*(f.index for f in frames.values())))
    header = ["GPUs", "jobs"]
    for row in frames:
        header += [f"{row}: mean queuing", "share"]
    lines = []
    for size in sizes:
        first = next(iter(frames.values()))
        line = [str(size), f"{int(first['jobs'].get(size, 0)):,}"]
        for frame in frames.values():
            if size in frame.index:
                line += [
                    f"{frame.at[size, 'mean']:,.0f} s",
                    f"{frame.at[size, 'share']:.0%}",
                ]
            else:
                line += ["", ""]
        lines.append(line)
    return table(header, lines)


@contextlib.contextmanager
def without_minimums() -> Iterator[None]:
    """Every Pollux job mapped from the trace runs with no minimum (``min_replicas``
    NaN, as the artifact's workloads): ``aryl.studies.sweep.run_point`` reads
    ``pollux_profiles`` from its module at each run."""
    from aryl.traces import pollux_mapping

    original = pollux_mapping.pollux_profiles

    def free(*args: Any, **kwargs: Any) -> pd.DataFrame:
        mapped = original(*args, **kwargs)
        return mapped.assign(min_replicas=math.nan)

    pollux_mapping.pollux_profiles = free
    try:
        yield
    finally:
        pollux_mapping.pollux_profiles = original


def run_without_minimums(the_plan: Any, window: int, run: bool = True) -> Path:
    """The Pollux row on ``window`` (0-based) without minimums, kept under CAUSES (run
    only if not kept there; ``run=False``: a ``FileNotFoundError`` instead)."""
    from aryl.studies.sweep import run_point

    folder = CAUSES / f"no-minimums-window-{window + 1}-of-{WINDOWS}"
    if (folder / "run.json").exists():
        return folder
    if not run:
        raise FileNotFoundError(f"no run kept in {folder}")
    index = the_plan.runs.index(("Pollux", 0, window))
    point = the_plan.points[index]
    started, cpu = time.perf_counter(), time.process_time()
    with without_minimums():
        result = run_point(point, the_plan.traces[point["trace"]])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    result.save(folder, overwrite=True)
    about = {
        "window": window + 1,
        "windows": WINDOWS,
        "generations": GENERATIONS,
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "machine": machine(),
    }
    (folder / "run.json").write_text(json.dumps(about, indent=1))
    print(f"window {window + 1}: {cpu:,.0f} s CPU, kept in {folder}", flush=True)
    return folder


def minimums_report(windows: List[int], run: bool = True) -> str:
    """``minimums``' text for ``windows`` (from 1): the row without minimums beside the
    kept row and Aryl+TunedJobs per window, each Pollux row / Aryl+TunedJobs on the
    windows pooled, and queuing by GPU demand, pooled."""
    from aryl import sim

    the_plan = plan()
    kept = load_runs()
    lines, frames = [], {}
    for shown in windows:
        window = shown - 1
        measured = set(map(str, the_plan.measured[window] or []))
        free = sim.load(run_without_minimums(the_plan, window, run)).jobs
        runs = {"Pollux, no minimums": free[free["id"].astype(str).isin(measured)]}
        for row in ("Pollux", "Aryl+TunedJobs"):
            entry = kept[(kept["row"] == row) & (kept["window"] == window)]
            if len(entry):
                runs[row] = entry.iloc[0]["result"].jobs
        for name, jobs in runs.items():
            lines.append([str(shown), name, *statistics(jobs)])
            frames.setdefault(name, []).append(jobs)
    pooled = {n: pd.concat(f, ignore_index=True) for n, f in frames.items()}
    gpus = demands(the_plan)
    return (
        table(["window", "row", "jobs", *STATISTICS], lines)
        + "\n\nEach Pollux row / Aryl+TunedJobs, the windows above pooled:\n\n"
        + ratio_table(pooled)
        + "\n\nQueuing by GPU demand, the windows above pooled:\n\n"
        + demand_table({n: by_demand(j, gpus) for n, j in pooled.items()})
    )


#: A row's statistics (seconds; scaling operations summed over its jobs).
STATISTICS = [
    "queuing mean",
    "median",
    "p95",
    "JCT mean",
    "median",
    "p95",
    "scaling ops",
]


def values(jobs: pd.DataFrame) -> List[float]:
    """``STATISTICS`` of these jobs, in order."""
    q, jct = jobs["queuing_time"], jobs["jct"]
    return [
        q.mean(),
        q.median(),
        q.quantile(0.95),
        jct.mean(),
        jct.median(),
        jct.quantile(0.95),
        float(jobs["scaling_ops"].sum()),
    ]


def statistics(jobs: pd.DataFrame) -> List[str]:
    """The jobs' count and ``STATISTICS``, as printed."""
    return [f"{len(jobs):,}", *(f"{v:,.0f}" for v in values(jobs))]


def ratio_table(pooled: Dict[str, pd.DataFrame]) -> str:
    """Each Pollux row's ``STATISTICS`` over Aryl+TunedJobs'."""
    base = values(pooled["Aryl+TunedJobs"])
    lines = [
        [name, *(f"{v / b:.2f}x" for v, b in zip(values(jobs), base))]
        for name, jobs in pooled.items()
        if name.startswith("Pollux")
    ]
    return table(["Pollux / Aryl+TunedJobs", *STATISTICS], lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demand", help="queuing by GPU demand on the kept runs")
    p = commands.add_parser("minimums", help="the Pollux row without minimums")
    p.add_argument(
        "--windows",
        type=int,
        nargs="+",
        default=[1, 3],
        help="windows of the 16, from 1 (default: 1 3)",
    )
    args = parser.parse_args()
    if args.command == "demand":
        print(demand_report())
    else:
        print(minimums_report(args.windows))


if __name__ == "__main__":
    main()
