"""Human-readable values for notebooks and terminals: units, percentages, small HTML tables."""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Mapping, Tuple

#: Summary keys shown as percentages (they are ratios in [0, 1]).
RATIO_KEYS = ("gpu_usage", "preemption", "collateral", "flexible")

#: Readable names of the summary keys.
LABELS = {
    "queuing_mean": "queuing time, mean", "queuing_median": "queuing time, median",
    "queuing_p95": "queuing time, p95", "queuing_p99": "queuing time, p99",
    "jct_mean": "job completion time, mean", "jct_median": "job completion time, median",
    "jct_p95": "job completion time, p95", "jct_p99": "job completion time, p99",
    "gpu_usage_training": "GPU use, training cluster", "gpu_usage_overall": "GPU use, both clusters",
    "preemption_ratio": "preemption ratio (per job)", "collateral_damage": "collateral damage",
    "flexible_reclaim_share": "reclaims met without preemption", "scaling_ops": "scaling operations",
    "jobs_finished": "jobs finished", "jobs_unfinished": "jobs unfinished",
}


def duration(seconds: float) -> str:
    """``18,290 s (5.1 h)``: seconds, with a coarser unit when it helps; ``—`` for NaN."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    text = f"{seconds:,.0f} s"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if abs(seconds) >= size:
            return f"{text} ({seconds / size:.1f} {unit})"
    return text


def metric(key: str, value: Any) -> str:
    """A summary value with its unit: times in s (and h/d), ratios as percentages, counts."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if key.startswith(RATIO_KEYS):
        return "—" if math.isnan(value) else f"{value:.2%}"
    return duration(value)


def html_table(rows: Iterable[Tuple[str, Any]], caption: str) -> str:
    """A two-column HTML table (name, value), escaped, left-aligned names."""
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                   f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>"


def describe_config(config: Mapping[str, Any]) -> str:
    """The ``Config`` fields that differ from the defaults, ``name=value`` (``defaults`` if none)."""
    from .sim.simulation import Config

    default = Config()
    changed = [f"{k}={v!r}" for k, v in config.items() if getattr(default, k, object()) != v]
    return ", ".join(changed) or "defaults"
