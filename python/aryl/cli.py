"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare``, ``aryl sweep`` and ``aryl demo``."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from . import reclaiming
from .outputs import output_directory, write_atomically

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every error is one line on stderr and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        # "aryl: error: ..." like every other error; a subcommand's name leads the message
        command = self.prog.split(maxsplit=1)[1:]
        self.exit(EXIT_USAGE, f"aryl: error: {' '.join(command + [message])}\n")


def _number(kind: Callable[[str], float], what: str, low: Optional[float] = None,
            high: Optional[float] = None, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite ``kind(text)`` in [low, high] (``(low, high]`` if ``low_open``)."""
    noun = "an integer" if kind is int else "a number"
    bounds = f"{'(' if low_open else '['}{'-inf' if low is None else low}, {'inf' if high is None else high}]"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        outside = (low is not None and (value < low or (low_open and value == low))) or \
            (high is not None and value > high)
        if not math.isfinite(value) or outside:
            raise argparse.ArgumentTypeError(f"expected {noun} in {bounds}, got {text!r}")
        return value

    parse.__name__ = what
    return parse


def _servers_or_auto(what: str, low: int) -> Callable[[str], object]:
    """An argparse type: ``auto`` or an integer server count >= ``low``."""
    count = _number(int, what, low)

    def parse(text: str) -> object:
        return "auto" if text.strip().lower() == "auto" else count(text)

    parse.__name__ = what
    return parse


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
    # A load shorter than the trace is extended inside sim.simulate, as through the API.
    return jobs, load, where


def _cluster(args: argparse.Namespace, jobs) -> object:
    """The cluster of the arguments, sizing ``auto`` counts with ``aryl.sim.size_cluster``."""
    from . import sim

    training, inference = args.training_servers, args.inference_servers
    if training != "auto":
        if inference == "auto":
            inference = sim.sizing.inference_count(training)
        print(f"Cluster: {training} training + {inference} inference 8-GPU servers.")
        return sim.Cluster(training, inference)
    sizing = sim.size_cluster(jobs, utilisation=args.utilisation,
                              inference_servers=None if inference == "auto" else inference,
                              config=_config(args))
    ratio = "at the paper's 520:443 ratio" if inference == "auto" else "as given"
    print(f"Cluster: {sizing.training_servers} training + {sizing.inference_servers} inference 8-GPU "
          f"servers (inference {ratio}): sized so that the FIFO Baseline keeps "
          f"{sizing.gpu_usage_training:.1%} of the training GPUs busy (target {sizing.target:.0%}, "
          f"the paper's Baseline; {len(sizing.evaluated)} Baseline runs).")
    return sizing.cluster


def _config(args: argparse.Namespace) -> dict:
    """The ``Config`` fields the options set."""
    return {"lend_hold": args.lend_hold, "headroom": args.headroom}


# ---- aryl simulate -------------------------------------------------------------

def simulate(args: argparse.Namespace) -> int:
    from . import sim

    out = output_directory(args.out)
    if args.pollux_workload is not None:
        return _simulate_pollux(args, out)
    if args.policy in ("tiresias", "pollux"):
        raise ValueError(f"--policy {args.policy} runs a Pollux workload: add --pollux-workload FILE|N")
    jobs, load, where = _inputs(args)
    preset = sim.scenario_config(args.scenario)
    policy = args.policy or preset.get("policy", "aryl")
    config = {**_config(args), **{k: v for k, v in preset.items() if k != "policy"}}
    print(f"Simulating {len(jobs):,} jobs from {where}: scenario {args.scenario}, policy {policy}, "
          f"reclaim {args.reclaim}.")
    cluster = _cluster(args, jobs)
    jobs = sim.scenario(jobs, args.scenario, seed=args.seed)
    bar = ProgressBar(f"{args.scenario}/{policy}")
    result = sim.simulate(jobs, cluster, policy=policy, reclaim=args.reclaim, inference_load=load,
                          config=config, seed=args.seed, progress=bar, label=f"{args.scenario}-{policy}")
    bar.done()
    _report(result, args, where, out, plots=True)
    return 0


def _simulate_pollux(args: argparse.Namespace, out: Path) -> int:
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
    _report(result, args, where, out, plots=False)
    return 0


def _report(result, args: argparse.Namespace, where: str, out: Path, plots: bool) -> None:
    """Checks the run, prints its summary and writes jobs.csv, timeline.csv, summary.json and
    provenance.json (and the plots), all at once or not at all."""
    from . import plot

    result.check()
    summary = result.summary()
    print()
    print(_table(["metric", "value"], [(k, _format(k, v)) for k, v in summary.items()]))
    record = _record(args, where)
    run = result.provenance.to_dict() if result.provenance is not None else None
    provenance = {**record, "run": run}

    def write(folder: Path) -> list:
        result.jobs.to_csv(folder / "jobs.csv", index=False)
        result.timeline.to_csv(folder / "timeline.csv", index=False)
        (folder / "summary.json").write_text(
            json.dumps({**summary, "provenance": provenance}, indent=2, default=str) + "\n")
        _write_provenance(folder, record, {result.label: result})
        if not plots:
            return []
        return plot.save_all({result.label: result}, folder, metadata=_png_metadata(record))

    written = write_atomically(out, write)
    _print_note(result)
    what = f" and {len(written)} plots" if plots else ""
    print(f"\nWrote jobs.csv, timeline.csv, summary.json, provenance.json{what} to {out}/")


def _format(key: str, value: float) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if key.startswith(("gpu_usage", "preemption", "collateral", "flexible")):
        return f"{value:.2%}"
    return f"{value:,.0f} s"


# ---- aryl compare --------------------------------------------------------------

def compare(args: argparse.Namespace) -> int:
    from . import plot, sim

    out = output_directory(args.out)
    jobs, load, where = _inputs(args)
    print(f"Comparing on {len(jobs):,} jobs from {where}.")
    cluster = _cluster(args, jobs)
    print()
    results = {}
    for name, kwargs in sim.paper_runs(jobs, load, seed=args.seed, config=_config(args)).items():
        bar = ProgressBar(name)
        results[name] = sim.simulate(cluster=cluster, progress=bar, label=name, **kwargs).check()
        bar.done()
    table = sim.speedups({name: r.summary() for name, r in results.items()})
    rows = [[name] + [fmt.format(row[key]) for key, _, fmt in TABLE_COLUMNS]
            + [f"{row['speed-up JCT']:.2f}x", f"{row['speed-up queue']:.2f}x"] for name, row in table.iterrows()]
    print(_table(["run (times in s)"] + [h for _, h, _ in TABLE_COLUMNS] + ["JCT speed-up", "queue speed-up"], rows))
    record = _record(args, where)

    def write(folder: Path) -> list:
        _provenance_columns(table, results, record).to_csv(folder / "compare.csv", index_label="run")
        _write_provenance(folder, record, results)
        return plot.save_all(results, folder, metadata=_png_metadata(record))

    written = write_atomically(out, write)
    _print_note(next(iter(results.values())))
    print(f"\nSpeed-ups are over the Baseline row. Rows: README \"The rows\" and aryl.sim.paper_runs. "
          f"Wrote compare.csv, provenance.json and {len(written)} plots to {out}/")
    return 0


# ---- what produced an output ---------------------------------------------------------

def _record(args: argparse.Namespace, where: str) -> dict:
    """The command, its inputs, every parameter, the seed and aryl's version."""
    from .sim.provenance import aryl_version

    parameters = {k: v for k, v in vars(args).items() if k not in ("run", "command")}
    return {"command": f"aryl {args.command}", "aryl_version": aryl_version(), "inputs": where,
            "parameters": parameters, "seed": args.seed}


def _write_provenance(out: Path, record: dict, results: dict) -> Path:
    """``provenance.json``: the command's record and each run's ``Result.provenance``."""
    runs = {name: r.provenance.to_dict() for name, r in results.items() if r.provenance is not None}
    path = out / "provenance.json"
    path.write_text(json.dumps({**record, "runs": runs}, indent=2, default=str) + "\n")
    return path


def _png_metadata(record: dict) -> Dict[str, str]:
    """PNG text chunks naming the command, inputs, parameters and version."""
    return {"Software": f"aryl {record['aryl_version']}",
            "Description": json.dumps(record, default=str, sort_keys=True)}


def _provenance_columns(table, results: dict, record: dict):
    """``table`` with, per run, what produced it (policy, config, seed, inputs, version)."""
    from ._display import describe_config

    import pandas as pd

    rows = {}
    for name, result in results.items():
        p = result.provenance
        rows[name] = {
            "policy": p.policy, "reclaim": p.reclaim, "config": describe_config(p.config),
            "seed": p.seed, "training_servers": p.cluster["training_servers"],
            "inference_servers": p.cluster["inference_servers"], "jobs": p.jobs,
            "jobs_fingerprint": p.jobs_fingerprint, "load_fingerprint": p.load_fingerprint,
            "load_extended": p.load_extended or "", "inputs": record["inputs"],
            "aryl_version": p.aryl_version}
    return table.join(pd.DataFrame.from_dict(rows, orient="index"))


def _print_note(result) -> None:
    """Say so when the load series was repeated to cover the trace."""
    if result.provenance is not None and result.provenance.load_extended:
        print(f"\nNote: {result.provenance.load_extended}.")


# ---- aryl sweep -----------------------------------------------------------------

#: ``aryl.sim.PARAMETERS``' names, for the help text without importing the simulator.
SWEEP_PARAMETERS = ("trace, first_jobs, training_servers, inference_servers, scenario, elastic_gpu_share, "
                    "hetero_share, policy, reclaim, seed, any_type_share")

#: Columns of the table ``aryl sweep`` prints after the varied parameters.
SWEEP_COLUMNS = [("queuing_mean", "queue mean"), ("queuing_p95", "queue p95"), ("jct_mean", "JCT mean"),
                 ("gpu_usage_overall", "GPU use all"), ("preemption_ratio", "preempt ratio"),
                 ("collateral_damage", "collateral")]


def _value(text: str):
    """A grid value from the command line: JSON (numbers, true/false, null, lists), else text."""
    if text.lower() == "none":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _grid(pairs: Sequence[str], what: str) -> Dict[str, list]:
    """``NAME=V1,V2,...`` (or ``NAME=[JSON list]``) strings as name -> values."""
    grid: Dict[str, list] = {}
    for pair in pairs:
        name, sep, values = pair.partition("=")
        if not sep or not name or not values:
            raise ValueError(f"{what} {pair!r}: expected NAME=VALUE[,VALUE...]")
        parsed = _value(values) if values.startswith("[") else [_value(v) for v in values.split(",")]
        grid[name.strip().replace("-", "_")] = parsed if isinstance(parsed, list) else [parsed]
    return grid


def sweep(args: argparse.Namespace) -> int:
    """``aryl sweep``: every combination of ``--grid`` on Ray; one table, one Parquet file."""
    from . import sim
    from .sim.sweep import grid_points

    base = {"training_servers": args.training_servers, "inference_servers": args.inference_servers,
            "any_type_share": args.any_type_share, "seed": args.seed,
            "lend_hold": args.lend_hold, "headroom": args.headroom}
    if args.first_jobs is not None:
        base["first_jobs"] = args.first_jobs
    base.update({k: v[0] for k, v in _grid(args.set, "--set").items()})
    grid = _grid(args.grid, "--grid")
    given, where = _sweep_trace(args)
    base.update({"trace": name for name in given})
    _size_auto(args, base, grid, given)
    runs = len(grid_points(base, grid))
    print(f"Sweeping {runs} runs on {where} ({args.engine} engine"
          f"{', Ray at ' + args.address if args.address else ''}).")
    start = time.perf_counter()
    cache = False if args.no_cache else (args.cache or Path(args.out) / "cache")
    try:
        table = sim.sweep(base, grid, traces=given, engine=args.engine, address=args.address,
                          workers=args.workers, cache=cache, progress=None)
    except KeyboardInterrupt:
        where_cached = f"; the finished runs are cached in {cache}: run it again to resume" if cache else ""
        print(f"\naryl: sweep interrupted{where_cached}", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - start
    varied = list(grid) or ["label"]
    rows = [[_cell(row[k]) for k in varied] + [_format(k, row[k]) for k, _ in SWEEP_COLUMNS]
            + ["yes" if row["cached"] else "no"] for _, row in table.iterrows()]
    print(_table(varied + [h for _, h in SWEEP_COLUMNS] + ["cached"], rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = _record(args, where)
    table.attrs["aryl"] = json.dumps(record, default=str)
    table.to_parquet(out / "sweep.parquet", index=False)
    cached = int(table["cached"].sum())
    print(f"\n{len(table)} runs ({cached} from the cache) in {seconds:.1f} s. Wrote {out / 'sweep.parquet'} "
          f"(one row per run: parameters, summary, fingerprints, aryl version).")
    return 0


def _sweep_trace(args: argparse.Namespace) -> Tuple[dict, str]:
    """({name: (job frame, load frame or None)} or {} for the embedded trace, description).

    Frames, not jobs: each run converts them with its own ``any_type_share`` and ``seed``.
    """
    from . import traces

    if args.jobs is None and args.load is None:
        return {}, "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)"
    if args.jobs is None:
        frame, name, where = traces.load_default()[0], "embedded", "the embedded ITP cluster04 jobs"
    else:
        frame = traces.read_jobs(args.jobs, drop_invalid=args.drop_invalid)
        name, where = Path(args.jobs).name, str(args.jobs)
    load = traces.read_load(args.load) if args.load is not None else None
    where += f" with load {args.load}" if args.load else " (no --load: no loaning)"
    return {name + (f"+{Path(args.load).name}" if args.load else ""): (frame, load)}, where


def _size_auto(args: argparse.Namespace, base: dict, grid: dict, given: dict) -> None:
    """Replace ``auto`` server counts in ``base`` (not varied by the grid) once, before the runs:
    training by ``aryl.sim.size_cluster``, inference at the paper's ratio to training."""
    from . import sim, traces

    training = base["training_servers"] == "auto" and "training_servers" not in grid
    inference = base["inference_servers"] == "auto" and "inference_servers" not in grid
    if inference and not training and "training_servers" in grid:
        raise ValueError("--grid over training_servers needs --inference-servers (or a grid over it)")
    if training:
        frame = next(iter(given.values()))[0] if given else traces.load_default()[0]
        if "first_jobs" in base:
            frame = frame.iloc[: int(base["first_jobs"])]
        jobs = traces.to_jobs(frame, any_type_share=args.any_type_share, seed=args.seed)
        fixed = None if base["inference_servers"] == "auto" else base["inference_servers"]
        sizing = sim.size_cluster(jobs, utilisation=args.utilisation, inference_servers=fixed)
        base["training_servers"] = sizing.cluster.training_servers
        if inference:
            base["inference_servers"] = sizing.cluster.inference_servers
        print(f"Cluster: {base['training_servers']} training servers, sized so the FIFO Baseline "
              f"keeps {sizing.gpu_usage_training:.0%} of the training GPUs busy.")
    elif inference:
        base["inference_servers"] = sim.sizing.inference_count(base["training_servers"])


def _cell(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


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
    p.add_argument("--training-servers", type=_servers_or_auto("--training-servers", 1), default="auto",
                   metavar="N|auto",
                   help="8-GPU V100 training servers; auto (default) sizes the cluster so that the FIFO "
                        "Baseline keeps --utilisation of them busy (aryl.sim.size_cluster)")
    p.add_argument("--inference-servers", type=_servers_or_auto("--inference-servers", 0), default="auto",
                   metavar="N|auto",
                   help="8-GPU T4 inference servers that can be lent; auto (default): the paper's 520 "
                        "per 443 training servers")
    p.add_argument("--utilisation", type=_number(float, "--utilisation", 0.0, 1.0, low_open=True),
                   default=0.72, metavar="F",
                   help="Baseline training GPU use that --training-servers auto aims at (default 0.72, "
                        "the paper's Table 3)")
    p.add_argument("--lend-hold", type=_number(float, "--lend-hold", 0.0), default=3600.0, metavar="SECONDS",
                   help="lend an inference server only after the load has left it spare this long "
                        "(default 3600; reclaiming is immediate)")
    p.add_argument("--headroom", type=_number(float, "--headroom", 0.0), default=0.0, metavar="F",
                   help="the inference cluster keeps ceil(load x (1 + F) x N) servers (default 0)")
    p.add_argument("--any-type-share", type=_number(float, "--any-type-share", 0.0, 1.0), default=0.21,
                   metavar="F",
                   help="share of jobs without a GPU type that may run on any type, incl. loaned "
                        "inference servers (default 0.21, the paper's Appendix E)")
    p.add_argument("--drop-invalid", action="store_true",
                   help="skip invalid trace rows (counted and reported) instead of stopping")
    p.add_argument("--seed", type=_number(int, "--seed", 0), default=0,
                   help="seed of every random choice (default 0)")
    p.add_argument("--out", default=out, metavar="DIR", help=f"where results go (default {out})")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aryl",
        description="aryl: capacity loaning and elastic scaling for deep-learning clusters. "
                    "Run `aryl compare` for the paper's comparison on a real trace.",
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"aryl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("compare", help="the paper's comparison (Table 3) on one trace",
                       description="Simulate the paper's Table 3 rows on one trace: Baseline (FIFO, no "
                       "loaning, no elasticity); aryl with loaning and elasticity in the Basic, Advanced and "
                       "Ideal scenarios; loaning alone with random, SCF and aryl reclaiming; elasticity alone "
                       "(Basic) under Gandiva, AFS and aryl; two controls (SJF and FIFO with backfill, no "
                       "loaning) and two ablations (imperfect scaling, plain best-fit placement). Prints one "
                       "table with each row's speed-up over Baseline and writes compare.csv and plots. By "
                       "default the cluster is sized to the paper's Baseline load (72%% training GPU use).")
    _trace_arguments(p, "aryl-results/compare")
    p.set_defaults(run=compare)

    p = sub.add_parser("simulate", help="simulate one configuration on a trace",
                       description="Simulate one scheduling policy, reclaim policy and scenario on a "
                       "trace; print the summary; write jobs.csv, timeline.csv, summary.json and plots.")
    _trace_arguments(p, "aryl-results/simulate")
    p.add_argument("--policy",
                   choices=["aryl", "fifo", "sjf", "gandiva", "afs", "tiresias", "pollux"],
                   help="allocation policy (default: the scenario's, aryl; fifo for baseline; "
                        "tiresias or pollux for --pollux-workload, default tiresias)")
    p.add_argument("--reclaim", choices=["aryl", "scf", "random"], default="aryl",
                   help="which loaned servers to return (default aryl)")
    p.add_argument("--scenario", choices=["baseline", "basic", "advanced", "ideal"], default="basic",
                   help="which jobs are elastic/hetero (default basic: elastic jobs hold 36%% of the "
                        "GPU-time); baseline also turns loaning off")
    p.add_argument("--pollux-workload", metavar="FILE|N",
                   help="run a Pollux artifact workload (name,time,application,num_replicas,"
                        "batch_size) instead of JOBS.csv; N in 1..8 picks an embedded one")
    p.add_argument("--pollux-cluster", default="16x4", metavar="NODESxGPUS",
                   help="the node cluster of --pollux-workload (default 16x4, the artifact's)")
    p.set_defaults(run=simulate)

    p = sub.add_parser("sweep", help="simulate every combination of a parameter grid, on Ray",
                       description="Run one simulation per combination of the --grid values (on top "
                       "of the trace options and --set values) on a local Ray, or an existing Ray "
                       "cluster with --address; print one table, write sweep.parquet (one row per "
                       "run). Finished runs are cached by a fingerprint of trace, parameters and "
                       "aryl version: a repeated sweep reads them back, an interrupted one resumes. "
                       "Parameters: " + SWEEP_PARAMETERS + " and any aryl.sim.Config "
                       "field (headroom, lend_hold, loaning, ...); see aryl.sim.PARAMETERS.")
    _trace_arguments(p, "aryl-results/sweep")
    p.add_argument("--grid", "-g", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a parameter and its values (repeat for more; every combination runs), "
                        "e.g. --grid inference_servers=0,16,32,64 --grid headroom=0,0.2")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter fixed for every run, e.g. --set scenario=baseline")
    p.add_argument("--first-jobs", type=int, metavar="N", help="use only the trace's first N jobs")
    p.add_argument("--engine", choices=["auto", "ray", "processes", "threads", "serial"], default="auto",
                   help="where runs execute (default auto: Ray if installed, else a process pool)")
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (e.g. ray://host:10001 "
                   "or auto); default: start a local Ray")
    p.add_argument("--workers", type=int, metavar="N", help="runs at once locally (default: CPUs)")
    p.add_argument("--cache", metavar="DIR", help="cache folder (default OUT/cache)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.set_defaults(run=sweep)

    p = sub.add_parser("demo", help="reclaim loaned servers on a packed cluster under every policy",
                       description="Build a seeded cluster whose job sizes follow the ITP trace, then "
                       "reclaim on-loan servers under the aryl, scf, random and exact policies and "
                       "print how many jobs each preempts.")
    p.add_argument("--training-servers", type=_number(int, "--training-servers", 0), default=32, metavar="N",
                   help="training servers (8 GPUs each; default 32)")
    p.add_argument("--loaned-servers", type=_number(int, "--loaned-servers", 0), default=48, metavar="N",
                   help="inference servers on loan (8 GPUs each; default 48)")
    p.add_argument("--reclaim", type=_number(int, "--reclaim", 0), nargs="+", default=[4, 12, 24], metavar="N",
                   help="how many servers to reclaim, one run each (default 4 12 24)")
    p.add_argument("--seed", type=_number(int, "--seed", 0), default=0, help="seed of the cluster and of 'random'")
    p.set_defaults(run=demo)
    return parser


def _check(args: argparse.Namespace) -> None:
    """What argparse's types cannot say: ranges of the numbers, a non-empty --out."""
    from . import validation

    validation.seed(args.seed, "--seed")
    for name in ("training_servers", "inference_servers", "loaned_servers"):
        if getattr(args, name, "auto") != "auto":
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
