"""The README's "Measured scale" rows: reading big job traces and a paper-scale simulation.

Each measurement runs in a fresh process, so its peak memory (``maxrss`` of the whole
process: Python, pandas, the engine) is its own; times are CPU time (user + system of
the process), which a machine shared with other work inflates less than wall time, and
the wall time beside it.

Rows:
* ``read_jobs`` of a CSV of N rows (``aryl.traces.synthetic`` jobs written to a temporary
  file first, outside the measurement), N = 300,000 and 1,500,000;
* ``simulate`` of the synthetic 15-day, 50,000-job trace on 500 + 500 servers with
  loaning and elasticity (the Basic scenario), as the README's row describes.

Run: python benchmarks/scale.py
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from typing import Any, Dict

from _common import machine


def _read(path: str) -> Dict[str, Any]:
    from aryl import traces

    frame = traces.read_jobs(path)
    return {"rows": len(frame)}


def _simulate(_: str) -> Dict[str, Any]:
    from aryl import sim, traces

    jobs, load = traces.synthetic(15, 50_000, seed=0)
    records = sim.scenario(traces.to_jobs(jobs, seed=0), "basic", seed=0)
    result = sim.simulate(records, sim.Cluster(500, 500), inference_load=load)
    s = result.summary()
    return {"finished": s["jobs_finished"], "unfinished": s["jobs_unfinished"]}


def _child(what: str, arg: str, out: Any) -> None:
    start_cpu, start = time.process_time(), time.perf_counter()
    info = {"read": _read, "simulate": _simulate}[what](arg)
    info["cpu_s"] = time.process_time() - start_cpu
    info["wall_s"] = time.perf_counter() - start
    info["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.put(info)


def measure(what: str, arg: str = "") -> Dict[str, Any]:
    """One measurement in a fresh (spawned) process."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=_child, args=(what, arg, out))
    p.start()
    info: Dict[str, Any] = out.get()
    p.join()
    return info


def main() -> int:
    from aryl import traces

    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in (300_000, 1_500_000):
            path = os.path.join(tmp, f"jobs-{rows}.csv")
            traces.synthetic(15, rows, seed=0)[0].to_csv(path, index=False)
            mb = os.path.getsize(path) / 1e6
            info = measure("read", path)
            print(
                f"read_jobs, {rows:,} rows ({mb:.0f} MB CSV): {info['cpu_s']:.1f} s CPU "
                f"({info['wall_s']:.1f} s wall), peak {info['maxrss_mb']:.0f} MB"
            )
    info = measure("simulate")
    print(
        "simulate, synthetic 50k jobs / 15 days on 500 + 500 servers (basic, loaning): "
        f"{info['cpu_s']:.1f} s CPU ({info['wall_s']:.1f} s wall), peak "
        f"{info['maxrss_mb']:.0f} MB; {info['finished']:,} finished, "
        f"{info['unfinished']} unfinished"
    )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
