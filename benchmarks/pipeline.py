"""The Python around the engine: trace -> jobs -> scenario -> simulate, timed by phase.

For N jobs of ``aryl.traces.synthetic`` on the paper's 443 + 520 servers (Basic scenario,
aryl policy, loaning): CPU time of ``traces.to_jobs``, ``sim.scenario`` and
``sim.simulate``, split into the engine (``_core.simulate``) and the Python around it, and
the process's peak memory.

Run: python benchmarks/pipeline.py 50000   (or 500000)
"""

from __future__ import annotations

import resource
import sys
import time

from aryl import _core, sim, traces
from aryl.sim import simulation


def main(n: int) -> None:
    frame, load = traces.synthetic(days=max(1, n // 3300), jobs=n, seed=0)
    t = time.process_time()
    jobs = traces.to_jobs(frame, seed=0)
    to_jobs = time.process_time() - t
    t = time.process_time()
    jobs = sim.scenario(jobs, "basic", seed=0)
    scenario = time.process_time() - t
    engine = {}
    real = _core.simulate

    def timed(*args, **kwargs):
        start = time.process_time()
        out = real(*args, **kwargs)
        engine["s"] = time.process_time() - start
        return out

    simulation._core.simulate = timed
    t = time.process_time()
    sim.simulate(jobs, sim.Cluster(443, 520), inference_load=load)
    total = time.process_time() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{n:,} jobs: to_jobs {to_jobs:.2f} s, scenario {scenario:.2f} s, simulate "
        f"{total:.2f} s (engine {engine['s']:.2f} s, Python {total - engine['s']:.2f} s); "
        f"peak {peak:.0f} MB"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
