"""Fleet scale (issue 46): the engine on millions of jobs and up to 100,000 servers a side.

Each point runs in a fresh (spawned) process: ``traces.synthetic(15, N, seed=0)``, the
Basic scenario, then ``sim.simulate`` on S training + S inference servers with the
synthetic inference load (loaning on, aryl policy and reclaim). Only the
``sim.simulate`` call is timed: CPU seconds (user + system, ``resource.getrusage`` of
the child around the call) and wall seconds; peak memory is the child's ``maxrss``
(the whole process: trace, scenario, engine, result), and ``simulate_mb`` the
``simulate`` call's own peak above what the process held before it (Linux's
``VmHWM`` reset before the call: the engine's tables and the ``Result``).

Points (N jobs, S servers a side): (500k, 5k), (1M, 10k), (2M, 20k) and the saturated
(2M, 5k); ``--big`` adds (10M, 100k) and the saturated (10M, 25k). ``--core PATH``
loads a compiled ``aryl._core`` kept aside (e.g. the engine before a change) in place
of the built one, so that both can be measured in turn at the same load.

Run: nice -n 5 python benchmarks/fleet.py [--big] [--only N:S ...] [--core PATH]
     [--out FILE.json] [--plot FILE.png]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

POINTS: List[Tuple[int, int]] = [
    (500_000, 5_000),
    (1_000_000, 10_000),
    (2_000_000, 20_000),
    (2_000_000, 5_000),
]
BIG: List[Tuple[int, int]] = [(10_000_000, 100_000), (10_000_000, 25_000)]


def _load_core(path: str) -> None:
    """Put the compiled module at ``path`` in place of ``aryl._core`` (before any
    import of aryl, so the editable install neither rebuilds nor loads its own)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("aryl._core", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["aryl._core"] = module
    spec.loader.exec_module(module)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child(jobs: int, servers: int, core: Optional[str], out: Any) -> None:
    if core:
        _load_core(core)
    import gc

    from aryl import sim, traces
    from aryl.studies.sweep_engines import _peak_bytes, _reset_peak

    trace, load = traces.synthetic(15, jobs, seed=0)
    records = sim.scenario(traces.to_jobs(trace, seed=0), "basic", seed=0)
    del trace
    gc.collect()
    held = _peak_bytes() if _reset_peak() else float("nan")  # resident now
    cpu, wall = _cpu(), time.perf_counter()
    result = sim.simulate(records, sim.Cluster(servers, servers), inference_load=load)
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    added = _peak_bytes() - held  # the simulate call's peak above what was held
    s = result.summary()
    info: Dict[str, Any] = {
        "jobs": jobs,
        "servers": servers,
        "cpu_s": cpu,
        "wall_s": wall,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "simulate_mb": added / 2**20,
        "finished": int(s["jobs_finished"]),
        "unfinished": int(s["jobs_unfinished"]),
        "mean_jct_s": float(s["jct_mean"]),
    }
    engine = getattr(result, "engine_counters", None)
    if engine:
        info["engine"] = dict(engine)
    out.put(info)


def measure(jobs: int, servers: int, core: Optional[str] = None) -> Dict[str, Any]:
    """One point in a fresh process."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=_child, args=(jobs, servers, core, out))
    p.start()
    info: Dict[str, Any] = out.get()
    p.join()
    info["load_avg"] = os.getloadavg()[0]
    return info


def _row(info: Dict[str, Any]) -> str:
    return (
        f"| {info['jobs']:,} | {info['servers']:,} + {info['servers']:,} | "
        f"{info['cpu_s']:.1f} s | {info['wall_s']:.1f} s | "
        f"{info['maxrss_mb']:,.0f} MB | {info.get('simulate_mb', float('nan')):,.0f} MB | "
        f"{info['mean_jct_s']:,.0f} s | "
        f"{info['unfinished']:,} | {info['load_avg']:.1f} |"
    )


def plot(results: List[Dict[str, Any]], path: str, label: str = "") -> None:
    """Time against jobs x servers, both axes log (saturated points marked apart)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r.get("label", label) or "engine", []).append(r)
    for name, rows in groups.items():
        even = sorted(
            (r for r in rows if r["jobs"] <= 100 * r["servers"]),
            key=lambda r: r["jobs"] * r["servers"],
        )
        sat = [r for r in rows if r["jobs"] > 100 * r["servers"]]
        line = ax.plot(
            [r["jobs"] * r["servers"] for r in even],
            [r["cpu_s"] for r in even],
            "o-",
            label=f"{name}",
        )
        if sat:
            ax.plot(
                [r["jobs"] * r["servers"] for r in sat],
                [r["cpu_s"] for r in sat],
                "x",
                markersize=9,
                color=line[0].get_color(),
                label=f"{name}, saturated",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("jobs x servers a side")
    ax.set_ylabel("simulate CPU time (s)")
    ax.set_title("Fleet scale: synthetic 15 days, Basic, loaning")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="add the 10M-job points")
    parser.add_argument(
        "--only", nargs="*", default=None, metavar="N:S", help="just these points"
    )
    parser.add_argument("--core", default=None, help="a compiled aryl._core to load")
    parser.add_argument("--label", default="", help="a name for this run's rows")
    parser.add_argument("--out", default=None, help="append the rows to this JSON")
    parser.add_argument("--plot", default=None, help="write the curve (PNG) here")
    args = parser.parse_args(argv)

    from _common import machine

    if args.only:
        points = [tuple(int(v) for v in p.split(":")) for p in args.only]
    else:
        points = POINTS + (BIG if args.big else [])
    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print(
        "| jobs | servers | simulate CPU | wall | peak memory | simulate's own | "
        "mean JCT | unfinished | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    results: List[Dict[str, Any]] = []
    for jobs, servers in points:
        info = measure(jobs, servers, args.core)
        info["label"] = args.label
        info["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        results.append(info)
        print(_row(info), flush=True)
        if "engine" in info:
            print(f"  engine: {info['engine']}", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if args.out:
        old: List[Dict[str, Any]] = []
        if os.path.exists(args.out):
            with open(args.out) as f:
                old = json.load(f)
        with open(args.out, "w") as f:
            json.dump(old + results, f, indent=1)
    if args.plot:
        everything = results
        if args.out:
            with open(args.out) as f:
                everything = json.load(f)
        plot(everything, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
