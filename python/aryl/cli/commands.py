"""The commands: ``aryl simulate``, ``aryl compare``, ``aryl sweep``, ``aryl demo``."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    List,
    Tuple,
)

from .. import reclaiming
from ..defaults import RECLAIM_POLICIES

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from ..typing import SimulationPolicy
from .._display import Table
from .files import output_directory, write_atomically
from .arguments import _grid
from .inputs import _cluster, _config, _inputs, _size_auto, _sweep_trace
from .output import (
    Progress,
    _cell,
    _compare_table,
    _format,
    _integer_columns,
    _png_metadata,
    _print_note,
    _progress_wanted,
    _provenance_columns,
    _record,
    _report,
    _say,
    _show,
    _write_provenance,
)


def simulate(args: argparse.Namespace) -> int:
    from .. import sim
    from ..sim.runs import run_arguments

    out = output_directory(args.out)
    if args.pollux_workload is not None:
        return _simulate_pollux(args, out)
    if args.policy in ("tiresias", "pollux"):
        raise ValueError(
            f"--policy {args.policy} runs a Pollux workload: add --pollux-workload FILE|N"
        )
    jobs, load, where = _inputs(args)
    run = run_arguments(
        jobs,
        load,
        scenario_name=args.scenario,
        seed=args.seed,
        policy=args.policy,
        reclaim=args.reclaim,
        config=_config(args),
    )
    policy = run["policy"]
    _say(
        args,
        f"Simulating {len(jobs):,} jobs from {where}: scenario {args.scenario}, "
        f"policy {policy}, reclaim {args.reclaim}.",
    )
    cluster = _cluster(args, jobs)
    with Progress(1, _progress_wanted(args)) as progress:
        result = sim.simulate(
            cluster=cluster,
            progress=progress.run(f"{args.scenario}/{policy}"),
            label=f"{args.scenario}-{policy}",
            **run,
        )
    _report(result, args, where, out, plots=True)
    return 0


def _simulate_pollux(args: argparse.Namespace, out: Path) -> int:
    """A Pollux artifact workload (goodput-driven jobs) on a node cluster."""
    from .. import sim, traces

    source = args.pollux_workload
    workload = (
        traces.pollux_workload(int(source))
        if source.isdigit()
        else traces.read_pollux_workload(source)
    )
    nodes, gpus = args.pollux_cluster
    policy: SimulationPolicy = args.policy or "tiresias"
    where = f"Pollux workload {source}" if source.isdigit() else str(source)
    _say(
        args,
        f"Simulating {len(workload)} goodput-driven jobs from {where}\n"
        f"on {nodes} nodes x {gpus} GPUs, policy {policy}.",
    )
    with Progress(1, _progress_wanted(args)) as progress:
        result = sim.simulate(
            workload,
            sim.Cluster(nodes, 0, gpus_per_server=gpus),
            policy=policy,
            progress=progress.run(f"pollux/{policy}"),
            label=f"pollux-{policy}",
        )
    _report(result, args, where, out, plots=False)
    return 0


def compare(args: argparse.Namespace) -> int:
    from .. import plot, sim

    if args.seeds is not None or args.windows is not None:
        from .replicated import compare_replicated

        return compare_replicated(args)
    out = output_directory(args.out)
    jobs, load, where = _inputs(args)
    _say(args, f"Comparing on {len(jobs):,} jobs from {where}.")
    cluster = _cluster(args, jobs)
    _say(args)
    config = _config(args)
    if args.pollux_rows:
        config["pollux_generations"] = args.pollux_generations
    runs = sim.paper_runs(
        jobs, load, seed=args.seed, config=config, pollux_rows=args.pollux_rows
    )
    results = {}
    with Progress(len(runs), _progress_wanted(args)) as progress:
        for name, kwargs in runs.items():
            on = sim.pollux_nodes(cluster) if name in sim.POLLUX_ROWS else cluster
            results[name] = sim.simulate(
                cluster=on, progress=progress.run(name), label=name, **kwargs
            ).check()
    summaries = {name: r.summary() for name, r in results.items()}
    table = _integer_columns(sim.speedups(summaries), summaries)
    _show(args, _compare_table(table))
    record = _record(args, where)

    def write(folder: Path) -> List[Path]:
        _provenance_columns(table, results, record).to_csv(
            folder / "compare.csv", index_label="run"
        )
        _write_provenance(folder, record, results)
        return plot.save_all(
            results,
            folder,
            metadata=_png_metadata(record),
            headline=table,
            formats=args.plot_format,
            window=args.plot_window,
        )

    written = write_atomically(out, write)
    _print_note(args, next(iter(results.values())))
    _say(
        args,
        '\nSpeed-ups are over the Baseline row. Rows: README "The rows" and '
        f"aryl.sim.paper_runs. Wrote compare.csv, provenance.json and {len(written)} "
        f"figure files to {out}/",
    )
    return 0


#: ``aryl.sim.PARAMETERS``' names, for the help text without importing the simulator.
SWEEP_PARAMETERS = (
    "trace, first_jobs, training_servers, inference_servers, scenario, elastic_gpu_share, "
    "hetero_share, policy, reclaim, seed, any_type_share"
)


#: Summary keys of the table ``aryl sweep`` prints after the varied parameters.
SWEEP_COLUMNS = [
    "queuing_mean",
    "queuing_p95",
    "jct_mean",
    "gpu_usage_overall",
    "preemption_ratio",
    "collateral_damage",
]


def _stop_ray() -> None:
    """After Ctrl-C: shut a Ray this process started down before exiting, deaf to more
    Ctrl-C meanwhile (a signal while Ray was still starting could crash the exit)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def sweep(args: argparse.Namespace) -> int:
    """``aryl sweep``: every combination of ``--grid`` on Ray; one table, one Parquet file."""
    from .. import sim
    from ..sim.metrics import METRICS
    from ..sim.sweep import grid_points

    base = {
        "training_servers": args.training_servers,
        "inference_servers": args.inference_servers,
        "any_type_share": args.any_type_share,
        "seed": args.seed,
        **_config(args),
    }
    if args.first_jobs is not None:
        base["first_jobs"] = args.first_jobs
    base.update({k: v[0] for k, v in _grid(args.set, "--set").items()})
    grid = _grid(args.grid, "--grid")
    given, where = _sweep_trace(args)
    if given:  # the trace the command line names
        base["trace"] = list(given)[-1]
    _size_auto(args, base, grid, given)
    runs = len(grid_points(base, grid))
    _say(
        args,
        f"Sweeping {runs} runs on {where} ({args.engine} engine"
        f"{', Ray at ' + args.address if args.address else ''}).",
    )
    start = time.perf_counter()
    cache = False if args.no_cache else (args.cache or Path(args.out) / "cache")
    try:
        table = sim.sweep(
            base,
            grid,
            traces=given,
            engine=args.engine,
            address=args.address,
            workers=args.workers,
            cache=cache,
            progress=False if args.quiet else None,
        )
    except KeyboardInterrupt:
        _stop_ray()
        where_cached = (
            f"; the finished runs are cached in {cache}: run it again to resume"
            if cache
            else ""
        )
        print(f"\naryl: sweep interrupted{where_cached}", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - start
    varied = list(grid) or ["label"]
    rows = [
        [row[k] for k in varied]
        + [row[k] for k in SWEEP_COLUMNS]
        + [bool(row["cached"])]
        for _, row in table.iterrows()
    ]
    shown = [
        [_cell(row[k]) for k in varied]
        + [_format(k, row[k]) for k in SWEEP_COLUMNS]
        + ["yes" if row["cached"] else "no"]
        for _, row in table.iterrows()
    ]
    _show(
        args,
        Table(
            varied + [METRICS[k].header for k in SWEEP_COLUMNS] + ["cached"],
            rows,
            shown,
        ),
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = _record(args, where)
    table.attrs["aryl"] = json.dumps(record, default=str)
    table.to_parquet(out / "sweep.parquet", index=False)
    cached = int(table["cached"].sum())
    _say(
        args,
        f"\n{len(table)} runs ({cached} from the cache) in {seconds:.1f} s. Wrote "
        f"{out / 'sweep.parquet'} (one row per run: parameters, summary, fingerprints, "
        "aryl version).",
    )
    return 0


def demo(args: argparse.Namespace) -> int:
    from .demo import loaned_cluster

    servers, jobs, workers = loaned_cluster(
        args.training_servers, args.loaned_servers, args.seed
    )
    on_loan = sum(s.on_loan for s in servers)
    elastic = sum(j.elastic for j in jobs)
    _say(
        args,
        f"Cluster: {len(servers) - on_loan} training + {on_loan} on-loan 8-GPU "
        "servers, "
        f"{len(jobs)} running jobs ({elastic} elastic), {len(workers)} workers.",
    )
    _say(
        args,
        "The inference cluster asks for servers back; each policy picks which to "
        "return.\n",
    )
    reclaiming.reclaim(
        servers, jobs, workers, 0
    )  # warm-up, so the timings below are steady
    rows: List[Tuple[Any, ...]] = []
    for n in args.reclaim:
        for policy in RECLAIM_POLICIES:
            start = time.perf_counter()
            try:
                plan = reclaiming.reclaim(
                    servers, jobs, workers, n, policy, seed=args.seed
                )
            except ValueError:
                if policy != "exact":
                    raise
                rows.append((n, policy, "—", "—", "—", "too large for exact search"))
                continue
            ms = (time.perf_counter() - start) * 1e3
            rows.append(
                (
                    n,
                    policy,
                    len(plan.preempted),
                    sum(plan.scaled_in.values()),
                    f"{plan.collateral_gpus} ({plan.collateral_damage:.0%})",
                    f"{ms:.2f}",
                )
            )
    _show(
        args,
        Table(
            [
                "reclaim",
                "policy",
                "jobs preempted",
                "workers scaled in",
                "collateral GPUs",
                "time (ms)",
            ],
            rows,
        ),
    )
    _say(
        args,
        "\nFewer preempted jobs is better; collateral GPUs are freed on servers that "
        "are kept.",
    )
    return 0
