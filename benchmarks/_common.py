"""Shared helpers of the benchmark scripts: timing, tables, the machine's description."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, List, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/reference: the plain-Python versions
sys.path.insert(0, str(ROOT / "tests" / "py"))  # tests/py/instances.py: random instances


def median_seconds(fn: Callable[[], object], repeat: int = 50, min_total: float = 0.2) -> float:
    """Median wall time of fn() over at least `repeat` calls (more if they are quick)."""
    fn()  # warm-up
    times: List[float] = []
    while len(times) < repeat or sum(times) < min_total:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if len(times) >= 10 * repeat:
            break
    return statistics.median(times)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"

