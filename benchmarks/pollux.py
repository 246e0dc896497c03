"""The Pollux artifact's eight workloads under Tiresias, beside its published numbers.

Each workload (160 jobs submitted over 8 hours, embedded in aryl) runs on the
artifact's cluster (16 nodes x 4 GPUs) with 60-s rounds and the 30-s restart on
every reallocation. Printed: aryl's mean JCT per workload next to the artifact's
published value (simulator/results-jobload/tiresias-1.0/summary.json; the
artifact is deterministic) and the relative difference; the wall time of each
run (load of the workload excluded) next to the artifact's ~17 s per workload
on a 2-core machine.

Run: python benchmarks/pollux.py
"""

from __future__ import annotations

import time

from _common import machine, table

#: Published average JCT (s) per workload, Tiresias at relative job load 1.0.
PUBLISHED = {1: 2473.65, 2: 5144.96, 3: 3876.26, 4: 3280.26, 5: 3501.01, 6: 3469.69,
             7: 5479.91, 8: 5079.71}
ARTIFACT_WALL = 17.0  # s per workload, Tiresias, 2-core machine (shared/pollux/README.md)


def main() -> None:
    import aryl.sim as sim
    from aryl import traces

    rows, ours, walls = [], [], []
    for n, published in PUBLISHED.items():
        workload = traces.pollux_workload(n)
        start = time.perf_counter()
        result = sim.simulate(workload, sim.Cluster(16, 0, gpus_per_server=4), policy="tiresias")
        wall = time.perf_counter() - start
        result.check()
        s = result.summary()
        assert s["jobs_unfinished"] == 0
        jct = s["jct_mean"]
        ours.append(jct)
        walls.append(wall)
        rows.append([f"workload-{n}", f"{jct:.2f}", f"{published:.2f}",
                     f"{(jct / published - 1):+.2%}", f"{wall * 1000:.0f} ms", f"~{ARTIFACT_WALL:.0f} s"])
    mean, pub = sum(ours) / len(ours), sum(PUBLISHED.values()) / len(PUBLISHED)
    rows.append(["mean", f"{mean:.2f}", f"{pub:.2f}", f"{(mean / pub - 1):+.2%}",
                 f"{sum(walls) / len(walls) * 1000:.0f} ms", f"~{ARTIFACT_WALL:.0f} s"])
    print(f"Machine: {machine()}\n")
    print("Tiresias on the Pollux artifact's workloads, 16 nodes x 4 GPUs\n")
    print(table(["workload", "aryl mean JCT (s)", "published (s)", "difference",
                 "aryl wall time", "artifact wall time"], rows))


if __name__ == "__main__":
    main()
