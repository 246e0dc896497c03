"""Whether a comparison's reference row is fit to compare against.

A speed-up over a row is only as meaningful as that row: over a strict-FIFO Baseline
that stalls behind a job that does not fit (jobs queue while most GPUs stand idle),
over one that is saturated (the queue never drains), or on a cluster far too large
for its trace (nothing ever waits), a speed-up measures the reference's condition,
not the scheduler. ``reference_problems`` names each condition from the run's own
timeline and summary; ``aryl compare`` says it first and marks the reference.

The thresholds are fixed and documented here, never tuned per trace:

- **stalled**: for at least ``STALLED_SHARE`` of the run's time, jobs were queued while
  at least ``IDLE_GPUS`` of the training GPUs stood idle;
- **saturated**: the training GPUs were at least ``SATURATED_USE`` busy and the mean
  queue was longer than the mean running time (jobs waited longer than they ran), or
  the mean queue was longer than the trace spans;
- **idle**: the training GPUs were less than ``IDLE_USE`` busy: the cluster is far
  larger than the trace needs, and no scheduler can shorten what never waits.
"""

from __future__ import annotations

from typing import List

import numpy as np

from ..engine.result import Result

#: A stall: jobs queued while at least this share of the training GPUs is idle ...
IDLE_GPUS = 0.5
#: ... for at least this share of the run's time.
STALLED_SHARE = 0.10
#: Saturated: training GPUs at least this busy and the queue longer than the running.
SATURATED_USE = 0.90
#: Idle: training GPUs less than this busy on average.
IDLE_USE = 0.05


def reference_problems(result: Result) -> List[str]:
    """What makes ``result`` (a reference row's run) unfit to take speed-ups over,
    one sentence each, starting ``"stalled"``, ``"saturated"`` or ``"idle"``; empty
    when it is fit."""
    summary = result.summary()
    use = float(summary["gpu_usage_training"])
    queue = float(summary["queuing_mean"])
    running = float(summary["jct_mean"]) - queue
    problems = []
    stalled, hours, total = _stall(result)
    if stalled >= STALLED_SHARE:
        problems.append(
            f"stalled: for {hours:,.0f} of {total:,.0f} hours jobs queued while "
            f"{IDLE_GPUS:.0%} or more of the training GPUs stood idle (a job at the "
            "head of the queue that does not fit blocks those behind it)"
        )
    submit = result.jobs["submit_time"]
    span = float(submit.max() - submit.min()) if len(submit) else 0.0
    if (use >= SATURATED_USE and queue > running) or (span > 0 and queue > span):
        problems.append(
            f"saturated: the training GPUs were {use:.0%} busy and jobs waited "
            f"{queue:,.0f} s on average, longer than they ran ({running:,.0f} s): "
            "the queue does not drain"
        )
    if use < IDLE_USE:
        problems.append(
            f"idle: only {use:.2%} of the training GPUs were busy on average: the "
            "cluster is far larger than the trace needs, and nothing waits long "
            "enough for any scheduler to shorten"
        )
    return problems


def _stall(result: Result) -> tuple[float, float, float]:
    """The share of the run's time with jobs queued and ``IDLE_GPUS`` of the
    training GPUs idle, and those hours against the run's hours."""
    timeline = result.timeline
    capacity = float(result.capacity["training_gpus"])
    if len(timeline) < 2 or capacity <= 0:
        return 0.0, 0.0, 0.0
    t = timeline["t"].to_numpy(dtype=float)
    lasting = np.diff(t, append=t[-1])  # each row holds until the next
    stalled = (timeline["queue_length"].to_numpy() > 0) & (
        timeline["training_gpus_used"].to_numpy(dtype=float)
        <= (1.0 - IDLE_GPUS) * capacity
    )
    total = float(lasting.sum())
    if total <= 0:
        return 0.0, 0.0, 0.0
    hours = float(lasting[stalled].sum())
    return hours / total, hours / 3600.0, total / 3600.0
