"""``aryl sweep``: every combination of a parameter grid, its tables (a row per run;
with a seed axis, each point's mean and interval) and files."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any, List

from .._display import Table
from .arguments import parse_grid
from .files import output_directory, write_atomically
from .inputs import size_auto, sweep_trace
from .options import config_of, console_of, sweep_cluster, trace_files
from .output import cell, run_record, summary_cell

#: ``aryl.sim.PARAMETERS``' names, for the help text without importing the simulator.
SWEEP_PARAMETERS = (
    "trace, first_jobs, training_servers, inference_servers, servers, scenario, "
    "elastic_gpu_share, "
    "elastic_selection, elastic_job_share, elastic_range, hetero_share, policy, reclaim, "
    "seed, any_type_share, goodput_jobs"
)


#: Summary keys of the table ``aryl sweep`` prints after the varied parameters: the
#: jobs left unfinished beside the means (which count finished jobs only) and the
#: loaning ledger's headline (GPU-hours lent, and used by training).
SWEEP_COLUMNS = [
    "queuing_mean",
    "queuing_p95",
    "jct_mean",
    "jobs_unfinished",
    "gpu_usage_overall",
    "preemption_ratio",
    "collateral_damage",
    "lent_gpu_hours",
    "lent_used_gpu_hours",
]

#: Summary keys of the table of each point's mean and interval over a seed axis.
SWEEP_POINT_COLUMNS = [
    "jct_mean",
    "queuing_mean",
    "jobs_unfinished",
    "lent_gpu_hours",
    "lent_used_gpu_hours",
]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C in a command that has more to say than "interrupted" (the sweep: where
    its finished runs are); ``main`` prints the message as the one line."""


def sweep(args: argparse.Namespace) -> int:
    """``aryl sweep``: every combination of ``--grid`` on Ray; one table per run (and,
    with a seed axis, one per point over the seeds); sweep.parquet, sweep.csv and
    sweep_points.csv."""
    from .. import sim
    from ..engine.metrics import METRICS
    from ..studies.confidence import LEVEL
    from ..studies.sweep import csv_frame, grid_points, resolve

    base = {
        **sweep_cluster(args),  # --servers: read here, so a grid is checked on it
        "any_type_share": args.any_type_share,
        "seed": args.seed,
        **config_of(args),
    }
    if args.first_jobs is not None:
        base["first_jobs"] = args.first_jobs
    base.update({k: v[0] for k, v in parse_grid(args.set, "--set").items()})
    grid = parse_grid(args.grid, "--grid")
    for point in grid_points(base, grid):  # a bad value stops here, before sizing
        resolve({k: 1 if v == "auto" else v for k, v in point.items()})
    console = console_of(args)
    out = output_directory(args.out)
    given, where = sweep_trace(trace_files(args), console)
    if given:  # the trace the command line names
        base["trace"] = list(given)[-1]
    size_auto(
        base,
        grid,
        given,
        any_type_share=args.any_type_share,
        seed=args.seed,
        utilisation=args.utilisation,
        config=config_of(args),
        console=console,
    )
    runs = len(grid_points(base, grid))
    start = time.perf_counter()
    cache = False if args.no_cache else (args.cache or Path(args.out) / "cache")
    try:  # from the line that says the sweep starts: Ctrl-C then says where it stopped
        console.say(
            f"Sweeping {runs} runs on {where} ({args.engine} engine"
            f"{', Ray at ' + args.address if args.address else ''}).",
        )
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
        where_cached = (
            f"; the finished runs are cached in {cache}: run it again to resume"
            if cache
            else ""
        )
        raise Interrupted(f"sweep interrupted{where_cached}") from None
    seconds = time.perf_counter() - start
    varied = list(grid) or ["label"]
    rows = [
        [row[k] for k in varied]
        + [row[k] for k in SWEEP_COLUMNS]
        + [bool(row["cached"])]
        for _, row in table.iterrows()
    ]
    shown = [
        [_parameter_cell(row[k]) for k in varied]
        + [summary_cell(k, row) for k in SWEEP_COLUMNS]
        + ["yes" if row["cached"] else "no"]
        for _, row in table.iterrows()
    ]
    console.show(
        Table(
            varied + [METRICS[k].header for k in SWEEP_COLUMNS] + ["cached"],
            rows,
            shown,
        ),
    )
    unfinished = int((table["jobs_unfinished"] > 0).sum())
    if unfinished:
        console.say(
            f"\n{unfinished} of {len(table)} runs left jobs unfinished (column "
            "'unfinished'): their JCT and queuing means count finished jobs only, "
            "so they do not compare with those of runs that finished every job."
        )
    points = None
    if "seed" in grid:  # each point's mean and interval over the seeds
        points = sim.sweep_summary(table, over="seed")
        if console.format in ("table", "markdown"):  # csv, json: the run table alone
            console.say(
                f"\nEach point's mean over its seeds, with a {LEVEL:.0%} Student-t "
                "interval over the seeds (it does not cover which stretch of the "
                "trace was replayed: docs/confidence.md):"
            )
            console.show(_points_table(points, [k for k in grid if k != "seed"]))
    record = run_record(vars(args), where)
    table.attrs["aryl"] = json.dumps(record, default=str)

    def write(folder: Path) -> List[str]:
        table.to_parquet(folder / "sweep.parquet", index=False)
        csv_frame(table).to_csv(folder / "sweep.csv", index=False)
        if points is None:
            return ["sweep.parquet", "sweep.csv"]
        csv_frame(points).to_csv(folder / "sweep_points.csv", index=False)
        return ["sweep.parquet", "sweep.csv", "sweep_points.csv"]

    written = write_atomically(out, write)
    cached = int(table["cached"].sum())
    console.say(
        f"\n{len(table)} runs ({cached} from the cache) in {seconds:.1f} s. Wrote "
        f"{', '.join(written[:-1])} and {written[-1]} to {out}/ (sweep.parquet and "
        "sweep.csv: one row per run, with its parameters, summary, fingerprints and "
        "aryl version"
        + (
            "; sweep_points.csv: each point's mean, interval and note over the seeds)."
            if points is not None
            else ")."
        ),
    )
    return 0


def _points_table(points: Any, varied: List[str]) -> Table:
    """``aryl sweep``'s table of each point's mean over its seeds: the mean and its
    interval in a cell, or, where there is none to read, the reason in words."""
    from ..engine.metrics import METRICS

    first = varied or ["seeds"]
    keys = SWEEP_POINT_COLUMNS
    header = first + (["seeds"] if varied else []) + [METRICS[k].header for k in keys]
    rows, shown = [], []
    for _, row in points.iterrows():
        lead = [row[k] for k in varied] + [row["seeds"]]
        rows.append(lead + [row[k] for k in keys])
        shown.append(
            [_parameter_cell(row[k]) for k in varied]
            + [str(row["seeds"])]
            + [_estimate_cell(k, row) for k in keys]
        )
    return Table(header, rows, shown)


def _parameter_cell(value: Any) -> str:
    """A parameter's value as ``--grid`` takes it: a ``gpu_speed`` dict as
    ``T4=0.25;P100=0.5`` (``{}``: none given), else as ``cell`` shows it."""
    if isinstance(value, dict):
        return ";".join(f"{k}={cell(v)}" for k, v in value.items()) or "{}"
    return cell(value)


def _estimate_cell(key: str, row: Any) -> str:
    """``6,047 s [5,990, 6,104]``; ``0 (no spread: the same in all 3 seeds)`` or
    ``6,047 s (1 seed: no interval)`` where the interval is none to read."""

    from .output import format_value

    value, low, high = row[key], row[f"{key}_low"], row[f"{key}_high"]
    note = row[f"{key}_note"]
    if math.isnan(value):
        return f"— ({note})" if note else "—"
    text = format_value(key, value)
    if note or math.isnan(low):
        return f"{text} ({note})" if note else text
    bounds = [
        format_value(key, b).removesuffix(" s").removesuffix(" h") for b in (low, high)
    ]
    return f"{text} [{bounds[0]}, {bounds[1]}]"
