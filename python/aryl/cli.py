"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare`` and ``aryl demo``."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import reclaiming
from .outputs import output_directory, write_atomically

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

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
        try:
            load = traces.extend_load(load, max(j.submit_time for j in jobs) + 90 * 86400)
        except ValueError as exc:
            raise ValueError(f"{load.attrs.get('source', 'load')}: {exc}") from None
    return jobs, load, where


def _cluster(args: argparse.Namespace):
    from . import sim

    return sim.Cluster(args.training_servers, args.inference_servers)


# ---- aryl simulate -------------------------------------------------------------

def simulate(args: argparse.Namespace) -> int:
    from . import plot, sim

    out = output_directory(args.out)
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
    result.check()
    summary = result.summary()
    print()
    print(_table(["metric", "value"], [(k, _format(k, v)) for k, v in summary.items()]))

    def write(folder: Path) -> list:
        result.jobs.to_csv(folder / "jobs.csv", index=False)
        result.timeline.to_csv(folder / "timeline.csv", index=False)
        (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return plot.save_all({result.label: result}, folder)

    written = write_atomically(out, write)
    print(f"\nWrote jobs.csv, timeline.csv, summary.json and {len(written)} plots to {out}/")
    return 0


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

    out = output_directory(args.out)
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

    def write(folder: Path) -> list:
        table.to_csv(folder / "compare.csv", index_label="run")
        return plot.save_all(results, folder)

    written = write_atomically(out, write)
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
    p.add_argument("--policy", choices=["aryl", "fifo", "sjf", "gandiva", "afs"],
                   help="allocation policy (default: the scenario's, aryl; fifo for baseline)")
    p.add_argument("--reclaim", choices=["aryl", "scf", "random"], default="aryl",
                   help="which loaned servers to return (default aryl)")
    p.add_argument("--scenario", choices=["baseline", "basic", "advanced", "ideal"], default="basic",
                   help="which jobs are elastic/hetero (default basic: 5%% elastic); baseline also "
                        "turns loaning off")
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


def _check(args: argparse.Namespace) -> None:
    """What argparse's types cannot say: ranges of the numbers, a non-empty --out."""
    from . import validation

    validation.seed(args.seed, "--seed")
    for name in ("training_servers", "inference_servers", "loaned_servers"):
        if hasattr(args, name):
            validation.integer(getattr(args, name), "--" + name.replace("_", "-"))
    reclaim = getattr(args, "reclaim", None)
    for n in reclaim if isinstance(reclaim, list) else []:  # demo's counts
        validation.integer(n, "--reclaim")
    if hasattr(args, "any_type_share"):
        validation.real(args.any_type_share, "--any-type-share", 0.0, 1.0)
    if getattr(args, "out", None) == "":
        raise ValueError("--out must name a directory")


def _warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"aryl: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script; returns the exit status.

    Bad input (a file, an option, a value) prints one line and returns 2; Ctrl-C
    prints one line and returns 130, leaving no partial output file behind;
    running out of memory prints one line and returns 1.
    """
    args = _parser().parse_args(argv)
    warnings.showwarning = _warning
    try:
        _check(args)
        return args.run(args)
    except (ValueError, TypeError, OSError) as exc:  # TraceError is a ValueError
        print(f"aryl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("aryl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:
        print(f"aryl: error: out of memory{f' ({exc})' if str(exc) else ''}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
