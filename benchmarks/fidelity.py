"""Fidelity: the paper's Table 3 beside aryl's, and the orderings the paper's claims imply.

For each trace — the embedded ITP cluster04 jobs with the Alibaba-2018 load, the shared Philly
trace (``../shared/traces/philly_pollux_jobs.csv``, with the same Alibaba load repeated to
cover it, as ``benchmarks/simulate.py`` does) and the synthetic generator (15 days, 50,000 jobs,
its own diurnal load) — the cluster is sized with ``aryl.sim.size_cluster`` so that the FIFO
Baseline keeps 72% of the training GPUs busy (the paper's Table 3, row 1) with inference servers
at the paper's 520:443 ratio. Then every row of ``aryl.sim.paper_runs`` runs for seeds 0, 1 and
2 (the seed draws which jobs may use any GPU type, the scenarios' elastic and hetero jobs, and
random reclaiming); no knob is tuned per trace: every setting is the package default.

Printed per trace: the rows' mean over the seeds next to the paper's figures (mean queue, mean
JCT, speed-ups over Baseline, preemption ratio, GPU use), then each ordering of
``aryl.sim.ORDERINGS`` with its values per seed: PASS when it holds for all three seeds.

Two readings of the loaned GPUs' speed are run (docs/model.md, section 1): *physical*, the
package default (a loaned T4 runs at a quarter of a V100, Appendix A, and every decision sees
it), and *paper*, loaned GPUs as fast as training ones, which is how the paper's own simulator
appears to have run them (§7.2: "loaning itself does not affect job running time"; Table
``loan_jct``: jobs on loaned servers ran shorter than in Baseline). The second is one setting,
``gpu_speed={"T4": 1.0}``, the same for every trace.

Run: python benchmarks/fidelity.py [--quick] [--reading physical|paper|both]
(--quick: the ITP trace, seed 0 only; default: both readings)
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Dict, Tuple

from _common import ROOT, machine, table

SEEDS = (0, 1, 2)
TRACES = ("itp", "philly", "synthetic")
READINGS = {"physical": None, "paper": {"gpu_speed": {"T4": 1.0}}}
PHILLY = ROOT.parent / "shared" / "traces" / "philly_pollux_jobs.csv"


def paper_rows() -> Dict[str, tuple]:
    """The paper's figures per row: mean queue (s), mean JCT (s), preemption ratio,
    training and overall GPU use. Table 3 from ``aryl.sim.PAPER_TABLE3``; the
    imperfect-scaling row derived from §7.2's "+4% queuing, +12% JCT over row 2"; the
    plain-BFD row is Table 6's Basic line (no GPU use given)."""
    from aryl.sim import PAPER_TABLE3

    keys = (
        "queuing_mean",
        "jct_mean",
        "preemption_ratio",
        "gpu_usage_training",
        "gpu_usage_overall",
    )
    rows = {name: tuple(row[k] for k in keys) for name, row in PAPER_TABLE3.items()}
    basic = PAPER_TABLE3["Aryl Basic"]
    rows["Ablation: Basic, imperfect"] = (
        basic["queuing_mean"] * 1.04,
        basic["jct_mean"] * 1.12,
        None,
        None,
        None,
    )
    rows["Ablation: Basic, plain BFD"] = (2231, 13864, 0.1256, None, None)
    return rows


def inputs(trace: str, seed: int):
    """(jobs, load) of a trace; ``seed`` draws which jobs may use any GPU type."""
    from aryl import traces

    if trace == "itp":
        frame, load = traces.load_default()
    elif trace == "philly":
        frame, load = traces.read_jobs(PHILLY), traces.load_default()[1]
    else:
        frame, load = traces.synthetic(days=15, jobs=50_000, seed=0)
    jobs = traces.to_jobs(frame, seed=seed)
    return jobs, traces.extend_load(load, max(j.submit_time for j in jobs) + 90 * 86400)


def size(trace: str):
    """The trace's cluster at the paper's Baseline load (independent of the seed)."""
    import aryl.sim as sim

    start = time.perf_counter()
    sizing = sim.size_cluster(inputs(trace, 0)[0])
    return trace, sizing, time.perf_counter() - start


def run(
    trace: str, seed: int, cluster, reading: str
) -> Tuple[str, int, str, Dict[str, dict], float]:
    """Every row of ``paper_runs`` on one trace, seed and reading: row -> summary."""
    import aryl.sim as sim

    start = time.perf_counter()
    jobs, load = inputs(trace, seed)
    runs = sim.paper_runs(jobs, load, seed=seed, config=READINGS[reading])
    summaries = {
        name: sim.simulate(cluster=cluster, label=name, **kwargs).check().summary()
        for name, kwargs in runs.items()
    }
    return trace, seed, reading, summaries, time.perf_counter() - start


def fmt(value, kind: str) -> str:
    if value is None or value != value:
        return "—"
    return {
        "s": f"{value:,.0f}",
        "x": f"{value:.2f}x",
        "%": f"{value:.1%}",
        "u": f"{value:.2f}",
    }[kind]


def report(
    trace: str, reading: str, sizing, per_seed: Dict[int, Dict[str, dict]]
) -> None:
    import pandas as pd

    import aryl.sim as sim

    c = sizing.cluster
    print(
        f"\n### {trace}, {reading} reading: {c.training_servers} training + {c.inference_servers} "
        f"inference servers (Baseline training GPU use {sizing.gpu_usage_training:.3f}, target 0.72)\n"
    )
    tables = [sim.speedups(s) for s in per_seed.values()]
    mean = sum(
        t[
            [
                "queuing_mean",
                "jct_mean",
                "speed-up queue",
                "speed-up JCT",
                "preemption_ratio",
                "gpu_usage_training",
                "gpu_usage_overall",
            ]
        ].astype(float)
        for t in tables
    ) / len(tables)
    paper_figures = paper_rows()
    base = paper_figures["Baseline (FIFO)"]
    rows = []
    for name, r in mean.iterrows():
        paper = paper_figures.get(name, (None,) * 5)
        pq = base[0] / paper[0] if paper[0] else None
        pj = base[1] / paper[1] if paper[1] else None
        rows.append(
            (
                name,
                fmt(paper[0], "s"),
                fmt(r["queuing_mean"], "s"),
                fmt(paper[1], "s"),
                fmt(r["jct_mean"], "s"),
                fmt(pq, "x"),
                fmt(r["speed-up queue"], "x"),
                fmt(pj, "x"),
                fmt(r["speed-up JCT"], "x"),
                fmt(paper[2], "%"),
                fmt(r["preemption_ratio"], "%"),
                fmt(paper[3], "u"),
                fmt(r["gpu_usage_training"], "u"),
                fmt(paper[4], "u"),
                fmt(r["gpu_usage_overall"], "u"),
            )
        )
    print(
        table(
            [
                f"row (mean of {len(per_seed)} seeds)",
                "queue paper",
                "queue aryl",
                "JCT paper",
                "JCT aryl",
                "queue x paper",
                "queue x aryl",
                "JCT x paper",
                "JCT x aryl",
                "preempt paper",
                "preempt aryl",
                "use train paper",
                "use train aryl",
                "use all paper",
                "use all aryl",
            ],
            rows,
        )
    )
    checks = {seed: sim.check_orderings(s) for seed, s in per_seed.items()}
    print()
    lines = []
    for claim, metric, chain in sim.ORDERINGS:
        held = [checks[seed][claim]["holds"] for seed in per_seed]
        detail = "; ".join(
            f"s{seed}: "
            + " ".join(
                fmt(
                    checks[seed][claim]["values"][x],
                    "%" if metric == "preemption_ratio" else "s",
                )
                if i % 2 == 0
                else x
                for i, x in enumerate(chain)
            )
            for seed in per_seed
        )
        lines.append(
            ("PASS" if all(held) else "FAIL", f"{sum(held)}/{len(held)}", claim, detail)
        )
    print(
        table(
            ["", "seeds", "ordering", "values per seed (rows in the claim's order)"],
            lines,
        )
    )
    pd.DataFrame(mean).to_csv(
        ROOT / "benchmarks" / "results" / f"fidelity_{trace}_{reading}.csv"
    )


def main(quick: bool = False, readings: Tuple[str, ...] = tuple(READINGS)) -> None:
    traces, seeds = (("itp",), (0,)) if quick else (TRACES, SEEDS)
    (ROOT / "benchmarks" / "results").mkdir(parents=True, exist_ok=True)
    print(f"Machine: {machine()}")
    start = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        sized = {t: (s, secs) for t, s, secs in pool.map(size, traces)}
        for t, (s, secs) in sized.items():
            print(
                f"{t}: sized in {secs:.1f} s over {len(s.evaluated)} Baseline runs: "
                + ", ".join(f"{n}: {u:.3f}" for n, u in s.evaluated.items())
            )
        futures = [
            pool.submit(run, t, seed, sized[t][0].cluster, r)
            for r in readings
            for t in traces
            for seed in seeds
        ]
        results: Dict[Tuple[str, str], Dict[int, dict]] = {}
        for f in futures:
            t, seed, r, summaries, secs = f.result()
            results.setdefault((t, r), {})[seed] = summaries
            print(
                f"{t} seed {seed}, {r} reading: {len(summaries)} rows in {secs:.0f} s",
                flush=True,
            )
    for r in readings:
        for t in traces:
            report(t, r, sized[t][0], results[(t, r)])
    print(f"\nTotal wall time {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    chosen = (
        sys.argv[sys.argv.index("--reading") + 1] if "--reading" in sys.argv else "both"
    )
    if chosen not in (*READINGS, "both"):
        sys.exit(
            f"--reading must be one of {', '.join(READINGS)}, both; got {chosen!r}"
        )
    main(
        quick="--quick" in sys.argv,
        readings=tuple(READINGS) if chosen == "both" else (chosen,),
    )
