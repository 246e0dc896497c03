"""Benchmark of the simulator on the shared real traces.

Each run: the trace's jobs (21% of them free to use any GPU type, the rest
requiring V100, as in the paper's Appendix E) under the Basic scenario (the
large jobs holding 36% of the GPU-time elastic, seeded; elastic jobs may use any
type) with the Aryl policy, capacity loaning driven by the Alibaba-2018 load series
(repeated to cover the trace) and aryl reclaiming, next to the Baseline (FIFO, no
loaning, no elasticity). Each run happens in a fresh process so that its peak
memory (max RSS, whole process: Python, pandas and the engine) is its own.
Scaling series: the first 1/4, 1/2 and all of the ITP trace. Paper scale: the
synthetic trace of aryl.traces.synthetic (15 days, 50,000 jobs) on the paper's 443
training + 520 inference servers with its own diurnal load.

Run: python benchmarks/simulate.py [--quick]
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import sys
import time

from _common import ROOT, machine, table

CLUSTERS = {  # (training, inference) 8-GPU servers; see README
    "itp_cluster04_jobs.csv": (64, 64),
    "philly_pollux_jobs.csv": (48, 48),
    "synthetic": (443, 520),  # the paper's cluster
}


def inputs(trace: str, fraction: float):
    """Jobs and load: a shared trace with the Alibaba series repeated, or the synthetic one."""
    from aryl import traces

    if trace == "synthetic":
        frame, load = traces.synthetic(days=15, jobs=50_000, seed=0)
    else:
        frame = traces.read_jobs(ROOT.parent / "shared" / "traces" / trace)
        load = traces.load_default()[1]
    frame = frame.iloc[: int(round(len(frame) * fraction))]
    jobs = traces.to_jobs(frame, seed=0)  # 21% may use any GPU type, the rest V100
    return jobs, traces.extend_load(load, max(j.submit_time for j in jobs) + 60 * 86400)


def one_run(trace: str, fraction: float, preset: str, out) -> None:
    import aryl.sim as sim

    jobs, load = inputs(trace, fraction)
    training, inference = CLUSTERS[trace]
    if preset == "baseline":
        kwargs = dict(policy="fifo", config={"loaning": False})
    else:
        jobs = sim.scenario(jobs, "basic", seed=0)  # elastic jobs may use any GPU type
        kwargs = dict(policy="aryl", reclaim="aryl", inference_load=load)
    start = time.perf_counter()
    result = sim.simulate(jobs, sim.Cluster(training, inference), **kwargs)
    seconds = time.perf_counter() - start
    result.check()
    out.put(
        {
            "seconds": seconds,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "jobs": len(jobs),
            "epochs": result.totals["epochs_run"],
            "summary": result.summary(),
        }
    )


def run(trace: str, fraction: float, preset: str) -> dict:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=one_run, args=(trace, fraction, preset, out))
    p.start()
    value = out.get()
    p.join()
    return value


def main(quick: bool = False) -> None:
    print(f"Machine: {machine()}\n")
    rows, summaries = [], {}
    plan = [
        ("itp_cluster04_jobs.csv", f) for f in ((0.25,) if quick else (0.25, 0.5, 1.0))
    ]
    if not quick:
        plan += [("philly_pollux_jobs.csv", 1.0), ("synthetic", 1.0)]
    for trace, fraction in plan:
        for preset in ("baseline", "aryl"):
            r = run(trace, fraction, preset)
            rows.append(
                (
                    trace.split("_")[0],
                    f"{fraction:g}",
                    r["jobs"],
                    preset,
                    f"{r['seconds']:.2f} s",
                    f"{r['max_rss_mb']:.0f} MB",
                    r["epochs"],
                )
            )
            summaries[f"{trace.split('_')[0]} {fraction:g} {preset}"] = r["summary"]
    print(
        table(
            [
                "trace",
                "share",
                "jobs",
                "run",
                "simulation wall time",
                "peak RSS",
                "epochs run",
            ],
            rows,
        )
    )
    from aryl.studies.paper import TABLE3_KEYS

    keys = [*TABLE3_KEYS, "collateral_damage", "flexible_reclaim_share"]
    print("\nSummaries:\n")
    print(
        table(
            ["run"] + keys,
            [(name, *(f"{s[k]:.3g}" for k in keys)) for name, s in summaries.items()],
        )
    )
    json.dump(summaries, sys.stderr) if "--json" in sys.argv else None


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
