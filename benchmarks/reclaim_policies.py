"""The reclaim policies where loaned servers are used: work lost, JCT, preemptions.

Issue 43, item 3: the rows "Loaning only, <policy> reclaim" of ``aryl compare``
(the Baseline scenario's jobs, aryl allocation, loaning) on the embedded trace
(ITP cluster04 jobs, Alibaba-2018 load) with 100 8-GPU inference servers, in the
nearest reading of the paper's row 7 (no lend hold, headroom 0.6), for each
reclaim policy (random, scf, aryl, least-work) at every point of: loaned T4
speed 1.0 and 0.5 of a V100, any-type share 0.21 and 1.0, 83 and 85 training
servers, every job with and without checkpoints; over seeds 0..S-1 (the seed
draws the any-type jobs and the random reclaim). Per point and policy: mean JCT,
GPU-hours of progress thrown away (``work_lost_gpu_hours``), GPU-hours held
restarting from a checkpoint (``restart_gpu_hours``), the preemption ratio; the
mean over seeds with a t interval (95%) when there are 2 or more.

Run (from the repository root; ~3.5 s of CPU a run, 128 runs with 2 seeds):
    nice -n 10 python benchmarks/reclaim_policies.py --seeds 2 --workers 2
Options: --seeds S, --workers W (processes), --out FILE (the rows as CSV),
--speeds, --shares, --servers, --checkpoints (to cut the grid).

Why (``--why``): at T4 1.0, any-type share 1.0, no checkpoints, seed 0, 83 and 85
servers, runs that follow least-work and runs that follow aryl, each asking both
policies on every reclaim's state through a policy object's reclaim hook; prints
the work each would throw away on the same states, against the run's total
(~80 s of CPU).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

POLICIES = ("random", "scf", "aryl", "least-work")
METRICS = ("jct_mean", "work_lost_gpu_hours", "restart_gpu_hours", "preemption_ratio")
INFERENCE_SERVERS = 100
# the nearest reading of row 7; the Baseline scenario turns loaning off: on again
SETTINGS = {"lend_hold": 0.0, "headroom": 0.6, "loaning": True}

_TRACE: Any = None


def _trace() -> Any:
    global _TRACE
    if _TRACE is None:
        from aryl import traces

        _TRACE = traces.load_default()
    return _TRACE


def run(point: Tuple[float, float, int, bool, str, int]) -> Dict[str, Any]:
    """One simulation: (T4 speed, any-type share, training servers, checkpoints,
    reclaim policy, seed) -> the point and its metrics."""
    from aryl import sim
    from aryl.engine.runs import run_arguments, trace_jobs

    speed, share, servers, checkpoint, policy, seed = point
    frame, load = _trace()
    jobs = trace_jobs(frame, any_type_share=share, seed=seed)
    config = {**SETTINGS, "gpu_speed": {"V100": 1.0, "T4": speed}}
    args = run_arguments(
        jobs,
        load,
        scenario_name="baseline",
        seed=seed,
        policy="aryl",
        reclaim=policy,
        config=config,
    )
    table = args["jobs"]
    args["jobs"] = table.replace(checkpoint=np.full(len(table), checkpoint))
    start = time.process_time()
    result = sim.simulate(cluster=sim.Cluster(servers, INFERENCE_SERVERS), **args)
    summary = result.summary()
    row: Dict[str, Any] = dict(
        speed=speed,
        share=share,
        servers=servers,
        checkpoint=checkpoint,
        policy=policy,
        seed=seed,
        cpu_s=time.process_time() - start,
    )
    row.update({m: float(summary[m]) for m in METRICS})
    row["lent_used_share"] = float(summary["lent_used_share"])
    return row


def interval(values: Sequence[float]) -> Tuple[float, float, float]:
    """Mean and the 95% t interval over seeds (NaN bounds with one seed)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    if len(v) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return mean, mean - half, mean + half


def fmt(values: Sequence[float], digits: int, scale: float = 1.0) -> str:
    mean, low, high = interval([x * scale for x in values])
    text = f"{mean:,.{digits}f}"
    if not math.isnan(low):
        text += f" [{low:,.{digits}f}, {high:,.{digits}f}]"
    return text


def report(rows: List[Dict[str, Any]]) -> str:
    """A markdown table per setting and policy, and the verdict lines."""
    keys = sorted(
        {(r["speed"], r["share"], r["servers"], r["checkpoint"]) for r in rows},
        key=lambda k: (-k[0], k[1], k[2], not k[3]),
    )
    out = [
        "| T4 speed | any-type share | servers | checkpoints | policy | JCT mean (s) "
        "| work lost (GPU-h) | restart (GPU-h) | preempt ratio (%) | lent used (%) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for key in keys:
        means: Dict[str, Dict[str, float]] = {}
        for policy in POLICIES:
            mine = [
                r
                for r in rows
                if (r["speed"], r["share"], r["servers"], r["checkpoint"]) == key
                and r["policy"] == policy
            ]
            if not mine:
                continue
            col = {m: [r[m] for r in mine] for m in METRICS + ("lent_used_share",)}
            means[policy] = {m: float(np.mean(v)) for m, v in col.items()}
            out.append(
                f"| {key[0]} | {key[1]} | {key[2]} | {'yes' if key[3] else 'no'} "
                f"| {policy} | {fmt(col['jct_mean'], 0)} "
                f"| {fmt(col['work_lost_gpu_hours'], 0)} "
                f"| {fmt(col['restart_gpu_hours'], 0)} "
                f"| {fmt(col['preemption_ratio'], 2, 100)} "
                f"| {fmt(col['lent_used_share'], 1, 100)} |"
            )
        if "least-work" not in means:
            continue
        lw = means["least-work"]
        others = {p: m for p, m in means.items() if p != "least-work"}
        lost = lw["work_lost_gpu_hours"] + lw["restart_gpu_hours"]
        best_lost = min(
            m["work_lost_gpu_hours"] + m["restart_gpu_hours"] for m in others.values()
        )
        best_jct = min(m["jct_mean"] for m in others.values())
        verdicts.append(
            f"- T4 {key[0]}, share {key[1]}, {key[2]} servers, checkpoints "
            f"{'yes' if key[3] else 'no'}: least-work loses "
            f"{lost:,.0f} GPU-h (lost + restart; best other {best_lost:,.0f}: "
            f"{'least' if lost <= best_lost + 1e-9 else 'NOT least'}), "
            f"JCT {lw['jct_mean']:,.0f} s vs best other {best_jct:,.0f} s "
            f"({100 * (lw['jct_mean'] / best_jct - 1):+.2f}%)"
        )
    return "\n".join(out + [""] + verdicts)


class _Both:
    """Allocates as aryl; on each reclaim asks aryl and least-work on the same
    state, logs (n, aryl's work lost, least-work's), follows ``follow``."""

    def __init__(self, follow: str) -> None:
        self.follow, self.name = follow, f"aryl, logging reclaims ({follow})"
        self.log: List[Tuple[int, float, float]] = []

    def allocate(self, state: Any, epoch: Any) -> Any:
        return state.schedule("aryl", **epoch.schedule_options)

    def reclaim(self, state: Any, n: int, epoch: Any) -> Any:
        plans = {p: state.reclaim(n, p) for p in ("aryl", "least-work")}
        self.log.append((n, plans["aryl"].work_lost, plans["least-work"].work_lost))
        return plans[self.follow]


def why() -> str:
    """Each policy's work lost on the same reclaim states vs over the whole run."""
    from aryl import sim
    from aryl.engine.runs import run_arguments, trace_jobs

    frame, load = _trace()
    lines = [
        "| servers | run follows | its work lost (GPU-h) | on its reclaim states: aryl "
        "would lose | least-work would lose | least-work less / more (reclaims) "
        "| reclaims returning > 1 server |",
        "|---|---|---|---|---|---|---|",
    ]
    for servers in (85, 83):
        for follow in ("aryl", "least-work"):
            jobs = trace_jobs(frame, any_type_share=1.0, seed=0)
            config = {**SETTINGS, "gpu_speed": {"V100": 1.0, "T4": 1.0}}
            args = run_arguments(
                jobs, load, scenario_name="baseline", seed=0, config=config
            )
            table = args["jobs"]
            args["jobs"] = table.replace(checkpoint=np.full(len(table), False))
            policy = _Both(follow)
            args["policy"] = policy
            result = sim.simulate(
                cluster=sim.Cluster(servers, INFERENCE_SERVERS), **args
            )
            log = np.array(policy.log)
            hit = log[(log[:, 1] > 0) | (log[:, 2] > 0)]
            lines.append(
                f"| {servers} | {follow} "
                f"| {result.summary()['work_lost_gpu_hours']:,.0f} "
                f"| {hit[:, 1].sum() / 3600:,.0f} | {hit[:, 2].sum() / 3600:,.0f} "
                f"| {int((hit[:, 2] < hit[:, 1] - 1e-6).sum())} / "
                f"{int((hit[:, 2] > hit[:, 1] + 1e-6).sum())} of {len(hit)} "
                f"| {(hit[:, 0] > 1).mean():.0%} |"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--speeds", type=float, nargs="+", default=[1.0, 0.5])
    p.add_argument("--shares", type=float, nargs="+", default=[0.21, 1.0])
    p.add_argument("--servers", type=int, nargs="+", default=[83, 85])
    p.add_argument(
        "--checkpoints", choices=["yes", "no"], nargs="+", default=["no", "yes"]
    )
    p.add_argument("--policies", nargs="+", default=list(POLICIES))
    p.add_argument("--out", default=None, help="CSV of every run")
    p.add_argument("--why", action="store_true", help="the reclaim-state analysis")
    args = p.parse_args()
    if args.why:
        start = time.process_time()
        print(why())
        print(f"\n{time.process_time() - start:,.0f} s of CPU.")
        return
    points = list(
        itertools.product(
            args.speeds,
            args.shares,
            args.servers,
            [c == "yes" for c in args.checkpoints],
            args.policies,
            range(args.seeds),
        )
    )
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(run, points))
    wall = time.perf_counter() - start
    if args.out:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.out, index=False)
    cpu = sum(r["cpu_s"] for r in rows)
    print(report(rows))
    print(f"\n{len(rows)} runs, {cpu:,.0f} s of simulation CPU, {wall:,.0f} s wall.")


if __name__ == "__main__":
    main()
