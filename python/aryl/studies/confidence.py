"""Confidence intervals over replications: means, paired ratios, paired differences.

Every interval here is a **two-sided Student-t interval over independent
replications** (independent seeds, or batch means of disjoint windows of one trace):
with ``n`` values of sample mean ``m`` and sample standard deviation ``s`` (``n - 1``
in the denominator), ``m ± t(n - 1, (1 + level) / 2) · s / √n``. It assumes the
replications are independent and their values roughly normal, which a run's mean over
thousands of jobs is (central limit theorem). One replication gives no interval
(``low`` and ``high`` are NaN); identical replications give a zero-width one.

``mean_interval`` is that interval for a metric's mean. ``ratio_interval`` is the one
for a **paired ratio** (common random numbers: replication ``i`` of both rows used the
same seed, the same draws): the interval is computed on the per-replication
*log*-ratios and exponentiated, so the estimate is their geometric mean. Logs because
a ratio is multiplicative and skewed: on the log scale it is symmetric, the interval
of ``b / a`` is exactly the reciprocal of the interval of ``a / b``, and no bound can
fall below 0. ``difference_interval`` is the interval for paired differences, used
where a value may be 0 (a preemption ratio) and a ratio is undefined. ``verdict``
turns an interval into ``holds``, ``reversed`` or ``not resolved`` (or ``tied``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

#: The confidence level every interval uses unless told otherwise.
LEVEL = 0.95

#: The fewest replications whose intervals are worth reading: with fewer, the t
#: quantile is large (t(1, 0.975) = 12.7, t(3, 0.975) = 3.2) and a replicated
#: comparison warns (``replications.assemble``).
MIN_REPLICATIONS = 5

#: What an interval says about a claim ("tied": a strict claim, equal in every replication).
Verdict = Literal["holds", "reversed", "not resolved", "tied"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its confidence interval over ``n`` replications.

    ``low`` and ``high`` are NaN with fewer than two replications (no interval) or
    when a value is NaN.
    """

    value: float
    low: float
    high: float
    n: int

    def includes(self, x: float) -> bool:
        """True if ``x`` lies in ``[low, high]``, or if there is no interval."""
        if math.isnan(self.low) or math.isnan(self.high):
            return True
        return self.low <= x <= self.high


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom.

    Inverts the CDF, ``1 - I(df / (df + t²); df / 2, 1 / 2) / 2`` for ``t >= 0`` (``I``
    the regularized incomplete beta function), by bisection to machine precision.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid in (low, high):
            break
        low, high = (mid, high) if _t_cdf(mid, df) < p else (low, mid)
    return 0.5 * (low + high)


def _t_cdf(t: float, df: float) -> float:
    """Student's t CDF at ``t >= 0``."""
    return 1.0 - 0.5 * _incomplete_beta(df / (df + t * t), 0.5 * df, 0.5)


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I(x; a, b)``, ``x`` in [0, 1].

    Its continued fraction (modified Lentz), on the side where it converges fast.
    """
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            out *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return out


def mean_interval(
    values: ArrayLike,
    level: float = LEVEL,
    groups: Optional[Sequence[Any]] = None,
) -> Estimate:
    """The mean of ``values`` (one per replication) and its Student-t interval.

    ``mean ± t(n - 1, (1 + level) / 2) · s / √n`` with ``s`` the sample standard
    deviation (``ddof=1``): the two-sided interval for the expected value over
    independent replications (module docstring). With ``groups`` (one label per
    value, e.g. the window of one trace each value came from), the values of a group
    are averaged first and the groups are the replications (batch means): seeds run
    on the same window share that window's jobs, so they are not independent of each
    other, while disjoint windows are treated as independent batches.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError(f"need a non-empty list of values, got shape {x.shape}")
    if groups is not None:
        x = _batch_means(x, groups)
    mean = float(x.mean())
    if len(x) < 2 or np.isnan(x).any():
        return Estimate(mean, math.nan, math.nan, len(x))
    half = t_quantile(0.5 + level / 2.0, len(x) - 1) * float(x.std(ddof=1))
    half /= math.sqrt(len(x))
    return Estimate(mean, mean - half, mean + half, len(x))


def _batch_means(x: np.ndarray, groups: Sequence[Any]) -> np.ndarray:
    """The mean of ``x`` in each group, groups in order of first appearance."""
    labels = list(groups)
    if len(labels) != len(x):
        raise ValueError(
            f"groups: one label per value, got {len(labels)} for {len(x)} values"
        )
    order = list(dict.fromkeys(labels))
    return np.array(
        [x[[g == label for g in labels]].mean() for label in order], dtype=float
    )


def ratio_interval(
    numerator: ArrayLike,
    denominator: ArrayLike,
    level: float = LEVEL,
    groups: Optional[Sequence[Any]] = None,
) -> Estimate:
    """The paired ratio ``numerator / denominator`` and its interval.

    Value ``i`` of both lists comes from replication ``i`` (same seed). The interval is
    ``mean_interval`` of the log-ratios, exponentiated (the estimate is the geometric
    mean of the ratios); why logs: the module docstring. ``groups``: as for
    ``mean_interval`` (the log-ratios of a group are averaged). A ratio that is not
    positive and finite (a mean of 0) makes the estimate NaN.
    """
    a, b = _paired(numerator, denominator)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = a / b
    if not (np.isfinite(ratios).all() and (ratios > 0).all()):
        return Estimate(math.nan, math.nan, math.nan, len(ratios))
    logs = mean_interval(np.log(ratios), level, groups)
    return Estimate(
        math.exp(logs.value), math.exp(logs.low), math.exp(logs.high), logs.n
    )


def difference_interval(
    first: ArrayLike,
    second: ArrayLike,
    level: float = LEVEL,
    groups: Optional[Sequence[Any]] = None,
) -> Estimate:
    """The paired difference ``first - second`` (replication by replication) and its
    interval: ``mean_interval`` of the differences (``groups`` as there)."""
    a, b = _paired(first, second)
    return mean_interval(a - b, level, groups)


def _paired(first: ArrayLike, second: ArrayLike) -> Tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired values need two lists of the same length, got {a.shape} and "
            f"{b.shape}"
        )
    return a, b


def verdict(difference: Estimate, strict: bool = True) -> Verdict:
    """Whether the claim "first < second" (``strict``) or "first <= second" holds.

    ``difference`` is the paired ``first - second``. The claim holds when the whole
    interval is below 0 (at or below 0 for ``<=``) and is reversed when the whole
    interval is above 0. A strict claim whose differences are all exactly 0 (the rows
    tie in every replication) is ``tied``. Otherwise, or without an interval (one
    replication), it is not resolved at this many replications.
    """
    low, high = difference.low, difference.high
    if math.isnan(low) or math.isnan(high):
        return "not resolved"
    if high < 0 or (not strict and high <= 0):
        return "holds"
    if low > 0:
        return "reversed"
    if strict and low == high == 0:
        return "tied"
    return "not resolved"


#: A change smaller than this share (the whole interval inside it) is read as none
#: that matters, though its interval may exclude 1.0x: "0.0% slower" is no finding.
NEGLIGIBLE = 0.0005


def negligible(gain: Estimate) -> bool:
    """Whether the whole interval of a gain lies within ``NEGLIGIBLE`` of 1.0x."""
    return max(abs(gain.low - 1.0), abs(gain.high - 1.0)) < NEGLIGIBLE


#: Why a ratio is undefined: a row with no finished job has no mean (NaN), and a
#: mean of 0 cannot be divided by.
UNDEFINED = "a row finished no job, or its mean is 0"

#: What a zero-width interval means: every replication gave the same value.
NO_SPREAD = (
    "no spread: no random draw differs between the replications for these rows, so "
    "the interval says nothing about other draws or stretches of the trace"
)


def reading(gain: Estimate) -> str:
    """A plain-language reading of a speed-up ratio (1 = no change).

    ``"no detectable gain"`` when the interval includes 1, ``"no gain that matters"``
    when it lies within ``NEGLIGIBLE`` of 1, else how much faster or slower, e.g.
    ``"16.0% faster"``.
    """
    if math.isnan(gain.value):
        return f"undefined ({UNDEFINED})"
    if gain.low == gain.high:
        if abs(gain.value - 1.0) < NEGLIGIBLE:
            return "no change in any replication"
        word = "faster" if gain.value > 1.0 else "slower"
        return f"{abs(gain.value - 1.0):.1%} {word} in every replication alike"
    if gain.includes(1.0):
        if math.isnan(gain.low):
            return "one replication: no interval"
        return "no detectable gain"
    if negligible(gain):
        return "no gain that matters"
    if gain.low > 1.0:
        return f"{gain.value - 1.0:.1%} faster"
    return f"{1.0 - gain.value:.1%} slower"


def format_ratio(estimate: Estimate) -> str:
    """``1.16x [1.12, 1.20]`` (``1.16x`` without an interval; ``n/a`` when NaN).

    Three decimals instead of two when the interval is narrower than 0.02, so that
    it does not print as ``[1.00, 1.00]``; a zero-width one (every replication gave
    the same ratio) is ``1.058x (no spread)``, not ``[1.058, 1.058]``.
    """
    if math.isnan(estimate.value):
        return "n/a"
    if math.isnan(estimate.low):
        return f"{estimate.value:.2f}x"
    if estimate.low == estimate.high:  # [x, x] would read as certainty
        return f"{estimate.value:.3f}x (no spread)"
    d = 3 if estimate.high - estimate.low < 0.02 else 2
    return f"{estimate.value:.{d}f}x [{estimate.low:.{d}f}, {estimate.high:.{d}f}]"
