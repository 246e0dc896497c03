"""What ``aryl live`` shows: its progress while it runs (``LiveProgress``), then the live
run beside the simulated one (``comparison_table``, ``sim_vs_live_line``), the loaning
ledger of both and a warning when the start latency dominates (``latency_warning``)."""

from __future__ import annotations

import math
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from .._display import Table
from .output import ledger_table

#: The rows of the sim-vs-live table: summary key, label, how the difference reads.
ROWS: Tuple[Tuple[str, str, str], ...] = (
    ("jct_mean", "mean JCT (s)", "%"),
    ("jct_p95", "p95 JCT (s)", "%"),
    ("queuing_mean", "mean queuing (s)", "%"),
    ("preemptions", "preemptions", "count"),
    ("jobs_finished", "jobs finished", "count"),
)
#: Above this share of the mean job's duration, the start latency times the
#: compression (``RayBackend.start_overhead``) dominates what live measures: a warning.
LATENCY_SHARE = 0.1


class LiveProgress:
    """Progress of a live run on stderr (rich, as ``simulate`` shows it), for a
    person watching: jobs submitted, running and finished, servers on loan, simulated
    and wall time. A thread reads the controller's record twice a second."""

    def __init__(self, controller: Any, enabled: bool, stream: Any = None) -> None:
        self.controller, self.enabled, self.stream = controller, enabled, stream
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._bar: Any = None

    def line(self) -> str:
        """What the bar says now."""
        return progress_line(self.controller)

    def __enter__(self) -> LiveProgress:
        if not self.enabled:
            return self
        from rich.console import Console as RichConsole
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        console = RichConsole(
            file=self.stream or sys.stderr, force_terminal=True if self.stream else None
        )
        self._bar = RichProgress(
            TextColumn("live"),
            BarColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._task = self._bar.add_task("", total=max(1, len(self.controller.jobs)))
        self._bar.start()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def _draw(self) -> None:
        try:
            finished = len(self.controller.record.finished)
            self._bar.update(self._task, completed=finished, description=self.line())
        except Exception:  # the record changed while read: the next draw shows it
            pass

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._draw()
            self._bar.stop()


def progress_line(controller: Any) -> str:
    """Jobs submitted, running and finished, servers on loan, simulated time."""
    record = controller.record
    submitted = len(record.arrived)
    finished = len(record.finished)
    running = sum(1 for workers in list(record.workers.values()) if workers)
    now = controller.clock.now() if controller.clock is not None else 0.0
    return (
        f"{submitted}/{len(controller.jobs)} submitted, {running} running, "
        f"{finished} finished; {len(record.on_loan)} on loan; "
        f"simulated {_hours(now)}"
    )


def _hours(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"


def latency_warning(overhead: float, jobs: Any, compression: float) -> str:
    """A warning when the start latency measured (simulated seconds a start, the wall
    latency times the compression) is a large share (``LATENCY_SHARE``) of the mean
    job's duration: live then measures Ray's start more than the schedule."""
    durations = [float(j.duration) for j in jobs]
    mean = sum(durations) / len(durations) if durations else 0.0
    if mean <= 0.0 or overhead < LATENCY_SHARE * mean:
        return ""
    return (
        f"each start waited {overhead:,.0f} simulated s for Ray ({overhead / compression:.1f} "
        f"wall s x --compression {compression:g}), {overhead / mean:.0%} of the mean "
        f"job's {mean:,.0f} s: at this compression, live measures Ray's start latency "
        "more than the schedule (queuing above all); lower --compression for a "
        "comparison"
    )


def live_ledger_table(result: Any, simulated: Any) -> Table:
    """The loaning ledger (``output.ledger_table``) of the live and the simulated run."""
    import pandas as pd

    rows = {"live": result.summary(), "simulated": simulated.summary()}
    return ledger_table(pd.DataFrame.from_dict(rows, orient="index"))


def comparison_table(result: Any, simulated: Any) -> Table:
    """Live, simulated and the difference, one row per metric of ``ROWS``."""
    rows: List[List[Any]] = []
    shown: List[List[str]] = []
    a, b = _metrics(result), _metrics(simulated)
    for key, label, kind in ROWS:
        diff = _difference(a[key], b[key], kind)
        rows.append([label, a[key], b[key], diff])
        shown.append([label, _number(a[key]), _number(b[key]), _diff_text(diff, kind)])
    return Table(["metric", "live", "simulated", "difference"], rows, shown)


def sim_vs_live_line(result: Any, simulated: Any) -> str:
    """One line: the difference in mean and p95 JCT, queuing and preemptions."""
    a, b = _metrics(result), _metrics(simulated)
    parts = [
        f"{label.split(' (')[0]} {_diff_text(_difference(a[k], b[k], kind), kind)}"
        for k, label, kind in ROWS[:4]
    ]
    return "live vs simulated: " + ", ".join(parts)


def _metrics(result: Any) -> Dict[str, float]:
    out = dict(result.summary())
    out["preemptions"] = float(result.jobs["preemptions"].sum())
    return out


def _difference(live: float, simulated: float, kind: str) -> float:
    if kind == "count":
        return live - simulated
    if not simulated or math.isnan(simulated) or math.isnan(live):
        return math.nan
    return 100.0 * (live - simulated) / simulated


def _number(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.0f}"


def _diff_text(diff: float, kind: str) -> str:
    if math.isnan(diff):
        return "—"
    return f"{diff:+.0f}" if kind == "count" else f"{diff:+.1f}%"
