"""``aryl simulate``: one configuration, its policy, reclaim and scenario: the options
and --help text (``parser.py`` adds the command)."""

from __future__ import annotations

from typing import Any

from ..defaults import SIMULATION_RECLAIM_POLICIES
from .arguments import (
    _policy,
    _pollux_cluster,
    _pollux_workload,
)
from .commands import simulate
from .options_shared import (
    _elastic_arguments,
    _engine_arguments,
    _group_argument,
    _plot_arguments,
    _trace_arguments,
    _window_arguments,
)


def add_parser(sub: Any) -> None:
    """The ``simulate`` subcommand."""
    p = sub.add_parser(
        "simulate",
        help="simulate one configuration on a trace",
        description="Simulate one scheduling policy, reclaim policy and scenario on a "
        "trace; print the summary; write jobs.csv, timeline.csv, summary.json and plots.",
    )
    _trace_arguments(p, "aryl-results/simulate")
    _plot_arguments(p)
    _group_argument(p, "print queuing, JCT and slowdown")
    p.add_argument(
        "--policy",
        type=_policy(["aryl", "fifo", "sjf", "gandiva", "afs", "tiresias", "pollux"]),
        metavar="NAME|module:Class|path.py:Class",
        help="allocation policy: aryl, fifo, sjf, gandiva, afs (default: the "
        "scenario's, aryl; fifo for baseline), tiresias (least attained service on "
        "any trace, on the training servers, nothing lent; with --pollux-workload "
        "tiresias or pollux, default tiresias), or a policy of your own "
        "(docs/policies.md): module:Class or path.py:Class names a class (built "
        "without arguments) or an object with an allocate(state, epoch) method; the "
        "spec runs that file's or module's code",
    )
    p.add_argument(
        "--reclaim",
        choices=SIMULATION_RECLAIM_POLICIES,
        default="aryl",
        help="which loaned servers to return (default aryl; least-work: the least "
        "unsaved progress and restart overhead thrown away)",
    )
    p.add_argument(
        "--scenario",
        choices=["baseline", "basic", "advanced", "ideal"],
        default="basic",
        help="which jobs are elastic/hetero (default basic: elastic jobs hold 36%% of the "
        "GPU-time); baseline also turns loaning off",
    )
    _elastic_arguments(p)
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
    _window_arguments(
        p,
        "run on K disjoint time slices of the trace instead, each its own run "
        "after a --warmup (for a trace too long for one process: each run is sent "
        "its slice only), cached per window; write each window's jobs.parquet and "
        "summary.json (in windows/window-K of --out), windows.csv (one row per "
        "window) and the measured jobs pooled, with intervals over the windows; no plots "
        "(docs/ray.md)",
    )
    _engine_arguments(
        p, "threads", "threads; used with --windows only: one run per window"
    )
    p.set_defaults(run=simulate)
