"""Paired comparisons of two rows over the replications of a comparison.

Every row of a replication runs on the same seed and window, so two rows are
compared replication by replication (``paired_ratio``, ``paired_difference``, with
``aryl.studies.confidence``'s intervals). Where a row left jobs unfinished, a mean over
its own finished jobs drops exactly the jobs it failed: ``common_ratio`` takes each
replication's means over the jobs both rows finished (``finished_by_both``) and says
on how many (``Basis``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..engine.result import Result
from .confidence import (
    LEVEL,
    Estimate,
    difference_interval,
    ratio_interval,
)


def _ordered(samples: pd.DataFrame, name: str) -> pd.DataFrame:
    """One row's samples sorted by (window, seed), the pairing order."""
    return samples[samples["run"] == name].sort_values(["window", "seed"])


def _groups(samples: pd.DataFrame) -> Optional[List[int]]:
    """The windows as batch labels when there are several, else None (seeds)."""
    windows = samples["window"].tolist()
    return windows if len(set(windows)) > 1 else None


def _pair(
    samples: pd.DataFrame, first: str, second: str, key: str
) -> Tuple[np.ndarray, np.ndarray, Optional[List[int]]]:
    a, b = _ordered(samples, first), _ordered(samples, second)
    if list(zip(a["seed"], a["window"])) != list(zip(b["seed"], b["window"])):
        raise ValueError(f"rows {first!r} and {second!r} ran different replications")
    return a[key].to_numpy(dtype=float), b[key].to_numpy(dtype=float), _groups(a)


def paired_ratio(
    samples: pd.DataFrame,
    numerator: str,
    denominator: str,
    key: str = "jct_mean",
    level: float = LEVEL,
) -> Estimate:
    """``numerator``'s ``key`` over ``denominator``'s, replication by replication, and
    its interval (``confidence.ratio_interval``). ``samples``: a ``Comparison``'s."""
    a, b, groups = _pair(samples, numerator, denominator, key)
    return ratio_interval(a, b, level, groups)


#: The job column behind each summary key a speed-up is taken of.
JOB_COLUMN = {"jct_mean": "jct", "queuing_mean": "queuing_time"}


@dataclass(frozen=True)
class Basis:
    """The jobs a paired ratio of two rows rests on: ``jobs`` None when both rows
    finished the same jobs in every replication (their summaries' means); else the
    fewest jobs both rows finished in one replication, and how many jobs each row
    left unfinished (mean over replications)."""

    jobs: Optional[int] = None
    unfinished: Tuple[Tuple[str, float], ...] = ()

    def note(self) -> str:
        """``"'starver' left 71 jobs unfinished; on the 6,090 jobs both finished"``,
        or ``""`` on every job."""
        if self.jobs is None:
            return ""
        left = "; ".join(
            f"{row} left {_count(count)} jobs unfinished"
            for row, count in self.unfinished
            if count > 0
        )
        first = left or "the rows finished different jobs"
        return f"{first}; on the {self.jobs:,} jobs both finished"


def _count(x: float) -> str:
    """A count, or a mean of counts over replications: ``71``, ``70.4``."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def common_ratio(
    runs: Mapping[Tuple[str, int, int], Result],
    samples: pd.DataFrame,
    numerator: str,
    denominator: str,
    key: str = "jct_mean",
    level: float = LEVEL,
) -> Tuple[Estimate, Basis]:
    """``paired_ratio`` of two rows on a common basis: where they finished different
    jobs in some replication (a row that leaves jobs unfinished), each replication's
    means are taken over the jobs both rows finished, since a mean over a row's own
    finished jobs drops exactly the jobs it failed (``key``: a ``JOB_COLUMN``)."""
    order = _ordered(samples, numerator)
    pairs = [
        (runs.get((numerator, s, w)), runs.get((denominator, s, w)))
        for s, w in zip(order["seed"], order["window"])
    ]
    if key not in JOB_COLUMN or not any(
        a is not None and b is not None and not _same_finished(a, b) for a, b in pairs
    ):
        return paired_ratio(samples, numerator, denominator, key, level), Basis()
    column = JOB_COLUMN[key]
    tops, bottoms, counts = [], [], []
    for a, b in pairs:
        assert a is not None and b is not None
        top, bottom, count = _means_on_both(a, b, column)
        tops.append(top)
        bottoms.append(bottom)
        counts.append(count)
    groups = _groups(order)
    unfinished = tuple(
        (row, float(_ordered(samples, row)["jobs_unfinished"].mean()))
        for row in (numerator, denominator)
    )
    estimate = ratio_interval(tops, bottoms, level, groups)
    return estimate, Basis(min(counts), unfinished)


def one_run_ratio(
    results: Mapping[str, Result],
    numerator: str,
    denominator: str,
    key: str = "jct_mean",
) -> Optional[Tuple[float, Basis]]:
    """Two rows' ``key`` ratio from one run each (``results``: row -> its run) over the
    jobs both finished, as ``common_ratio`` takes it; None when they finished the same
    jobs (their summaries' ratio is then the answer)."""
    a, b = results[numerator], results[denominator]
    if key not in JOB_COLUMN or _same_finished(a, b):
        return None
    top, bottom, count = _means_on_both(a, b, JOB_COLUMN[key])
    unfinished = tuple(
        (row, float(results[row].jobs["finish_time"].isna().sum()))
        for row in (numerator, denominator)
    )
    return top / bottom, Basis(count, unfinished)


def _means_on_both(a: Result, b: Result, column: str) -> Tuple[float, float, int]:
    """``column``'s mean in ``a`` and in ``b`` over the jobs both finished (NaN when
    none), and how many those are."""
    both = finished_by_both(a, b, [column])
    if not len(both):
        return math.nan, math.nan, 0
    return (
        float(both[f"{column}_a"].mean()),
        float(both[f"{column}_b"].mean()),
        len(both),
    )


def finished_by_both(a: Result, b: Result, columns: Sequence[str]) -> pd.DataFrame:
    """The jobs both runs finished, indexed by job id: ``columns`` of ``a``'s jobs and
    of ``b``'s, suffixed ``_a`` and ``_b``."""

    def finished(result: Result) -> pd.DataFrame:
        jobs = result.jobs
        return jobs[jobs["finish_time"].notna()][["id", *columns]].set_index("id")

    return pd.merge(
        finished(a),
        finished(b),
        left_index=True,
        right_index=True,
        suffixes=("_a", "_b"),
    )


def _same_finished(a: Result, b: Result) -> bool:
    """Whether two runs finished the same jobs (their job lists in one order)."""
    ja, jb = a.jobs, b.jobs
    if len(ja) != len(jb) or not (ja["id"].to_numpy() == jb["id"].to_numpy()).all():
        return False
    return bool(
        (
            ja["finish_time"].notna().to_numpy() == jb["finish_time"].notna().to_numpy()
        ).all()
    )


def paired_difference(
    samples: pd.DataFrame, first: str, second: str, key: str, level: float = LEVEL
) -> Estimate:
    """``first``'s ``key`` minus ``second``'s, paired, and its interval."""
    a, b, groups = _pair(samples, first, second, key)
    return difference_interval(a, b, level, groups)
