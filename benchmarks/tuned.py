"""Aryl+TunedJobs (paper §7.4, Table 3 row 12) beside Pollux (row 10).

``workloads``: the Pollux artifact's eight workloads (16 nodes x 4 GPUs, 60-s
rounds, 30-s restarts) under policy ``aryl``: rigid (the user's replicas and
batch), elastic (``traces.pollux_elastic``: the user's replicas as base demand, up
to twice as many, as the paper's scenarios make a job elastic; the user's batch)
and the same elastic jobs with their Pollux agents (Aryl+TunedJobs), beside the
artifact's published Pollux runs and, with ``--pollux``, aryl's own Pollux policy
(population 100 x 100 generations, seed 0; slow) on the artifact's jobs (no minimum,
up to 64 replicas) and on the elastic jobs' ranges ("same ranges": the user's
replicas as its minimum, up to twice them).

``itp``: the embedded ITP cluster04 trace as ``aryl compare`` reads it, the Basic
scenario (seed 0), every job mapped onto a Pollux application by GPU-time
(``traces.pollux_profiles``, seed 0, work scaled to its trace duration), on the
training servers ``aryl compare`` sizes for the trace (85 8-GPU servers) as 4-GPU
nodes (``sim.pollux_nodes``), no loaning: the rows ``aryl compare --pollux-rows``
adds (``--generations`` sizes the Pollux policy's search, 0 skips it; ``--days``
keeps the jobs submitted in the first days).

Printed: ``workloads``, mean JCT and mean queuing per run beside the artifact's
figures and the CPU time of each run; ``itp``, a line per simulated day of each run
(share done, wall time, ETA), then ``aryl compare --pollux-rows``' table beside the
paper (``aryl.sim.pollux_beside_paper``: queuing and JCT mean, median and p95 and
scaling operations of each run beside Table 3's rows 10-12, the Pollux /
Aryl+TunedJobs ratios beside the paper's), and each run's unfinished jobs and CPU.

Run: python benchmarks/tuned.py workloads [--pollux] [--workloads 1 2 ...]
     python benchmarks/tuned.py itp [--generations N] [--training-servers N] [--days D]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Dict, List

from _common import machine, table
from pollux import PUBLISHED_POLLUX


def timed(**kwargs: Any) -> Dict[str, float]:
    """One simulate call: its summary plus its CPU seconds."""
    from aryl import sim

    start = time.process_time()
    summary = sim.simulate(**kwargs).check().summary()
    summary["cpu"] = time.process_time() - start
    return summary


def workloads(numbers: List[int], pollux: bool) -> None:
    from aryl import sim, traces

    cluster = sim.Cluster(16, 0, gpus_per_server=4)
    runs = {
        "rigid": lambda w: dict(jobs=w, policy="aryl"),
        "elastic": lambda w: dict(jobs=traces.pollux_elastic(w), policy="aryl"),
        "Aryl+TunedJobs": lambda w: dict(
            jobs=traces.pollux_elastic(w), policy="aryl", config={"agent": "pollux"}
        ),
    }
    if pollux:
        runs["Pollux (aryl)"] = lambda w: dict(jobs=w, policy="pollux")
        runs["Pollux, same ranges"] = lambda w: dict(
            jobs=traces.pollux_elastic(w), policy="pollux"
        )
    header = ["workload", "Pollux published", *runs, "CPU (tuned)"]
    rows, sums = [], {name: 0.0 for name in runs}
    for n in numbers:
        w = traces.pollux_workload(n)
        cells = [f"workload-{n}", f"{PUBLISHED_POLLUX[n]:.0f}"]
        for name, make in runs.items():
            s = timed(cluster=cluster, **make(w))
            sums[name] += s["jct_mean"]
            cells.append(f"{s['jct_mean']:.0f} / {s['queuing_mean']:.0f}")
            if name == "Aryl+TunedJobs":
                cpu = s["cpu"]
        rows.append([*cells, f"{cpu:.1f} s"])
        print(f"  workload-{n} done", flush=True)
    published = sum(PUBLISHED_POLLUX[n] for n in numbers) / len(numbers)
    rows.append(
        [
            "mean",
            f"{published:.0f}",
            *(f"{v / len(numbers):.0f}" for v in sums.values()),
            "",
        ]
    )
    print("\nmean JCT / mean queuing (s), 16 nodes x 4 GPUs\n")
    print(table(header, rows))


def itp(training_servers: int, generations: int, days: float) -> None:
    from aryl import sim, traces
    from aryl._display import render
    from aryl.cli.output import pollux_table

    frame, _ = traces.load_default()
    frame = frame[frame["submit_time_s"] < days * 86400]
    jobs = traces.to_jobs(frame, seed=0)
    runs = sim.paper_runs(
        jobs, None, seed=0, pollux_rows=True, config={"pollux_generations": generations}
    )
    nodes = sim.pollux_nodes(sim.Cluster(training_servers, 0))
    mapped = runs["Aryl+TunedJobs"]["jobs"]
    shares = mapped.groupby("application").size() / len(mapped)
    print(
        f"{len(mapped):,} jobs; applications: "
        + ", ".join(f"{a} {s:.1%}" for a, s in shares.items())
    )
    print(f"Cluster: {nodes.training_servers} nodes x 4 GPUs, no loaning\n")
    names = ["Elastic only, aryl", "Aryl+TunedJobs"]
    if generations > 0:
        names.insert(0, "Pollux")
    last_submit = float(frame["submit_time_s"].max())
    summaries, rows = {}, []
    for name in names:
        on = nodes if name in sim.POLLUX_ROWS else sim.Cluster(training_servers, 0)
        s = timed(
            cluster=on,
            label=name,
            progress=progress_lines(name, last_submit),
            **runs[name],
        )
        summaries[name] = s
        rows.append([name, f"{s['jobs_unfinished']:.0f}", f"{s['cpu']:.1f} s"])
        print(f"  {name} done", flush=True)
    print(render(pollux_table(sim.pollux_beside_paper(summaries)), "markdown"))
    print()
    print(table(["row", "unfinished", "CPU"], rows))


def progress_lines(name: str, last_submit: float) -> Callable[[float, float], bool]:
    """``simulate``'s progress callback for a long run: a line each simulated day,
    with the share done, the wall time so far and an ETA from them."""
    from aryl._display import duration
    from aryl.cli.console import simulated_day

    start, said = time.perf_counter(), [""]

    def report(fraction: float, now: float) -> bool:
        day = simulated_day(now, last_submit)
        if day != said[0] and fraction > 0:
            said[0] = day
            elapsed = time.perf_counter() - start
            eta = elapsed * (1 - fraction) / fraction
            print(
                f"  {name}: {day}, {fraction:.0%} done, {duration(elapsed)} so far, "
                f"ETA {duration(eta)}",
                flush=True,
            )
        return True

    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("workloads", help="the 8 Pollux workloads")
    p.add_argument("--workloads", type=int, nargs="*", default=list(PUBLISHED_POLLUX))
    p.add_argument(
        "--pollux", action="store_true", help="also run aryl's Pollux policy"
    )
    p = sub.add_parser("itp", help="the ITP trace, Basic scenario")
    p.add_argument("--training-servers", type=int, default=85)
    p.add_argument("--generations", type=int, default=100)
    p.add_argument(
        "--days",
        type=float,
        default=float("inf"),
        help="only the jobs submitted by then",
    )
    args = parser.parse_args()
    print(f"Machine: {machine()}\n")
    if args.what == "workloads":
        workloads(args.workloads, args.pollux)
    else:
        itp(args.training_servers, args.generations, args.days)


if __name__ == "__main__":
    main()
