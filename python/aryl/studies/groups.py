"""What each feature buys each team: a replicated comparison's gains per group of jobs.

A platform team asks not only "does loaning pay" but "for whom": the same loaning
can shorten one team's jobs by a quarter and leave another's as they were.
``group_gains`` takes each feature's pair of rows (``contributions.CONTRIBUTIONS``:
with it, without it, otherwise alike) and, per value of a job column kept from the
trace (``"vc"``, the team or QoS class; ``"user"``), the paired ratio of the group's
mean JCT without / with the feature, replication by replication, with its 95%
interval (``confidence.ratio_interval``). Each replication's group means are taken
over the group's jobs both rows finished, so a row that leaves some of a team's jobs
unfinished is not credited for it (``finished`` says how many jobs a ratio rests on).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import pandas as pd

from .comparison import Comparison
from .confidence import LEVEL, ratio_interval, reading
from .contributions import CONTRIBUTIONS
from .pairing import _groups, _ordered, finished_by_both


def group_gains(
    comparison: Comparison,
    by: str = "vc",
    features: Sequence[Tuple[str, str, str]] = CONTRIBUTIONS,
    level: float = LEVEL,
) -> pd.DataFrame:
    """One row per (feature, group) whose two rows both ran: ``feature``, ``group``
    (the value of the jobs' column ``by``), ``jobs`` (the group's jobs), ``finished``
    (the fewest of them both rows finished in one replication), ``JCT gain``, ``JCT
    gain low`` / ``high`` and ``reading``; groups largest first. Raises
    ``ValueError`` when the jobs have no ``by`` values or ``comparison`` is not
    replicated."""
    samples = comparison.samples
    if samples is None:
        raise ValueError(
            "group_gains needs a replicated comparison: compare(..., seeds=N)"
        )
    first = next(iter(comparison.runs.values())).jobs
    if by not in first or first[by].isna().all():
        raise ValueError(
            f"group_gains(by={by!r}): the jobs have no {by!r} values (the trace's "
            "importer keeps 'user' and 'vc' when the trace has them)"
        )
    sizes = first[by].value_counts(sort=True)
    present = set(samples["run"])
    rows: List[Dict[str, Any]] = []
    for feature, with_row, without_row in features:
        if not {with_row, without_row} <= present:
            continue
        means = _group_means(comparison, by, without_row, with_row)
        order = _ordered(samples, with_row)
        windows = _groups(order)
        for group, size in sizes.items():
            tops, bottoms, counts = means.get(group, ([], [], []))
            if len(tops) != len(order):  # a replication where no job of it finished
                continue
            e = ratio_interval(tops, bottoms, level, windows)
            rows.append(
                {
                    "feature": feature,
                    "group": group,
                    "jobs": int(size),
                    "finished": int(min(counts)),
                    "JCT gain": e.value,
                    "JCT gain low": e.low,
                    "JCT gain high": e.high,
                    "reading": reading(e),
                }
            )
    return pd.DataFrame(rows)


def _group_means(
    comparison: Comparison, by: str, without_row: str, with_row: str
) -> Dict[Any, Tuple[List[float], List[float], List[int]]]:
    """Per group, each replication's mean JCT without and with the feature over the
    group's jobs both rows finished, and how many those were."""
    assert comparison.samples is not None
    order = _ordered(comparison.samples, with_row)
    out: Dict[Any, Tuple[List[float], List[float], List[int]]] = {}
    for s, w in zip(order["seed"], order["window"]):
        both = finished_by_both(
            comparison.runs[(without_row, s, w)],
            comparison.runs[(with_row, s, w)],
            ["jct", by],
        )
        both = both[both[f"{by}_a"].notna()]  # the group as the trace gives it
        for group, part in both.groupby(f"{by}_a", sort=False):
            tops, bottoms, counts = out.setdefault(group, ([], [], []))
            tops.append(float(np.mean(part["jct_a"])))
            bottoms.append(float(np.mean(part["jct_b"])))
            counts.append(len(part))
    return out
