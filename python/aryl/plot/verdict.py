"""``verdict_cdf``: the two rows that answer each question of the verdict (with the
feature, without it: ``aryl.studies.verdict.QUESTIONS``) in one axes per question, so
that the curves a reader compares are side by side, whatever else the comparison ran."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from matplotlib import rcParams
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.transforms import offset_copy

from ..engine.result import Result
from ..studies.verdict import QUESTIONS
from .distributions import CDF_METRICS, cdf_axes, cdf_curves, check_metric
from .runs import Results, named
from .style import (
    COLUMN_WIDTH,
    Panels,
    canvas,
    compact,
    root,
    series_styles,
    title,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: A question the runs answer: (its name, (the row with the feature, the row without)).
Asked = Tuple[str, Tuple[str, str]]


def answered(names: Sequence[str]) -> List[Asked]:
    """The questions (``QUESTIONS``) whose rows are among ``names``, each with the
    first of its pairs that is (the pair ``verdict_lines`` answers it from)."""
    present = set(names)
    found = []
    for question, pairs in QUESTIONS:
        pair = next((p for p in pairs if set(p) <= present), None)
        if pair is not None:
            found.append((question, (pair[0], pair[1])))
    return found


def verdict_cdf(
    results: Results,
    metric: str = "jct",
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """Per question of the verdict, the CDFs of its two rows in one axes.

    Parameters
    ----------
    results
        A comparison's runs: a mapping row name -> ``Result`` (or a sequence named
        by ``.label``) holding both rows of at least one question (loaning:
        "Aryl Basic" and "Elastic only, aryl"; elastic scaling: "Aryl Basic" and
        "Loaning only, aryl reclaim", or without a load "Elastic only, aryl" and
        "Control: SJF, no loaning"); other rows are left out.
    metric
        ``"jct"`` (the verdict's metric, the default) or ``"queuing_time"``.
    ax
        One matplotlib ``Axes`` per question answered (a sequence; one ``Axes``
        when one is) to draw into; ``None``: a new figure, the panels side by side
        (one above the other in a figure narrower than ``COLUMN_WIDTH``).
    figsize
        The new figure's (width, height) in inches (default: 5.4 per panel, 4.6).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per question, titled with it and with the ratio of the two rows'
        means (without over with: above 1x the feature shortens the mean); the
        row with the feature and the row without as CDFs as ``cdf`` draws them
        (a row keeps its colour in every panel), each row's mean a marker on its
        curve, the panels on one time axis.

    Raises
    ------
    ValueError
        An unknown ``metric``, runs that answer no question (the message names
        the rows each needs), or ``ax`` that is not one axes per question.
    """
    check_metric(metric)
    runs = dict(named(results))
    asked = answered(list(runs))
    if not asked:
        needed = "; ".join(f"{q}: {' and '.join(pairs[0])}" for q, pairs in QUESTIONS)
        raise ValueError(
            f"verdict_cdf: the runs {sorted(runs)} answer no question of the "
            f"verdict; each needs two rows ({needed})"
        )
    rows = list(dict.fromkeys(r for _, pair in asked for r in pair))
    styles = series_styles(rows, "verdict_cdf")
    # A column-wide figure stacks the panels: side by side they would be too narrow.
    stacked = figsize is not None and figsize[0] < COLUMN_WIDTH
    fig, panels, own = canvas(
        ax,
        figsize,
        (5.4 * len(asked), 4.6),
        "verdict_cdf",
        panels=len(asked),
        nrows=len(asked) if stacked else 1,
        ncols=1 if stacked else len(asked),
        sharex=True,
        sharey=True,
    )
    spans = [
        _question_panel(axes, question, pair, runs, metric, styles)
        for axes, (question, pair) in zip(panels, asked)
    ]
    lo = min(s[0] for s in spans)
    hi = max(s[1] for s in spans)
    clipped = any(s[2] for s in spans)
    for axes in panels:
        cdf_axes(axes, metric, (lo, hi), clipped)
        _legend_below(axes)
    if own:  # the shared axis labelled once: under the last panel, left of the first
        for axes in panels[:-1] if stacked else panels[1:]:
            if stacked:
                axes.set_xlabel("")
            else:
                axes.set_ylabel("")
    heading = f"{CDF_METRICS[metric][1]} of the rows that answer each question: CDF"
    if own:
        title(fig, panels[0], heading, whole=True)
    return fig


def _question_panel(
    ax: Axes,
    question: str,
    pair: Tuple[str, str],
    runs: Dict[str, Result],
    metric: str,
    styles: Dict[str, Dict[str, Any]],
) -> Tuple[float, float, bool]:
    """One question's axes: its two rows' CDFs and means; returns ``cdf_curves``'."""
    # The title names the feature; a column-wide figure's legend does not repeat it.
    feature = "" if compact(root(ax)) else f" {question.lower()}"
    suffix = {pair[0]: f" (with{feature})", pair[1]: f" (without{feature})"}
    chosen = [(row, runs[row]) for row in pair]
    span = cdf_curves(ax, chosen, metric, styles, suffix=suffix)
    means = [_mean(runs[row], metric) for row in pair]
    for row, mean in zip(pair, means):
        if math.isfinite(mean):
            _mean_marker(ax, runs[row], metric, mean, styles[row])
    ratio = means[1] / means[0] if means[0] > 0 else math.nan
    apart = "\n" if not feature else "; "  # a column-wide figure: two lines
    told = f"{apart}mean without / with: {ratio:.2f}x" if math.isfinite(ratio) else ""
    ax.set_title(f"{question}{told}", fontsize="medium")
    return span


def _legend_below(ax: Axes) -> None:
    """The axes' legend under its x axis' label (inside, the long row names would
    cover the curves): as far below the axes as the ticks and the label reach, in
    points, whatever the axes' height; constrained layout makes room for it."""
    text = FontProperties(size=rcParams["xtick.labelsize"]).get_size_in_points()
    label = FontProperties(size=rcParams["axes.labelsize"]).get_size_in_points()
    reach = (
        rcParams["xtick.major.size"]
        + rcParams["xtick.major.pad"]
        + 1.3 * text
        + rcParams["axes.labelpad"]
        + 1.3 * label
    )
    below = offset_copy(ax.transAxes, fig=root(ax), y=-reach, units="points")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=below,
        fontsize="small",
        title="markers: the means",
        title_fontsize="small",
    )


def _mean_marker(
    ax: Axes, result: Result, metric: str, mean: float, style: Dict[str, Any]
) -> None:
    """A row's mean as its marker on its curve: at the share of jobs at most the
    mean (values below 1 s at 1 s, as the curve)."""
    values = result.jobs[metric].to_numpy(dtype=float)
    values = values[~np.isnan(values)]
    ax.plot(
        [max(mean, 1.0)],
        [float((values <= mean).mean())],
        linestyle="none",
        marker=style["marker"],
        markersize=8,
        color=style["color"],
        markeredgecolor="black",
        zorder=3,
        label="_mean",
    )


def _mean(result: Result, metric: str) -> float:
    """The mean of ``metric`` over the jobs that have it (NaN without any)."""
    values = result.jobs[metric].to_numpy(dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else math.nan
