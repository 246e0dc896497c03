"""``aryl traces export``: the embedded traces as example files: the options and --help
text (``parser.py`` adds the command)."""

from __future__ import annotations

from typing import Any

from .arguments import _writable_folder
from .commands import export_traces
from .options_shared import _output_arguments


def add_parser(sub: Any) -> None:
    """The ``traces`` subcommand."""
    p = sub.add_parser(
        "traces",
        help="write the embedded traces as example files",
        description="aryl traces export [FOLDER]: write the embedded ITP cluster04 jobs "
        "(jobs.csv, the common CSV format) and Alibaba-2018 inference load (load.csv) to "
        "FOLDER, as examples of the files `aryl compare JOBS.csv --load LOAD.csv` takes.",
    )
    p.add_argument("action", choices=["export"], help="what to do: export")
    p.add_argument(
        "folder",
        nargs="?",
        default="aryl-results/traces",
        metavar="FOLDER",
        type=_writable_folder("FOLDER"),
        help="where the files go (default aryl-results/traces)",
    )
    _output_arguments(p)
    p.set_defaults(run=export_traces)
