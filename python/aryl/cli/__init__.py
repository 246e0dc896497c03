"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare``, ``aryl sweep``, ``aryl demo``
and ``aryl traces export``.

``main`` parses, runs one command and turns every failure into one line and an exit
status. The package's modules: ``parser`` (the commands and their options),
``arguments`` (option values checked at parse time), ``options`` (the parsed options
as the values the layers below take: only the commands hold the ``Namespace``),
``inputs`` (trace, cluster and config), ``commands`` and ``replicated`` (what each
command does), ``output`` (tables, progress, result files and their provenance),
``files`` (result files written atomically) and ``demo`` (the cluster of ``aryl
demo``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, Optional, Sequence

from .arguments import parse_grid
from .parser import EXIT_INTERRUPTED, EXIT_USAGE, _parser

__all__ = ["main"]


def _check(args: argparse.Namespace) -> None:
    """What one option alone cannot say: sweep parameter names, --grid with --set,
    --trace-format without a trace, options that another one makes meaningless."""
    trace_format = getattr(args, "trace_format", "aryl")
    if trace_format != "aryl" and args.jobs is None:
        raise ValueError(f"--trace-format {trace_format} needs a JOBS file")
    if getattr(args, "no_cache", False) and args.cache is not None:
        raise ValueError("--cache and --no-cache: give one of them")
    engine = getattr(args, "engine", "ray")  # `aryl live` has no engine: Ray's
    if getattr(args, "address", None) and engine not in ("auto", "ray"):
        raise ValueError(
            f"--address is a Ray cluster's: it needs --engine ray (or auto), not "
            f"--engine {args.engine}"
        )
    if getattr(args, "warmup", None) is not None and args.windows is None:
        raise ValueError(
            "--warmup is the warm-up before each window: it needs --windows"
        )
    if getattr(args, "seeds", None) is not None:
        from ..sim.replications import seed_list

        seed_list(args.seeds, args.seed)  # --seed + --seeds past the largest seed
    if args.command == "sweep":
        from ..sim.sweep import grid_points

        names, grid = parse_grid(args.set, "--set"), parse_grid(args.grid, "--grid")
        both = sorted(set(names) & set(grid))
        if both:
            raise ValueError(f"{', '.join(both)}: given to both --set and --grid")
        grid_points(
            {k: v[0] for k, v in names.items()}, grid
        )  # unknown names raise here


def _warning(
    message: Any,
    category: Any,
    filename: str,
    lineno: int,
    file: Any = None,
    line: Optional[str] = None,
) -> None:
    """A warning as one line on stderr, without Python's source line."""
    print(f"aryl: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script; returns the exit status.

    A bad option value (a count, a number, a name, a path) stops at parse time with
    one line and ``SystemExit(2)``; other bad input (a file's contents, a sweep
    parameter) prints one line and returns 2 before any simulation; Ctrl-C prints
    one line and returns 130, leaving no partial output file behind; running out of
    memory prints one line and returns 1. Bare ``aryl`` prints the usage (status 2); a
    mistyped command, choice or option (options are spelt in full) is answered with the
    closest one ("did you mean").
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # bare `aryl`: what it can do, not "COMMAND is required"
        _parser().print_help(sys.stderr)
        return EXIT_USAGE
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if getattr(args, "quiet", False) else "default")
        warnings.showwarning = _warning
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        _check(args)
        return int(args.run(args))
    except (ValueError, TypeError, OSError) as exc:  # TraceError is a ValueError
        print(f"aryl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("aryl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as exc:
        print(
            f"aryl: error: out of memory{f' ({exc})' if str(exc) else ''}",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
