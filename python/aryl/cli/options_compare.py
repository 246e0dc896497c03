"""``aryl compare``: the paper's comparison, its rows, seeds and windows: the options
and --help text (``parser.py`` adds the command)."""

from __future__ import annotations

from typing import Any

from ..validation import MAX_SEEDS
from .arguments import (
    _number,
    _policy,
)
from .commands import compare
from .options_shared import (
    _elastic_arguments,
    _engine_arguments,
    _group_argument,
    _plot_arguments,
    _trace_arguments,
    _window_arguments,
)


def add_parser(sub: Any) -> None:
    """The ``compare`` subcommand."""
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
    _elastic_arguments(p)
    _group_argument(
        p,
        "print what each feature buys (with --seeds or --windows: paired gains with "
        "intervals; groups.csv)",
    )
    p.add_argument(
        "--pollux-rows",
        action="store_true",
        help="add the goodput-driven rows: Pollux (its genetic search) and "
        "Aryl+TunedJobs (aryl with each job's Pollux agent), on the Basic jobs mapped "
        "onto Pollux applications, no loaning, the training GPUs as 4-GPU nodes "
        "(much slower than the other rows); then a table of them and Elastic only, "
        "aryl beside the paper's Table 3 (queuing and JCT mean, median and p95, "
        "scaling operations, the Pollux / Aryl+TunedJobs ratios; printed with "
        "--format table, always written to pollux_paper.csv). With --windows K "
        "(and --seeds) every (row, seed, window) is its own cached run: an "
        "interrupted run continues from the cache (benchmarks/README.md, "
        "'The Pollux comparison, windowed')",
    )
    p.add_argument(
        "--add-row",
        action="append",
        default=[],
        type=_policy([]),
        metavar="module:Class|path.py:Class",
        help="add a row of your own: the policy (docs/policies.md) in place of "
        "aryl's allocation in the Aryl Basic row (same jobs, loaning and reclaim), "
        "named by its name attribute or class; with --seeds, also what it gains "
        "over Aryl Basic (repeat for more rows); a spec runs that file's or module's "
        "code, once per process (docs/policies.md)",
    )
    p.add_argument(
        "--rows",
        action="append",
        metavar="NAME",
        help="run only this row (repeat for more, in the order given; names as the "
        "table shows them, quoted, e.g. --rows 'Baseline (FIFO)' --rows 'Aryl "
        "Basic'; a row of your own by its name); every file is written whatever the "
        "rows; speed-ups are over --reference, or the first row given",
    )
    p.add_argument(
        "--reference",
        metavar="NAME",
        help="the row speed-ups are taken over (default: the Baseline, or the first "
        "of --rows); aryl says first when the reference is stalled, saturated or "
        "idle, e.g. --reference 'Control: SJF, no loaning' for the SJF control",
    )
    p.add_argument(
        "--pollux-generations",
        type=_number(int, "--pollux-generations", 1, 1_000_000),
        default=100,
        metavar="N",
        help="generations of the Pollux row's genetic search per 60-s round (default "
        "100, the Pollux artifact's; the paper says 250; fewer run faster)",
    )
    p.add_argument(
        "--no-break-even",
        action="store_true",
        help="with --seeds or --windows, when loaning buys nothing aryl says why and "
        "runs Aryl Basic again with the loaned GPU at 0.5, 0.75, 0.9 and 1.0 of a "
        "training GPU (4 x the replications, cached) for the paper's reading and the "
        "speed from which loaning pays 1%%; this skips those runs",
    )
    p.add_argument(
        "--seeds",
        type=_number(int, "--seeds", 1, MAX_SEEDS),
        metavar="N",
        help="run every row with N seeds (--seed, --seed + 1, ...), the same seed for "
        "all rows of a replication, and print every mean speed-up with its 95%% "
        "interval (paired ratios; ~ marks one that includes 1.0x), what each feature "
        "buys, and each of the paper's orderings as holding, reversed or not resolved",
    )
    _window_arguments(
        p,
        "run every row on K disjoint time slices of the trace, each after a "
        "--warmup, as batches (batch means); combines with --seeds",
    )
    _engine_arguments(
        p,
        "threads",
        "threads; with --seeds or --windows, runs cached per seed and window",
    )
    p.set_defaults(run=compare)
