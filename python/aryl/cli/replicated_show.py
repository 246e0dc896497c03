"""What ``aryl compare --seeds N`` / ``--windows K`` shows and writes: the table of means
and intervals, the details (ledger, contributions, orderings, notes), the answers as
JSON and the files (``replicated`` runs the comparison and calls these)."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from .._display import Table
from .options import (
    elastic_options,
)
from .output import (
    COMMON,
    LEDGER_NOTE,
    elastic_ceiling,
    ledger_table,
    png_metadata,
    pollux_table,
    provenance_columns,
    reference_mark,
    write_provenance,
)

#: Shown beside the tables: what ``~`` means.
MARK = "~"


@dataclass
class Findings:
    """What a replicated comparison found beside its means: each feature's gain, the
    paper's orderings judged, the Pollux rows beside the paper's (or None), the
    answers first printed (``sim.verdict_lines``) and what makes the reference row
    unfit to compare against (``sim.reference_problems``)."""

    gains: pd.DataFrame
    verdicts: Dict[str, Dict[str, Any]]
    pollux: Optional[pd.DataFrame]
    answers: List[str]
    reference_problems: List[str]


def means_table(table: Any, problems: Sequence[str] = ()) -> Table:
    """Each row's means, its unfinished jobs and its speed-ups as ``1.16x [1.12,
    1.20]`` (``~`` when the interval includes 1.0x; ``COMMON`` when the row and the
    reference finished different jobs, so the speed-up is over the jobs both
    finished); the reference row reads ``reference``, with what makes it unfit
    (``sim.reference_problems``: ``stalled``, ...). csv and json get the numbers."""
    from ..engine.metrics import METRICS
    from ..studies.confidence import Estimate, format_ratio

    def ratio(row: Any, column: str) -> str:
        e = Estimate(row[column], row[f"{column} low"], row[f"{column} high"], 0)
        shown = format_ratio(e)
        interval = not math.isnan(e.low)  # no interval: nothing to mark
        common = f" {COMMON}" if not math.isnan(row["speed-up jobs"]) else ""
        return shown + (f" {MARK}" if interval and e.includes(1.0) else "") + common

    mark = reference_mark(problems)
    rows, shown = [], []
    for index, row in table.iterrows():
        name = str(index)
        cells = [row[k] for k in _COLUMNS]
        speed = (
            [mark, mark]
            if name == table.reference
            else [ratio(row, "speed-up JCT"), ratio(row, "speed-up queue")]
        )
        # csv and json get the numbers (compare.csv has the intervals too)
        rows.append([name, *cells, row["speed-up JCT"], row["speed-up queue"]])
        shown.append([name, *[_value(k, v) for k, v in zip(_COLUMNS, cells)], *speed])
    header = ["run (means; times in s)", *[METRICS[k].header for k in _COLUMNS]]
    return Table(header + ["JCT speed-up", "queue speed-up"], rows, shown)


def show_details(
    console: Any,
    table: Any,
    found: Findings,
    args: argparse.Namespace,
    frame: Any,
    on: Any,
    seeds: List[int],
    over: str,
) -> None:
    """What follows the means on a terminal: the Pollux rows beside the paper's, the
    loaning ledger, each feature's gain, the elastic ceiling and the orderings."""
    from ..studies.confidence import Estimate, format_ratio

    if found.pollux is not None:
        console.say(
            "\nThe Pollux comparison beside the paper's Table 3 (rows 10-12), each row's "
            "jobs pooled over its runs:"
        )
        console.show(pollux_table(found.pollux))
    console.show(ledger_table(table))
    console.say(f"\n{LEDGER_NOTE} Means over {over}.\n")
    spread = table.get("user_slowdown_spread")
    if spread is not None and spread.notna().any():
        each = ", ".join(f"{n} {v:.2f}x" for n, v in spread.dropna().items())
        console.say(
            "User slowdown spread (the worst user's mean slowdown over the best's; "
            f"1 = every user alike): {each}.\n"
        )
    console.show(_contributions_table(found.gains, format_ratio, Estimate))
    bound = _basic_bound(frame, seeds, args.any_type_share, elastic_options(args, on))
    means = {str(name): row for name, row in table.table.iterrows()}
    console.say("\n" + elastic_ceiling(bound, means))
    pairs = "".join(
        f"\n  {g['feature']}: {g['without']} / {g['with']}"
        for _, g in found.gains.iterrows()
    )
    console.say(f"\nGain: the mean without / with the feature, paired:{pairs}\n")
    if not found.verdicts:
        console.say("None of the paper's orderings applies to these rows.")
        return
    console.show(
        Table(
            ["the paper's ordering", "verdict"],
            [
                [claim, v["verdict"] + (f": {v['why']}" if v.get("why") else "")]
                for claim, v in found.verdicts.items()
            ],
        ),
    )


def write_files(
    folder: Path,
    table: Any,
    samples: pd.DataFrame,
    found: Findings,
    record: Dict[str, Any],
    args: argparse.Namespace,
    seeds: List[int],
    answer: Dict[str, Any],
    per_group: Optional[pd.DataFrame] = None,
) -> List[Path]:
    """The comparison's files in ``folder``; the figure files written."""
    from .. import plot

    windows = args.windows
    named = {
        f"{name} [seed {s}" + (f", window {w}]" if windows else "]"): r
        for (name, s, w), r in table.runs.items()
    }
    provenance_columns(table.table, table.results, record).to_csv(
        folder / "compare.csv", index_label="run"
    )
    samples.to_csv(folder / "samples.csv", index=False)
    found.gains.to_csv(folder / "contributions.csv", index=False)
    if found.pollux is not None:
        found.pollux.to_csv(folder / "pollux_paper.csv", index_label="metric")
    (folder / "orderings.json").write_text(
        json.dumps(_jsonable(found.verdicts), indent=2) + "\n"
    )
    (folder / "compare.json").write_text(json.dumps(answer, indent=2) + "\n")
    if per_group is not None:
        per_group.to_csv(folder / "groups.csv", index=False)
    write_provenance(folder, record, named)
    return plot.save_all(
        table.results,
        folder,
        metadata=png_metadata(record),
        headline=table.table,
        formats=args.plot_format,
        window=args.plot_window,
        note=_figures_note(seeds, windows),
    )


def interval_note(table: Any, over: str) -> str:
    """What the intervals of ``table`` (a replicated ``Comparison``) are over and what
    ``~`` means; with fewer than ``MIN_REPLICATIONS`` it says how few."""
    from ..studies.confidence import MIN_REPLICATIONS

    n = int(table["replications"].iloc[0])
    if n < 2:
        return (
            f"No intervals: one replication ({over}); an interval needs two, and "
            f"{MIN_REPLICATIONS} or more make it narrow enough to read "
            f"(docs/confidence.md). Nothing is marked {MARK}."
        )
    windows = table.samples["window"].nunique() > 1
    paired = "seed and window" if windows else "seed"
    batches = (
        " (batch means: a window's seeds are averaged first, so n is the windows)"
        if windows
        else ""
    )
    few = (
        f" Only {n} replications: fewer than the {MIN_REPLICATIONS} the intervals "
        "need to be narrow; read them as rough."
        if n < MIN_REPLICATIONS
        else ""
    )
    common = (
        f" {COMMON}: the row and {table.reference} finished different jobs (a row left "
        "jobs unfinished): its speed-up is over the jobs both finished."
        if table["speed-up jobs"].notna().any()
        else ""
    )
    return (
        f"[low, high]: 95% Student-t interval over n = {n}: {over}{batches}, paired "
        f"(every row of a replication on the same {paired}; docs/confidence.md). "
        f"{MARK}: the interval includes 1.0x, no detectable difference from "
        f"{table.reference}.{_no_spread(table)}{common}{few}"
    )


def _no_spread(table: Any) -> str:
    """What ``(no spread)`` means, where a speed-up has a zero-width interval."""
    low, high = table["speed-up JCT low"], table["speed-up JCT high"]
    if not (low == high).any():
        return ""
    return (
        " (no spread): every replication gave the same ratio (no random draw differs "
        "between them for these rows), so the interval says nothing about other draws "
        "or stretches of the trace."
    )


def _figures_note(seeds: List[int], windows: Optional[int]) -> str:
    """The caption of figures drawn from one run per row: which one (the speed-ups
    figure shows the means and intervals)."""
    where = " in window 1" if windows else ""
    count = f"{len(seeds)} seed{'s' * (len(seeds) != 1)}"
    return (
        f"seed {seeds[0]}{where}, the first of {count}"
        f"{f' x {windows} windows' if windows else ''}; means and intervals: "
        "speedups and compare.csv"
    )


#: The metric columns printed (means over replications): (summary key, header).
#: compare.csv has every metric with its interval.
#: Summary keys of the table, after the row's name; headers from aryl.engine.metrics.
_COLUMNS = ["queuing_mean", "jct_mean", "jobs_unfinished", "preemption_ratio"]


def pollux_pooled(table: Any) -> Any:
    """``sim.pollux_beside_paper`` of the Pollux comparison's rows, each row's measured
    jobs pooled over all its runs (``replications.pooled``)."""
    from .. import sim
    from ..studies.replications import pooled

    summaries = {}
    for name in sim.POLLUX_COMPARISON:
        runs = [r for (row, _, _), r in table.runs.items() if row == name]
        if runs:
            summaries[name] = {k: e.value for k, e in pooled(runs).items()}
    return sim.pollux_beside_paper(summaries)


def _value(key: str, value: float) -> str:
    if math.isnan(value):  # undefined in every run (metrics.SHARE_OF)
        return "—"
    if key == "preemption_ratio":
        return f"{value:.2%}"
    if key == "jobs_unfinished":  # a mean over replications: 0.4 is not 0
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    return f"{value:,.0f}"


def _contributions_table(gains: Any, format_ratio: Any, estimate: Any) -> Table:
    """Each feature's gain as ``1.02x [0.99, 1.05]`` and its plain reading."""
    rows = []
    for _, g in gains.iterrows():
        cells = [
            format_ratio(estimate(g[c], g[f"{c} low"], g[f"{c} high"], 0))
            for c in ("JCT gain", "queue gain")
        ]
        rows.append([g["feature"], *cells, g["reading"]])
    return Table(["what it buys", "JCT gain", "queue gain", "reading"], rows)


def _basic_bound(
    frame: Any, seeds: List[int], share: float, elastic: Dict[str, Any]
) -> Dict[str, float]:
    """``aryl.sim.elastic_bound`` of each seed's Basic jobs on the whole trace, averaged
    over the seeds (as every row of a replication draws its own)."""
    from ..engine.runs import trace_jobs
    from ..sim import elastic_bound, scenario

    bounds = [
        elastic_bound(
            scenario(
                trace_jobs(frame, any_type_share=share, seed=s), "basic", s, **elastic
            )
        )
        for s in seeds
    ]
    return {key: sum(b[key] for b in bounds) / len(bounds) for key in bounds[0]}


def answer_record(
    table: Any, found: Findings, over: str, per_group: Optional[pd.DataFrame] = None
) -> Dict[str, Any]:
    """The whole answer as JSON (``compare.json``, ``--format json``): the answer
    lines, what the intervals are over, the reference and what makes it unfit, every
    row's means with their intervals and speed-ups, the ledger, each feature's gain
    and the orderings. NaN is null."""
    from ..engine.metrics import LEDGER_KEYS

    def records(frame: pd.DataFrame) -> List[Dict[str, Any]]:
        return [
            {str(k): _number(v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")
        ]

    rows = table.table
    return {
        "answers": list(found.answers),
        "intervals_over": over,
        "reference": table.reference,
        "reference_problems": list(found.reference_problems),
        "rows": records(rows.rename_axis("run").reset_index()),
        "ledger": records(rows[list(LEDGER_KEYS)].rename_axis("run").reset_index()),
        "contributions": records(found.gains),
        "orderings": _jsonable(found.verdicts),
        "groups": None if per_group is None else records(per_group),
    }


def _number(x: Any) -> Any:
    """A JSON value: NaN as null, numpy numbers as Python's."""
    if isinstance(x, float) and math.isnan(x):
        return None
    return x.item() if hasattr(x, "item") else x


def _jsonable(verdicts: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The ordering verdicts with each link's interval as numbers (NaN as null)."""

    def number(x: float) -> Optional[float]:
        return None if math.isnan(x) else x

    return {
        claim: {
            "verdict": v["verdict"],
            "why": v.get("why"),
            "metric": v["metric"],
            "values": v["values"],
            "links": [
                {
                    "claim": f"{a} {op} {b}",
                    "difference": number(d.value),
                    "low": number(d.low),
                    "high": number(d.high),
                    "verdict": link,
                }
                for a, op, b, d, link in v["links"]
            ],
        }
        for claim, v in verdicts.items()
    }
