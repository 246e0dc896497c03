"""``aryl compare --seeds N`` / ``--windows K``: the comparison with intervals.

Every row runs once per replication (``aryl.studies.replications``). The answers come
first (``aryl.sim.verdict_lines``); the table shows each speed-up as ``1.16x [1.12,
1.20]`` (a paired ratio with its 95% interval) and marks with ``~`` a row whose
interval includes 1.0x (none without an interval: one replication). The loaning
ledger follows, then each feature's own gain
(``aryl.studies.replications.CONTRIBUTIONS``) and the paper's orderings judged as
holding, reversed or not resolved.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from .._display import Table
from .console import Progress
from .files import output_directory, write_atomically
from .inputs import trace_frames
from .options import (
    cluster,
    config_of,
    console_of,
    elastic_options,
    own_rows,
    trace_files,
)
from .output import (
    COMMON,
    LEDGER_NOTE,
    QUESTION_FEATURES,
    check_groups,
    elastic_ceiling,
    ledger_table,
    png_metadata,
    pollux_table,
    print_note,
    provenance_columns,
    reference_mark,
    run_record,
    say_reference,
    say_verdict,
    show_groups,
    write_provenance,
)

#: Shown beside the tables: what ``~`` means.
MARK = "~"


def compare_replicated(args: argparse.Namespace) -> int:
    """``aryl compare`` with ``--seeds`` and/or ``--windows``."""
    from .. import sim
    from ..engine.runs import trace_jobs
    from ..studies.groups import group_gains
    from ..studies.replications import (
        CONTRIBUTIONS,
        contributions,
        replications_over,
        seed_list,
    )
    from ..studies.verdict import LEFT_OUT, NO_LOAD

    console = console_of(args)
    out = output_directory(args.out)
    own = own_rows(args)  # specs: worker processes import them by name
    frame, load, where = trace_frames(trace_files(args), console)
    jobs = trace_jobs(frame, any_type_share=args.any_type_share, seed=args.seed)
    check_groups(frame, args.by)
    console.say(f"Comparing on {len(jobs):,} jobs from {where}.")
    on = cluster(args, jobs)
    seeds = seed_list(args.seeds or 1, args.seed)
    table = _replicate(args, console, frame, load, on, seeds, own)
    for result in table.runs.values():
        result.check()
    problems = sim.reference_problems(table.results[table.reference])
    samples = table.samples if table.samples is not None else pd.DataFrame()
    over = replications_over(samples)
    say_reference(console, table.reference, problems, list(table.index))
    verdicts = sim.verdict_lines(
        table, missing=LEFT_OUT if load is not None else NO_LOAD
    )
    verdicts += _loaning_explained(args, console, table, frame, load, on, seeds, over)
    say_verdict(console, verdicts)
    features = CONTRIBUTIONS + sim.own_policy_features(list(own))
    findings = Findings(
        contributions(table, features=features),
        sim.check_orderings(table),
        _pollux_pooled(table) if args.pollux_rows else None,
        verdicts,
        problems,
    )
    per_group = group_gains(table, args.by, features) if args.by else None
    answer = _answer(table, findings, over, per_group)
    if console.format == "json":  # the whole answer, not the main table alone
        print(json.dumps(answer, indent=2))
    else:
        console.show(_means_table(table, problems))
        console.say(f"\n{interval_note(table, over)}\n")
    if console.format == "table":  # csv, markdown, json: the main table alone on stdout
        _show_details(console, table, findings, args, frame, on, seeds, over)
        if per_group is not None:
            shown = [
                *QUESTION_FEATURES,
                *(f for f, _, _ in features[len(CONTRIBUTIONS) :]),
            ]
            show_groups(console, per_group, args.by, shown)
    record = {**run_record(vars(args), where), "seeds": seeds, "windows": args.windows}
    written = write_atomically(
        out,
        lambda folder: _write(
            folder, table, samples, findings, record, args, seeds, answer, per_group
        ),
    )
    print_note(console, next(iter(table.results.values())))
    console.say(
        "\nWrote compare.csv (means and intervals), compare.json (the whole answer), "
        "samples.csv (one row per run), contributions.csv, "
        f"{'pollux_paper.csv, ' if findings.pollux is not None else ''}"
        f"orderings.json, provenance.json and {len(written)} "
        f"figure files to {out}/",
    )
    return 0


def _loaning_explained(
    args: argparse.Namespace,
    console: Any,
    table: Any,
    frame: Any,
    load: Any,
    on: Any,
    seeds: List[int],
    over: str,
) -> List[str]:
    """When loaning buys nothing: why (``studies.loaning.why_no_gain``), then, unless
    ``--no-break-even`` or the loaned GPU is already as fast as a training one, the
    answer under the paper's reading and the break-even speed, from Aryl Basic run
    again at ``studies.loaning.BREAK_EVEN_SPEEDS`` (cached; its cost is said)."""
    import time

    from ..studies import loaning

    gain = loaning.loaning_gain(table)
    if gain is None or not loaning.buys_nothing(gain):
        return []
    config = config_of(args)
    lent = loaned_gpu(on)
    if lent is None:  # no one loaned GPU type (several in the pool): no one speed
        return []
    speed = loaning.loaned_speed(config, lent)
    lines = [loaning.why_no_gain(table, lent, speed, args.any_type_share)]
    if args.no_break_even or speed >= 1.0:
        return lines
    speeds = [s for s in loaning.BREAK_EVEN_SPEEDS if s > speed]
    runs = len(speeds) * len(table.samples[table.samples["run"] == loaning.WITH])
    console.say(
        f"Loaning buys nothing here: {runs} more runs of Aryl Basic to say why."
    )
    started = time.perf_counter()

    def run_with(s: float) -> Any:
        at = {
            **config,
            "gpu_speed": {**dict(config.get("gpu_speed") or {}), lent: s},
        }
        only = {"rows": [loaning.WITH], "reference": None, "pollux_rows": False}
        quiet = argparse.Namespace(**{**vars(args), **only})
        return _replicate(quiet, _Silent(), frame, load, on, seeds, {}, config=at)

    gains = loaning.gains_at_speeds(table, speeds, run_with)
    cost = time.perf_counter() - started
    return [
        *lines,
        *loaning.speed_lines(gains, over),
        f"(Those {runs} runs took {cost:,.0f} s, cached in the output folder; "
        "--no-break-even skips them.)",
    ]


class _Silent:
    """A console for the runs behind an explanation: no lines, no progress bar."""

    def say(self, text: str = "") -> None:
        pass

    def progress_wanted(self) -> bool:
        return False


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


def _replicate(
    args: argparse.Namespace,
    console: Any,
    frame: Any,
    load: Any,
    on: Any,
    seeds: List[int],
    own: Any,
    config: Optional[Dict[str, Any]] = None,
) -> Any:
    """Every row once per replication (cached), with a progress bar; the
    ``sim.replicate_paper`` table. ``config``: the runs' ``Config`` fields (default:
    the options')."""
    from .. import sim
    from ..studies.replications import DEFAULT_WARMUP

    windows = args.windows
    console.say(
        f"{len(seeds)} replication{'s' * (len(seeds) != 1)} (seeds "
        f"{seeds[0]}..{seeds[-1]})"
        + (f" x {windows} windows (batches)" if windows else "")
        + " of every row.\n",
    )
    cache = False if args.no_cache else (args.cache or Path(args.out) / "cache")
    config = dict(config_of(args) if config is None else config)
    if args.pollux_rows:
        config["pollux_generations"] = args.pollux_generations
    announced: List[int] = []

    def progress(done: int, cached: int, total: int) -> None:
        if not announced:  # before anything runs: say what the cache holds
            announced.append(cached)
            where = f" in {cache}" if cache is not False else ""
            console.say(
                f"Found {cached} of {total} runs in the cache{where}; "
                f"running {total - cached}.\n"
            )
        bar.set(done / total * len(seeds))

    with Progress(len(seeds), console.progress_wanted(), unit="replication") as bar:
        return sim.replicate_paper(
            frame,
            load,
            seeds=seeds,
            **_cluster_keywords(on),
            windows=windows,
            warmup=DEFAULT_WARMUP if args.warmup is None else args.warmup,
            config=config,
            scenario_options=elastic_options(args),
            any_type_share=args.any_type_share,
            pollux_rows=args.pollux_rows,
            engine=args.engine,
            workers=args.workers,
            address=args.address,
            cache=cache,
            progress=progress,
            policies=own,
            rows=args.rows,
            reference=args.reference,
        )


def _cluster_keywords(on: Any) -> Dict[str, Any]:
    """``replicate_paper``'s cluster: the server list of ``--servers``, or the counts."""
    if isinstance(on, list):
        return {"servers": on}
    return {
        "training_servers": on.training_servers,
        "inference_servers": on.inference_servers,
    }


def loaned_gpu(on: Any) -> Optional[str]:
    """The GPU type of the inference servers a replicated comparison lends: the
    ``Cluster``'s, or the one type of a server list's inference pool (None when the
    pool mixes types, or has none: no one speed to run again at)."""
    if not isinstance(on, list):
        return str(on.inference_gpu)
    types = {s.gpu_type for s in on if s.pool == "inference"}
    return types.pop() if len(types) == 1 else None


def _means_table(table: Any, problems: Sequence[str] = ()) -> Table:
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


def _show_details(
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


def _write(
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


def _pollux_pooled(table: Any) -> Any:
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


def _answer(
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
