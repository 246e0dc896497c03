"""Where a command's lines go (``Console``: ``--quiet`` and ``--format``) and its
progress bars (``Progress``, rich, on stderr)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

from .._display import Table, render


@dataclass(frozen=True)
class Console:
    """Where a command's lines and tables go: ``--quiet`` and ``--format`` as values.

    Attributes
    ----------
    quiet
        No informational lines, no progress bars (result tables still print).
    format
        The result tables' format (``aryl._display.FORMATS``).
    """

    quiet: bool = False
    format: str = "table"

    def say(self, text: str = "") -> None:
        """An informational line: beside a text table on stdout, beside csv/markdown/json
        on stderr (so stdout stays machine-readable); nothing when quiet."""
        if self.quiet:
            return
        # flushed: piped to a log or `tee`, the line shows when it happens, not at exit
        print(
            text, file=sys.stdout if self.format == "table" else sys.stderr, flush=True
        )

    def show(self, table: Table) -> None:
        """The command's result table, in ``format`` (printed even when quiet)."""
        print(render(table, self.format))

    def progress_wanted(self) -> bool:
        """Progress bars only for a person watching: both streams terminals, not quiet."""
        return not self.quiet and sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """Progress bars (rich) on stderr across a command's runs: one for the command
    (``run 3/8``, its share done, elapsed time and ETA) and one for the run under way
    (its name, the simulated day, its own progress and ETA: a long run, a Pollux row
    say, shows it is alive). Disabled, it does nothing. ``unit`` names what is counted
    (``replication 2/5: seed 1``).

    Use as a context manager; ``run(name)`` gives the ``progress`` callback of the next
    run (``aryl.sim.simulate``'s ``progress(fraction, now)``: a fraction in [0, 1] of
    that run and its simulated time, shown as the day under way). Redrawn in place
    in a terminal (rich detects it, and Jupyter) about ten times a second.
    """

    def __init__(
        self, runs: int, enabled: bool, stream: Any = None, unit: str = "run"
    ) -> None:
        self.runs, self.started, self.unit = runs, 0, unit
        self._bar: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            # force_terminal=False would never redraw: None lets rich detect a
            # terminal (or Jupyter); a stream given (tests) is drawn as one.
            console = Console(
                file=stream or sys.stderr, force_terminal=True if stream else None
            )
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
            )
            self._task = self._bar.add_task("", total=runs)
            self._current = self._bar.add_task("", total=1.0, visible=False)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            if exc[0] is None:
                self._bar.update(
                    self._task,
                    completed=self.runs,
                    description=f"{self.runs} {self.unit}{'s' * (self.runs != 1)} done",
                )
            self._bar.update(self._current, visible=False)
            self._bar.stop()

    def set(self, done: float) -> None:
        """``done`` of the bar's units finished (replications, some partly)."""
        if self._bar is not None:
            description = f"{self.unit}s: {done:.1f}/{self.runs}"
            self._bar.update(
                self._task, completed=done, description=description, refresh=True
            )

    def run(
        self, name: str, last_submit: float = 0.0
    ) -> Callable[[float, float], bool]:
        """The ``progress`` callback of the next run, named ``name``: it shows the
        simulated day (``simulated_day``; ``last_submit``: the run's last submission
        time in s)."""
        index = self.started
        self.started += 1
        description = f"{self.unit} {index + 1}/{self.runs}"

        said = [""]

        def report(fraction: float, now: float) -> bool:
            if self._bar is not None:
                done = min(max(float(fraction), 0.0), 1.0)
                self._bar.update(self._task, completed=index + done)
                day = f"  {name}: {simulated_day(now, last_submit)}"
                # drawn at once when the day changes (else at rich's next redraw)
                self._bar.update(
                    self._current,
                    completed=done,
                    description=day,
                    refresh=day != said[0],
                )
                said[0] = day
            return True

        if self._bar is not None:  # drawn now: a fast run may end before the next
            self._bar.update(self._task, completed=index, description=description)
            self._bar.reset(self._current, total=1.0, description=f"  {name}")
            self._bar.update(self._current, visible=True, refresh=True)
        return report


#: Seconds in a simulated day.
DAY = 86400.0


def simulated_day(now: float, last_submit: float) -> str:
    """The simulated day under way (the first is day 1) out of the days jobs arrive
    on: ``day 3 of 59``; after the last arrival's day, ``day 61 (arrivals ended on
    day 59)``."""
    days = int(last_submit // DAY) + 1
    day = int(max(now, 0.0) // DAY) + 1
    if day <= days:
        return f"day {day} of {days}"
    return f"day {day} (arrivals ended on day {days})"
