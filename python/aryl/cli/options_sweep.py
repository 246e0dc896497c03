"""``aryl sweep``: a parameter grid, its fixed values and the trace's first jobs: the
options and --help text (``parser.py`` adds the command)."""

from __future__ import annotations

from typing import Any

from ..validation import MAX_INT
from .arguments import _number
from .options_shared import (
    _engine_arguments,
    _trace_arguments,
)
from .sweep_command import SWEEP_PARAMETERS, sweep


def add_parser(sub: Any) -> None:
    """The ``sweep`` subcommand."""
    p = sub.add_parser(
        "sweep",
        help="simulate every combination of a parameter grid, on Ray",
        description="Run one simulation per combination of the --grid values (on top "
        "of the trace options and --set values) on a local Ray, or an existing Ray "
        "cluster with --address; print one table (a row per run, with its jobs left "
        "unfinished and the GPU-hours lent and used on loan) and write sweep.parquet "
        "and sweep.csv (the same rows). With a seed axis (--grid seed=0,1,2) it also "
        "prints each point's mean over its seeds with a 95% Student-t interval "
        "(or, where there is none, why: one seed, or no spread) and writes them to "
        "sweep_points.csv. Finished runs are cached by a fingerprint of trace, "
        "parameters and "
        "aryl version: a repeated sweep reads them back, an interrupted one resumes. "
        "Parameters: " + SWEEP_PARAMETERS + " and any aryl.sim.Config "
        "field (headroom, lend_hold, loaning, ...); see aryl.sim.PARAMETERS. A "
        "policy of your own runs beside the built-ins as module:Class or "
        "path.py:Class, e.g. --grid policy=aryl,mine.py:Las (each worker imports "
        "it; its code and settings are part of the cache key).",
    )
    _trace_arguments(p, "aryl-results/sweep")
    p.add_argument(
        "--grid",
        "-g",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a parameter and its values (repeat for more; every combination runs), "
        "e.g. --grid inference_servers=0,16,32,64 --grid headroom=0,0.2 --grid "
        "seed=0,1,2; GPU speeds as --gpu-speed takes them, one run's types joined "
        "by ';': --grid 'gpu_speed=T4=0.25,T4=1;P100=0.5' (or JSON: "
        '--grid \'gpu_speed={"T4":0.25},{"T4":1}\')',
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
    _engine_arguments(p, "auto", "auto: Ray if installed, else local threads")
    p.set_defaults(run=sweep)
