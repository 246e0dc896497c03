"""The Pollux comparison (Table 3 rows 10-12) on the whole ITP trace: windowed, cached,
resumable, its results kept in the repository.

``run``: the rows Pollux, Aryl+TunedJobs and Elastic only, aryl (``sim.POLLUX_COMPARISON``)
on the embedded ITP trace cut into ``--windows K`` windows (each after ``--warmup`` of
warm-up, ``docs/confidence.md``), through ``sim.replicate_paper``: every (row, seed,
window) is its own run, cached in ``benchmarks/results/pollux/runs/<key>/`` (the key:
its configuration, the code, seed and window; the entry: the run's ``result.json`` with
its provenance and summary, ``jobs.parquet`` with every job's times, ``timeline.parquet``,
``row.json`` with the commit, command, machine, engine, CPU and wall time). Runs go to
``--workers`` processes (or ``--engine ray --address ...``), cheap rows first. An
interrupted run loses only the runs in flight: the same command continues from the
cache, says how many runs it found and runs nothing twice. With ``--commit`` every run
is committed (``git commit -- benchmarks/results/pollux``, with the README's table
regenerated) as soon as it finishes, so the run can continue later, elsewhere, from what
was committed. ``manifest.csv`` lists each
plan's runs (row, seed, window, entry) and ``measured.parquet`` each window's measured
jobs, so the table is read from the files alone, whatever the code is then. A folder may
hold several plans (``run`` with other ``--windows``, ``--warmup``, ``--generations``,
``--training-servers`` or ``--days``): each keeps its own runs, and ``table`` with the same
options shows that plan's.

``table``: the table from those files (each row's measured jobs pooled over the windows
that finished, with window-bootstrap intervals; the paired view on the windows every row
finished; the Pollux / Aryl+TunedJobs ratios beside the paper's; the windowing cost,
K = 1 against K, for the rows run both ways; what it cost). Each manifest row is checked
against the entry it names before it counts (``check_entry``): the name stays inside
``runs/``, the entry's ``row.json`` names it and holds its result's label and summary,
and the result's provenance holds the row's settings, the plan's, the seed and the
window; anything else is a ``ManifestError`` naming the run. ``--write`` puts it in
``benchmarks/README.md`` between its markers (``tests/py/test_pollux_windows.py`` checks
that the README's figures are the files').

Run: python benchmarks/pollux_table.py run [--windows 16] [--generations 100] [--commit]
     python benchmarks/pollux_table.py run --windows 1 --rows "Elastic only, aryl" Aryl+TunedJobs
     python benchmarks/pollux_table.py table [--write]
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from _common import table

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "pollux"
README = HERE / "README.md"
START, END = "<!-- pollux-table:start -->", "<!-- pollux-table:end -->"
#: Rows in the order they run: the cheap ones first, so they finish early.
RUN_ORDER = ("Elastic only, aryl", "Aryl+TunedJobs", "Pollux")
#: The training servers ``aryl compare`` sizes for the embedded trace (as tuned.py).
TRAINING_SERVERS = 85
#: What makes a plan, ``run``'s options that change its runs, with their defaults (``days``
#: NaN: the whole trace). A folder may hold several plans; the table shows one.
PLAN_DEFAULTS: Dict[str, float] = {
    "windows": 16,
    "generations": 100,
    "warmup": 86400.0,
    "training_servers": TRAINING_SERVERS,
    "days": math.nan,
}
MANIFEST_KEY = [*PLAN_DEFAULTS, "row", "seed", "window"]
#: The settings that decide a plan's windows, hence its measured jobs.
MEASURED_KEY = ["windows", "days"]


# ---- run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> None:
    from aryl import sim, traces

    frame, _ = traces.load_default()
    if not math.isnan(args.days):
        frame = frame[frame["submit_time_s"] < args.days * 86400].reset_index(drop=True)
    settings: Dict[str, Any] = dict(
        seeds=1,
        windows=args.windows,
        warmup=args.warmup,
        config={"pollux_generations": args.generations},
        rows=args.rows,
    )
    plan = sim.paper_plan(frame, None, args.training_servers, 0, **settings)
    folder = Path(args.results)
    write_manifest(folder, plan, plan_settings(args))
    print(
        f"{len(frame):,} jobs, {args.windows} windows (warm-up {args.warmup:,.0f} s), "
        f"rows {', '.join(plan.names)}, Pollux at {args.generations} generations, "
        f"{args.training_servers} servers as {2 * args.training_servers} 4-GPU nodes; "
        f"{args.engine}, {args.workers} workers; runs in {folder / 'runs'}",
        flush=True,
    )
    started = time.perf_counter()

    def progress(done: int, cached: int, total: int) -> None:
        if done == cached:
            print(f"Found {cached} of {total} runs in the cache; running the rest.")
        else:
            clock = time.perf_counter() - started
            print(f"  run {done} of {total} done ({clock:,.0f} s)", flush=True)
            if args.commit:
                commit(folder, f"{done} of {total} runs")

    sim.replicate_paper(
        frame,
        None,
        args.training_servers,
        0,
        **settings,
        engine=args.engine,
        workers=args.workers,
        address=args.address,
        cache=folder / "runs",
        progress=progress,
    )
    print("All runs done: python benchmarks/pollux_table.py table")


def write_manifest(folder: Path, plan: Any, settings: Dict[str, float]) -> None:
    """Add the plan's runs to ``manifest.csv`` and its windows' measured jobs to
    ``measured.parquet`` (replacing what an earlier plan of the same settings said)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = plan.entries()
    for position, name in enumerate(PLAN_DEFAULTS):
        entries.insert(position, name, settings[name])
    path = folder / "manifest.csv"
    if path.exists():
        entries = pd.concat([pd.read_csv(path), entries], ignore_index=True)
    entries = entries.drop_duplicates(MANIFEST_KEY, keep="last")
    entries.sort_values(MANIFEST_KEY).to_csv(path, index=False)
    measured = pd.DataFrame(
        [
            {"window": w, "job_id": str(i)}
            for w, ids in enumerate(plan.measured)
            for i in (ids if ids is not None else plan_jobs(plan))
        ]
    )
    for position, name in enumerate(MEASURED_KEY):
        measured.insert(position, name, settings[name])
    path = folder / "measured.parquet"
    if path.exists():
        old = pd.read_parquet(path)
        mine = of_plan(old, {k: settings[k] for k in MEASURED_KEY}).index
        measured = pd.concat([old.drop(index=mine), measured])
    measured.sort_values([*MEASURED_KEY, "window"], kind="stable").to_parquet(
        path, index=False
    )


def plan_settings(args: argparse.Namespace) -> Dict[str, float]:
    """The plan's settings from the command line."""
    return {name: getattr(args, name) for name in PLAN_DEFAULTS}


def of_plan(frame: pd.DataFrame, settings: Dict[str, Optional[float]]) -> pd.DataFrame:
    """The rows of ``frame`` with these settings (a NaN matches NaN; None matches all)."""
    keep = pd.Series(True, index=frame.index)
    for name, value in settings.items():
        if value is None:
            continue
        column = frame[name]
        keep &= column.isna() if math.isnan(value) else column == value
    return frame[keep]


def plan_jobs(plan: Any) -> List[Any]:
    """Every job of a plan's one trace (one window: all are measured)."""
    ((jobs, _),) = plan.traces.values()
    return list(jobs["job_id"])


def commit(folder: Path, what: str) -> None:
    """Commit ``folder`` and, when it is the kept one, the README's table regenerated from
    it (other staged changes stay staged); retried while git holds the index."""
    paths = [str(folder)]
    if folder.resolve() == RESULTS.resolve():
        write_readme(tables(folder))
        paths.append(str(README))
    message = f"benchmarks/results/pollux: {what} (pollux_table.py run)"
    for _ in range(10):
        add = subprocess.run(["git", "-C", str(HERE), "add", "--", *paths])
        done = subprocess.run(
            ["git", "-C", str(HERE), "commit", "-q", "-m", message, "--", *paths]
        )
        if add.returncode == 0 and done.returncode in (0, 1):
            return
        time.sleep(5)
    print(f"  could not commit {folder}", file=sys.stderr)


# ---- table --------------------------------------------------------------------------------


def load_runs(folder: Path = RESULTS, **settings: Optional[float]) -> pd.DataFrame:
    """The finished runs of one plan: the manifest's runs with these settings (the others
    as ``run``'s defaults; ``warmup=None``: any), one row per run with its ``Result``
    (measured jobs only) and its ``row.json`` (CPU, wall, provenance)."""
    import json

    from aryl import sim

    settings = {**PLAN_DEFAULTS, **settings}
    manifest = of_plan(pd.read_csv(folder / "manifest.csv"), settings)
    manifest = manifest.drop_duplicates(["row", "seed", "window"])
    measured = of_plan(
        pd.read_parquet(folder / "measured.parquet"),
        {k: settings[k] for k in MEASURED_KEY},
    )
    ids = {w: set(g["job_id"]) for w, g in measured.groupby("window")}
    records = []
    for _, entry in manifest.iterrows():
        path = entry_folder(folder, entry)
        if not (path / "row.json").exists():
            continue
        try:
            result = sim.load(path)
            row = json.loads((path / "row.json").read_text())
        except ValueError as error:  # ResultFileError, a row.json that is not JSON
            raise ManifestError(f"{_what(entry)}: {error}") from None
        check_entry(entry, row, result, path)
        keep = result.jobs["id"].astype(str).isin(ids[entry["window"]])
        result.jobs = result.jobs[keep.to_numpy()].reset_index(drop=True)
        records.append({**entry.to_dict(), "result": result, "entry": row})
    return pd.DataFrame.from_records(
        records, columns=[*manifest.columns, "result", "entry"]
    )


class ManifestError(ValueError):
    """A manifest row and the cache entry it names disagree (or the name is not an
    entry of ``runs/``): the table is refused rather than filled with another run's
    numbers."""


#: What each row's runs are, as their sweep parameters say (``provenance.inputs``);
#: ``None``: the parameter is not set. A row not listed here is checked for its
#: plan, seed and window only.
ROW_POINTS: Dict[str, Dict[str, Any]] = {
    "Pollux": {"policy": "pollux", "agent": None, "goodput_jobs": True},
    "Aryl+TunedJobs": {"policy": "aryl", "agent": "pollux", "goodput_jobs": True},
    "Elastic only, aryl": {"policy": "aryl", "agent": None, "goodput_jobs": None},
}
_ENTRY_NAME = re.compile(r"[0-9a-f]{8,64}")


def _what(entry: Any) -> str:
    return (
        f"manifest.csv's run {entry['row']!r}, seed {entry['seed']}, window "
        f"{entry['window']} of {entry['windows']}"
    )


def entry_folder(folder: Path, entry: Any) -> Path:
    """The cache entry a manifest row names: ``runs/<fingerprint>``, the fingerprint a
    plain entry name (hex digits), never a path that leaves ``runs/``."""
    name = entry["fingerprint"]
    if not isinstance(name, str) or not _ENTRY_NAME.fullmatch(name):
        raise ManifestError(
            f"{_what(entry)}: its entry {name!r} is not the name of an entry of "
            f"{folder / 'runs'} (hex digits)"
        )
    runs = (folder / "runs").resolve()
    path = runs / name
    if path.resolve().parent != runs:  # a symbolic link out of runs/
        raise ManifestError(f"{_what(entry)}: its entry {path} is outside {runs}")
    return path


def check_entry(entry: Any, row: Dict[str, Any], result: Any, path: Path) -> None:
    """``ManifestError`` unless the entry at ``path`` is the run its manifest row
    says: its ``row.json`` names this entry and this result, and the result's
    provenance holds this row's settings, the plan's, this seed and this window."""
    from aryl.engine.storage import same_value

    what = f"{_what(entry)} ({path})"
    if not isinstance(row, dict) or row.get("fingerprint") != entry["fingerprint"]:
        got = row.get("fingerprint") if isinstance(row, dict) else None
        raise ManifestError(f"{what}: row.json names entry {got!r}, not this one")
    if row.get("label") != result.label:
        raise ManifestError(
            f"{what}: row.json is of run {row.get('label')!r}, but result.json of "
            f"{result.label!r} (files swapped between entries?)"
        )
    summary = result.summary()
    differ = sorted(
        k for k in summary if k in row and not same_value(row[k], summary[k])
    )
    if differ or "jct_mean" not in row:
        raise ManifestError(
            f"{what}: row.json's summary is not the saved result's "
            f"({', '.join(differ) or 'jct_mean missing'}; files swapped between "
            "entries?)"
        )
    provenance = result.provenance
    inputs = provenance.inputs if provenance is not None else {}
    point = inputs.get("sweep") if isinstance(inputs.get("sweep"), dict) else {}
    window = f"window {int(entry['window']) + 1}/{int(entry['windows'])}"
    expected = {
        "trace": window,
        "seed": int(entry["seed"]),
        "pollux_generations": int(entry["generations"]),
        "training_servers": int(entry["training_servers"]),
        **ROW_POINTS.get(entry["row"], {}),
    }
    wrong = [
        f"{key} {point.get(key)!r}, expected {value!r}"
        for key, value in expected.items()
        if point.get(key) != value
    ]
    if inputs.get("trace") != window:
        wrong.insert(0, f"trace {inputs.get('trace')!r}, expected {window!r}")
    if wrong:
        raise ManifestError(
            f"{what}: the saved run is not this one: its provenance has "
            + "; ".join(wrong)
        )


def cell(e: Any, digits: int = 0) -> str:
    """``value [low, high]``, or the value alone without an interval."""
    if math.isnan(e.value):
        return "—"
    if math.isnan(e.low):
        return f"{e.value:,.{digits}f}"
    return f"{e.value:,.{digits}f} [{e.low:,.{digits}f}, {e.high:,.{digits}f}]"


def headers() -> List[str]:
    """The pooled statistics' column headers (``aryl.engine.metrics``)."""
    from aryl.engine.metrics import METRICS
    from aryl.studies.replications import POOLED_KEYS

    return [METRICS[k].header for k in POOLED_KEYS]


def tables(folder: Path = RESULTS, **settings: float) -> str:
    """The README's section: every table of one plan (these settings, the others as
    ``run``'s defaults), from the files in ``folder``."""
    from aryl import sim
    from aryl.studies.replications import POOLED_KEYS, pooled

    settings = {**PLAN_DEFAULTS, **settings}
    main = load_runs(folder, **settings)
    if main.empty:
        return "No runs of this plan have finished yet.\n"
    k = int(settings["windows"])
    days = (
        "" if math.isnan(settings["days"]) else f", the first {settings['days']:g} days"
    )
    out = [
        f"Windows: **{k}** (warm-up {settings['warmup']:,.0f} s), seed "
        f"{int(main.iloc[0]['seed'])}, Pollux at **{int(settings['generations'])}** "
        f"generations, {int(settings['training_servers'])} training servers{days}. "
        "Each row's measured jobs pooled over the windows it finished; "
        "[low, high]: 95% window-bootstrap interval (the windows resampled).\n"
    ]
    planned = set(of_plan(pd.read_csv(folder / "manifest.csv"), settings)["row"])
    names = [n for n in sim.POLLUX_COMPARISON if n in set(main["row"])]
    header = ["row", "windows done", "jobs", *headers(), "CPU", "wall"]
    rows = []
    for name in [n for n in sim.POLLUX_COMPARISON if n in planned]:
        mine = main[main["row"] == name]
        if mine.empty:
            rows.append([name, f"0 of {k}"] + ["—"] * (len(header) - 2))
            continue
        e = pooled(list(mine["result"]))
        cpu = sum(r["cpu_seconds"] for r in mine["entry"])
        wall = sum(r["seconds"] for r in mine["entry"])
        rows.append(
            [name, f"{len(mine)} of {k}", f"{e['jobs'].value:,.0f}"]
            + [cell(e[key]) for key in POOLED_KEYS]
            + [f"{cpu:,.0f} s", f"{wall:,.0f} s"]
        )
    out.append(table(header, rows))
    out.append(paired(main, names, k))
    # One window has no warm-up to differ by: the whole trace with any --warmup.
    whole = load_runs(folder, **{**settings, "windows": 1, "warmup": None})
    out.append(windowing_cost(whole, main, k))
    out.append(cost(main))
    return "\n\n".join(out) + "\n"


def paired(main: pd.DataFrame, names: List[str], k: int) -> str:
    """The rows that finished a window, on the windows all of them finished, beside
    the paper's Table 3."""
    from aryl import sim
    from aryl._display import render
    from aryl.cli.output import pollux_table
    from aryl.studies.replications import pooled

    done = set.intersection(*(set(main[main["row"] == n]["window"]) for n in names))
    if not done:
        return "No window has finished for every row yet."
    common = main[main["window"].isin(done)]
    summaries = {
        n: {
            key: e.value
            for key, e in pooled(list(common[common["row"] == n]["result"])).items()
        }
        for n in names
    }
    shown = ", ".join(str(w + 1) for w in sorted(done))
    return (
        f"On the windows {', '.join(names)} all finished ({len(done)} of {k}: {shown}), "
        "beside the paper's Table 3 (rows 10-12):\n\n"
        + render(pollux_table(sim.pollux_beside_paper(summaries)), "markdown")
    )


def windowing_cost(whole: pd.DataFrame, cut: pd.DataFrame, k: int) -> str:
    """K = 1 (the whole trace, one run) against the K windows pooled, per row run both
    ways: the relative difference of each pooled statistic."""
    from aryl.studies.replications import POOLED_KEYS, pooled

    rows = []
    for name in whole["row"]:
        mine = cut[cut["row"] == name]
        if len(mine) < k:
            continue
        one = pooled(list(whole[whole["row"] == name]["result"]))
        many = pooled(list(mine["result"]))
        rows.append(
            [name]
            + [
                f"{one[key].value:,.0f} / {many[key].value:,.0f} "
                f"({many[key].value / one[key].value - 1:+.1%})"
                for key in POOLED_KEYS
            ]
        )
    if k == 1 or not rows:
        return "The windowing cost needs a row run both whole (K = 1) and windowed."
    return (
        f"What windowing costs: each row whole (K = 1) / pooled over its {k} windows "
        "(relative difference):\n\n" + table(["row", *headers()], rows)
    )


def cost(main: pd.DataFrame) -> str:
    """What the runs cost and where they ran."""
    entries = list(main["entry"])
    by = pd.DataFrame([e.get("run_by", {}) for e in entries])
    cpu = sum(e["cpu_seconds"] for e in entries)
    wall = sum(e["seconds"] for e in entries)
    # A run names the checkout's HEAD when it began; with `run --commit` that moves to
    # each results commit, which changes no code (and the runs' cache keys, which cover
    # the code, are one manifest's): the first commit is the code.
    order = by.sort_values("finished")["commit"].dropna()
    first, *later = dict.fromkeys(short(c) for c in order)
    commits = first + (
        f" (later runs name the results commits of `run --commit`: {', '.join(later)})"
        if later
        else ""
    )
    machines = "; ".join(sorted(set(by["machine"].dropna())))
    engines = ", ".join(
        sorted({f"{e} x {w}" for e, w in zip(by["engine"], by["workers"])})
    )

    def seconds(x: float) -> str:
        return f"{x:,.0f}" if x >= 10 else f"{x:.1f}"

    per_run = "; ".join(
        f"{name} {seconds(min(c))}-{seconds(max(c))} s"
        for name, c in (
            (n, [e["cpu_seconds"] for e in g["entry"]])
            for n, g in main.groupby("row", sort=False)
        )
    )
    return (
        f"Cost of these {len(entries)} runs: {cpu:,.0f} s of CPU (a run: {per_run}), "
        f"{wall:,.0f} s of wall "
        f"time summed over runs (they ran side by side on {engines} workers); "
        f"machine: {machines}; code: commit {commits}."
    )


def short(commit: str) -> str:
    """A commit's first 10 digits, with its ``+dirty`` mark."""
    return commit[:10] + ("+dirty" if commit.endswith("+dirty") else "")


def write_readme(text: str, readme: Path = README) -> None:
    """Replace the README's section between the markers with ``text``."""
    old = readme.read_text()
    head, rest = old.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{text}{END}{tail}")


def readme_section(readme: Path = README) -> str:
    """The README's section between the markers."""
    return readme.read_text().split(START, 1)[1].split(END, 1)[0].lstrip("\n")


# ---- command line -------------------------------------------------------------------------


def plan_options(parser: argparse.ArgumentParser) -> None:
    """The options that make a plan (``PLAN_DEFAULTS``), for ``run`` and ``table``."""
    helps = {
        "windows": ("time windows K", int),
        "generations": ("Pollux search generations", int),
        "warmup": ("warm-up seconds before each window", float),
        "training_servers": ("8-GPU training servers", int),
        "days": ("only the jobs of the first DAYS (default: all)", float),
    }
    for name, (text, kind) in helps.items():
        default = PLAN_DEFAULTS[name]
        shown = "" if math.isnan(default) else f" ({kind(default):g})"
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=kind,
            default=default if math.isnan(default) else kind(default),
            help=text + shown,
        )


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("run", help="run (or continue) the windowed comparison")
    plan_options(p)
    p.add_argument("--rows", nargs="+", default=list(RUN_ORDER), help="rows to run")
    p.add_argument("--engine", default="processes", help="processes, threads or ray")
    p.add_argument("--workers", type=int, default=2, help="runs side by side (2)")
    p.add_argument("--address", help="a Ray cluster (with --engine ray)")
    p.add_argument("--results", default=str(RESULTS), help="the results folder")
    p.add_argument(
        "--commit", action="store_true", help="git-commit every run as it finishes"
    )
    p = sub.add_parser("table", help="one plan's table from the results files")
    plan_options(p)
    p.add_argument("--results", default=str(RESULTS), help="the results folder")
    p.add_argument("--write", action="store_true", help="into benchmarks/README.md")
    args = parser.parse_args(argv)
    if args.what == "run":
        run(args)
        return
    text = tables(Path(args.results), **plan_settings(args))
    print(text)
    if args.write:
        write_readme(text)


if __name__ == "__main__":
    main()
