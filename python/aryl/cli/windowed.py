"""``aryl simulate --windows K``: one configuration on K time windows of the trace.

Each window is its own run (``aryl.studies.windowed.simulate_windows``: sent only its
slice of the trace, on the engine given, cached per window), so a trace too long for
one process runs as windows on a Ray cluster. Prints one row per window and the
measured jobs pooled with their intervals, the unfinished ones said first; writes
``windows/window-<k>/`` (the window's jobs as Parquet, with a ``measured`` column,
and its ``summary.json``), ``windows.csv`` and ``summary.json``, each whole or not at
all.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from .._display import Table
from .console import Console, Progress
from .files import output_directory, write_atomically
from .inputs import trace_frames
from .options import cluster, config_of, console_of, elastic_options, trace_files
from .output import run_record


def simulate_windowed(args: argparse.Namespace) -> int:
    """``aryl simulate`` with ``--windows``."""
    from ..studies.windowed import simulate_windows
    from ..studies.windows import DEFAULT_WARMUP

    if args.pollux_workload is not None or args.by:
        given = "--pollux-workload" if args.pollux_workload is not None else "--by"
        raise ValueError(f"--windows and {given}: give one of them")
    console = console_of(args)
    out = output_directory(args.out)
    frame, load, where = trace_frames(trace_files(args), console)
    run = _run_point(args, frame)
    warmup = DEFAULT_WARMUP if args.warmup is None else args.warmup
    console.say(
        f"Simulating {len(frame):,} jobs from {where} in {args.windows} windows "
        f"(each after {warmup:,.0f} s of warm-up): scenario {args.scenario}, policy "
        f"{args.policy or 'of the scenario'}, reclaim {args.reclaim}; engine "
        f"{args.engine}{' at ' + args.address if args.address else ''}.",
    )
    cache = False if args.no_cache else (args.cache or Path(args.out) / "cache")
    staging = Path(tempfile.mkdtemp(prefix=".aryl-windows-", dir=out))
    try:
        with Progress(1, console.progress_wanted(), unit="trace") as bar:
            windowed = simulate_windows(
                frame,
                load,
                run,
                args.windows,
                warmup=warmup,
                engine=args.engine,
                workers=args.workers,
                address=args.address,
                cache=cache,
                progress=_progress(console, bar, cache),
                each=lambda done: _write_window(staging, done),
            )
        del frame  # the trace: the windows are done with it
        from ..engine.storage import write_folder

        write_folder(out / "windows", lambda tmp: _move_all(staging, tmp), True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _show(console, windowed)
    record = {**run_record(vars(args), where), "windows": args.windows}
    write_atomically(out, lambda folder: _write_files(folder, windowed, record))
    console.say(
        f"\nWrote windows/window-<k>/ (each window's jobs.parquet and summary.json), "
        f"windows.csv (one row per window) and summary.json (pooled) to {out}/"
        + ("" if cache is False else f"; each window's run is cached in {cache}/"),
    )
    return 0


def _run_point(args: argparse.Namespace, frame: Any) -> Dict[str, Any]:
    """The configuration of ``aryl simulate``'s options as one sweep point (the
    recipe ``aryl simulate`` runs), on the cluster of the options (sized ``auto``
    on the whole trace once)."""
    from ..engine.runs import trace_jobs

    sizing = args.servers is None and args.training_servers == "auto"
    # only sizing reads the jobs: a fleet's trace is not converted whole for nothing
    part = frame if sizing else frame.iloc[:1]
    on = cluster(
        args, trace_jobs(part, any_type_share=args.any_type_share, seed=args.seed)
    )
    config = config_of(args)
    if args.policy == "tiresias":  # least attained service on the training servers
        config["loaning"] = False
    where = (
        {"servers": on}
        if isinstance(on, list)
        else {
            "training_servers": on.training_servers,
            "inference_servers": on.inference_servers,
        }
    )
    return {
        **config,
        **elastic_options(args),
        **where,
        "scenario": args.scenario,
        "policy": args.policy,
        "reclaim": args.reclaim,
        "seed": args.seed,
        "any_type_share": args.any_type_share,
    }


def _progress(console: Console, bar: Any, cache: Any) -> Any:
    """The windows' progress: what the cache holds, said once, then the bar."""
    said: List[int] = []

    def progress(done: int, cached: int, total: int) -> None:
        if not said:
            said.append(cached)
            where = f" in {cache}" if cache is not False else ""
            console.say(
                f"Found {cached} of {total} windows in the cache{where}; "
                f"running {total - cached}.\n"
            )
        bar.set(done / total)

    return progress


def _write_window(staging: Path, done: Any) -> None:
    """``window-<k>/``: the run's jobs (warm-up's too, ``measured`` saying which
    are not) as Parquet, and ``summary.json`` (the measured jobs' summary, the
    window's span and the run's cost)."""
    folder = staging / f"window-{done.row['window']}"
    folder.mkdir()
    jobs = done.result.jobs.assign(measured=done.measured)
    jobs.to_parquet(folder / "jobs.parquet", index=False)
    summary = {
        **{k: v for k, v in done.row.items()},
        "measured": done.measured_result().summary(),
    }
    text = json.dumps(summary, indent=2, default=_jsonable) + "\n"
    (folder / "summary.json").write_text(text)


def _jsonable(value: Any) -> Any:
    """numpy scalars as Python's, anything else by its text."""
    return value.item() if hasattr(value, "item") else str(value)


def _move_all(source: Path, target: Path) -> None:
    for name in sorted(os.listdir(source)):
        os.rename(source / name, target / name)


def _show(console: Console, windowed: Any) -> None:
    """The windows' rows, then the pooled answer with its intervals, the
    unfinished jobs said before the times they are left out of."""
    console.say()
    console.show(_windows_table(windowed.table))
    console.say(f"\n{_finished_line(windowed)}")
    console.show(_pooled_table(windowed.pooled))
    console.say(
        "(pooled: over every measured job as one run counts them; low, high: the 95% "
        "interval of a bootstrap over the windows, docs/confidence.md)"
    )


def _windows_table(t: Any) -> Table:
    """One row per window: its span, jobs, mean JCT and what its run cost."""
    header = ["window", "from (h)", "to (h)", "jobs run", "measured", "finished"]
    header += ["unfinished", "JCT mean (s)", "CPU (s)", "wall (s)", "peak (MB)"]
    shown = [
        [
            str(r["window"]),
            f"{r['start_s'] / 3600:,.1f}",
            f"{r['end_s'] / 3600:,.1f}",
            f"{r['jobs_run']:,}",
            f"{r['jobs_measured']:,}",
            f"{r['jobs_finished']:,}",
            f"{r['jobs_unfinished']:,}",
            _number(r["jct_mean"], "{:,.0f}"),
            _number(r["cpu_seconds"], "{:,.1f}"),
            _number(r["wall_seconds"], "{:,.1f}"),
            _number(r["peak_memory_bytes"] / 1e6, "{:,.0f}"),
        ]
        for r in t.to_dict("records")
    ]
    units = t[_SHOWN].assign(  # the raw values (csv, json) in the header's units
        start_s=t["start_s"] / 3600,
        end_s=t["end_s"] / 3600,
        peak_memory_bytes=t["peak_memory_bytes"] / 1e6,
    )
    raw = [list(r) for r in units.itertuples(index=False)]  # ints stay ints
    return Table(header, raw, shown)


def _pooled_table(pooled: Any) -> Table:
    """Each pooled statistic with its window-bootstrap interval (none for a total)."""
    rows = [(k, e) for k, e in pooled.items() if k != "jobs"]
    return Table(
        ["metric", "pooled", "low", "high"],
        [(k, e.value, e.low, e.high) for k, e in rows],
        [
            (
                k,
                f"{e.value:,.0f}",
                _number(e.low, "{:,.0f}"),
                _number(e.high, "{:,.0f}"),
            )
            for k, e in rows
        ],
    )


_SHOWN = [
    "window",
    "start_s",
    "end_s",
    "jobs_run",
    "jobs_measured",
    "jobs_finished",
    "jobs_unfinished",
    "jct_mean",
    "cpu_seconds",
    "wall_seconds",
    "peak_memory_bytes",
]


def _number(value: float, form: str) -> str:
    return "—" if value != value else form.format(value)


def _finished_line(windowed: Any) -> str:
    """How many measured jobs finished: the pooled times are theirs alone."""
    measured, finished = windowed.jobs_measured, windowed.jobs_finished
    line = (
        f"{measured:,} jobs measured over {len(windowed.table)} windows (the "
        f"warm-ups' {int(windowed.table['jobs_run'].sum()) - measured:,} jobs ran, "
        "not counted): "
        f"{finished:,} finished, {windowed.jobs_unfinished:,} unfinished"
    )
    if windowed.jobs_unfinished:
        line += (
            " (still queued or running when their window's run ended; an unfinished "
            "job has no JCT, so the times below are over the finished jobs only)"
        )
    return line + "."


def _write_files(folder: Path, windowed: Any, record: Dict[str, Any]) -> None:
    windowed.table.to_csv(folder / "windows.csv", index=False)
    pooled = {
        k: {"value": e.value, "low": e.low, "high": e.high, "windows": e.n}
        for k, e in windowed.pooled.items()
    }
    summary = {
        "jobs_measured": windowed.jobs_measured,
        "jobs_finished": windowed.jobs_finished,
        "jobs_unfinished": windowed.jobs_unfinished,
        "pooled": pooled,
        "provenance": record,
    }
    text = json.dumps(summary, indent=2, default=_jsonable) + "\n"
    (folder / "summary.json").write_text(text)
