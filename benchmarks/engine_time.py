"""CPU time spent in the compiled engine alone (``_core.simulate``), without the
Python conversion around it: the paper-scale run and the server scaling series.

Paper scale: ``aryl.traces.synthetic(days=15, jobs=50_000, seed=0)`` on 443 training
+ 520 inference servers, Basic scenario, aryl policy, loaning with aryl reclaim.
Scaling: the same generator over 3 days on 1k-10k servers (46% training), jobs in
proportion to servers (the paper's 50,000 per 15 days on 963 servers).

Run: python benchmarks/engine_time.py [paper] [scaling [SERVERS ...]]
"""

from __future__ import annotations

import math
import sys
import time

from _common import machine, table


def engine_seconds(
    days: int, jobs: int, training: int, inference: int, history: bool = False
) -> dict:
    """CPU seconds inside _core.simulate for one aryl run with loaning (``cpu``) and of
    the whole ``simulate`` call (``simulate_cpu``), and the ``result``."""
    import aryl.sim as sim
    from aryl import traces
    from aryl.engine import simulation

    frame, load = traces.synthetic(days=days, jobs=jobs, seed=0)
    trace = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
    spent = []
    core = simulation._core.simulate

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return core(*args, **kwargs)
        finally:
            spent.append(time.process_time() - start)

    simulation._core.simulate = timed
    start = time.process_time()
    try:
        result = sim.simulate(
            trace,
            sim.Cluster(training, inference),
            policy="aryl",
            reclaim="aryl",
            inference_load=load,
            history=history,
        )
    finally:
        simulation._core.simulate = core
    whole = time.process_time() - start
    epochs = result.totals["epochs_run"]
    return {
        "cpu": sum(spent),
        "simulate_cpu": whole,
        "result": result,
        "jobs": len(trace),
        "epochs": epochs,
        "jct_mean": result.summary()["jct_mean"],
    }


def main(argv) -> None:
    print(f"Machine: {machine()}\n")
    if not argv or "paper" in argv:
        r = engine_seconds(15, 50_000, 443, 520)
        print(
            f"paper scale: engine CPU {r['cpu']:.2f} s, {r['epochs']} epochs, "
            f"mean JCT {r['jct_mean']:.1f} s\n"
        )
    if "scaling" in argv:
        sizes = [int(a) for a in argv if a.isdigit()] or [1000, 2000, 5000, 10000]
        rows, points = [], []
        for servers in sizes:
            training = round(servers * 443 / 963)
            r = engine_seconds(
                3, round(50_000 / 15 * 3 * servers / 963), training, servers - training
            )
            points.append((servers, r["cpu"]))
            rows.append((servers, r["jobs"], r["epochs"], f"{r['cpu']:.2f} s"))
            print(rows[-1], flush=True)
        print(table(["servers", "jobs", "epochs run", "engine CPU time"], rows))
        if len(points) > 1:
            (a, ta), (b, tb) = points[0], points[-1]
            print(
                f"\ngrowth {a}-{b} servers: time ~ servers^"
                f"{math.log(tb / ta) / math.log(b / a):.2f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
