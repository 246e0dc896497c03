"""Figures against time: ``usage`` (one run: GPUs used and lent, servers on loan) and
``usage_grid`` (one panel of GPUs per run). Both draw a run's GPUs in two floors: the
training servers' from 0 to their capacity, and above that line the inference
servers' on loan (``lent``), each filled with what training used of it. The series
come from ``timeseries``; ``gantt`` is in ``allocations``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..engine.result import Result
from .runs import Results, named
from .style import (
    GREY,
    PALETTE,
    RASTER_POINTS,
    Panels,
    canvas,
    compact,
    duration,
    legend,
    time_unit,
    title,
)
from .timeseries import DEFAULT_WINDOW, LENT, check_window, usage_series

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

# The colours of usage's series: the same in ``usage`` and ``usage_grid``.
_TRAINING, _LOANED, _INFERENCE = PALETTE[0], PALETTE[1], PALETTE[2]
#: The legend labels of the GPU floors, in legend order.
TRAINING_USED = "used on training servers"
LENT_LABEL = "lent (inference servers on loan)"
LOANED_USED = "used on loaned servers"
#: The GPU legends' heading: where the lent GPUs are.
FLOORS_NOTE = "lent GPUs: above the training capacity"


def usage(
    result: Result,
    label: Optional[str] = None,
    window: Optional[float] = DEFAULT_WINDOW,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """GPUs used and lent, and servers on loan, over time, in two panels sharing the
    x axis.

    Parameters
    ----------
    result
        One simulated run.
    label
        Name for the title (default: ``result.label``).
    window
        Seconds to average over (default an hour): each window shows the time-weighted
        mean of every series. ``None`` or 0, or a run shorter than 12 windows, draws
        every scheduling step.
    ax
        Two matplotlib ``Axes`` (top: GPUs, bottom: inference servers) to draw into
        (their figure is returned; share their x axis yourself if you want it
        shared); ``None``: a new figure.
    figsize
        The new figure's (width, height) in inches (default (10, 6.5)).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes. Top, in GPUs: those used by training on the training servers
        (filled, under the training capacity, dashed), and above the capacity line
        the GPUs lent (inference servers on loan, hatched, their top dashed) with
        the part of them training used filled solid, so that what was lent and
        what was used are seen side by side (a run that lent nothing draws no
        loan). Bottom: inference servers on loan to training and inference servers
        needed by the inference load (with the size of the inference cluster as a
        dotted line).

    Raises
    ------
    ValueError
        A negative or non-numeric ``window``, a window so short that the run spans
        more than a million of them, or ``ax`` that is not two axes.

    Notes
    -----
    Time runs from the start of the run, in hours; in days when the run
    spans more than three days, in minutes when it spans less than an hour.
    The timeline holds one row per scheduling interval; each row's values
    hold until the next row, the last one until the run's end
    (``totals["end_time"]``), drawn as steps (rows that repeat the previous
    one are left out: the steps are the same). A one-row timeline with nothing
    to hold until is drawn as a point. The timeline counts servers on loan; the
    GPUs lent are those times the GPUs per server on loan
    (``timeseries.lent_gpus_per_server``: their area is the ledger's lent
    GPU-hours). Series of more than ``style.RASTER_POINTS`` steps are rasterised
    in SVG and PDF files (axes and text stay vector), so that a long run stays a
    small file.
    """
    check_window(window)
    t, columns, averaged = usage_series(result, window)
    fig, (top, bottom), own = canvas(
        ax,
        figsize,
        (10.0, 6.5),
        "usage",
        panels=2,
        nrows=2,
        sharex=True,
        gridspec_kw={"height_ratios": [3, 2]},
    )
    name = label if label is not None else (result.label or "simulation")
    narrow = compact(fig)
    cap = result.capacity
    per_server = int(cap.get("max_inference_server_gpus", 0) or 0)
    inference_servers = cap.get("inference_gpus", 0) // per_server if per_server else 0
    unit, scale = time_unit(float(t.max() - t.min()) if len(t) else 0.0)
    x = t / scale
    if len(t):
        training = f"training capacity ({cap['training_gpus']:,} GPUs)"
        _gpu_floors(top, x, columns, cap["training_gpus"], training)
        _time_span(top, x)
        _server_panel(bottom, x, columns, inference_servers)
    else:
        for axes in (top, bottom):
            _empty_timeline(axes)
    if not inference_servers and len(t):
        _note(bottom, "no inference servers: nothing lent")
    top.set_ylabel("GPUs")
    top.set_ylim(bottom=0)
    bottom.set_ylabel("inference servers")
    on_loan, needed = columns["on_loan"], columns["inference_needed"]
    peak = max(
        1.0, inference_servers, np.max(on_loan, initial=0), np.max(needed, initial=0)
    )
    bottom.set_ylim(bottom=0, top=peak * 1.08)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel(f"time since start ({unit})")
    for axes in (top, bottom):
        axes.grid(True, alpha=0.3)
    # A column-wide figure's legend is inside the axes: no room for the heading.
    heading = FLOORS_NOTE if _lent_any(columns) and not narrow else None
    legend(top, outside=own, heading=heading)
    legend(bottom, outside=own)
    top.set_title(
        "GPUs used and lent" if narrow else "GPUs used by training, and lent to it"
    )
    bottom.set_title("Inference servers")
    figure_title = f"GPU usage over time: {name}" + (
        f" ({duration(averaged)} means)" if averaged else ""
    )
    title(fig, top, figure_title, whole=own)
    return fig


def _steps(
    ax: Axes, x: np.ndarray, y: np.ndarray, alpha: Optional[float] = None, **style: Any
) -> None:
    """``y`` against ``x`` as post-steps (a point when there is one), its area filled
    at ``alpha`` opacity if given; rasterised beyond ``RASTER_POINTS`` steps."""
    dense = len(x) > RASTER_POINTS
    marker = "o" if len(x) == 1 else None
    ax.step(x, y, where="post", marker=marker, rasterized=dense, **style)
    if alpha is not None:
        ax.fill_between(
            x, y, step="post", color=style["color"], alpha=alpha, rasterized=dense
        )


def _band(
    ax: Axes,
    x: np.ndarray,
    base: float,
    height: np.ndarray,
    names: Tuple[str, str],
    color: str = _LOANED,
    **fill: Any,
) -> None:
    """``height`` drawn from ``base`` up: a filled area (no edge) labelled
    ``names[0]`` and its top as a step line labelled ``names[1]`` (a leading
    underscore keeps it out of the legend; it carries the data). A loan's line is
    drawn only where ``height`` > 0, so that nothing loan-coloured lies on the
    capacity line where nothing was lent."""
    dense = len(x) > RASTER_POINTS
    ax.fill_between(
        x,
        base,
        base + height,
        step="post",
        color=color,
        linewidth=0,
        label=names[0],
        rasterized=dense,
        **fill,
    )
    top = base + height
    if color == _LOANED:
        top = np.where(height > 0, top, np.nan)
    ax.step(
        x,
        top,
        where="post",
        color=color,
        linewidth=1.0,
        label=names[1],
        marker="o" if len(x) == 1 else None,
        rasterized=dense,
    )


def _gpu_floors(
    ax: Axes, x: np.ndarray, cols: Mapping[str, np.ndarray], capacity: int, text: str
) -> None:
    """A run's GPUs in two floors: the training servers' (their use under their
    capacity, dashed and labelled ``text``) and above the capacity the GPUs lent
    (hatched) and the part of them training used (solid), when any was lent. The
    step lines carry the data under labels ``_training``, ``_lent``, ``_used``."""
    train = cols["training_gpus_used"]
    _band(ax, x, 0.0, train, (TRAINING_USED, "_training"), _TRAINING, alpha=0.35)
    ax.axhline(capacity, color=_TRAINING, linestyle="--", linewidth=1, label=text)
    if not _lent_any(cols):
        return
    _band(ax, x, capacity, cols[LENT], (LENT_LABEL, "_lent"), alpha=0.18, hatch="///")
    _band(ax, x, capacity, cols["loaned_gpus_used"], (LOANED_USED, "_used"), alpha=0.8)


def _lent_any(cols: Mapping[str, np.ndarray]) -> bool:
    """Whether the run lent any GPU (or used one on loan) in the drawn series."""
    return bool(np.any(cols[LENT] > 0) or np.any(cols["loaned_gpus_used"] > 0))


def _server_panel(
    ax: Axes, x: np.ndarray, cols: Mapping[str, np.ndarray], inference_servers: int
) -> None:
    """``usage``'s bottom panel: inference servers on loan and needed."""
    _steps(
        ax,
        x,
        cols["on_loan"],
        alpha=0.2,
        color=_LOANED,
        linewidth=1.2,
        label="on loan to training",
    )
    _steps(
        ax,
        x,
        cols["inference_needed"],
        color=_INFERENCE,
        linestyle="-.",
        linewidth=1.2,
        label="needed by inference",
    )
    if inference_servers:
        ax.axhline(
            inference_servers,
            color=GREY,
            linestyle=":",
            linewidth=1,
            label=f"inference servers ({inference_servers:,})",
        )
    _time_span(ax, x)  # the top panel's too, when the caller's axes share no x


def usage_grid(
    results: Results,
    window: Optional[float] = DEFAULT_WINDOW,
    columns: int = 2,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """GPUs used by training, and GPUs lent to it, over time: one panel per run.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by ``.label``)
        or a single ``Result``.
    window
        Seconds to average over (default an hour), as in ``usage``.
    columns
        Panels per row of a new figure.
    ax
        One matplotlib ``Axes`` per run, of one figure, to draw into (their figure
        is returned; the y range is set on each alike); ``None``: a new figure.
    figsize
        The new figure's (width, height) in inches (default: 6.2 per column,
        2.3 per row plus 1.3).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per run, all sharing both axes (GPUs against time), drawn as
        ``usage``'s top panel: used on training servers under the training
        capacity (dashed); above it the GPUs lent (hatched) and the part of them
        used (solid), in runs that lent any. One legend for all, right of the
        panels (above them on a ``compact`` figure, which has no title; servers on
        loan: ``usage`` of one run).

    Raises
    ------
    ValueError
        ``ax`` that is not one axes per run, or a bad ``window`` (as in ``usage``).
    """
    check_window(window)
    runs = named(results)
    series = [usage_series(r, window) for _, r in runs]
    rows = max(1, math.ceil(len(runs) / columns))
    fig, axes, own = canvas(
        ax,
        figsize,
        (6.2 * columns, 2.3 * rows + 1.3),
        "usage_grid",
        panels=len(runs),
        nrows=rows,
        ncols=columns,
        sharex=True,
        sharey=True,
    )
    span = max((float(t[-1] - t[0]) for t, _, _ in series if len(t)), default=0.0)
    unit, scale = time_unit(span)
    for axes_, (name, result), (t, cols, _) in zip(axes, runs, series):
        _usage_panel(axes_, name, result, t / scale, cols)
    _grid_ranges(axes, runs, series, scale)
    for axes_ in axes[len(runs) :]:
        axes_.set_visible(False)
    for axes_ in axes[(rows - 1) * columns :] if own else axes:
        axes_.set_xlabel(f"time since start ({unit})")
    for axes_ in axes[::columns] if own else axes:
        axes_.set_ylabel("GPUs")
    averaged = max((w for _, _, w in series), default=0.0)
    _grid_legend(fig, axes[: len(runs)], own)
    if own:
        means = f" ({duration(averaged)} means)" if averaged else ""
        heading = f"GPUs used by training, and GPUs lent to it{means}"
        title(fig, axes[0], heading, whole=True)
    return fig


def _usage_panel(
    ax: Axes, name: str, result: Result, x: np.ndarray, cols: Dict[str, np.ndarray]
) -> None:
    """One run of ``usage_grid``: its GPU floors."""
    ax.set_title(name, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if not len(x):
        _empty_timeline(ax)
        return
    _gpu_floors(ax, x, cols, result.capacity["training_gpus"], "training capacity")


def _grid_ranges(
    axes: List[Axes],
    runs: List[Tuple[str, Result]],
    series: List[Tuple[np.ndarray, Dict[str, np.ndarray], float]],
    scale: float,
) -> None:
    """One y range for all panels (the highest lent floor, use or capacity) and one
    x range (from the earliest start to the latest end)."""
    tops = [1.0]
    for (_, result), (_, cols, _) in zip(runs, series):
        capacity = float(result.capacity.get("training_gpus", 0))
        loan = np.maximum(cols[LENT], cols["loaned_gpus_used"])
        tops += [capacity + float(np.max(loan, initial=0))]
        tops += [float(np.max(cols["training_gpus_used"], initial=0))]
    drawn = [t / scale for t, _, _ in series if len(t)]
    for axes_ in axes[: len(runs)]:
        axes_.set_ylim(0, max(tops) * 1.08)
        if drawn:
            _time_span(
                axes_, np.r_[min(x[0] for x in drawn), max(x[-1] for x in drawn)]
            )


def _grid_legend(fig: Figure, axes: List[Axes], own: bool) -> None:
    """One legend for every panel, each label once (a run that lent nothing draws no
    loan, so the first panel alone may lack it): outside the panels of a figure of
    its own, where neither its title nor a caption below (``save_all``'s note) is,
    else inside the first axes."""
    found: Dict[str, Artist] = {}
    for axes_ in axes:
        for handle, text in zip(*axes_.get_legend_handles_labels()):
            found.setdefault(text, handle)
    if not found:
        return
    lent = LENT_LABEL in found
    if own:
        fig.legend(
            list(found.values()),
            list(found),
            # Not below (a caption goes there), nor above a title: constrained
            # layout would draw one over the other.
            loc="outside upper center" if compact(fig) else "outside right upper",
            ncol=1,
            fontsize="small",
            title=FLOORS_NOTE if lent else None,
            title_fontsize="small",
        )
    else:
        axes[0].legend(
            list(found.values()),
            list(found),
            fontsize="small",
            title=FLOORS_NOTE if lent else None,
        )


# The pieces ``usage`` and ``usage_grid`` both draw.


def _time_span(ax: Axes, x: np.ndarray) -> None:
    """The x range of a timeline (one unit wide for a single point)."""
    ax.set_xlim(x[0], x[-1] if x[-1] > x[0] else x[0] + 1)


def _note(ax: Axes, text: str) -> None:
    """Grey text in the middle of the axes."""
    ax.text(
        0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color=GREY
    )


def _empty_timeline(ax: Axes) -> None:
    ax.text(
        0.5, 0.5, "empty timeline", transform=ax.transAxes, ha="center", va="center"
    )
