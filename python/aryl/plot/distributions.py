"""Per-job distributions and per-run rates: ``cdf`` and ``preemptions``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator

from ..engine.result import Result
from .runs import Results, named
from .style import (
    PALETTE,
    RASTER_POINTS,
    Panels,
    bar_panels,
    canvas,
    compact,
    legend,
    percent,
    percent_ticks,
    root,
    series_styles,
    title,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: The per-job metrics the CDFs draw: metric -> (axis label, title, what a NaN means).
CDF_METRICS = {
    "jct": ("job completion time", "Job completion time", "unfinished"),
    "queuing_time": ("queuing time", "Queuing time", "never started"),
}

# Human-readable ticks for the log time axis of the CDFs.
_TIME_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (21600, "6 h"),
    (86400, "1 d"),
    (604800, "1 wk"),
    (2592000, "30 d"),
    (31536000, "1 y"),
)
# The ones a narrow axes has room for.
_COARSE_TICKS = tuple(t for t in _TIME_TICKS if t[1] in ("1 s", "1 min", "1 h", "1 d"))


def cdf(
    results: Results,
    metric: str = "jct",
    ax: Optional[Axes] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """Empirical CDFs of a per-job metric, one curve per run, on one axes.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, or a sequence of ``Result`` (each curve
        is named by the run's ``.label``; ``run 1``, ``run 2``, ... when empty),
        or a single ``Result``; at most ``MAX_SERIES`` (8) runs.
    metric
        ``"jct"`` (job completion time, submit to finish) or
        ``"queuing_time"`` (submit to first start).
    ax
        A matplotlib ``Axes`` to draw into (its figure is returned); ``None``: a
        new figure.
    figsize
        The new figure's (width, height) in inches (default (9.5, 4.8)).

    Returns
    -------
    matplotlib.figure.Figure
        One axes with one line per run and a legend.

    Raises
    ------
    ValueError
        An unknown ``metric``, or more than 8 runs (select the runs to compare:
        beyond 8 no colour/dash pair is left that readers tell apart).

    Notes
    -----
    The x axis is logarithmic, in seconds (ticks read 1 s, 1 min, 1 h, 1 d, ...).
    Values below 1 s -- a job that started the moment it was submitted has a
    queuing time of 0 -- are clipped to 1 s so that the log scale can show
    them; the curve therefore starts at 1 s with the share of such jobs.
    Jobs without a value (NaN: unfinished for ``jct``, never started for
    ``queuing_time``) are left out, so each curve is over the jobs that have
    a value; when any were left out the legend says how many. Each run has its
    own colour and dash (``series_styles``); curves of more than
    ``style.RASTER_POINTS`` jobs are rasterised in SVG and PDF files (the axes
    and text stay vector).
    """
    check_metric(metric)
    runs = named(results)
    styles = series_styles([name for name, _ in runs], "cdf")
    fig, (axes,), own = canvas(ax, figsize, (9.5, 4.8), "cdf")
    lo, hi, clipped = cdf_curves(axes, runs, metric, styles)
    cdf_axes(axes, metric, (lo, hi), clipped)
    title(fig, axes, f"{CDF_METRICS[metric][1]}: CDF per run", whole=False)
    legend(axes, outside=own)
    return fig


def check_metric(metric: str) -> None:
    """A ``ValueError`` unless ``metric`` is one the CDFs draw."""
    if metric not in CDF_METRICS:
        raise ValueError(
            f"unknown metric {metric!r}; expected one of {', '.join(CDF_METRICS)}"
        )


def cdf_axes(ax: Axes, metric: str, span: Tuple[float, float], clipped: bool) -> None:
    """A CDF's axes: ``metric`` on a log time axis over ``span`` (smallest, largest
    value in seconds; coarse ticks on a ``compact`` figure), shares in percent,
    labels in words (saying so when values below 1 s were ``clipped`` to 1 s)."""
    coarse = compact(root(ax))
    unit = "" if log_time_axis(ax, span[0], span[1], coarse) else "s, "
    ax.set_ylim(0, 1.02)
    percent_ticks(ax.yaxis)
    note = "; values below 1 s shown at 1 s" if clipped else ""
    ax.set_xlabel(f"{CDF_METRICS[metric][0]} ({unit}log scale{note})")
    ax.set_ylabel("share of jobs (CDF)")
    ax.grid(True, which="major", alpha=0.3)


def cdf_curves(
    ax: Axes,
    runs: List[Tuple[str, Result]],
    metric: str,
    styles: Dict[str, Dict[str, Any]],
    suffix: Optional[Dict[str, str]] = None,
) -> Tuple[float, float, bool]:
    """One empirical CDF of ``metric`` per run on ``ax`` in its style (``styles`` by
    name; ``suffix`` adds to a run's legend label); returns (smallest value, largest
    value, whether any value below 1 s was clipped to 1 s) for the log time axis."""
    missing_word = CDF_METRICS[metric][2]
    lo, hi = math.inf, -math.inf
    clipped = False
    for name, result in runs:
        style = styles[name]
        values = result.jobs[metric].to_numpy(dtype=float)
        missing = int(np.isnan(values).sum())
        values = values[~np.isnan(values)]
        clipped = clipped or bool((values < 1.0).any())
        values = np.sort(np.maximum(values, 1.0))
        label = name + (suffix or {}).get(name, "")
        if missing:
            label += f" ({missing:,} of {len(result.jobs):,} {missing_word}, excluded)"
        if len(values):
            y = np.arange(1, len(values) + 1) / len(values)
            # Start each curve at 0 so that the jump at the first value shows.
            ax.plot(
                np.r_[values[0], values],
                np.r_[0.0, y],
                drawstyle="steps-post",
                linewidth=1.8,
                label=label,
                color=style["color"],
                linestyle=style["linestyle"],
                rasterized=len(values) > RASTER_POINTS,
            )
            lo, hi = min(lo, values[0]), max(hi, values[-1])
        else:
            ax.plot(
                [],
                [],
                label=f"{label} -- no values",
                color=style["color"],
                linestyle=style["linestyle"],
            )
    return lo, hi, clipped


def log_time_axis(ax: Axes, lo: float, hi: float, coarse: bool) -> bool:
    """A log x axis over [lo, hi] seconds with ticks in human units (1 min, 1 h; only
    the ``coarse`` ones on a narrow figure if two fit) when two or more fall in it
    (then True; else plain seconds)."""
    ax.set_xscale("log")
    if not math.isfinite(lo):
        lo, hi = 1.0, 10.0
    left, right = max(lo / 1.5, 0.8), max(hi * 1.5, lo * 10)
    ax.set_xlim(left, right)
    ticks = [(t, s) for t, s in _COARSE_TICKS if coarse and left <= t <= right]
    if len(ticks) < 2:
        ticks = [(t, s) for t, s in _TIME_TICKS if left <= t <= right]
    if len(ticks) >= 2:
        ax.set_xticks([t for t, _ in ticks], [s for _, s in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    return len(ticks) >= 2


def preemptions(
    results: Results,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """Preemption ratio and collateral damage per run, one metric per axes.

    Meant for runs of the same trace that differ in reclaim policy.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.
    ax
        Two matplotlib ``Axes`` (ratio, damage) to draw into (their figure is
        returned); ``None``: a new figure with the two side by side.
    figsize
        The new figure's (width, height) in inches (default: 11 wide, taller
        with more runs).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes side by side sharing the run names (one horizontal bar per run,
        first run on top, labelled with its value to two significant digits).
        Left: the *preemption ratio* (preemptions / jobs; a job preempted twice
        counts twice, so it can pass 100%), labelled with the number of
        preemptions too. Right: the *collateral damage* (GPUs freed on servers
        that were kept, because a preempted job also ran there, per GPU
        reclaimed; see ``Result.summary``); a run that reclaimed nothing is
        labelled "no reclaims".

    Raises
    ------
    ValueError
        ``ax`` is not two axes (or ``figsize`` is given with ``ax``).
    """
    runs = named(results)
    fig, left, right, own = bar_panels(ax, figsize, [n for n, _ in runs], "preemptions")
    summaries = [r.summary() for _, r in runs]
    ratio = np.array([s["preemption_ratio"] for s in summaries], dtype=float)
    damage = np.array([s["collateral_damage"] for s in summaries], dtype=float)
    counts = [int(r.jobs["preemptions"].sum()) for _, r in runs]
    reclaimed = [bool((r.totals or {}).get("reclaims", 1)) for _, r in runs]
    ratio_labels = [f"{percent(v)} ({c:,})" for v, c in zip(ratio, counts)]
    damage_labels = [
        percent(v) if any_ else "no reclaims" for v, any_ in zip(damage, reclaimed)
    ]
    for axes, values, labels, shade, panel, xlabel in (
        (
            left,
            ratio,
            ratio_labels,
            PALETTE[3],
            "Preemption ratio",
            "preemptions / jobs (count)",
        ),
        (
            right,
            damage,
            damage_labels,
            PALETTE[4],
            "Collateral damage",
            "GPUs lost / GPUs reclaimed",
        ),
    ):
        _rate_bars(axes, values, labels, shade)
        axes.set_title(panel)
        axes.set_xlabel(xlabel)
    if own:
        title(fig, left, "Preemptions per run", whole=True)
    return fig


def _rate_bars(ax: Axes, values: np.ndarray, labels: List[str], shade: str) -> None:
    """One horizontal bar per run, labelled, on a percentage axis."""
    bars = ax.barh(np.arange(len(values)), np.nan_to_num(values), color=shade)
    ax.bar_label(bars, labels=labels, fontsize="small", padding=3)
    percent_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(MaxNLocator(4))  # few ticks: labels stay apart
    top = float(np.nanmax(np.r_[values, 0.0])) or 0.01  # all zero: a 0-1% axis
    ax.set_xlim(0, top * 1.45)  # room for the labels
