"""What a replicated comparison found beside its means: what each feature buys
(``contributions``: the paired gain of the row without it over the row with it) and
the paper's orderings judged over the replications (``ordering_verdicts``,
``check_orderings``).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from .comparison import Comparison
from .confidence import LEVEL, reading, verdict
from .pairing import common_ratio, paired_difference
from .paper_orderings import ORDERING_MECHANISMS, ORDERINGS

#: Each feature's own gain: (feature, row with it, row without it; otherwise alike).
#: The gain is the row without's mean over the row with's: above 1, the feature helps.
CONTRIBUTIONS = (
    ("loaning, given elasticity", "Aryl Basic", "Elastic only, aryl"),
    ("loaning alone", "Loaning only, aryl reclaim", "Control: SJF, no loaning"),
    ("elasticity, given loaning", "Aryl Basic", "Loaning only, aryl reclaim"),
    ("reordering alone (SJF over FIFO)", "Control: SJF, no loaning", "Baseline (FIFO)"),
    ("imperfect scaling (vs linear)", "Ablation: Basic, imperfect", "Aryl Basic"),
    ("aryl placement (vs plain BFD)", "Aryl Basic", "Ablation: Basic, plain BFD"),
)


def contributions(
    comparison: Comparison,
    level: float = LEVEL,
    features: Sequence[Tuple[str, str, str]] = CONTRIBUTIONS,
) -> pd.DataFrame:
    """What each feature buys (``features``: ``CONTRIBUTIONS``, plus for rows of
    your own ``paper.own_policy_features``), from a replicated comparison.

    One row per feature whose two rows both ran: ``with`` and ``without`` (the rows),
    ``JCT gain`` and ``queue gain`` (the paired ratio without / with of the mean JCT
    and mean queuing time, with ``... low`` / ``... high``) and ``reading``: a plain
    reading of the JCT gain (``"no detectable gain"`` when its interval includes 1).
    """
    samples = _samples(comparison)
    rows = []
    for feature, with_row, without_row in features:
        if not {with_row, without_row} <= set(samples["run"]):
            continue
        row: Dict[str, Any] = {
            "feature": feature,
            "with": with_row,
            "without": without_row,
        }
        for column, key in (("JCT gain", "jct_mean"), ("queue gain", "queuing_mean")):
            e, basis = common_ratio(
                comparison.runs, samples, without_row, with_row, key, level
            )
            row.update(
                {column: e.value, f"{column} low": e.low, f"{column} high": e.high}
            )
            if key == "jct_mean":
                first = basis.note()
                row["reading"] = f"{first}: {reading(e)}" if first else reading(e)
                row["jobs compared"] = (
                    math.nan if basis.jobs is None else float(basis.jobs)
                )
        rows.append(row)
    return pd.DataFrame.from_records(rows)


def ordering_verdicts(
    comparison: Comparison, level: float = LEVEL
) -> Dict[str, Dict[str, Any]]:
    """``aryl.sim.ORDERINGS`` judged over replications: claim -> ``{"verdict": "holds" |
    "reversed" | "not resolved" | "tied" | "not tested", "holds": verdict == "holds",
    "why", "metric", "values": {row: mean}, "links": [(row, op, row, difference
    Estimate, verdict)]}``.

    Each link ``a < b`` (or ``<=``) is judged on the paired difference ``a - b``
    (``confidence.verdict``); a chain holds if every link does, is reversed if any link
    is, tied if any is, and is not resolved otherwise. A claim whose rows show no
    event of what it compares (``paper_orderings.ORDERING_MECHANISMS``: no preemption, no loaned
    server used, no elastic job scaled) is ``not tested``, ``why`` saying what did
    not happen (None otherwise). Claims naming a missing row are left out.
    """
    samples = _samples(comparison)
    present = set(samples["run"])
    out: Dict[str, Dict[str, Any]] = {}
    for claim, metric, chain in ORDERINGS:
        if not set(chain[::2]) <= present:
            continue
        links = []
        for a, op, b in zip(chain[:-1:2], chain[1::2], chain[2::2]):
            d = paired_difference(samples, a, b, metric, level)
            links.append((a, op, b, d, verdict(d, strict=op == "<")))
        verdicts = [link[-1] for link in links]
        overall = next(
            (v for v in ("reversed", "tied") if v in verdicts),
            "holds" if set(verdicts) == {"holds"} else "not resolved",
        )
        why = _untested(samples, claim, chain[::2])
        if why is not None:
            overall = "not tested"
        means = comparison[metric].astype(float)
        values = {r: float(means[r]) for r in chain[::2]}
        out[claim] = {
            "verdict": overall,
            "holds": overall == "holds",
            "why": why,
            "metric": metric,
            "values": values,
            "links": links,
        }
    return out


def _untested(samples: pd.DataFrame, claim: str, rows: Sequence[str]) -> Optional[str]:
    """What did not happen in ``rows`` for ``claim`` to be tested
    (``paper_orderings.ORDERING_MECHANISMS``), or None when it happened in some replication."""
    if claim not in ORDERING_MECHANISMS:
        return None
    row, key, missing = ORDERING_MECHANISMS[claim]
    runs = samples[samples["run"].isin(rows if row is None else [row])]
    if key not in runs or (runs[key].to_numpy(dtype=float) > 0).any():
        return None
    return missing


def _samples(comparison: Comparison) -> pd.DataFrame:
    samples: Optional[pd.DataFrame] = getattr(comparison, "samples", None)
    if samples is None:
        raise ValueError(
            "this comparison has no replications: run compare(..., seeds=N or windows=K)"
        )
    return samples


def check_orderings(
    summaries: Union[Mapping[str, Mapping[str, float]], Comparison],
) -> Dict[str, Dict[str, Any]]:
    """Which of ``ORDERINGS`` hold for one set of rows (name -> ``Result.summary()``).

    Returns claim -> ``{"holds": bool, "values": {row: value}}``; claims naming a row that is
    missing (e.g. the loaning rows without a load series) are left out. Given a replicated
    ``Comparison`` (``compare(..., seeds=N)``), each claim is judged over the replications
    instead: ``"verdict"`` is ``holds``, ``reversed``, ``tied`` or ``not resolved``
    (``ordering_verdicts``).
    """
    if getattr(summaries, "samples", None) is not None:
        return ordering_verdicts(summaries)  # type: ignore[arg-type]
    out: Dict[str, Dict[str, Any]] = {}
    for claim, metric, chain in ORDERINGS:
        rows = chain[::2]
        if not all(r in summaries for r in rows):
            continue
        values = {r: float(summaries[r][metric]) for r in rows}
        holds = all(
            values[a] < values[b] if op == "<" else values[a] <= values[b]
            for a, op, b in zip(chain[:-1:2], chain[1::2], chain[2::2])
        )
        out[claim] = {"holds": holds, "metric": metric, "values": values}
    return out
