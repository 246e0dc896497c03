"""The Python around the engine: trace -> jobs -> scenario -> simulate, timed by phase.

For N jobs of ``aryl.traces.synthetic`` on the paper's 443 + 520 servers (Basic scenario,
aryl policy, loaning): CPU time of ``traces.to_jobs``, ``sim.scenario`` and
``sim.simulate``, split into the engine (``_core.simulate``) and the Python around it, and
the process's peak memory.

Memory, by phase: the resident set (``VmRSS``) at each phase boundary and the peak
(``VmHWM``) reached within each phase; the peak is reset between phases through
``/proc/self/clear_refs`` where the kernel allows it (else it is the peak so far).
Inside ``_core.simulate`` the resident set is sampled by the progress callback
(about every 1% of simulated time), so the engine's own peak shows apart from the
conversion of its inputs and from the result's columns.

Run: python benchmarks/pipeline.py 50000   (or 500000)
"""

from __future__ import annotations

import sys
import time
from typing import Any, Dict, List, Tuple

from aryl import _core, sim, traces
from aryl.engine import simulation


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MB (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current resident set (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Phases:
    """Resident set at each boundary and peak within each phase."""

    def __init__(self) -> None:
        self.rows: List[Tuple[str, float, float]] = []
        self.resets = _reset_peak()

    def mark(self, name: str) -> None:
        self.rows.append((name, _status("VmHWM"), _status("VmRSS")))
        _reset_peak()

    def table(self, n: int) -> str:
        lines = [
            "| after phase | peak within it | resident at its end | per job |",
            "|---|---|---|---|",
        ]
        for name, peak, rss in self.rows:
            lines.append(
                f"| {name} | {peak:.0f} MB | {rss:.0f} MB | {peak * 2**20 / n:.0f} B |"
            )
        return "\n".join(lines)


def main(n: int) -> None:
    phases = Phases()
    phases.mark("import")
    frame, load = traces.synthetic(days=max(1, n // 3300), jobs=n, seed=0)
    phases.mark("synthetic trace")
    t = time.process_time()
    jobs = traces.to_jobs(frame, seed=0)
    to_jobs = time.process_time() - t
    del frame
    phases.mark("to_jobs (trace frame dropped)")
    t = time.process_time()
    jobs = sim.scenario(jobs, "basic", seed=0)
    scenario = time.process_time() - t
    phases.mark("scenario")
    engine: Dict[str, Any] = {"samples": []}
    real = _core.simulate

    def timed(*args: Any, **kwargs: Any) -> Any:
        phases.mark("simulate: inputs checked and converted")

        def sample(fraction: float) -> None:
            engine["samples"].append(_status("VmRSS"))

        start = time.process_time()
        out = real(*args[:6], sample, **kwargs)
        engine["s"] = time.process_time() - start
        phases.mark("simulate: engine (inputs + run + result arrays)")
        return out

    simulation._core.simulate = timed
    t = time.process_time()
    result = sim.simulate(jobs, sim.Cluster(443, 520), inference_load=load)
    total = time.process_time() - t
    phases.mark("simulate: Result built")
    del result
    samples = engine["samples"]
    print(
        f"{n:,} jobs: to_jobs {to_jobs:.2f} s, scenario {scenario:.2f} s, simulate "
        f"{total:.2f} s (engine {engine['s']:.2f} s, Python {total - engine['s']:.2f} s); "
        f"peak {max(r[1] for r in phases.rows):.0f} MB"
    )
    print(
        f"resident during the engine run: {min(samples):.0f}-{max(samples):.0f} MB "
        f"({len(samples)} samples); peak reset between phases: {phases.resets}\n"
    )
    print(phases.table(n))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
