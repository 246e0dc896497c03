"""Figures that compare settings: ``speedups`` (the headline table), ``sweep`` (a metric
against a parameter) and ``intervals`` (estimates with their confidence intervals)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np
from matplotlib.figure import Figure

from ..engine.metrics import kind
from .style import (
    GREY,
    PALETTE,
    Panels,
    bar_panels,
    canvas,
    column_label,
    legend,
    metric_scale,
    percent_ticks,
    series_styles,
    title,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes


def speedups(
    table: pd.DataFrame,
    baseline: Optional[str] = None,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """The headline comparison: mean-JCT and mean-queuing speed-ups per row.

    Parameters
    ----------
    table
        ``aryl.sim.speedups``' table: one row per run (its index names the rows),
        with columns ``speed-up JCT`` and ``speed-up queue``.
    baseline
        The row speed-ups are measured against, for the axis label (default: the
        first row).
    ax
        Two matplotlib ``Axes`` (JCT, queuing) to draw into (their figure is
        returned); ``None``: a new figure with the two side by side.
    figsize
        The new figure's (width, height) in inches (default: 11 wide, taller with
        more rows).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes side by side sharing the row names, one metric each, as horizontal
        bars labelled ``1.19x``, with a line at 1x (no change); bars beyond 1x (better
        than the baseline) are green, the others grey. A row without a value (a mean
        of 0) is labelled "n/a". A replicated comparison's table (``compare(...,
        seeds=N)``: columns ``speed-up JCT low`` / ``high``) draws each interval as
        an error bar, and bars whose interval includes 1x grey.

    Raises
    ------
    ValueError
        A table without the two speed-up columns or without rows, or ``ax`` that
        is not two axes.
    """
    missing = [c for c in ("speed-up JCT", "speed-up queue") if c not in table.columns]
    if missing:
        raise ValueError(f"speedups needs aryl.sim.speedups' table; missing {missing}")
    if table.empty:
        raise ValueError("speedups: the table has no rows to plot")
    names = [str(n) for n in table.index]
    base = baseline if baseline is not None else names[0]
    fig, left, right, own = bar_panels(ax, figsize, names, "speedups")
    for axes, column, panel in (
        (left, "speed-up JCT", "Mean job completion time"),
        (right, "speed-up queue", "Mean queuing time"),
    ):
        _speedup_bars(axes, table, column)
        axes.set_title(f"{panel}: speed-up")
        axes.set_xlabel(f"over {base} (higher: better)")
    if own:
        title(fig, left, f"Speed-ups over {base}", whole=True)
    return fig


def _speedup_bars(ax: Axes, table: pd.DataFrame, column: str) -> None:
    """One metric's speed-up bars, labelled, with their intervals and the 1x line."""
    y = np.arange(len(table))
    values = table[column].to_numpy(dtype=float)
    low, high = _interval(table, column, values)
    colors = [PALETTE[2] if v > 1 else "0.6" for v in np.nan_to_num(low, nan=1.0)]
    error = None
    if f"{column} low" in table.columns:
        error = np.nan_to_num(np.vstack([values - low, high - values]))
    bars = ax.barh(y, np.nan_to_num(values), color=colors, xerr=error, capsize=3)
    ax.bar_label(
        bars,
        labels=["n/a" if math.isnan(v) else f"{v:.2f}x" for v in values],
        fontsize="small",
        padding=3,
    )
    ax.axvline(1.0, color="0.2", linewidth=1)
    top = float(np.nanmax(np.r_[values, high, 1.0]))
    ax.set_xlim(0, top * 1.2)


def _interval(
    table: pd.DataFrame, column: str, values: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    """``column``'s interval (``<column> low`` / ``high``), or the values themselves."""
    if f"{column} low" not in table.columns:
        return values, values
    return (
        table[f"{column} low"].to_numpy(dtype=float),
        table[f"{column} high"].to_numpy(dtype=float),
    )


def sweep(
    frame: pd.DataFrame,
    x: str,
    y: str = "queuing_mean",
    by: Optional[str] = None,
    target: Optional[float] = None,
    ax: Optional[Axes] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """A metric of a sweep against one parameter, one line per value of another.

    Parameters
    ----------
    frame
        ``aryl.studies.sweep``'s table (or any frame with columns ``x``, ``y``, ``by``).
    x
        The parameter on the x axis (e.g. ``"inference_servers"``).
    y
        A summary key (``aryl.sim.SUMMARY_KEYS``), labelled with its readable name
        (``aryl.engine.metrics``): times are drawn in minutes, hours or days (by their
        largest value), ratios as percentages.
    by
        A parameter whose values get one line each (``None``: one line); at most 8
        values.
    target
        Draw a horizontal reference line at this ``y`` value (in ``y``'s unit: seconds or
        a ratio), e.g. half the baseline's mean queuing time.
    ax
        A matplotlib ``Axes`` to draw into (its figure is returned); ``None``: a
        new figure.
    figsize
        The new figure's (width, height) in inches (default (8.5, 4.8)).

    Returns
    -------
    matplotlib.figure.Figure
        One axes; runs with the same ``x`` and ``by`` (e.g. several seeds) are averaged,
        their spread shown as a band. The legend is titled with ``by``.

    Raises
    ------
    ValueError
        A column of ``x``, ``y``, ``by`` missing from ``frame``, or more than 8
        values of ``by`` (select some rows first).
    """
    groups = _groups(frame, [x, y], by, "sweep")
    unit, scale = metric_scale(y, float(np.nanmax(np.r_[frame[y], target or 0.0])))
    fig, (axes,), _ = canvas(ax, figsize, (8.5, 4.8), "sweep")
    for label, part, style in groups:
        stats = part.groupby(x, sort=True)[y].agg(["mean", "min", "max"]) / scale
        axes.plot(stats.index, stats["mean"], linewidth=1.8, label=label, **style)
        if (stats["max"] > stats["min"]).any():
            axes.fill_between(
                stats.index,
                stats["min"],
                stats["max"],
                color=style["color"],
                alpha=0.15,
            )
    if target is not None:
        axes.axhline(
            target / scale,
            color=GREY,
            linestyle=":",
            linewidth=1.2,
            label=f"target ({target / scale:.3g}{f' {unit}' if unit else ''})",
        )
    if kind(y) == "ratio":
        percent_ticks(axes.yaxis)
    axes.set_ylim(bottom=0)
    _titles(fig, axes, x, y, by, column_label(y, unit))
    return fig


def intervals(
    frame: pd.DataFrame,
    x: str,
    y: str,
    by: Optional[str] = None,
    reference: Optional[float] = 1.0,
    ax: Optional[Axes] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """Estimates with their confidence intervals against a parameter, as bands.

    Parameters
    ----------
    frame
        One row per point: columns ``x``, ``y`` (the estimate), ``"<y> low"`` and
        ``"<y> high"`` (its interval, as ``aryl.studies.replications.contributions`` and
        a replicated ``Comparison`` name them) and ``by``.
    x, y
        The parameter on the x axis and the estimate (e.g. ``"JCT gain"``).
    by
        A column whose values get one line each (``None``: one line); at most 8
        values.
    reference
        A horizontal line at this value (default 1: no gain); ``None`` for none.
    ax
        A matplotlib ``Axes`` to draw into (its figure is returned); ``None``: a
        new figure.
    figsize
        The new figure's (width, height) in inches (default (8.5, 4.8)).

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a line per ``by`` value through the estimates, the interval as a
        band around it. The legend is titled with ``by``.

    Raises
    ------
    ValueError
        A missing column (the interval's included), or more than 8 values of ``by``.
    """
    groups = _groups(frame, [x, y, f"{y} low", f"{y} high"], by, "intervals")
    fig, (axes,), _ = canvas(ax, figsize, (8.5, 4.8), "intervals")
    for label, part, style in groups:
        part = part.sort_values(x)
        axes.plot(part[x], part[y], linewidth=1.8, label=label, **style)
        axes.fill_between(
            part[x],
            part[f"{y} low"],
            part[f"{y} high"],
            alpha=0.2,
            color=style["color"],
        )
    if reference is not None:
        axes.axhline(reference, color=GREY, linestyle=":", linewidth=1.2)
    _titles(fig, axes, x, y, by, f"{column_label(y)} (band: 95% interval)")
    return fig


def _groups(
    frame: pd.DataFrame, columns: List[str], by: Optional[str], what: str
) -> List[Tuple[Optional[str], pd.DataFrame, Dict[str, Any]]]:
    """(legend label, rows, line style) per value of ``by`` (one group without it),
    after checking that ``frame`` has ``columns`` and ``by``."""
    needed = columns + ([by] if by is not None else [])
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} needs columns {missing}")
    if by is None:
        return [(None, frame, series_styles(["all"], what)["all"])]
    parts = [(str(v), p) for v, p in frame.groupby(by, sort=True, dropna=False)]
    styles = series_styles(
        [label for label, _ in parts],
        what,
        hint=f"select rows with up to 8 values of {by!r} first",
    )
    return [(label, part, styles[label]) for label, part in parts]


def _titles(
    fig: Figure, axes: Axes, x: str, y: str, by: Optional[str], ylabel: str
) -> None:
    """Axis labels, a grid, the title ``<y> by <x>`` and a legend titled ``by``."""
    xlabel = column_label(x)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    name = column_label(y)
    title(fig, axes, f"{name[:1].upper()}{name[1:]} by {xlabel}", whole=False)
    legend(axes, outside=False, heading=column_label(by) if by is not None else None)
