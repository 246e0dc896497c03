"""The ``aryl`` command line: ``aryl simulate``, ``aryl compare``, ``aryl sweep``, ``aryl demo``
and ``aryl traces export``.

``main`` parses, runs one command and turns every failure into one line and an exit
status. The package's modules: ``parser`` (the commands and their options),
``arguments`` (option values checked at parse time), ``options`` (the parsed options
as the values the layers below take: only the commands hold the ``Namespace``),
``inputs`` (trace, cluster and config), ``commands``, ``replicated`` and
``windowed`` (what each command does), ``output`` (tables, progress, result files and their provenance),
``files`` (result files written atomically) and ``demo`` (the cluster of ``aryl
demo``).
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
import warnings
from typing import Any, Dict, Optional, Sequence, Set

from .arguments import parse_grid
from .parser import EXIT_INTERRUPTED, EXIT_USAGE, _parser
from .sweep_command import Interrupted

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
    if args.command == "simulate" and args.windows is None:
        where = [
            option
            for option, given in (
                ("--engine", args.engine != "threads"),
                ("--address", args.address),
                ("--workers", args.workers is not None),
                ("--cache", args.cache is not None),
                ("--no-cache", args.no_cache),
            )
            if given
        ]
        if where:
            raise ValueError(
                f"{', '.join(where)}: say where the windows of --windows K run; "
                "without --windows, simulate is one run in this process"
            )
    if getattr(args, "seeds", None) is not None:
        from ..studies.replications import seed_list

        seed_list(args.seeds, args.seed)  # --seed + --seeds past the largest seed
    if args.command == "sweep":
        from ..studies.sweep import grid_points

        names, grid = parse_grid(args.set, "--set"), parse_grid(args.grid, "--grid")
        both = sorted(set(names) & set(grid))
        if both:
            raise ValueError(f"{', '.join(both)}: given to both --set and --grid")
        grid_points(
            {k: v[0] for k, v in names.items()}, grid
        )  # unknown names raise here


class _Warnings:
    """Warnings as ``warnings.showwarning``: each as one line on stderr, without
    Python's source line, and each message once in a command (the runs of a
    comparison find the same thing, and the filters that would say it once are
    reset whenever a run changes them)."""

    def __init__(self) -> None:
        self.said: Set[str] = set()

    def __call__(
        self,
        message: Any,
        category: Any,
        filename: str,
        lineno: int,
        file: Any = None,
        line: Optional[str] = None,
    ) -> None:
        text = str(message)
        if text not in self.said:
            self.said.add(text)
            print(f"aryl: warning: {text}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script; returns the exit status.

    A bad option value (a count, a number, a name, a path) stops at parse time with
    one line and ``SystemExit(2)``; other bad input (a file's contents, a sweep
    parameter) prints one line and returns 2 before any simulation; Ctrl-C prints
    one line and returns 130, leaving no partial output file behind (SIGTERM alike,
    returning 143, with no Ray process left behind); running out of
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
        warnings.showwarning = _Warnings()
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    with _Sigint() as sigint:
        try:
            _check(args)
            return int(args.run(args))
        except KeyboardInterrupt as exc:
            sigint.deaf = True
            said = str(exc) if isinstance(exc, Interrupted) else "interrupted"
        except (ValueError, TypeError, OSError) as exc:  # TraceError is a ValueError
            if not sigint.seen:
                print(f"aryl: error: {exc}", file=sys.stderr)
                return EXIT_USAGE
            said = "interrupted"
        except MemoryError as exc:
            print(
                f"aryl: error: out of memory{f' ({exc})' if str(exc) else ''}",
                file=sys.stderr,
            )
            return 1
        except Exception:
            if not sigint.seen:
                raise
            said = "interrupted"  # an error Ctrl-C caused (in Ray, say): still Ctrl-C
        sigint.deaf = True
        # Here, out of the handler, the interrupted frames (and any Ray object they
        # held) are gone, so Ray can be shut down cleanly. What a Ray start cut
        # short leaves to the garbage collector (its processes' handles: "still
        # running", as Ray stops them itself) is not the user's to read.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            _stop_ray()
            gc.collect()
    print(f"aryl: {said}", file=sys.stderr)
    return 128 + sigint.signum if sigint.signum else EXIT_INTERRUPTED


class _Sigint:
    """Ctrl-C (SIGINT) and SIGTERM raise ``KeyboardInterrupt``, and are remembered
    (``seen``, ``signum``), so that an error one caused on its way out (a Ray task or
    call cut short) still ends the command as interrupted, through the same clean-up
    (a ``--local-cluster`` shut down, Ray stopped: a terminated command leaves no
    process behind), with status 128 + the signal's number. Once the command is ending
    so (``deaf``), more of either is ignored, to the exit: shutting Ray down half-way
    could crash it. Otherwise the previous handlers are put back on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.seen = self.deaf = False
        self.signum = 0
        self.previous: Dict[int, Any] = {}

    def __enter__(self) -> _Sigint:
        if threading.current_thread() is threading.main_thread():  # else: cannot
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.deaf:
            return
        self.seen = True
        self.signum = self.signum or signum
        # what a Ray start cut short leaves to the garbage collector (its processes'
        # handles, "still running": Ray stops them itself) is not the user's to read;
        # main's catch_warnings scopes this to the command
        warnings.filterwarnings("ignore", category=ResourceWarning)
        raise KeyboardInterrupt

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self.previous.items():
            # previous None: a handler not set from Python (the default)
            handler = signal.SIG_IGN if self.deaf else previous or signal.SIG_DFL
            signal.signal(signum, handler)


def _stop_ray() -> None:
    """After Ctrl-C: stop a Ray this process started, also one whose start was cut
    short (``ray.is_initialized()`` False, its processes running): left to Ray's exit
    handler, a half-started Ray could crash the exit (a segfault) and leave its
    processes behind."""
    ray = sys.modules.get("ray")
    if ray is None or not hasattr(ray, "shutdown"):  # none, or cut short importing
        return
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    if ray.is_initialized() or getattr(worker, "_global_node", None) is not None:
        gc.collect()  # object references in cycles go while Ray can still drop them
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
