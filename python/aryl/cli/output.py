"""What the commands print and write: tables, result files and their provenance
records (where lines and progress bars go: ``console``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
)

from .._display import Table
from .console import Console
from .files import write_atomically

# The paper's Table 3 columns, as (summary key, format); headers from aryl.engine.metrics.
TABLE_COLUMNS = [
    ("queuing_mean", "{:.0f}"),
    ("queuing_median", "{:.0f}"),
    ("queuing_p95", "{:.0f}"),
    ("jct_mean", "{:.0f}"),
    ("jct_median", "{:.0f}"),
    ("jct_p95", "{:.0f}"),
    ("jobs_unfinished", "{:,.0f}"),
    ("gpu_usage_training", "{:.2f}"),
    ("gpu_usage_overall", "{:.2f}"),
    ("preemption_ratio", "{:.2%}"),
]


def report(
    result: Any,
    console: Console,
    record: Dict[str, Any],
    out: Path,
    plot_format: Optional[Sequence[str]],
    plot_window: Optional[float] = None,
) -> None:
    """Checks the run, prints its summary and writes jobs.csv, timeline.csv, summary.json and
    provenance.json (and the plots in ``plot_format``; None: none), all at once or not at
    all, with the result's own files (``aryl.sim.load(out)`` reads it back). ``record``
    is the command's (``run_record``), ``plot_window`` the usage plots' window in
    seconds."""
    from .. import plot
    from ..engine.storage import write_result

    result.check()
    summary = result.summary()
    console.say()
    console.show(
        Table(
            ["metric", "value"],
            [(k, v) for k, v in summary.items()],
            [(k, summary_cell(k, summary)) for k in summary],
        ),
    )
    run = result.provenance.to_dict() if result.provenance is not None else None
    provenance = {**record, "run": run}

    def write(folder: Path) -> List[Path]:
        result.jobs.to_csv(folder / "jobs.csv", index=False)
        result.timeline.to_csv(folder / "timeline.csv", index=False)
        (folder / "summary.json").write_text(
            json.dumps({**summary, "provenance": provenance}, indent=2, default=str)
            + "\n"
        )
        write_provenance(folder, record, {result.label: result})
        write_result(result, folder)
        if plot_format is None:
            return []
        return plot.save_all(
            {result.label: result},
            folder,
            metadata=png_metadata(record),
            formats=plot_format,
            window=plot_window,
        )

    written = write_atomically(out, write)
    print_note(console, result)
    what = f" and {len(written)} figure files" if plot_format is not None else ""
    console.say(
        "\nWrote jobs.csv, timeline.csv, summary.json, provenance.json"
        f"{what} to {out}/ (aryl.sim.load('{out}') reads the result back)",
    )


def save_runs(results: Dict[str, Any], out: Path) -> List[Path]:
    """Each run's ``Result`` in ``out/runs/<its name as a slug>`` (``Result.save``:
    ``aryl.sim.load`` reads each back); returns the folders, in order."""
    import re

    return [
        result.save(out / "runs" / re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"))
        for name, result in results.items()
    ]


def summary_cell(key: str, row: Any) -> str:
    """``row[key]`` (a summary, or a table row of one) as ``format_value`` shows it;
    "—" for a share that is 0 / 0 in it (``aryl.engine.metrics.SHARE_OF``) and for a value
    the run did not measure (NaN: a live run's restart and late server-hours)."""
    from ..engine.metrics import undefined_share

    value = row[key]
    unmeasured = isinstance(value, float) and math.isnan(value)
    return "—" if undefined_share(key, row) or unmeasured else format_value(key, value)


def format_value(key: str, value: Any) -> str:
    """A summary value for a table: counts with separators, ratios as %, times in s,
    hours and factors as ``aryl._display.metric`` shows them."""
    from .._display import metric
    from ..engine.metrics import kind

    if isinstance(value, int) or (
        kind(key) == "count" and float(value).is_integer()  # a row of floats
    ):
        return f"{int(value):,}"
    if kind(key) == "time":
        return f"{value:,.0f} s"
    return metric(value, kind(key))


def compare_table(
    table: Any, reference: Optional[str] = None, problems: Sequence[str] = ()
) -> Table:
    """The comparison as printed: times in s, use and preemptions as %, unfinished
    jobs, speed-ups (``COMMON`` marks one taken over the jobs both rows finished; the
    reference row reads ``reference``, with what makes it unfit)."""
    from ..engine.metrics import METRICS, undefined_share

    keys = [key for key, _ in TABLE_COLUMNS] + ["speed-up JCT", "speed-up queue"]
    formats = [fmt for _, fmt in TABLE_COLUMNS] + ["{:.2f}x", "{:.2f}x"]
    header = (
        ["run (times in s)"]
        + [METRICS[key].header for key, _ in TABLE_COLUMNS]
        + ["JCT speed-up", "queue speed-up"]
    )
    rows = [[name] + [row[k] for k in keys] for name, row in table.iterrows()]
    mark = reference_mark(problems)
    shown = []
    for (name, row), values in zip(table.iterrows(), rows):
        # v != v: NaN, a speed-up over a mean of 0; a share of nothing is undefined
        cells = [
            "—" if v != v or undefined_share(k, row) else f.format(v)
            for k, f, v in zip(keys, formats, values[1:])
        ]
        if name == reference:
            cells[-2:] = [mark, mark]
        elif not math.isnan(float(row.get("speed-up jobs", math.nan))):
            cells[-2:] = [f"{c} {COMMON}" for c in cells[-2:]]
        shown.append([values[0], *cells])
    return Table(header, rows, shown)


#: Groups shown in a per-team table; the files have every group.
MAX_GROUPS = 12


def check_groups(frame: Any, by: Optional[str]) -> None:
    """``--by``'s column is in the trace, before anything runs (a ``ValueError``)."""
    if by and (by not in frame or frame[by].isna().all()):
        raise ValueError(
            f"--by {by}: the trace has no {by!r} column with values (aryl keeps 'vc' "
            f"and 'user' when the trace has them); its columns: {list(frame.columns)}"
        )


def groups_table(groups: Any, by: str) -> Table:
    """``Result.groups(by)`` as printed: the largest ``MAX_GROUPS`` groups, their
    jobs and finished jobs, mean queuing, mean and p95 JCT and mean slowdown."""
    keys = ["jobs", "finished", "queuing_mean", "jct_mean", "jct_p95", "slowdown_mean"]
    rows = [
        [str(g), *(float(r[k]) for k in keys)]
        for g, r in groups.head(MAX_GROUPS).iterrows()
    ]
    formats = ["{:,.0f}"] * 5 + ["{:,.2f}"]
    shown = [
        [
            str(row[0]),
            *("—" if v != v else f.format(v) for f, v in zip(formats, row[1:])),
        ]
        for row in rows
    ]  # v != v: NaN, a group with no finished job
    header = [by, "jobs", "finished", "queue mean", "JCT mean", "JCT p95", "slowdown"]
    return Table(header, rows, shown)


def show_groups(console: Any, gains: Any, by: str, features: Sequence[str]) -> None:
    """What each of ``features`` buys each group: the largest ``MAX_GROUPS`` groups of
    each; groups.csv has every feature and group."""
    from ..studies.confidence import Estimate, format_ratio

    for feature in features:
        mine = gains[gains["feature"] == feature].head(MAX_GROUPS)
        if mine.empty:
            continue
        rows = [
            [
                str(g["group"]),
                f"{g['finished']:,} of {g['jobs']:,}",
                format_ratio(
                    Estimate(g["JCT gain"], g["JCT gain low"], g["JCT gain high"], 0)
                ),
                g["reading"],
            ]
            for _, g in mine.iterrows()
        ]
        console.say(f"\n{feature}, per {by} (JCT gain, paired; groups.csv has all):")
        console.show(Table([by, "jobs compared", "JCT gain", "reading"], rows))


#: The features of the first answers, shown per group (with rows of your own).
QUESTION_FEATURES = ("loaning, given elasticity", "elasticity, given loaning")


def reference_mark(problems: Sequence[str]) -> str:
    """The reference row's speed-up cells: ``reference``, or ``reference (stalled,
    saturated)`` with the kinds of ``sim.reference_problems``' sentences."""
    unfit = ", ".join(p.split(":", 1)[0] for p in problems)
    return f"reference ({unfit})" if unfit else "reference"


#: Marks a speed-up taken over the jobs both rows finished (they finished different
#: jobs: a row left some unfinished).
COMMON = "*"


def say_reference(
    console: Console, reference: str, problems: Sequence[str], rows: Sequence[str]
) -> None:
    """First of all, when the reference row is unfit to take speed-ups over
    (``sim.reference_problems``): why, and which other row ``--reference`` could
    name."""
    if not problems:
        return
    sjf = "Control: SJF, no loaning"
    instead = (
        f" --reference {sjf!r} takes them over the SJF control."
        if sjf in rows and sjf != reference
        else " --reference NAME takes them over another row."
    )
    console.say(
        f"\nThe reference row {reference!r} is not fit to compare against: "
        + "; ".join(problems)
        + f". Speed-ups over it measure that, not the scheduler.{instead}"
    )


def ledger_table(table: Any) -> Table:
    """The loaning ledger of each row of a comparison (``table``: one row per run with
    the summary keys of ``aryl.engine.metrics.LEDGER_KEYS``; means over replications
    when replicated): GPU-hours lent and used, reclaims, preemptions, what they lost."""
    from ..engine.metrics import LEDGER_KEYS, METRICS

    header = ["loaning ledger"] + [METRICS[k].header for k in LEDGER_KEYS]
    rows = [[name, *(row[k] for k in LEDGER_KEYS)] for name, row in table.iterrows()]
    shown = [
        [name, *(summary_cell(k, row) for k in LEDGER_KEYS)]
        for name, row in table.iterrows()
    ]
    return Table(header, rows, shown)


#: Under the ledger: what its columns count.
LEDGER_NOTE = (
    "Ledger: GPU-hours of inference servers on loan and the GPU-hours training used "
    "on them (and the share); reclaim decisions, servers taken back and the "
    "preemptions they caused; progress thrown away (jobs without a checkpoint, "
    "reference GPU-hours) and GPU-hours held restarting from a checkpoint; "
    "inference server-hours needed while still lent (reclaims happen at loan "
    "decisions, Config.loan_interval apart)."
)


def pollux_table(frame: Any) -> Table:
    """The Pollux comparison beside the paper (``aryl.sim.pollux_beside_paper``'s
    frame) as printed: one row per metric, times and counts whole, ratios as ``1.42x``,
    ``—`` where there is no figure."""
    from ..engine.metrics import METRICS

    def shown(column: str, value: float) -> str:
        if math.isnan(value):
            return "—"
        return f"{value:,.2f}x" if " / " in column else f"{value:,.0f}"

    header = ["metric (times in s)", *frame.columns]
    rows = [[key, *row] for key, row in zip(frame.index, frame.to_numpy().tolist())]
    cells = [
        [METRICS[key].header, *(shown(c, v) for c, v in zip(frame.columns, values))]
        for key, *values in rows
    ]
    return Table(header, rows, cells)


def integer_columns(table: Any, summaries: Dict[str, Dict[str, Any]]) -> Any:
    """``table`` with each summary count (an int in every run) as an integer column and
    the other summary columns as floats (``speedups`` builds an object-typed frame)."""
    for key in next(iter(summaries.values()), {}):
        values = [s[key] for s in summaries.values()]
        counts = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        table[key] = table[key].astype("int64" if counts else "float64")
    return table


def run_record(options: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """The command, its inputs, every parameter, the seed and aryl's version.

    ``options`` are the parsed options by name (with ``command`` and ``seed``).
    """
    from ..engine.provenance import aryl_version

    parameters = {k: v for k, v in options.items() if k not in ("run", "command")}
    return {
        "command": f"aryl {options['command']}",
        "aryl_version": aryl_version(),
        "inputs": where,
        "parameters": parameters,
        "seed": options["seed"],
    }


def write_provenance(
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


def png_metadata(record: Dict[str, Any]) -> Dict[str, str]:
    """PNG text chunks naming the command, inputs, parameters and version."""
    return {
        "Software": f"aryl {record['aryl_version']}",
        "Description": json.dumps(record, default=str, sort_keys=True),
    }


def provenance_columns(
    table: Any, results: Dict[str, Any], record: Dict[str, Any]
) -> Any:
    """``table`` with, per run, what produced it (policy, config, seed, inputs, version)."""
    import pandas as pd

    from ..engine.config import describe_config

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


def say_verdict(console: Console, lines: Sequence[str]) -> None:
    """The answers first (``aryl.sim.verdict_lines``), one line each, then a blank."""
    console.say()
    for line in lines:
        console.say(line)
    console.say()


def elastic_ceiling(bound: Mapping[str, float], summaries: Mapping[str, Any]) -> str:
    """One line: the most elasticity could cut mean running time on the Basic jobs
    (``aryl.sim.elastic_bound``), what Elastic only, aryl cut, and the share of the
    paper's row-11 cut the scenario can reach at most."""
    from ..studies.paper import (
        BASELINE,
        ELASTIC_ROW,
        PAPER_ELASTIC_CUT,
        running_time_cut,
    )

    share = bound["reduction_share"]
    measured = (
        f"; {ELASTIC_ROW} cut it by {running_time_cut(summaries):.1%}"
        if ELASTIC_ROW in summaries and BASELINE in summaries
        else ""
    )
    return (
        f"Elasticity's ceiling: with every elastic job of Basic at its largest from start "
        f"to end, mean running time would fall by at most {share:.1%} "
        f"({bound['reduction']:,.0f} of {bound['mean_running_time']:,.0f} s, "
        f"{bound['elastic_jobs']:,.0f} elastic jobs){measured}. The paper's row 11 cut it "
        f"by {PAPER_ELASTIC_CUT:.1%}: this scenario can reach at most "
        f"{share / PAPER_ELASTIC_CUT:.0%} of the paper's elastic gain."
    )


def print_note(console: Console, result: Any) -> None:
    """Say so when the load series was repeated to cover the trace."""
    if result.provenance is not None and result.provenance.load_extended:
        console.say(f"\nNote: {result.provenance.load_extended}.")


def cell(value: Any) -> str:
    """A parameter's value in a table cell: floats shortest (``%g``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)
