"""``aryl demo``: reclaim on a packed cluster under every policy: the options and
--help text (``parser.py`` adds the command)."""

from __future__ import annotations

from typing import Any

from ..validation import MAX_INT, MAX_SEED
from .arguments import _number
from .commands import demo
from .options_shared import _output_arguments


def add_parser(sub: Any) -> None:
    """The ``demo`` subcommand."""
    p = sub.add_parser(
        "demo",
        help="reclaim loaned servers on a packed cluster under every policy",
        description="Build a seeded cluster whose job sizes follow the ITP trace, then "
        "reclaim on-loan servers under the aryl, scf, random, exact, least-work and "
        "exact-work policies and print how many jobs each preempts.",
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
