"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare`` and ``aryl demo``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import reclaiming

EXIT_USAGE = 2

# The paper's Table 3 columns, as (summary key, header, format).
TABLE_COLUMNS = [
    ("queuing_mean", "queue mean", "{:.0f}"), ("queuing_median", "queue median", "{:.0f}"),
    ("queuing_p95", "queue p95", "{:.0f}"), ("jct_mean", "JCT mean", "{:.0f}"),
    ("jct_median", "JCT median", "{:.0f}"), ("jct_p95", "JCT p95", "{:.0f}"),
    ("gpu_usage_training", "GPU use train", "{:.2f}"), ("gpu_usage_overall", "GPU use all", "{:.2f}"),
    ("preemption_ratio", "preempt ratio", "{:.2%}"),
]


def _table(header: Sequence[str], rows: List[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r: List[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]])


class ProgressBar:
    """A one-line progress bar on stderr, shown only when stderr is a terminal."""

    def __init__(self, label: str, enabled: Optional[bool] = None):
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.perf_counter()

    def __call__(self, fraction: float) -> bool:
        if self.enabled:
            filled = int(30 * fraction)
            sys.stderr.write(f"\r{self.label:<28} [{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%}")
            sys.stderr.flush()
        return True

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.label:<28} done in {time.perf_counter() - self.start:.1f} s" + " " * 20 + "\n")


# ---- inputs ------------------------------------------------------------------

def _inputs(args: argparse.Namespace):
    """(jobs, load frame or None, description) from the arguments or the embedded trace."""
    from . import traces

    if args.jobs is None:
        job_frame, load = traces.load_default()
        where = "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)"
        if args.load is not None:
            load = traces.read_load(args.load)
    else:
        job_frame = traces.read_jobs(args.jobs, drop_invalid=args.drop_invalid)
        load = traces.read_load(args.load) if args.load is not None else None
        where = str(args.jobs) + (f" with load {args.load}" if args.load else " (no --load: no loaning)")
    jobs = traces.to_jobs(job_frame, any_type_share=args.any_type_share, seed=args.seed)
    if load is not None:
        load = traces.extend_load(load, max(j.submit_time for j in jobs) + 90 * 86400)
    return jobs, load, where


def _cluster(args: argparse.Namespace):
    from . import sim

    return sim.Cluster(args.training_servers, args.inference_servers)


# ---- aryl simulate -------------------------------------------------------------

def simulate(args: argparse.Namespace) -> int:
    from . import plot, sim

    if args.pollux_workload is not None:
        return _simulate_pollux(args)
    if args.policy == "tiresias":
        raise ValueError("--policy tiresias runs a Pollux workload: add --pollux-workload FILE|N")
    jobs, load, where = _inputs(args)
    preset = sim.scenario_config(args.scenario)
    policy = args.policy or preset.get("policy", "aryl")
    config = {k: v for k, v in preset.items() if k != "policy"}
    jobs = sim.scenario(jobs, args.scenario, seed=args.seed)
    print(f"Simulating {len(jobs):,} jobs from {where}\non {args.training_servers} training + "
          f"{args.inference_servers} inference servers: scenario {args.scenario}, policy {policy}, "
          f"reclaim {args.reclaim}.")
    bar = ProgressBar(f"{args.scenario}/{policy}")
    result = sim.simulate(jobs, _cluster(args), policy=policy, reclaim=args.reclaim, inference_load=load,
                          config=config, seed=args.seed, progress=bar, label=f"{args.scenario}-{policy}")
    bar.done()
    out = _report(result, Path(args.out))
    written = plot.save_all({result.label: result}, out)
    print(f"\nWrote jobs.csv, timeline.csv, summary.json and {len(written)} plots to {out}/")
    return 0


def _simulate_pollux(args: argparse.Namespace) -> int:
    """A Pollux artifact workload (goodput-driven jobs) on a node cluster."""
    from . import sim, traces

    source = args.pollux_workload
    workload = traces.pollux_workload(int(source)) if source.isdigit() else \
        traces.read_pollux_workload(source)
    try:
        nodes, gpus = (int(x) for x in args.pollux_cluster.lower().split("x"))
    except ValueError:
        raise ValueError(f"--pollux-cluster must be NODESxGPUS (e.g. 16x4), got {args.pollux_cluster!r}") from None
    policy = args.policy or "tiresias"
    where = f"Pollux workload {source}" if source.isdigit() else str(source)
    print(f"Simulating {len(workload)} goodput-driven jobs from {where}\non {nodes} nodes x {gpus} GPUs, "
          f"policy {policy}.")
    bar = ProgressBar(f"pollux/{policy}")
    result = sim.simulate(workload, sim.Cluster(nodes, 0, gpus_per_server=gpus), policy=policy,
                          progress=bar, label=f"pollux-{policy}")
    bar.done()
    out = _report(result, Path(args.out))
    print(f"\nWrote jobs.csv, timeline.csv and summary.json to {out}/")
    return 0


def _report(result, out: Path) -> Path:
    """Checks the run, prints its summary and writes jobs.csv, timeline.csv, summary.json."""
    result.check()
    summary = result.summary()
    print()
    print(_table(["metric", "value"], [(k, _format(k, v)) for k, v in summary.items()]))
    out.mkdir(parents=True, exist_ok=True)
    result.jobs.to_csv(out / "jobs.csv", index=False)
    result.timeline.to_csv(out / "timeline.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return out


def _format(key: str, value: float) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if key.startswith(("gpu_usage", "preemption", "collateral", "flexible")):
        return f"{value:.2%}"
    return f"{value:,.0f} s"


# ---- aryl compare --------------------------------------------------------------

def comparison_runs(jobs, load, seed: int) -> Dict[str, dict]:
    """The paper's Table 3 rows: (scenario, simulate kwargs) per row name."""
    from . import sim

    baseline = sim.scenario(jobs, "baseline", seed=seed)
    basic = sim.scenario(jobs, "basic", seed=seed)
    no_loan = {"loaning": False}
    runs = {"Baseline (FIFO)": dict(jobs=baseline, policy="fifo", config=no_loan)}
    for reclaim in ("random", "scf", "aryl"):
        runs[f"Loaning, {reclaim} reclaim"] = dict(jobs=baseline, policy="aryl", reclaim=reclaim)
    for policy in ("gandiva", "afs", "aryl"):
        runs[f"Elastic (basic), {policy}"] = dict(jobs=basic, policy=policy, config=no_loan)
    runs["Aryl: loaning + elastic"] = dict(jobs=basic, policy="aryl", reclaim="aryl")
    if load is None:
        runs = {k: v for k, v in runs.items() if not k.startswith(("Loaning", "Aryl:"))}
    return runs


def compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from . import plot, sim

    jobs, load, where = _inputs(args)
    print(f"Comparing on {len(jobs):,} jobs from {where}\non {args.training_servers} training + "
          f"{args.inference_servers} inference servers (8 GPUs each).\n")
    results = {}
    for name, kwargs in comparison_runs(jobs, load, args.seed).items():
        bar = ProgressBar(name)
        kwargs = dict(kwargs)
        run_jobs = kwargs.pop("jobs")
        results[name] = sim.simulate(run_jobs, _cluster(args), inference_load=load, seed=args.seed,
                                     progress=bar, label=name, **kwargs).check()
        bar.done()
    table = pd.DataFrame({name: r.summary() for name, r in results.items()}).T
    base = table.iloc[0]
    table["speed-up JCT"] = base["jct_mean"] / table["jct_mean"]
    table["speed-up queue"] = base["queuing_mean"] / table["queuing_mean"].where(table["queuing_mean"] > 0)
    rows = [[name] + [fmt.format(row[key]) for key, _, fmt in TABLE_COLUMNS]
            + [f"{row['speed-up JCT']:.2f}x", f"{row['speed-up queue']:.2f}x"] for name, row in table.iterrows()]
    print(_table(["run (times in s)"] + [h for _, h, _ in TABLE_COLUMNS] + ["JCT speed-up", "queue speed-up"], rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "compare.csv", index_label="run")
    written = plot.save_all(results, out)
    print(f"\nSpeed-ups are over the Baseline row. Wrote compare.csv and {len(written)} plots to {out}/")
    return 0


# ---- aryl demo -----------------------------------------------------------------

def demo(args: argparse.Namespace) -> int:
    from .demo import loaned_cluster

    servers, jobs, workers = loaned_cluster(args.training_servers, args.loaned_servers, args.seed)
    on_loan = sum(s.on_loan for s in servers)
    elastic = sum(j.elastic for j in jobs)
    print(f"Cluster: {len(servers) - on_loan} training + {on_loan} on-loan 8-GPU servers, "
          f"{len(jobs)} running jobs ({elastic} elastic), {len(workers)} workers.")
    print("The inference cluster asks for servers back; each policy picks which to return.\n")
    reclaiming.reclaim(servers, jobs, workers, 0)  # warm-up, so the timings below are steady
    rows = []
    for n in args.reclaim:
        for policy in reclaiming.POLICIES:
            start = time.perf_counter()
            try:
                plan = reclaiming.reclaim(servers, jobs, workers, n, policy, seed=args.seed)
            except ValueError:
                if policy != "exact":
                    raise
                rows.append((n, policy, "—", "—", "—", "too large for exact search"))
                continue
            ms = (time.perf_counter() - start) * 1e3
            rows.append((n, policy, len(plan.preempted), sum(plan.scaled_in.values()),
                         f"{plan.collateral_gpus} ({plan.collateral_damage:.0%})", f"{ms:.2f}"))
    print(_table(["reclaim", "policy", "jobs preempted", "workers scaled in",
                  "collateral GPUs", "time (ms)"], rows))
    print("\nFewer preempted jobs is better; collateral GPUs are freed on servers that are kept.")
    return 0


# ---- the parser ------------------------------------------------------------------

def _trace_arguments(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument("jobs", nargs="?", metavar="JOBS.csv",
                   help="job trace in the common CSV format (job_id, submit_time_s, num_gpus, "
                        "duration_s, gpu_type; gzip allowed); default: the embedded ITP trace")
    p.add_argument("--load", metavar="LOAD.csv",
                   help="inference load (time_s, load in [0, 1]); default with the embedded trace: "
                        "the embedded Alibaba-2018 series; with your own trace: none (no loaning)")
    p.add_argument("--training-servers", type=int, default=64, metavar="N",
                   help="8-GPU V100 training servers (default 64)")
    p.add_argument("--inference-servers", type=int, default=64, metavar="N",
                   help="8-GPU T4 inference servers that can be lent (default 64)")
    p.add_argument("--any-type-share", type=float, default=0.21, metavar="F",
                   help="share of jobs without a GPU type that may run on any type, incl. loaned "
                        "inference servers (default 0.21, the paper's Appendix E)")
    p.add_argument("--drop-invalid", action="store_true",
                   help="skip invalid trace rows (counted and reported) instead of stopping")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--out", default=out, metavar="DIR", help=f"where results go (default {out})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aryl",
        description="aryl: capacity loaning and elastic scaling for deep-learning clusters. "
                    "Run `aryl compare` for the paper's comparison on a real trace.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("compare", help="the paper's comparison (Table 3) on one trace",
                       description="Simulate Baseline (FIFO, no loaning, no elasticity); loaning alone "
                       "with random, SCF and aryl reclaiming; elasticity alone (Basic scenario) under "
                       "Gandiva, AFS and aryl; and aryl with both, on the same trace. Prints one table "
                       "with each row's speed-up over Baseline and writes compare.csv and plots.")
    _trace_arguments(p, "aryl-results/compare")
    p.set_defaults(run=compare)

    p = sub.add_parser("simulate", help="simulate one configuration on a trace",
                       description="Simulate one scheduling policy, reclaim policy and scenario on a "
                       "trace; print the summary; write jobs.csv, timeline.csv, summary.json and plots.")
    _trace_arguments(p, "aryl-results/simulate")
    p.add_argument("--policy", choices=["aryl", "fifo", "sjf", "gandiva", "afs", "tiresias"],
                   help="allocation policy (default: the scenario's, aryl; fifo for baseline; "
                        "tiresias for --pollux-workload)")
    p.add_argument("--reclaim", choices=["aryl", "scf", "random"], default="aryl",
                   help="which loaned servers to return (default aryl)")
    p.add_argument("--scenario", choices=["baseline", "basic", "advanced", "ideal"], default="basic",
                   help="which jobs are elastic/hetero (default basic: 5%% elastic); baseline also "
                        "turns loaning off")
    p.add_argument("--pollux-workload", metavar="FILE|N",
                   help="run a Pollux artifact workload (name,time,application,num_replicas,"
                        "batch_size) instead of JOBS.csv; N in 1..8 picks an embedded one")
    p.add_argument("--pollux-cluster", default="16x4", metavar="NODESxGPUS",
                   help="the node cluster of --pollux-workload (default 16x4, the artifact's)")
    p.set_defaults(run=simulate)

    p = sub.add_parser("demo", help="reclaim loaned servers on a packed cluster under every policy",
                       description="Build a seeded cluster whose job sizes follow the ITP trace, then "
                       "reclaim on-loan servers under the aryl, scf, random and exact policies and "
                       "print how many jobs each preempts.")
    p.add_argument("--training-servers", type=int, default=32, metavar="N",
                   help="training servers (8 GPUs each; default 32)")
    p.add_argument("--loaned-servers", type=int, default=48, metavar="N",
                   help="inference servers on loan (8 GPUs each; default 48)")
    p.add_argument("--reclaim", type=int, nargs="+", default=[4, 12, 24], metavar="N",
                   help="how many servers to reclaim, one run each (default 4 12 24)")
    p.add_argument("--seed", type=int, default=0, help="seed of the cluster and of 'random'")
    p.set_defaults(run=demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as exc:  # TraceError is a ValueError
        print(f"aryl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
