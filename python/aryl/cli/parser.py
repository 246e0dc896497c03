"""The ``aryl`` parser: the top-level options and its commands, each command's options
and ``--help`` text in ``options_<command>.py`` (those several share in
``options_shared.py``)."""

from __future__ import annotations

import argparse
import re
from typing import Any, List, NoReturn, Optional, Sequence, Tuple

from ..validation import did_you_mean
from . import (
    options_compare,
    options_demo,
    options_simulate,
    options_sweep,
    options_traces,
)
from .options_shared import _output_arguments

EXIT_USAGE = 2


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every error is one line on stderr and exit status 2.

    Options are spelt in full (no abbreviations: ``--seed`` is not ``--seeds``), and an
    unknown option is refused by name with the closest one, before any value is read
    (else ``--trainig-servers 10`` would report "10: no such file" for JOBS)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Any = None
    ) -> Tuple[argparse.Namespace, List[str]]:
        if self._subparsers is None:  # a command's own options: all known here
            self._check_options(list(args or []))
        return super().parse_known_args(args, namespace)

    def _check_options(self, args: List[str]) -> None:
        for arg in args:
            if arg == "--":  # what follows is positional
                return
            name = arg.split("=", 1)[0]
            if name.startswith("--") and name not in self._option_string_actions:
                known = [o for o in self._option_string_actions if o.startswith("--")]
                self.error(f"unknown option {name}{did_you_mean(name, known)}")

    def error(self, message: str) -> NoReturn:
        # "aryl: error: ..." like every other error; a subcommand's name leads the message
        command = self.prog.split(maxsplit=1)[1:]
        self.exit(
            EXIT_USAGE,
            f"aryl: error: {' '.join(command + [message])}{_suggestion(message)}\n",
        )


def _suggestion(message: str) -> str:
    """ "; did you mean 'simulate'?" for a mistyped choice (a command, a policy, ...;
    ``scf`` for ``SCF``)."""
    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not match:
        return ""
    choices = re.findall(r"'([^']*)'", match.group(2)) or match.group(2).split(", ")
    return did_you_mean(match.group(1), choices)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aryl",
        description="aryl: capacity loaning and elastic scaling for deep-learning clusters. "
        "Run `aryl compare` for the paper's comparison on a real trace.",
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"aryl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    for command in (
        options_compare,
        options_simulate,
        options_sweep,
        options_demo,
        options_traces,
    ):
        command.add_parser(sub)

    from .live import add_parser as add_live  # aryl live (issue 34)

    add_live(sub, _output_arguments)
    return parser
