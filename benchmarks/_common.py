"""Shared helpers of the benchmark scripts: timing, tables, the machine's description."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Callable, List, Sequence

from aryl.engine.provenance import machine  # noqa: F401  (the scripts' import)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/reference: the plain-Python versions
sys.path.insert(
    0, str(ROOT / "tests" / "py")
)  # tests/py/instances.py: random instances


def median_seconds(
    fn: Callable[[], object],
    repeat: int = 50,
    min_total: float = 0.2,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median time of fn() over at least `repeat` calls (more if they are quick).

    Wall time by default; `clock=time.process_time` gives CPU time, which a machine
    shared with other work inflates less.
    """
    fn()  # warm-up
    times: List[float] = []
    while len(times) < repeat or sum(times) < min_total:
        start = clock()
        fn()
        times.append(clock() - start)
        if len(times) >= 10 * repeat:
            break
    return statistics.median(times)


def cpu_seconds(
    fn: Callable[[], object], repeat: int = 50, min_total: float = 0.2
) -> float:
    """Median CPU time of fn() (``median_seconds`` with ``time.process_time``)."""
    return median_seconds(fn, repeat, min_total, clock=time.process_time)


def alternated_cpu_seconds(
    *fns: Callable[[], object], repeat: int = 30, min_total: float = 0.2
) -> tuple:
    """Median CPU times of each of ``fns``, called in turn, round after round.

    Alternating keeps their ratios honest on a machine whose load (or clock speed)
    changes during the run: each round reads every function under the same conditions.
    """
    for fn in fns:  # warm-up
        fn()
    times: List[List[float]] = [[] for _ in fns]
    while len(times[0]) < repeat or sum(map(sum, times)) < min_total:
        for fn, readings in zip(fns, times):
            start = time.process_time()
            fn()
            readings.append(time.process_time() - start)
        if len(times[0]) >= 20 * repeat:
            break
    return tuple(statistics.median(t) for t in times)


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


def records_api_report(
    call: str,
    headline: str,
    kernel: Callable[[], object],
    build: Callable[[], object],
    api: Callable[[], object],
    python: Callable[[], object],
    repeat: int,
) -> str:
    """The records API (``call``) against the kernel and the plain-Python reference:
    the four read in turn, round after round (``alternated_cpu_seconds``: timed apart,
    the reference alone moved 2x between processes on a quiet machine), as
    ``headline``, the speed-up and ``records_api_table``."""
    times = alternated_cpu_seconds(
        kernel, build, api, python, repeat=repeat, min_total=0
    )
    return (
        f"{headline}; plain Python / records API = {times[3] / times[2]:.0f}×\n\n"
        + records_api_table(call, *times)
    )


def records_api_table(
    call: str, kernel: float, build: float, api: float, python: float
) -> str:
    """The records API (``call``: build the ``ClusterState`` from records, then run the
    kernel) against the kernel on a prebuilt state and the plain-Python reference:
    CPU seconds, as a table with each against the kernel."""
    rows = [
        ("C++ kernel (prebuilt state)", fmt_time(kernel), "1×"),
        ("ClusterState.from_records", fmt_time(build), f"{build / kernel:.1f}×"),
        (f"{call} (records API)", fmt_time(api), f"{api / kernel:.1f}×"),
        ("plain Python reference", fmt_time(python), f"{python / kernel:,.0f}×"),
    ]
    return table(["", "CPU time", "vs kernel"], rows)
