"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare``, ``aryl sweep`` and ``aryl demo``."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
)

from . import reclaiming

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from .jobtable import JobTable
    from .typing import SimulationPolicy
from ._display import FORMATS, Table, render
from .outputs import output_directory, write_atomically
from .validation import MAX_INT, MAX_SEED

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every error is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        # "aryl: error: ..." like every other error; a subcommand's name leads the message
        command = self.prog.split(maxsplit=1)[1:]
        self.exit(EXIT_USAGE, f"aryl: error: {' '.join(command + [message])}\n")


def _number(
    kind: Callable[[str], float],
    what: str,
    low: Optional[float] = None,
    high: Optional[float] = None,
    low_open: bool = False,
) -> Callable[[str], float]:
    """An argparse type: a finite ``kind(text)`` in [low, high] (``(low, high]`` if ``low_open``)."""
    noun = "an integer" if kind is int else "a number"
    bounds = f"{'(' if low_open else '['}{'-inf' if low is None else low}, {'inf' if high is None else high}]"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        outside = (
            low is not None and (value < low or (low_open and value == low))
        ) or (high is not None and value > high)
        if (kind is not int and not math.isfinite(value)) or outside:
            message = f"{what} must be in {bounds}, got {text!r}"
            raise argparse.ArgumentTypeError(message)
        return value

    parse.__name__ = what
    return parse


def _servers_or_auto(what: str, low: int) -> Callable[[str], object]:
    """An argparse type: ``auto`` or an integer server count >= ``low``."""
    count = _number(int, what, low, MAX_INT)

    def parse(text: str) -> object:
        return "auto" if text.strip().lower() == "auto" else count(text)

    parse.__name__ = what
    return parse


# The paper's Table 3 columns, as (summary key, header, format).
TABLE_COLUMNS = [
    ("queuing_mean", "queue mean", "{:.0f}"),
    ("queuing_median", "queue median", "{:.0f}"),
    ("queuing_p95", "queue p95", "{:.0f}"),
    ("jct_mean", "JCT mean", "{:.0f}"),
    ("jct_median", "JCT median", "{:.0f}"),
    ("jct_p95", "JCT p95", "{:.0f}"),
    ("gpu_usage_training", "GPU use train", "{:.2f}"),
    ("gpu_usage_overall", "GPU use all", "{:.2f}"),
    ("preemption_ratio", "preempt ratio", "{:.2%}"),
]


def _say(args: argparse.Namespace, text: str = "") -> None:
    """An informational line: beside a text table on stdout, beside csv/markdown/json on
    stderr (so stdout stays machine-readable); nothing with ``--quiet``."""
    if getattr(args, "quiet", False):
        return
    table = getattr(args, "format", "table") == "table"
    print(text, file=sys.stdout if table else sys.stderr)


def _show(args: argparse.Namespace, table: Table) -> None:
    """The command's result table, in ``--format`` (printed even with ``--quiet``)."""
    print(render(table, getattr(args, "format", "table")))


def _progress_wanted(args: argparse.Namespace) -> bool:
    """Progress bars only for a person watching: both streams terminals, no --quiet."""
    return not args.quiet and sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """One progress bar (rich) on stderr across a command's runs: ``run 3/8: name``,
    the share done, elapsed time and ETA. Disabled, it does nothing.

    Use as a context manager; ``run(name)`` gives the ``progress`` callback of the next
    run (``aryl.sim.simulate``'s: a fraction in [0, 1] of that run).
    """

    def __init__(self, runs: int, enabled: bool, stream: Any = None) -> None:
        self.runs, self.started = runs, 0
        self._bar: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            console = Console(
                file=stream or sys.stderr, force_terminal=stream is not None
            )
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
            )
            self._task = self._bar.add_task("", total=runs)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            if exc[0] is None:
                self._bar.update(
                    self._task,
                    completed=self.runs,
                    description=f"{self.runs} run{'s' * (self.runs != 1)} done",
                )
            self._bar.stop()

    def run(self, name: str) -> Callable[[float], bool]:
        """The ``progress`` callback of the next run, named ``name``."""
        index = self.started
        self.started += 1
        description = f"run {index + 1}/{self.runs}: {name}"

        def report(fraction: float) -> bool:
            if self._bar is not None:
                done = index + min(max(float(fraction), 0.0), 1.0)
                self._bar.update(self._task, completed=done, description=description)
            return True

        if (
            self._bar is not None
        ):  # drawn now: a fast run may end before the next refresh
            self._bar.update(
                self._task, completed=index, description=description, refresh=True
            )
        return report


# ---- argument types (each rejects a bad value at parse time) -----------------------


def _readable_file(what: str) -> Callable[[str], str]:
    """An argparse type: a path to an existing, readable file."""

    def parse(text: str) -> str:
        path = Path(text)
        if not path.exists():
            raise argparse.ArgumentTypeError(f"{text}: no such file")
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: is a directory, expected a file")
        if not os.access(path, os.R_OK):
            raise argparse.ArgumentTypeError(
                f"{text}: not readable (permission denied)"
            )
        return text

    parse.__name__ = what
    return parse


def _writable_folder(what: str) -> Callable[[str], str]:
    """An argparse type: a directory that exists or can be created, and is writable."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError("expected a directory, got ''")
        path = Path(text)
        if path.exists() and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
        existing = path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise argparse.ArgumentTypeError(
                f"{text}: cannot be created ({existing} is a file)"
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text}: not writable ({existing})")
        return text

    parse.__name__ = what
    return parse


_PAIR = re.compile(r"^\s*([A-Za-z0-9_.+-]+)\s*=\s*(\S+?)\s*$")


def _gpu_speeds(text: str) -> Dict[str, float]:
    """An argparse type: ``TYPE=SPEED[,TYPE=SPEED...]``, speeds relative to a V100."""
    from .validation import MAX_GPU_SPEED, MIN_GPU_SPEED

    speed = _number(float, "--gpu-speed", MIN_GPU_SPEED, MAX_GPU_SPEED)
    speeds: Dict[str, float] = {}
    for part in text.split(","):
        match = _PAIR.match(part)
        if match is None:
            raise argparse.ArgumentTypeError(
                "expected TYPE=SPEED[,TYPE=SPEED...] (e.g. T4=0.25,V100=1), "
                f"got {text!r}"
            )
        name, value = match.groups()
        try:
            speeds[name] = speed(value)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{name}: {exc}") from None
    return speeds


_UNITS = {"": 1.0, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _window(text: str) -> float:
    """An argparse type: a plot window such as ``1h``, ``30min``, ``600`` (seconds), or
    ``raw`` (0: no resampling)."""
    if text.strip().lower() in ("raw", "0"):
        return 0.0
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*(s|min|h|d)?\s*", text)
    value = None
    if match is not None:
        try:
            value = float(match.group(1)) * _UNITS[match.group(2) or ""]
        except ValueError:
            value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive duration (e.g. 1h, 30min, 600, or raw), got {text!r}"
        )
    return value


_PLOT_FORMATS = ("png", "svg", "pdf")


def _plot_formats(text: str) -> Tuple[str, ...]:
    """An argparse type: comma-separated figure formats among png, svg and pdf."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",")))
    unknown = [n for n in names if n not in _PLOT_FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected some of {', '.join(_PLOT_FORMATS)} (comma-separated), "
            f"got {text!r}"
        )
    return names


def _pollux_workload(text: str) -> str:
    """An argparse type: an embedded Pollux workload 1..8, or a readable CSV file."""
    if text.strip().isdigit():
        if not 1 <= int(text) <= 8:
            raise argparse.ArgumentTypeError(
                f"expected an embedded workload 1..8 or a file, got {text!r}"
            )
        return text.strip()
    return _readable_file("--pollux-workload")(text)


def _pollux_cluster(text: str) -> Tuple[int, int]:
    """An argparse type: ``NODESxGPUS``, both positive integers (e.g. 16x4)."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if match is None or 0 in (int(match.group(1)), int(match.group(2))):
        raise argparse.ArgumentTypeError(
            f"expected NODESxGPUS with positive counts (e.g. 16x4), got {text!r}"
        )
    return int(match.group(1)), int(match.group(2))


def _name_values(text: str, what: str) -> Tuple[str, List[Any]]:
    """``NAME=V1,V2,...`` (or ``NAME=[JSON list]``) as (name, values)."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values:
        raise ValueError(f"{what} {text!r}: expected NAME=VALUE[,VALUE...]")
    parsed = (
        _value(values)
        if values.startswith("[")
        else [_value(v) for v in values.split(",")]
    )
    return name.strip().replace("-", "_"), (
        parsed if isinstance(parsed, list) else [parsed]
    )


# ---- inputs ------------------------------------------------------------------


def _inputs(args: argparse.Namespace) -> Tuple[JobTable, Any, str]:
    """(jobs, load frame or None, description) from the arguments or the embedded trace."""
    from . import traces

    load: Any
    if args.jobs is None:
        job_frame, load = traces.load_default()
        where = (
            "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)"
        )
        if args.load is not None:
            load = traces.read_load(args.load)
    else:
        job_frame = _read_jobs(args)
        load = traces.read_load(args.load) if args.load is not None else None
        where = str(args.jobs) + (
            f" with load {args.load}" if args.load else " (no --load: no loaning)"
        )
    jobs = traces.to_jobs(job_frame, any_type_share=args.any_type_share, seed=args.seed)
    # A load shorter than the trace is extended inside sim.simulate, as through the API.
    return jobs, load, where


def _read_jobs(args: argparse.Namespace) -> Any:
    """``traces.read_jobs`` of JOBS.csv; rows skipped by ``--drop-invalid`` are reported
    in one line on stderr (not as a Python warning), unless ``--quiet``."""
    from . import traces

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the count is in the frame's attrs, said below
        frame = traces.read_jobs(args.jobs, drop_invalid=args.drop_invalid)
    dropped = int(frame.attrs.get("dropped", 0) or 0)
    if dropped and not args.quiet:
        reasons = ", ".join(
            f"{k}: {v}" for k, v in frame.attrs.get("drop_reasons", {}).items()
        )
        total = len(frame) + dropped
        print(
            f"aryl: skipped {dropped:,} invalid row{'s' * (dropped != 1)} "
            f"of {total:,} in "
            f"{args.jobs} ({reasons})",
            file=sys.stderr,
        )
    return frame


def _cluster(args: argparse.Namespace, jobs: Any) -> Any:
    """The cluster of the arguments, sizing ``auto`` counts with ``aryl.sim.size_cluster``."""
    from . import sim

    training, inference = args.training_servers, args.inference_servers
    if training != "auto":
        if inference == "auto":
            inference = sim.sizing.inference_count(training)
        _say(
            args, f"Cluster: {training} training + {inference} inference 8-GPU servers."
        )
        return sim.Cluster(training, inference)
    sizing = sim.size_cluster(
        jobs,
        utilisation=args.utilisation,
        inference_servers=None if inference == "auto" else inference,
        config=_config(args),
    )
    ratio = "at the paper's 520:443 ratio" if inference == "auto" else "as given"
    _say(
        args,
        f"Cluster: {sizing.training_servers} training + "
        f"{sizing.inference_servers} inference 8-GPU "
        f"servers (inference {ratio}): sized so that the FIFO Baseline keeps "
        f"{sizing.gpu_usage_training:.1%} of the training GPUs busy "
        f"(target {sizing.target:.0%}, "
        f"the paper's Baseline; {len(sizing.evaluated)} Baseline runs).",
    )
    return sizing.cluster


def _config(args: argparse.Namespace) -> Dict[str, Any]:
    """The ``Config`` fields the options set."""
    config: Dict[str, Any] = {"lend_hold": args.lend_hold, "headroom": args.headroom}
    if args.gpu_speed:
        config["gpu_speed"] = _gpu_speed(args)
    return config


def _gpu_speed(args: argparse.Namespace) -> Dict[str, float]:
    """The paper's GPU speeds, overridden by each ``--gpu-speed`` (the last wins)."""
    from .scheduling import DEFAULT_GPU_SPEED

    speeds = dict(DEFAULT_GPU_SPEED)
    for given in args.gpu_speed or []:
        speeds.update(given)
    return speeds


# ---- aryl simulate -------------------------------------------------------------


def simulate(args: argparse.Namespace) -> int:
    from . import sim

    out = output_directory(args.out)
    if args.pollux_workload is not None:
        return _simulate_pollux(args, out)
    if args.policy in ("tiresias", "pollux"):
        raise ValueError(
            f"--policy {args.policy} runs a Pollux workload: add --pollux-workload FILE|N"
        )
    jobs, load, where = _inputs(args)
    preset = sim.scenario_config(args.scenario)
    policy = args.policy or preset.get("policy", "aryl")
    config = {**_config(args), **{k: v for k, v in preset.items() if k != "policy"}}
    _say(
        args,
        f"Simulating {len(jobs):,} jobs from {where}: scenario {args.scenario}, "
        f"policy {policy}, reclaim {args.reclaim}.",
    )
    cluster = _cluster(args, jobs)
    jobs = sim.scenario(jobs, args.scenario, seed=args.seed)
    with Progress(1, _progress_wanted(args)) as progress:
        result = sim.simulate(
            jobs,
            cluster,
            policy=policy,
            reclaim=args.reclaim,
            inference_load=load,
            config=config,
            seed=args.seed,
            progress=progress.run(f"{args.scenario}/{policy}"),
            label=f"{args.scenario}-{policy}",
        )
    _report(result, args, where, out, plots=True)
    return 0


def _simulate_pollux(args: argparse.Namespace, out: Path) -> int:
    """A Pollux artifact workload (goodput-driven jobs) on a node cluster."""
    from . import sim, traces

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


def _report(
    result: Any, args: argparse.Namespace, where: str, out: Path, plots: bool
) -> None:
    """Checks the run, prints its summary and writes jobs.csv, timeline.csv, summary.json and
    provenance.json (and the plots), all at once or not at all."""
    from . import plot

    result.check()
    summary = result.summary()
    _say(args)
    _show(
        args,
        Table(
            ["metric", "value"],
            [(k, v) for k, v in summary.items()],
            [(k, _format(k, v)) for k, v in summary.items()],
        ),
    )
    record = _record(args, where)
    run = result.provenance.to_dict() if result.provenance is not None else None
    provenance = {**record, "run": run}

    def write(folder: Path) -> List[Path]:
        result.jobs.to_csv(folder / "jobs.csv", index=False)
        result.timeline.to_csv(folder / "timeline.csv", index=False)
        (folder / "summary.json").write_text(
            json.dumps({**summary, "provenance": provenance}, indent=2, default=str)
            + "\n"
        )
        _write_provenance(folder, record, {result.label: result})
        if not plots:
            return []
        return plot.save_all(
            {result.label: result},
            folder,
            metadata=_png_metadata(record),
            formats=args.plot_format,
            window=args.plot_window,
        )

    written = write_atomically(out, write)
    _print_note(args, result)
    what = f" and {len(written)} figure files" if plots else ""
    _say(
        args,
        "\nWrote jobs.csv, timeline.csv, summary.json, provenance.json"
        f"{what} to {out}/",
    )


def _format(key: str, value: Any) -> str:
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


def _compare_table(table: Any) -> Table:
    """The comparison as printed: times in s, use and preemptions as %, speed-ups."""
    keys = [key for key, _, _ in TABLE_COLUMNS] + ["speed-up JCT", "speed-up queue"]
    formats = [fmt for _, _, fmt in TABLE_COLUMNS] + ["{:.2f}x", "{:.2f}x"]
    header = (
        ["run (times in s)"]
        + [h for _, h, _ in TABLE_COLUMNS]
        + ["JCT speed-up", "queue speed-up"]
    )
    rows = [[name] + [row[k] for k in keys] for name, row in table.iterrows()]
    shown = [[row[0]] + [f.format(v) for f, v in zip(formats, row[1:])] for row in rows]
    return Table(header, rows, shown)


def _integer_columns(table: Any, summaries: Dict[str, Dict[str, Any]]) -> Any:
    """``table`` with each summary count (an int in every run) as an integer column and
    the other summary columns as floats (``speedups`` builds an object-typed frame)."""
    for key in next(iter(summaries.values()), {}):
        values = [s[key] for s in summaries.values()]
        counts = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        table[key] = table[key].astype("int64" if counts else "float64")
    return table


# ---- what produced an output ---------------------------------------------------------


def _record(args: argparse.Namespace, where: str) -> Dict[str, Any]:
    """The command, its inputs, every parameter, the seed and aryl's version."""
    from .sim.provenance import aryl_version

    parameters = {k: v for k, v in vars(args).items() if k not in ("run", "command")}
    return {
        "command": f"aryl {args.command}",
        "aryl_version": aryl_version(),
        "inputs": where,
        "parameters": parameters,
        "seed": args.seed,
    }


def _write_provenance(
    out: Path, record: Dict[str, Any], results: Dict[str, Any]
) -> Path:
    """``provenance.json``: the command's record and each run's ``Result.provenance``."""
    runs = {
        name: r.provenance.to_dict()
        for name, r in results.items()
        if r.provenance is not None
    }
    path = out / "provenance.json"
    path.write_text(json.dumps({**record, "runs": runs}, indent=2, default=str) + "\n")
    return path


def _png_metadata(record: Dict[str, Any]) -> Dict[str, str]:
    """PNG text chunks naming the command, inputs, parameters and version."""
    return {
        "Software": f"aryl {record['aryl_version']}",
        "Description": json.dumps(record, default=str, sort_keys=True),
    }


def _provenance_columns(
    table: Any, results: Dict[str, Any], record: Dict[str, Any]
) -> Any:
    """``table`` with, per run, what produced it (policy, config, seed, inputs, version)."""
    import pandas as pd

    from ._display import describe_config

    rows: Dict[str, Dict[str, Any]] = {}
    for name, result in results.items():
        p = result.provenance
        rows[name] = {
            "policy": p.policy,
            "reclaim": p.reclaim,
            "config": describe_config(p.config),
            "seed": p.seed,
            "training_servers": p.cluster["training_servers"],
            "inference_servers": p.cluster["inference_servers"],
            "jobs": p.jobs,
            "jobs_fingerprint": p.jobs_fingerprint,
            "load_fingerprint": p.load_fingerprint,
            "load_extended": p.load_extended or "",
            "inputs": record["inputs"],
            "aryl_version": p.aryl_version,
        }
    return table.join(pd.DataFrame.from_dict(rows, orient="index"))


def _print_note(args: argparse.Namespace, result: Any) -> None:
    """Say so when the load series was repeated to cover the trace."""
    if result.provenance is not None and result.provenance.load_extended:
        _say(args, f"\nNote: {result.provenance.load_extended}.")


# ---- aryl sweep -----------------------------------------------------------------

#: ``aryl.sim.PARAMETERS``' names, for the help text without importing the simulator.
SWEEP_PARAMETERS = (
    "trace, first_jobs, training_servers, inference_servers, scenario, elastic_gpu_share, "
    "hetero_share, policy, reclaim, seed, any_type_share"
)

#: Columns of the table ``aryl sweep`` prints after the varied parameters.
SWEEP_COLUMNS = [
    ("queuing_mean", "queue mean"),
    ("queuing_p95", "queue p95"),
    ("jct_mean", "JCT mean"),
    ("gpu_usage_overall", "GPU use all"),
    ("preemption_ratio", "preempt ratio"),
    ("collateral_damage", "collateral"),
]


def _value(text: str) -> Any:
    """A grid value from the command line: JSON (numbers, true/false, null, lists), else text."""
    if text.lower() == "none":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _grid(pairs: Sequence[str], what: str) -> Dict[str, List[Any]]:
    """``--grid`` / ``--set`` strings as name -> values."""
    return dict(_name_values(pair, what) for pair in pairs)


def sweep(args: argparse.Namespace) -> int:
    """``aryl sweep``: every combination of ``--grid`` on Ray; one table, one Parquet file."""
    from . import sim
    from .sim.sweep import grid_points

    base = {
        "training_servers": args.training_servers,
        "inference_servers": args.inference_servers,
        "any_type_share": args.any_type_share,
        "seed": args.seed,
        "lend_hold": args.lend_hold,
        "headroom": args.headroom,
    }
    if args.gpu_speed:
        base["gpu_speed"] = _gpu_speed(args)
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
        + [row[k] for k, _ in SWEEP_COLUMNS]
        + [bool(row["cached"])]
        for _, row in table.iterrows()
    ]
    shown = [
        [_cell(row[k]) for k in varied]
        + [_format(k, row[k]) for k, _ in SWEEP_COLUMNS]
        + ["yes" if row["cached"] else "no"]
        for _, row in table.iterrows()
    ]
    _show(args, Table(varied + [h for _, h in SWEEP_COLUMNS] + ["cached"], rows, shown))
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


def _sweep_trace(args: argparse.Namespace) -> Tuple[Dict[str, Any], str]:
    """({name: (job frame, load frame or None)} or {} for the embedded trace, description).

    Frames, not jobs: each run converts them with its own ``any_type_share`` and ``seed``.
    """
    from . import traces

    if args.jobs is None and args.load is None:
        return (
            {},
            "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)",
        )
    if args.jobs is None:
        frame, name, where = (
            traces.load_default()[0],
            "embedded",
            "the embedded ITP cluster04 jobs",
        )
    else:
        frame = _read_jobs(args)
        name, where = Path(args.jobs).name, str(args.jobs)
    load = traces.read_load(args.load) if args.load is not None else None
    where += f" with load {args.load}" if args.load else " (no --load: no loaning)"
    return {
        name + (f"+{Path(args.load).name}" if args.load else ""): (frame, load)
    }, where


def _size_auto(
    args: argparse.Namespace,
    base: Dict[str, Any],
    grid: Dict[str, Any],
    given: Dict[str, Any],
) -> None:
    """Replace ``auto`` server counts in ``base`` (not varied by the grid) once, before the runs:
    training by ``aryl.sim.size_cluster``, inference at the paper's ratio to training."""
    from . import sim, traces

    training = base["training_servers"] == "auto" and "training_servers" not in grid
    inference = base["inference_servers"] == "auto" and "inference_servers" not in grid
    if inference and not training and "training_servers" in grid:
        raise ValueError(
            "--grid over training_servers needs --inference-servers (or a grid over it)"
        )
    if training:
        frame = next(iter(given.values()))[0] if given else traces.load_default()[0]
        if "first_jobs" in base:
            frame = frame.iloc[: int(base["first_jobs"])]
        jobs = traces.to_jobs(frame, any_type_share=args.any_type_share, seed=args.seed)
        fixed = (
            None if base["inference_servers"] == "auto" else base["inference_servers"]
        )
        sizing = sim.size_cluster(
            jobs,
            utilisation=args.utilisation,
            inference_servers=fixed,
            config=_config(args),
        )
        base["training_servers"] = sizing.cluster.training_servers
        if inference:
            base["inference_servers"] = sizing.cluster.inference_servers
        _say(
            args,
            f"Cluster: {base['training_servers']} training servers, sized so the FIFO "
            f"Baseline keeps {sizing.gpu_usage_training:.0%} of the training GPUs "
            "busy.",
        )
    elif inference:
        base["inference_servers"] = sim.sizing.inference_count(base["training_servers"])


def _cell(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# ---- aryl demo -----------------------------------------------------------------


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
        for policy in reclaiming.POLICIES:
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


# ---- the parser ------------------------------------------------------------------


def _trace_arguments(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument(
        "jobs",
        nargs="?",
        metavar="JOBS.csv",
        type=_readable_file("JOBS.csv"),
        help="job trace in the common CSV format (job_id, submit_time_s, num_gpus, "
        "duration_s, gpu_type; gzip allowed); default: the embedded ITP trace",
    )
    p.add_argument(
        "--load",
        metavar="LOAD.csv",
        type=_readable_file("--load"),
        help="inference load (time_s, load in [0, 1]); default with the embedded "
        "trace: "
        "the embedded Alibaba-2018 series; with your own trace: none (no loaning)",
    )
    p.add_argument(
        "--training-servers",
        type=_servers_or_auto("--training-servers", 1),
        default="auto",
        metavar="N|auto",
        help="8-GPU V100 training servers; auto (default) sizes the cluster so that the FIFO "
        "Baseline keeps --utilisation of them busy (aryl.sim.size_cluster)",
    )
    p.add_argument(
        "--inference-servers",
        type=_servers_or_auto("--inference-servers", 0),
        default="auto",
        metavar="N|auto",
        help="8-GPU T4 inference servers that can be lent; auto (default): the paper's 520 "
        "per 443 training servers",
    )
    p.add_argument(
        "--utilisation",
        type=_number(float, "--utilisation", 0.0, 1.0, low_open=True),
        default=0.72,
        metavar="F",
        help="Baseline training GPU use that --training-servers auto aims at (default 0.72, "
        "the paper's Table 3)",
    )
    p.add_argument(
        "--lend-hold",
        type=_number(float, "--lend-hold", 0.0),
        default=3600.0,
        metavar="SECONDS",
        help="lend an inference server only after the load has left it spare this long "
        "(default 3600; reclaiming is immediate)",
    )
    p.add_argument(
        "--headroom",
        type=_number(float, "--headroom", 0.0),
        default=0.0,
        metavar="F",
        help="the inference cluster keeps ceil(load x (1 + F) x N) servers (default 0)",
    )
    p.add_argument(
        "--any-type-share",
        type=_number(float, "--any-type-share", 0.0, 1.0),
        default=0.21,
        metavar="F",
        help="share of jobs without a GPU type that may run on any type, incl. loaned "
        "inference servers (default 0.21, the paper's Appendix E)",
    )
    p.add_argument(
        "--gpu-speed",
        type=_gpu_speeds,
        action="append",
        metavar="TYPE=SPEED,...",
        help="relative speed of a GPU type, the V100 being 1 (default V100=1,T4=0.25, "
        "the paper's Appendix A); e.g. --gpu-speed T4=1 for loaned GPUs as fast "
        "as training ones; repeat or separate with commas",
    )
    p.add_argument(
        "--drop-invalid",
        action="store_true",
        help="skip invalid trace rows (one line on stderr says how many) instead of "
        "stopping",
    )
    p.add_argument(
        "--seed",
        type=_number(int, "--seed", 0, MAX_SEED),
        default=0,
        help="seed of every random choice (default 0)",
    )
    p.add_argument(
        "--out",
        default=out,
        metavar="DIR",
        type=_writable_folder("--out"),
        help=f"where results go (default {out})",
    )
    _output_arguments(p)


def _output_arguments(p: argparse.ArgumentParser) -> None:
    """--format and --quiet, which every subcommand has."""
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="how the result table prints: table (default; fits the terminal), csv, "
        "markdown or json (then the other messages go to stderr)",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only the result table and errors: no progress bar, no messages",
    )


def _plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plot-window",
        type=_window,
        default=3600.0,
        metavar="DURATION",
        help="usage plots average over windows this long (default 1h; e.g. 30min, "
        "1d, 600 for seconds; raw: every scheduling step). Runs shorter than 12 "
        "windows are drawn raw",
    )
    p.add_argument(
        "--plot-format",
        type=_plot_formats,
        default=("png", "svg"),
        metavar="png,svg,pdf",
        help="figure file formats, comma-separated (default png,svg)",
    )


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

    p = sub.add_parser(
        "compare",
        help="the paper's comparison (Table 3) on one trace",
        description="Simulate the paper's Table 3 rows on one trace: Baseline (FIFO, no "
        "loaning, no elasticity); aryl with loaning and elasticity in the Basic, Advanced and "
        "Ideal scenarios; loaning alone with random, SCF and aryl reclaiming; elasticity alone "
        "(Basic) under Gandiva, AFS and aryl; two controls (SJF and FIFO with backfill, no "
        "loaning) and two ablations (imperfect scaling, plain best-fit placement). Prints one "
        "table with each row's speed-up over Baseline and writes compare.csv and plots. By "
        "default the cluster is sized to the paper's Baseline load (72% training GPU use).",
    )
    _trace_arguments(p, "aryl-results/compare")
    _plot_arguments(p)
    p.add_argument(
        "--pollux-rows",
        action="store_true",
        help="add the goodput-driven rows: Pollux (its genetic search) and "
        "Aryl+TunedJobs (aryl with each job's Pollux agent), on the Basic jobs mapped "
        "onto Pollux applications, no loaning, the training GPUs as 4-GPU nodes "
        "(much slower than the other rows)",
    )
    p.add_argument(
        "--pollux-generations",
        type=_number(int, "--pollux-generations", 0, 1_000_000),
        default=100,
        metavar="N",
        help="generations of the Pollux row's genetic search per 60-s round (default "
        "100, the Pollux artifact's; the paper says 250; fewer run faster)",
    )
    p.set_defaults(run=compare)

    p = sub.add_parser(
        "simulate",
        help="simulate one configuration on a trace",
        description="Simulate one scheduling policy, reclaim policy and scenario on a "
        "trace; print the summary; write jobs.csv, timeline.csv, summary.json and plots.",
    )
    _trace_arguments(p, "aryl-results/simulate")
    _plot_arguments(p)
    p.add_argument(
        "--policy",
        choices=["aryl", "fifo", "sjf", "gandiva", "afs", "tiresias", "pollux"],
        help="allocation policy (default: the scenario's, aryl; fifo for baseline; "
        "tiresias or pollux for --pollux-workload, default tiresias)",
    )
    p.add_argument(
        "--reclaim",
        choices=["aryl", "scf", "random"],
        default="aryl",
        help="which loaned servers to return (default aryl)",
    )
    p.add_argument(
        "--scenario",
        choices=["baseline", "basic", "advanced", "ideal"],
        default="basic",
        help="which jobs are elastic/hetero (default basic: elastic jobs hold 36%% of the "
        "GPU-time); baseline also turns loaning off",
    )
    p.add_argument(
        "--pollux-workload",
        metavar="FILE|N",
        type=_pollux_workload,
        help="run a Pollux artifact workload (name,time,application,num_replicas,"
        "batch_size) instead of JOBS.csv; N in 1..8 picks an embedded one",
    )
    p.add_argument(
        "--pollux-cluster",
        default=(16, 4),
        metavar="NODESxGPUS",
        type=_pollux_cluster,
        help="the node cluster of --pollux-workload (default 16x4, the artifact's)",
    )
    p.set_defaults(run=simulate)

    p = sub.add_parser(
        "sweep",
        help="simulate every combination of a parameter grid, on Ray",
        description="Run one simulation per combination of the --grid values (on top "
        "of the trace options and --set values) on a local Ray, or an existing Ray "
        "cluster with --address; print one table, write sweep.parquet (one row per "
        "run). Finished runs are cached by a fingerprint of trace, parameters and "
        "aryl version: a repeated sweep reads them back, an interrupted one resumes. "
        "Parameters: " + SWEEP_PARAMETERS + " and any aryl.sim.Config "
        "field (headroom, lend_hold, loaning, ...); see aryl.sim.PARAMETERS.",
    )
    _trace_arguments(p, "aryl-results/sweep")
    p.add_argument(
        "--grid",
        "-g",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a parameter and its values (repeat for more; every combination runs), "
        "e.g. --grid inference_servers=0,16,32,64 --grid headroom=0,0.2",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter fixed for every run, e.g. --set scenario=baseline",
    )
    p.add_argument(
        "--first-jobs",
        type=_number(int, "--first-jobs", 1, MAX_INT),
        metavar="N",
        help="use only the trace's first N jobs",
    )
    p.add_argument(
        "--engine",
        choices=["auto", "ray", "processes", "threads", "serial"],
        default="auto",
        help="where runs execute (default auto: Ray if installed, else a process pool)",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="an existing Ray cluster (e.g. ray://host:10001 "
        "or auto); default: start a local Ray",
    )
    p.add_argument(
        "--workers",
        type=_number(int, "--workers", 1, MAX_INT),
        metavar="N",
        help="runs at once locally (default: CPUs)",
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        type=_writable_folder("--cache"),
        help="cache folder (default OUT/cache)",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache"
    )
    p.set_defaults(run=sweep)

    p = sub.add_parser(
        "demo",
        help="reclaim loaned servers on a packed cluster under every policy",
        description="Build a seeded cluster whose job sizes follow the ITP trace, then "
        "reclaim on-loan servers under the aryl, scf, random and exact policies and "
        "print how many jobs each preempts.",
    )
    p.add_argument(
        "--training-servers",
        type=_number(int, "--training-servers", 0, MAX_INT),
        default=32,
        metavar="N",
        help="training servers (8 GPUs each; default 32)",
    )
    p.add_argument(
        "--loaned-servers",
        type=_number(int, "--loaned-servers", 0, MAX_INT),
        default=48,
        metavar="N",
        help="inference servers on loan (8 GPUs each; default 48)",
    )
    p.add_argument(
        "--reclaim",
        type=_number(int, "--reclaim", 0, MAX_INT),
        nargs="+",
        default=[4, 12, 24],
        metavar="N",
        help="how many servers to reclaim, one run each (default 4 12 24)",
    )
    p.add_argument(
        "--seed",
        type=_number(int, "--seed", 0, MAX_SEED),
        default=0,
        help="seed of the cluster and of 'random'",
    )
    _output_arguments(p)
    p.set_defaults(run=demo)
    return parser


def _check(args: argparse.Namespace) -> None:
    """What one option alone cannot say: sweep parameter names, --grid with --set."""
    if args.command == "sweep":
        from .sim.sweep import grid_points

        names, grid = _grid(args.set, "--set"), _grid(args.grid, "--grid")
        both = sorted(set(names) & set(grid))
        if both:
            raise ValueError(f"{', '.join(both)}: given to both --set and --grid")
        grid_points(
            {k: v[0] for k, v in names.items()}, grid
        )  # unknown names raise here


def _warning(
    message: Any,
    category: Any,
    filename: str,
    lineno: int,
    file: Any = None,
    line: Optional[str] = None,
) -> None:
    """A warning as one line on stderr, without Python's source line."""
    print(f"aryl: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script; returns the exit status.

    A bad option value (a count, a number, a name, a path) stops at parse time with
    one line and ``SystemExit(2)``; other bad input (a file's contents, a sweep
    parameter) prints one line and returns 2 before any simulation; Ctrl-C prints
    one line and returns 130, leaving no partial output file behind; running out of
    memory prints one line and returns 1.
    """
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if getattr(args, "quiet", False) else "default")
        warnings.showwarning = _warning
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        _check(args)
        return int(args.run(args))
    except (ValueError, TypeError, OSError) as exc:  # TraceError is a ValueError
        print(f"aryl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("aryl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:
        print(
            f"aryl: error: out of memory{f' ({exc})' if str(exc) else ''}",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
