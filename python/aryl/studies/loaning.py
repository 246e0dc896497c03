"""Why loaning buys what it buys, told from the comparison's own runs.

When ``aryl compare`` finds that loaning buys nothing, a reader needs the reason and
what would change it. ``why_no_gain`` says it from the run's figures: the share of
the lent GPU-hours training used, the preemptions, how fast a loaned GPU is, how many
jobs may use one, and how long jobs wait against how long they run (a job takes a
slower GPU only when it would finish sooner there than by waiting: ``docs/model.md``).
``gains_at_speeds`` measures loaning's gain (*Elastic only, aryl* over *Aryl Basic*,
paired) with the loaned GPU at other speeds, the paper's reading (as fast as a
training GPU) among them, and ``break_even`` reads the speed from which it pays
``PAYS`` or more. Only *Aryl Basic* is run again: *Elastic only, aryl* lends nothing,
so a loaned GPU's speed plays no part in it and its runs are reused.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..defaults import DEFAULT_GPU_SPEED
from .comparison import Comparison
from .confidence import Estimate, negligible
from .replications import common_ratio

#: The rows that answer "does loaning pay": with loaning, and the same without it.
WITH, WITHOUT = "Aryl Basic", "Elastic only, aryl"

#: A gain that pays: mean JCT at least this much shorter.
PAYS = 0.01

#: Loaned-GPU speeds (of a training GPU) measured for the break-even; the last is the
#: paper's reading (a loaned GPU as fast as a training one).
BREAK_EVEN_SPEEDS = (0.5, 0.75, 0.9, 1.0)


def loaning_gain(comparison: Comparison) -> Optional[Estimate]:
    """Loaning's paired gain in ``comparison`` (``WITHOUT`` over ``WITH``), or None
    when either row did not run."""
    samples = comparison.samples
    if samples is None or not {WITH, WITHOUT} <= set(samples["run"]):
        return None
    return common_ratio(comparison.runs, samples, WITHOUT, WITH)[0]


def buys_nothing(gain: Estimate) -> bool:
    """Whether a gain reads as nothing: its interval includes 1, or it is
    ``confidence.negligible``."""
    return gain.includes(1.0) or negligible(gain)


def why_no_gain(
    comparison: Comparison, loaned_gpu: str, speed: float, any_type_share: float
) -> str:
    """One sentence from ``WITH``'s means in ``comparison``: how much of the lent
    capacity training used, the preemptions, and what keeps jobs off loaned GPUs."""
    keys = ("lent_gpu_hours", "lent_used_share", "queuing_mean", "jct_mean")
    means = comparison.table.loc[WITH].to_numpy(dtype=float)
    at = dict(zip(comparison.columns, means))
    lent, share, queue, jct, preemptions = (at[k] for k in (*keys, "preemptions"))
    running = jct - queue
    preempted = (
        "no reclaim preempted a job"
        if preemptions == 0
        else f"reclaims preempted {preemptions:,.1f} jobs a run"
    )
    used = "no" if math.isnan(share) else f"{share:.2%} of the"
    return (
        f"Why: training used {used} {lent:,.0f} lent GPU-hours and {preempted}. A "
        f"loaned {loaned_gpu} runs at {speed:g} of a training GPU and "
        f"{any_type_share:.0%} of the jobs may run on one (--any-type-share); jobs "
        f"waited {queue:,.0f} s on average against {running:,.0f} s of running, so a "
        "job seldom finishes sooner on a loaned GPU than by waiting for its own."
    )


def gains_at_speeds(
    comparison: Comparison,
    speeds: Sequence[float],
    run_with: Callable[[float], Comparison],
) -> pd.DataFrame:
    """Loaning's gain with the loaned GPU at each of ``speeds``: ``run_with(speed)``
    runs ``WITH`` alone at that speed, on ``comparison``'s seeds and windows; each is
    paired with ``comparison``'s ``WITHOUT`` runs. Columns: ``speed``, ``gain``,
    ``low``, ``high`` (its interval), ``lent used`` (share of lent GPU-hours used)."""
    rows = []
    base = comparison.samples
    assert base is not None
    for speed in speeds:
        faster = run_with(speed)
        assert faster.samples is not None
        name = f"{WITH} @ {speed:g}"
        samples = pd.concat(
            [
                base[base["run"] == WITHOUT],
                faster.samples[faster.samples["run"] == WITH].assign(run=name),
            ],
            ignore_index=True,
        )
        runs = {
            **{k: r for k, r in comparison.runs.items() if k[0] == WITHOUT},
            **{(name, s, w): r for (n, s, w), r in faster.runs.items() if n == WITH},
        }
        e, _ = common_ratio(runs, samples, WITHOUT, name)
        used = float(faster.table["lent_used_share"].astype(float)[WITH])
        rows.append(
            {
                "speed": speed,
                "gain": e.value,
                "low": e.low,
                "high": e.high,
                "lent used": used,
            }
        )
    return pd.DataFrame(rows)


def break_even(gains: pd.DataFrame, pays: float = PAYS) -> Optional[float]:
    """The loaned-GPU speed from which loaning's gain reaches ``1 + pays``, read off
    ``gains_at_speeds`` by linear interpolation between the speeds measured (the
    first measured speed if it pays already); None if no speed measured pays."""
    speed = gains["speed"].to_numpy(dtype=float)
    gain = gains["gain"].to_numpy(dtype=float)
    order = np.argsort(speed)
    speed, gain = speed[order], gain[order]
    target = 1.0 + pays
    for k, g in enumerate(gain):
        if g >= target:
            if k == 0:
                return float(speed[0])
            g0, s0 = gain[k - 1], speed[k - 1]
            return float(s0 + (speed[k] - s0) * (target - g0) / (g - g0))
    return None


def loaned_speed(config: Mapping[str, Any], loaned_gpu: str) -> float:
    """The loaned GPU's speed in a run's ``config`` (its ``gpu_speed``, else the
    default's)."""
    speeds = {**DEFAULT_GPU_SPEED, **dict(config.get("gpu_speed") or {})}
    return float(speeds.get(loaned_gpu, 1.0))


def speed_lines(gains: pd.DataFrame, over: str) -> list[str]:
    """The paper's reading (the fastest speed measured) and the break-even, in words."""
    from .verdict import answer  # the answer's own wording

    fastest = gains.iloc[int(gains["speed"].to_numpy().argmax())]
    e = Estimate(fastest["gain"], fastest["low"], fastest["high"], 0)
    speed = float(fastest["speed"])
    at = (
        "as fast as a training GPU"
        if speed == 1.0
        else f"at {speed:g} of a training GPU"
    )
    lines = [
        f"Under the paper's reading (a loaned GPU {at}, --gpu-speed): {answer(e)} "
        f"({fastest['gain']:.3f}x, {over}; {fastest['lent used']:.1%} of the lent "
        "GPU-hours used)."
    ]
    measured = " / ".join(f"{s:g}" for s in gains["speed"])
    # as the answers say it: the share by which the mean JCT is shorter
    values = " / ".join(f"{1.0 - 1.0 / g:.1%}" for g in gains["gain"])
    even = break_even(gains)
    where = (
        f"from a loaned-GPU speed of about {even:.2f}"
        if even is not None
        else "at no speed measured"
    )
    lines.append(
        f"Break-even: loaning shortens mean JCT by {PAYS:.0%} or more {where} "
        f"(shorter by {values} at {measured})."
    )
    return lines
