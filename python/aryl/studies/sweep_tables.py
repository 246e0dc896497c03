"""A sweep's table summarised and written: ``sweep_summary`` (each point's mean and
interval over a seed axis), ``interval_note`` (why an interval is not one to read)
and ``csv_frame`` (the table as ``aryl sweep`` writes it to CSV).
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..engine.metrics import OPTIONAL_KEYS, SUMMARY_KEYS, defined_runs
from .confidence import LEVEL, mean_interval

#: The columns of a sweep's table that describe a run, neither parameter nor metric.
RUN_COLUMNS = (
    "label",
    "jobs",
    "trace_fingerprint",
    "fingerprint",
    "aryl_version",
    "cached",
    "seconds",
    "cpu_seconds",
    "peak_memory_bytes",
    "saved",
)


def sweep_summary(
    table: pd.DataFrame,
    over: str = "seed",
    metrics: Optional[Sequence[str]] = None,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Each point of a sweep over ``over`` (every other parameter equal): the mean of
    each metric over its runs and the Student-t interval (``confidence.mean_interval``).

    ``table`` is ``sweep``'s (one row per run); the runs of a point are its rows that
    differ only in ``over`` (a seed axis: ``grid={"seed": [0, 1, 2], ...}``). Its
    parameters are every column but the metrics and the run's own columns (label,
    fingerprints, timings, ...). ``metrics``: summary keys (default: every one in the
    table). A share that is 0 / 0 in a run (``collateral_damage`` without a reclaim:
    ``metrics.SHARE_OF``) leaves that run out of its mean, as a replicated comparison
    does.

    Returns one row per point, in the table's order: its parameters (``over`` left
    out), ``replications`` (its runs), ``<over>s`` (their values, e.g. ``"0, 1, 2"``)
    and for each metric ``<key>`` (the mean), ``<key>_low``, ``<key>_high`` (the
    interval at ``level``) and ``<key>_note``, which says in words where there is no
    interval to read: ``"1 seed: no interval"`` (``low``, ``high`` NaN), ``"no
    spread: the same in all 3 seeds"`` (a zero-width interval: no seed's draws moved
    it, which is not certainty), or how many runs it is undefined in; else empty.
    """
    if over not in table.columns:
        raise ValueError(
            f"sweep_summary: the table has no {over!r} column to summarise over "
            f"(its columns: {list(table.columns)})"
        )
    every = [k for k in (*SUMMARY_KEYS, *OPTIONAL_KEYS) if k in table.columns]
    keys = every if metrics is None else list(metrics)
    missing = [k for k in keys if k not in table.columns]
    if missing:
        raise ValueError(
            f"sweep_summary: metric(s) {missing} not in the table{_hint(missing, every)}"
        )
    skip = {*SUMMARY_KEYS, *OPTIONAL_KEYS, *RUN_COLUMNS, over}
    params = [c for c in table.columns if c not in skip]
    points: Dict[str, List[int]] = {}
    for i, (_, row) in enumerate(table.iterrows()):
        key = json.dumps([row[c] for c in params], default=repr, sort_keys=True)
        points.setdefault(key, []).append(i)
    records = []
    for rows in points.values():
        mine = table.iloc[rows]
        first = mine.iloc[0]
        record: Dict[str, Any] = {c: first[c] for c in params}
        record["replications"] = len(rows)
        record[f"{over}s"] = ", ".join(str(v) for v in mine[over])
        for key in keys:
            record.update(_summarised(mine, key, over, level))
        records.append(record)
    return pd.DataFrame.from_records(records)


def _hint(names: Sequence[str], choices: Sequence[str]) -> str:
    from ..validation import did_you_mean

    return did_you_mean(names[0], choices) if len(names) == 1 else ""


def _summarised(
    mine: pd.DataFrame, key: str, over: str, level: float
) -> Dict[str, Any]:
    """``key``'s mean, interval and note over one point's runs ``mine``."""
    n = len(mine)
    mine = defined_runs(key, mine)
    values = mine[key].to_numpy(dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        e_value, low, high = math.nan, math.nan, math.nan
        note = f"undefined in every {over}"
    else:
        e = mean_interval(values, level)
        e_value, low, high = e.value, e.low, e.high
        note = interval_note(values, over)
        if len(values) < n:
            left = f"undefined in {n - len(values)} of {n} {over}s, left out"
            note = f"{left}; {note}" if note else left
    return {
        key: e_value,
        f"{key}_low": low,
        f"{key}_high": high,
        f"{key}_note": note,
    }


def interval_note(values: Any, over: str = "seed") -> str:
    """Why the interval of ``values`` (one per ``over``, e.g. per seed) is not one to
    read, in words: ``"1 seed: no interval"``, ``"no spread: the same in all 3
    seeds"`` (``"... in both seeds"``); ``""`` when it is."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return f"{len(x)} {over}: no interval"
    if np.all(x == x[0]):
        every = f"both {over}s" if len(x) == 2 else f"all {len(x)} {over}s"
        return f"no spread: the same in {every}"
    return ""


def csv_frame(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as ``aryl sweep`` writes it to CSV: a value that is not a scalar (a
    ``gpu_speed`` dict, a list) as JSON, so that the file reads back
    (``json.loads``) and gives the value as ``--grid`` takes it."""

    def plain(value: Any) -> Any:
        if isinstance(value, (dict, list, tuple)):
            return json.dumps(value, default=repr, sort_keys=True)
        return value

    out = table.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(plain)
    return out
