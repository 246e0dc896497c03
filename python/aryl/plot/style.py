"""The look every figure shares: palette, line styles, tick formats, the figure itself.

One colour-blind-safe palette (Okabe & Ito's eight colours), each colour paired with
its own line style and marker, so that up to ``MAX_SERIES`` series stay apart in
colour, in greyscale and for readers with a colour-vision deficiency. More series
than that are refused (``series_styles``): select the ones to compare. ``canvas``
is the one place a plot function gets its axes: a new figure of its own, or the
caller's axes (``ax=``).
"""

from __future__ import annotations

import io
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from .._display import TIME_UNITS
from ..engine.metrics import METRICS, kind

#: The axes of a plot function that draws several panels: a sequence of ``Axes`` or
#: the array ``plt.subplots`` returns.
Panels = Union[Sequence[Axes], np.ndarray]

#: Okabe & Ito's colour-blind-safe palette, in the order series take it: blue,
#: orange, bluish green, vermillion, reddish purple, sky blue, black, yellow.
PALETTE: Tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
#: One dash pattern per colour: solid, dashed, dotted, dash-dot, then four more.
LINESTYLES: Tuple[Union[str, Tuple[float, Tuple[float, ...]]], ...] = (
    "-",
    "--",
    ":",
    "-.",
    (0, (6, 1.5)),
    (0, (3, 1, 1, 1, 1, 1)),
    (0, (1, 3)),
    (0, (8, 2, 2, 2)),
)
#: One marker per colour, for lines through a few points (sweeps, intervals).
MARKERS: Tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
#: The most series one axes draws (one per colour).
MAX_SERIES = len(PALETTE)
#: Grey for reference lines and bars that stand for "no change".
GREY = "0.45"
#: PNGs (``save_all``, the inline display in Jupyter) are rendered at this resolution.
DPI = 120
#: Figures narrower than this many inches are laid out for a paper's column
#: (``compact``); a two-column figure is about 7 in wide, a column about 3.3 in.
COLUMN_WIDTH = 6.0
#: A line or area with more points than this is rasterised in SVG and PDF files: at
#: about a point per pixel column of a figure, vector paths add size, not detail.
RASTER_POINTS = 1000


def series_styles(
    names: Sequence[str], what: str, hint: str = ""
) -> Dict[str, Dict[str, Any]]:
    """Name -> ``{"color", "linestyle", "marker"}`` for up to ``MAX_SERIES`` series.

    The i-th name gets the i-th colour, dash and marker, so the same names in the
    same order are drawn alike in every figure of one call.

    Raises
    ------
    ValueError
        More than ``MAX_SERIES`` names (``what`` says which figure; ``hint`` what to
        do instead, default: select some).
    """
    if len(names) > MAX_SERIES:
        raise ValueError(
            f"{what}: {len(names)} series, but at most {MAX_SERIES} stay "
            f"distinguishable ({MAX_SERIES} colours, each with its own line style); "
            + (hint or f"select up to {MAX_SERIES} of {list(names)}")
        )
    return {
        name: {"color": PALETTE[i], "linestyle": LINESTYLES[i], "marker": MARKERS[i]}
        for i, name in enumerate(names)
    }


def text_color(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (by its luminance)."""
    red, green, blue = to_rgb(background)
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.55 else "white"


class NotebookFigure(Figure):
    """A ``Figure`` that Jupyter shows inline as a PNG, in a fresh kernel too.

    Figures made without pyplot have no display hook unless ``%matplotlib inline``
    registered one; ``_repr_png_`` renders with Agg at 120 dpi. Everything else is
    a plain ``matplotlib.figure.Figure``.
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=DPI)
        return buffer.getvalue()


def canvas(
    ax: Union[None, Axes, Panels],
    figsize: Optional[Tuple[float, float]],
    default_size: Tuple[float, float],
    what: str,
    panels: int = 0,
    **layout: Any,
) -> Tuple[Figure, List[Axes], bool]:
    """The figure and axes a plot function draws on, and whether the figure is its own.

    Parameters
    ----------
    ax
        ``None``: a new ``NotebookFigure`` of ``figsize`` (default ``default_size``)
        with ``fig.subplots(**layout)``. Else the caller's axes: one ``Axes`` when
        ``panels`` is 0, a sequence or array (``plt.subplots``') of exactly
        ``panels`` axes of one figure otherwise.
    figsize
        The new figure's size in inches; refused with ``ax`` (the figure is the
        caller's: size it there).
    default_size
        The size when ``figsize`` is ``None``.
    what
        The plot function's name, for the messages.
    panels
        0 for a one-axes figure, else how many axes the function draws.
    layout
        ``Figure.subplots`` arguments for a new figure (``nrows``, ``sharex``, ...).

    Raises
    ------
    TypeError
        ``ax`` is not an ``Axes`` (or a sequence of them), or is not Cartesian
        (polar, 3D).
    ValueError
        ``figsize`` with ``ax``; the wrong number of axes; axes of several figures.
    """
    if ax is None:
        fig = NotebookFigure(figsize=figsize or default_size, layout="constrained")
        made = fig.subplots(squeeze=False, **layout)
        return fig, list(made.ravel()), True
    if figsize is not None:
        raise ValueError(
            f"{what}: figsize sizes a new figure; with ax= it draws into your "
            "figure, so size that one"
        )
    if panels == 0:
        if not isinstance(ax, Axes):
            raise TypeError(f"{what}: ax must be a matplotlib Axes, got {ax!r}")
        _check_cartesian(ax, what)
        return root(ax), [ax], False
    given = list(np.asarray(ax, dtype=object).ravel())  # a list, or plt.subplots'
    if not all(isinstance(a, Axes) for a in given):
        raise TypeError(f"{what}: ax must be a sequence of matplotlib Axes, got {ax!r}")
    for axes in given:
        _check_cartesian(axes, what)
    if len(given) != panels:
        raise ValueError(
            f"{what} draws {panels} panels: ax must be {panels} Axes, got {len(given)}"
        )
    if len({id(root(a)) for a in given}) > 1:
        raise ValueError(f"{what}: the axes in ax must belong to one figure")
    return root(given[0]), given, False


def _check_cartesian(ax: Axes, what: str) -> None:
    """A ``TypeError`` for polar, 3D or map axes: every figure here is drawn on x-y
    axes, and matplotlib would fail half-way through drawing on others."""
    if ax.name != "rectilinear":
        raise TypeError(
            f"{what}: ax must be a Cartesian (x-y) matplotlib Axes, got "
            f"{type(ax).__name__} (projection {ax.name!r})"
        )


def bar_panels(
    ax: Optional[Panels],
    figsize: Optional[Tuple[float, float]],
    names: Sequence[str],
    what: str,
) -> Tuple[Figure, Axes, Axes, bool]:
    """Two panels side by side with one horizontal bar row per name, first on top,
    the names left of the left one (``canvas`` with ``panels=2``)."""
    fig, (left, right), own = canvas(
        ax,
        figsize,
        (11.0, max(2.8, 0.38 * len(names) + 1.8)),
        what,
        panels=2,
        ncols=2,
        sharey=True,
    )
    for axes in (left, right):
        axes.set_yticks(range(len(names)), names)
        axes.set_ylim(len(names) - 0.5, -0.5)
        axes.grid(True, axis="x", alpha=0.3)
    right.tick_params(labelleft=False)
    return fig, left, right, own


def root(ax: Axes) -> Figure:
    """The figure ``ax`` is saved with (a subfigure's parent figure)."""
    figure = ax.figure
    return figure if isinstance(figure, Figure) else figure.figure


def compact(fig: Figure) -> bool:
    """Whether ``fig`` is narrower than ``COLUMN_WIDTH``: laid out for a paper's
    column (legends inside, no figure title, fewer time ticks)."""
    return bool(fig.get_size_inches()[0] < COLUMN_WIDTH)


def title(fig: Figure, ax: Axes, text: str, whole: bool) -> None:
    """The figure's title: above all panels (``whole``) or above ``ax``; none on a
    ``compact`` figure, whose caption in the paper says it."""
    if compact(fig):
        return
    if whole:
        fig.suptitle(text)
    else:
        ax.set_title(text)


def legend(ax: Axes, outside: bool, heading: Optional[str] = None) -> None:
    """The axes' legend (titled ``heading``), if it has entries: right of the axes (``outside``: on a
    figure of the plot function's own, where a legend inside would cover lines,
    unless the figure is ``compact``), or inside where it covers least (in the
    caller's axes, often small, with no room beside them)."""
    if not ax.get_legend_handles_labels()[0]:
        return
    if outside and not compact(root(ax)):
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            borderaxespad=0,
            title=heading,
        )
    else:
        ax.legend(fontsize="small", title=heading)


# Tick and value formats.


def percent(value: float) -> str:
    """A ratio as a percentage to two significant digits: ``0%``, ``0.025%``, ``12%``."""
    if not math.isfinite(value):
        return "n/a"
    scaled = abs(value) * 100
    decimals = 0 if scaled == 0 else max(0, 1 - math.floor(math.log10(scaled)))
    return f"{value * 100:.{decimals}f}%"


def percent_ticks(axis: Any) -> None:
    """Ratio ticks of ``axis`` (an ``Axis``) as percentages without needless
    decimals: ``0%``, ``25%``, ``0.01%``."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{round(v * 100, 10):g}%"))


def time_unit(span: float) -> Tuple[str, float]:
    """(unit, seconds per unit) for ``span`` seconds: days beyond three days, hours
    from an hour, else minutes."""
    if span > 3 * 86400:
        return "days", 86400.0
    if span >= 3600:
        return "hours", 3600.0
    return "minutes", 60.0


def duration(seconds: float) -> str:
    """``1-h``, ``30-min``, ``1-d``, ``600-s``: a window's length, as an adjective."""
    for unit, size in TIME_UNITS:
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}-{unit}"
    return f"{seconds:g}-s"


def column_label(column: str, unit: str = "") -> str:
    """A column's axis label: a summary metric's readable name (``aryl.engine.metrics``)
    with ``unit`` in brackets when given, any other column with spaces for
    underscores (``inference_servers``: "inference servers")."""
    name = METRICS[column].label if column in METRICS else column.replace("_", " ")
    return f"{name} ({unit})" if unit else name


def metric_scale(column: str, largest: float) -> Tuple[str, float]:
    """(unit, divisor) a column is drawn in: a time metric in minutes, hours or days
    by ``largest`` (seconds), anything else as it is (``("", 1.0)``)."""
    if kind(column) == "time":
        return time_unit(largest)
    return "", 1.0
