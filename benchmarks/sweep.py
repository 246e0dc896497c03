"""Benchmark of `aryl sweep`: a 24-point grid on the embedded trace, on a local Ray, then cached.

1. `aryl sweep --grid inference_servers=0,16,32,64 --grid headroom=0,0.1,0.25
   --grid reclaim=aryl,scf` on the whole embedded ITP trace with a fresh cache: starts a local
   Ray (2 CPUs on the project's machine) and simulates 24 runs.
2. The same command again: every run comes from the cache (no Ray, no simulation).
3. The same sweep through the API in one process (`aryl.studies.sweep`), cached: the time of the
   call alone, without starting Python and importing pandas.
4. The same 24 runs one after the other in one process (`engine="serial"`, no cache), the
   reference the parallel engine is measured against (skipped with --quick).

Each CLI step is a fresh process, timed wall to wall. Run: python benchmarks/sweep.py [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine, table

GRID = [
    "--grid",
    "inference_servers=0,16,32,64",
    "--grid",
    "headroom=0,0.1,0.25",
    "--grid",
    "reclaim=aryl,scf",
]
API_GRID = {
    "inference_servers": [0, 16, 32, 64],
    "headroom": [0.0, 0.1, 0.25],
    "reclaim": ["aryl", "scf"],
}


def cli(out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "aryl", "sweep", *GRID, "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    quick = "--quick" in sys.argv
    from aryl import sim

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "sweep"
        rows.append(
            ("aryl sweep, 24 runs, local Ray, empty cache", f"{cli(out):.1f} s")
        )
        rows.append(
            (
                "aryl sweep again, all 24 from the cache (whole process)",
                f"{cli(out):.2f} s",
            )
        )
        start = time.perf_counter()
        cached = sim.sweep({}, API_GRID, cache=out / "cache", progress=False)
        assert cached["cached"].all()
        rows.append(
            (
                "aryl.studies.sweep, cached, the call alone",
                f"{time.perf_counter() - start:.2f} s",
            )
        )
        if not quick:
            start = time.perf_counter()
            sim.sweep({}, API_GRID, engine="serial", cache=False, progress=False)
            rows.append(
                (
                    "the same 24 runs in sequence, one process",
                    f"{time.perf_counter() - start:.1f} s",
                )
            )
    print(f"Machine: {machine()}\n")
    print(table(["what", "wall time"], rows))


if __name__ == "__main__":
    main()
