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
from pathlib import Path
from typing import Any, Dict, List, Optional

import pandas as pd

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
    QUESTION_FEATURES,
    check_groups,
    print_note,
    run_record,
    say_reference,
    say_verdict,
    show_groups,
)
from .replicated_show import (
    Findings,
    answer_record,
    interval_note,
    means_table,
    pollux_pooled,
    show_details,
    write_files,
)


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
        pollux_pooled(table) if args.pollux_rows else None,
        verdicts,
        problems,
    )
    per_group = group_gains(table, args.by, features) if args.by else None
    answer = answer_record(table, findings, over, per_group)
    if console.format == "json":  # the whole answer, not the main table alone
        print(json.dumps(answer, indent=2))
    else:
        console.show(means_table(table, problems))
        console.say(f"\n{interval_note(table, over)}\n")
    if console.format == "table":  # csv, markdown, json: the main table alone on stdout
        show_details(console, table, findings, args, frame, on, seeds, over)
        if per_group is not None:
            shown = [
                *QUESTION_FEATURES,
                *(f for f, _, _ in features[len(CONTRIBUTIONS) :]),
            ]
            show_groups(console, per_group, args.by, shown)
    record = {**run_record(vars(args), where), "seeds": seeds, "windows": args.windows}
    written = write_atomically(
        out,
        lambda folder: write_files(
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
