"""Fleet scale beyond one process (issue 46 item 4): a long trace as windows on Ray.

Writes ``traces.synthetic(15, N, seed=0)`` (jobs and load) to CSV, starts a local
2-node Ray cluster on 127.0.0.1 only (``ray.cluster_utils.Cluster``: a head and one
more node, one CPU each, as ``aryl live --local-cluster`` starts its nodes), runs

    aryl simulate JOBS.csv --load LOAD.csv --scenario basic --training-servers S
        --inference-servers S --windows K --warmup D --engine ray --address ADDR

in a child process, and reports its wall time, the windows' summed CPU (each run's
own, from ``windows.csv``), each window's peak memory (its Ray worker's resident
peak during the run), the driver's CPU and peak memory (reading the CSV, cutting
the windows, pooling), and the warm-up overhead (jobs run but not measured); then
stops the cluster. ``--one-process`` also runs the same ``aryl simulate`` without
windows, for the figures to set against (at 10M jobs: benchmarks/README.md, "Fleet
scale", ~15-25 min of CPU and 6.8-6.9 GB).

Run: nice -n 10 python benchmarks/fleet_windows.py [--jobs N] [--servers S]
     [--windows K] [--warmup D] [--one-process] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pandas as pd

ARYL = [sys.executable, "-m", "aryl"]


def write_trace(jobs: int, folder: Path) -> Tuple[Path, Path, float]:
    """The synthetic trace's jobs and load as CSV; seconds it took."""
    from aryl import traces

    start = time.perf_counter()
    trace, load = traces.synthetic(15, jobs, seed=0)
    jobs_csv, load_csv = folder / "jobs.csv", folder / "load.csv"
    trace.to_csv(jobs_csv, index=False)
    load.to_csv(load_csv, index=False)
    return jobs_csv, load_csv, time.perf_counter() - start


class TwoNodes:
    """A Ray head and one more node on the loopback, one CPU each; ``stop()`` ends
    every process of it and leaves the machine's "current" Ray cluster as it was."""

    def __init__(self, store_bytes: int) -> None:
        from ray.cluster_utils import Cluster

        from aryl.live.ray_nodes import _CurrentCluster
        from aryl.loopback import LOOPBACK, QUIET_RAY

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        self.current = _CurrentCluster()
        node = {
            "num_cpus": 1,
            "node_ip_address": LOOPBACK,
            "object_store_memory": store_bytes,
        }
        try:
            self.cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    **node,
                    "include_dashboard": False,
                    "_system_config": dict(QUIET_RAY),
                },
            )
            self.cluster.add_node(**node)
            self.cluster.wait_for_nodes()
        finally:
            self.current.restore()

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def stop(self) -> None:
        try:
            self.cluster.shutdown()
        finally:
            self.current.restore()


def run_child(command: List[str], log: Path) -> Dict[str, float]:
    """``command`` in a child process, its output to ``log``: its wall, CPU seconds
    and peak memory (``wait4``: the child's own, not the Ray nodes')."""
    start = time.perf_counter()
    with open(log, "w") as output:
        child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{log.read_text()}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_gb": usage.ru_maxrss * 1024 / 1e9,
    }


def simulate_command(
    args: argparse.Namespace, jobs_csv: Path, load_csv: Path
) -> List[str]:
    return [
        *ARYL,
        "simulate",
        str(jobs_csv),
        *("--load", str(load_csv)),
        *("--scenario", "basic"),
        *("--training-servers", str(args.servers)),
        *("--inference-servers", str(args.servers)),
        *("--plot-format", "png"),
        "-q",
    ]


def report(args: argparse.Namespace, windowed: Dict[str, Any], out: Path) -> None:
    table = pd.read_csv(out / "windows.csv")
    run, measured = int(table["jobs_run"].sum()), int(table["jobs_measured"].sum())
    print(f"\n{args.windows} windows of {args.jobs:,} jobs, warm-up {args.warmup}:")
    print(
        "| window | span (h) | jobs run | measured | unfinished | mean JCT | CPU | wall | peak memory |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table.to_dict("records"):
        print(
            f"| {r['window']} | {r['start_s'] / 3600:,.0f}-{r['end_s'] / 3600:,.0f} | "
            f"{r['jobs_run']:,} | {r['jobs_measured']:,} | {r['jobs_unfinished']:,} | "
            f"{r['jct_mean']:,.0f} s | {r['cpu_seconds']:,.1f} s | "
            f"{r['wall_seconds']:,.1f} s | {r['peak_memory_bytes'] / 1e9:,.2f} GB |"
        )
    print(
        f"\nwall (the whole command): {windowed['wall_s']:,.1f} s; windows' CPU summed: "
        f"{table['cpu_seconds'].sum():,.1f} s; largest window peak: "
        f"{table['peak_memory_bytes'].max() / 1e9:,.2f} GB; driver: "
        f"{windowed['cpu_s']:,.1f} s CPU, {windowed['maxrss_gb']:,.2f} GB peak"
    )
    print(
        f"warm-up overhead: {run - measured:,} jobs run but not measured "
        f"({(run - measured) / measured:.1%} more than measured); "
        f"{int(table['jobs_unfinished'].sum()):,} measured jobs unfinished"
    )


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000_000)
    parser.add_argument("--servers", type=int, default=100_000, help="each side")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--warmup", default="1d")
    parser.add_argument(
        "--store-gb", type=float, default=3.0, help="object store per node"
    )
    parser.add_argument("--one-process", action="store_true")
    parser.add_argument("--work", default=None, help="keep the files here")
    args = parser.parse_args(argv)

    from _common import machine

    work = Path(args.work or tempfile.mkdtemp(prefix="fleet-windows-"))
    work.mkdir(parents=True, exist_ok=True)
    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    jobs_csv, load_csv, seconds = write_trace(args.jobs, work)
    print(f"trace: {args.jobs:,} jobs written in {seconds:,.0f} s to {work}")
    common = simulate_command(args, jobs_csv, load_csv)
    nodes = TwoNodes(int(args.store_gb * 1e9))
    try:
        out = work / "windowed"
        windowed = run_child(
            [
                *common,
                *("--windows", str(args.windows), "--warmup", args.warmup),
                *("--engine", "ray", "--address", nodes.address),
                *("--out", str(out)),
            ],
            work / "windowed.log",
        )
    finally:
        nodes.stop()
    report(args, windowed, out)
    if args.one_process:
        whole = run_child([*common, "--out", str(work / "whole")], work / "whole.log")
        print(
            f"one process: {whole['wall_s']:,.1f} s wall, {whole['cpu_s']:,.1f} s CPU "
            f"(the whole command), {whole['maxrss_gb']:,.2f} GB peak"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
