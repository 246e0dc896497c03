"""The answer first: one line per question ``aryl compare`` was built for.

"Should we lend our inference servers to training, and what would elastic scaling
buy?" Each question is answered from the two rows of the comparison that differ by
that feature alone (``replications.CONTRIBUTIONS``): the mean JCT of the row without
the feature over the row with it, paired replication by replication, with its 95%
interval (``confidence.ratio_interval``). A line reads, e.g.::

    Loaning: no detectable gain on this trace (1.000x [0.999, 1.000], 5 seeds)
    Elastic scaling: 9.9% shorter mean JCT [8.1%, 11.6%] (1.110x [1.088, 1.131], 5 seeds)

One run per row (no ``--seeds``) gives the change without an interval and says so;
a row needed for an answer that did not run (no load series: no loaning rows) is named.
"""

from __future__ import annotations

import math
from typing import Any, List, Mapping, Optional, Sequence

from ..engine.result import Result
from .confidence import (
    NEGLIGIBLE,
    UNDEFINED,
    Estimate,
    format_ratio,
    negligible,
)
from .pairing import one_run_ratio
from .replications import common_ratio, replications_over

#: The questions answered first: (what the line names, the pairs of rows (with the
#: feature, without it; otherwise alike) that answer it, the first pair that ran).
#: Without a load series the loaning rows do not run: elastic scaling is then
#: answered without loaning (on the Baseline's inelastic jobs the aryl scheduler is
#: SJF, so the control differs from "Elastic only, aryl" by elasticity alone).
QUESTIONS = (
    ("Loaning", (("Aryl Basic", "Elastic only, aryl"),)),
    (
        "Elastic scaling",
        (
            ("Aryl Basic", "Loaning only, aryl reclaim"),
            ("Elastic only, aryl", "Control: SJF, no loaning"),
        ),
    ),
)

#: Why a loaning row may be missing.
NO_LOAD = "the loaning rows run only with an inference load series, --load"

#: Why a row may be missing when the load series was given: the rows were chosen.
LEFT_OUT = "left out of the rows run"


def verdict_lines(
    comparison: Any = None,
    summaries: Optional[Mapping[str, Mapping[str, Any]]] = None,
    missing: str = LEFT_OUT,
    results: Optional[Mapping[str, Result]] = None,
) -> List[str]:
    """One line per question (``QUESTIONS``): the answer, its interval and what the
    interval is over.

    ``comparison`` is a replicated ``Comparison`` (``compare(..., seeds=N)``: paired
    intervals); or give ``summaries`` (row -> ``Result.summary()``: one run per row,
    no interval; with ``results``, row -> its ``Result``). Two rows that finished
    different jobs (one left jobs unfinished) are compared on the jobs both finished
    (``pairing.common_ratio``; one run per row: ``pairing.one_run_ratio``, given
    ``results``), and the line says so first. ``missing``: why a row the question needs did not run
    (``NO_LOAD``, or ``LEFT_OUT``: the line then says how to add it). With seeds
    only, a last line says what the intervals do not cover (the trace's stretch).
    """
    samples = getattr(comparison, "samples", None)
    if samples is None and summaries is None:
        raise ValueError("verdict_lines needs a replicated comparison or summaries")
    present = set(samples["run"]) if samples is not None else set(summaries or {})
    over = replications_over(samples) if samples is not None else "one run"
    lines = []
    for name, pairs in QUESTIONS:
        pair = next((p for p in pairs if set(p) <= present), None)
        if pair is None:
            needed = [r for r in pairs[0] if r not in present]
            lines.append(f"{name}: cannot tell, {_missing(needed, missing)}")
            continue
        with_row, without_row = pair
        first = ""
        if samples is not None:
            runs = getattr(comparison, "runs", None) or {}
            e, basis = common_ratio(runs, samples, without_row, with_row, "jct_mean")
            first = basis.note()
        else:
            assert summaries is not None
            ratio = summaries[without_row]["jct_mean"] / summaries[with_row]["jct_mean"]
            first = _unfinished(summaries, pair)
            common = (
                None
                if results is None
                else one_run_ratio(results, without_row, with_row)
            )
            if common is not None:  # they finished different jobs: on those both did
                ratio, first = common[0], common[1].note()
            e = Estimate(float(ratio), math.nan, math.nan, 1)
        basis_rows = "" if pair == pairs[0] else f"; {with_row} over {without_row}"
        shown = f"{first}: " if first else ""
        lines.append(
            f"{name}: {shown}{answer(e)} ({format_ratio(e)}, {over}{basis_rows})"
        )
    if samples is not None and samples["seed"].nunique() > 1:
        if samples["window"].nunique() == 1:
            lines.append(SEEDS_ONLY.format(over=over))
    return lines


#: Why a ratio has no spread: every replication gave it.
DETERMINISTIC = "deterministic: no random draw differs between them"

#: What an interval over seeds alone leaves out.
SEEDS_ONLY = (
    "(Intervals over {over} cover the runs' random draws, not which stretch of the "
    "trace ran: --windows 4 replicates over time too; docs/confidence.md.)"
)


def _missing(rows: Sequence[str], why: str) -> str:
    """Which rows a question needs and, where they were left out, how to add them."""
    if why == NO_LOAD:
        return f"the row(s) {_names(rows)} did not run ({NO_LOAD})"
    adds = " ".join(f"--rows {r!r}" for r in rows)
    return (
        f"it needs the row(s) {_names(rows)}, {why}: add them ({adds}) or leave "
        "--rows out"
    )


def _unfinished(summaries: Mapping[str, Mapping[str, Any]], rows: Sequence[str]) -> str:
    """``"Aryl Basic left 3 jobs unfinished"`` for one run per row (no job lists:
    the means stay finished-only, and the line says so first)."""
    left = [
        f"{r} left {int(summaries[r]['jobs_unfinished']):,} jobs unfinished"
        for r in rows
        if summaries[r].get("jobs_unfinished", 0) > 0
    ]
    if not left:
        return ""
    return "; ".join(left) + " (means over finished jobs only)"


def answer(gain: Estimate) -> str:
    """A JCT gain (without / with the feature, 1 = no change) in words: ``"no
    detectable gain on this trace"`` when its interval includes 1, ``"no gain that
    matters"`` when it lies within ``NEGLIGIBLE`` of no change, else how much
    shorter or longer the mean JCT is with the feature, with the interval of that
    share; without an interval, the change in one run, saying there is none."""
    v, low, high = gain.value, gain.low, gain.high
    if math.isnan(v):
        return f"undefined ({UNDEFINED})"
    if math.isnan(low):
        change = _change(v) if abs(1.0 - 1.0 / v) >= NEGLIGIBLE else "no change"
        return f"{change} in one run, no interval (--seeds 5 gives one)"
    if low == high:  # every replication gave this ratio: no draw moves it
        change = _change(v) if abs(1.0 - 1.0 / v) >= NEGLIGIBLE else "no change"
        return f"{change}, the same in every replication ({DETERMINISTIC})"
    if low <= 1.0 <= high:
        return "no detectable gain on this trace"
    if negligible(gain):
        # detectable but too small to matter: "0.0% longer" would read as a finding
        return f"no gain that matters on this trace (within {NEGLIGIBLE:.2%})"
    # the share is monotone in the gain: its bounds are the gain's, in order
    bounds = sorted(abs(1.0 - 1.0 / x) for x in (low, high))
    return f"{_change(v)} [{bounds[0]:.1%}, {bounds[1]:.1%}]"


def _change(gain: float) -> str:
    """``9.9% shorter mean JCT`` (gain 1.11: the row with the feature at 1 / 1.11)."""
    word = "shorter" if gain >= 1.0 else "longer"
    return f"{abs(1.0 - 1.0 / gain):.1%} {word} mean JCT"


def _names(rows: Sequence[str]) -> str:
    return " and ".join(repr(r) for r in rows)
