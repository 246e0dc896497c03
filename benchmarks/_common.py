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


SHARED = ROOT.parent / "shared" / "traces"


def trace_jobs(name: str = "itp_cluster04_jobs.csv", fraction: float = 1.0,
               any_type_share: float = 0.21, seed: int = 0):
    """Jobs of a shared trace in the common CSV format: workers of min(GPUs, 8) GPUs.

    The first `fraction` of the jobs by submit time. A seeded `any_type_share` of
    them may run on any GPU type (the paper, Appendix E: up to 21% of its jobs do
    not request specific GPUs); the rest require V100. (The package's own trace
    reader is aryl.traces, issue 5; this keeps the benchmark self-contained.)
    """
    import random
    import pandas as pd

    import aryl

    frame = pd.read_csv(SHARED / name)
    frame = frame.iloc[: int(round(len(frame) * fraction))]
    rng = random.Random(seed)
    jobs = []
    for r in frame.itertuples():
        d = min(int(r.num_gpus), 8)
        w = max(1, int(r.num_gpus) // d)
        gpu_type = None if rng.random() < any_type_share else "V100"
        jobs.append(aryl.Job(r.job_id, d, w, w, float(r.duration_s), float(r.submit_time_s),
                             gpu_type=gpu_type))
    return jobs


def repeated_load(span: float, name: str = "alibaba2018_cpu_load_5min.csv"):
    """The 8-day load series repeated end to end until it covers `span` seconds."""
    import pandas as pd

    base = pd.read_csv(SHARED / name)
    period = float(base["time_s"].iloc[-1] + 300)
    copies = int(span // period) + 1
    return pd.DataFrame({
        "time_s": [t + k * period for k in range(copies) for t in base["time_s"]],
        "load": list(base["load"]) * copies,
    })
