"""Figures against time: ``usage`` and ``usage_grid`` (GPU use, servers on loan) and
``gantt`` (each job's allocation intervals)."""

from __future__ import annotations

import math
from numbers import Real
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

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
    series_styles,
    text_color,
    time_unit,
    title,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

#: Usage is averaged over windows of this many seconds by default (an hour).
DEFAULT_WINDOW = 3600.0
#: More windows than this are refused (a tiny window over months would need GBs).
_MAX_WINDOWS = 1_000_000
#: A run shorter than this many windows is drawn at its own resolution.
_MIN_WINDOWS = 12
_USAGE_COLUMNS = (
    "training_gpus_used",
    "loaned_gpus_used",
    "on_loan",
    "inference_needed",
)
# The colours of usage's series: the same in ``usage`` and ``usage_grid``.
_TRAINING, _LOANED, _INFERENCE = PALETTE[0], PALETTE[1], PALETTE[2]


def usage(
    result: Result,
    label: Optional[str] = None,
    window: Optional[float] = DEFAULT_WINDOW,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """GPU usage and loaned servers over time, in two panels sharing the x axis.

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
        Two axes. Top: GPUs used by training jobs, as counts, on training
        servers (with the training capacity as a dashed line) and on loaned
        inference servers (with the loaned capacity, servers on loan times GPUs
        per server, as a dashed step). Bottom: inference servers on loan to
        training and inference servers needed by the inference load (with the
        size of the inference cluster as a dotted line).

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
    to hold until is drawn as a point. Series of more than
    ``style.RASTER_POINTS`` steps are rasterised in SVG and PDF files (axes and
    text stay vector), so that a long run stays a small file.
    """
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0
    ):
        raise ValueError(f"window must be None or seconds >= 0, got {window!r}")
    t, columns, averaged = _usage_series(result, window)
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
    cap = result.capacity
    per_server = int(cap.get("max_inference_server_gpus", 0) or 0)
    inference_servers = cap.get("inference_gpus", 0) // per_server if per_server else 0
    unit, scale = time_unit(float(t.max() - t.min()) if len(t) else 0.0)
    x = t / scale
    on_loan, needed = columns["on_loan"], columns["inference_needed"]
    if len(t):
        _gpu_panel(top, x, columns, cap, per_server)
        _server_panel(bottom, x, on_loan, needed, inference_servers)
    else:
        for axes in (top, bottom):
            _empty_timeline(axes)
    if not inference_servers and len(t):
        bottom.text(
            0.5,
            0.5,
            "no inference servers: nothing lent",
            transform=bottom.transAxes,
            ha="center",
            va="center",
            color=GREY,
        )
    top.set_ylabel("GPUs used by training")
    top.set_ylim(bottom=0)
    bottom.set_ylabel("inference servers")
    peak = max(
        1.0, inference_servers, np.max(on_loan, initial=0), np.max(needed, initial=0)
    )
    bottom.set_ylim(bottom=0, top=peak * 1.08)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel(f"time since start ({unit})")
    for axes in (top, bottom):
        axes.grid(True, alpha=0.3)
        legend(axes, outside=own)
    top.set_title("GPUs used by training jobs")
    bottom.set_title("Inference servers")
    heading = f"GPU usage over time: {name}" + (
        f" ({duration(averaged)} means)" if averaged else ""
    )
    title(fig, top, heading, whole=own)
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


def _gpu_panel(
    ax: Axes,
    x: np.ndarray,
    columns: Dict[str, np.ndarray],
    cap: Mapping[str, Any],
    per_server: int,
) -> None:
    """``usage``'s top panel: GPUs used on training and on loaned servers."""
    line = {"linewidth": 1.2}
    _steps(
        ax,
        x,
        columns["training_gpus_used"],
        color=_TRAINING,
        label="used on training servers",
        **line,
    )
    _training_capacity(ax, cap, f"training capacity ({cap['training_gpus']:,} GPUs)")
    _steps(
        ax,
        x,
        columns["loaned_gpus_used"],
        alpha=0.2,
        color=_LOANED,
        label="used on loaned servers",
        **line,
    )
    _steps(
        ax,
        x,
        columns["on_loan"] * per_server,
        color=_LOANED,
        linestyle="--",
        linewidth=1,
        label="loaned capacity (servers on loan x GPUs)",
    )
    _time_span(ax, x)


def _server_panel(
    ax: Axes,
    x: np.ndarray,
    on_loan: np.ndarray,
    needed: np.ndarray,
    inference_servers: int,
) -> None:
    """``usage``'s bottom panel: inference servers on loan and needed."""
    _steps(
        ax,
        x,
        on_loan,
        alpha=0.2,
        color=_LOANED,
        linewidth=1.2,
        label="on loan to training",
    )
    _steps(
        ax,
        x,
        needed,
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


def _usage_series(
    result: Result, window: Optional[float]
) -> Tuple[np.ndarray, Dict[str, np.ndarray], float]:
    """(times, usage columns, window averaged over or 0) of a run as post-steps: the
    last row held until the run's end, repeated rows dropped, or window means."""
    tl = result.timeline
    t = tl["t"].to_numpy(dtype=float)
    columns = {k: tl[k].to_numpy(dtype=float) for k in _USAGE_COLUMNS}
    end = float(result.totals.get("end_time", 0.0) or 0.0) if result.totals else 0.0
    if len(t) and end > t[-1]:
        # The last row holds until the end of the run: draw it up to there.
        t = np.r_[t, end]
        columns = {k: np.r_[v, v[-1]] for k, v in columns.items()}
    if window and len(t) > 1 and t[-1] - t[0] >= _MIN_WINDOWS * window:
        if (t[-1] - t[0]) / window > _MAX_WINDOWS:
            raise ValueError(
                f"window of {window:g} s: the run spans {(t[-1] - t[0]) / window:.3g} "
                f"windows, more than {_MAX_WINDOWS:,}; use a longer window or None "
                "(every scheduling step)"
            )
        edges, means = _window_means(t, columns, float(window))
        return edges, means, float(window)
    if len(t) > 2:
        # A step drawn "post" is the same without rows that repeat the previous row:
        # drop them (months of 60-s epochs are mostly repeats; drawing them was slow).
        stacked = np.vstack(list(columns.values()))
        keep = np.r_[True, (np.diff(stacked, axis=1) != 0).any(axis=0)]
        keep[-1] = True
        t, columns = t[keep], {k: v[keep] for k, v in columns.items()}
    return t, columns, 0.0


def _window_means(
    t: np.ndarray, columns: Dict[str, np.ndarray], window: float
) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """Time-weighted means of step series over consecutive windows from ``t[0]``.

    Each value holds from its time to the next; the integral of a step function is
    piecewise linear, so interpolating it at the window edges is exact. The last
    window ends at ``t[-1]`` and may be shorter; the last mean is repeated at the end
    so that a post-step draws it.
    """
    edges = np.arange(t[0], t[-1], window)
    edges = np.r_[edges, t[-1]] if edges[-1] < t[-1] else edges
    means = {}
    for key, values in columns.items():
        integral = np.r_[0.0, np.cumsum(values[:-1] * np.diff(t))]
        at_edges = np.interp(edges, t, integral)
        mean = np.diff(at_edges) / np.diff(edges)
        means[key] = np.r_[mean, mean[-1]]
    return edges, means


def usage_grid(
    results: Results,
    window: Optional[float] = DEFAULT_WINDOW,
    columns: int = 2,
    ax: Optional[Panels] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """GPUs used by training over time, one panel per run, in one figure.

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
        2.3 per row plus 1).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per run, all sharing both axes (GPUs used by training against time):
        used on training servers and on loaned servers stacked, the training capacity
        dashed; one legend for all (servers on loan: ``usage`` of one run).

    Raises
    ------
    ValueError
        ``ax`` that is not one axes per run.
    """
    runs = named(results)
    series = [_usage_series(r, window) for _, r in runs]
    rows = max(1, math.ceil(len(runs) / columns))
    fig, axes, own = canvas(
        ax,
        figsize,
        (6.2 * columns, 2.3 * rows + 1.0),
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
    # One y range for all: the busiest run's use or the training capacity.
    used = [c["training_gpus_used"] + c["loaned_gpus_used"] for _, c, _ in series]
    peak = max(
        [float(np.max(u, initial=0)) for u in used]
        + [float(r.capacity.get("training_gpus", 0)) for _, r in runs]
        + [1.0]
    )
    # One x range for all: from the earliest start to the latest end.
    drawn = [t / scale for t, _, _ in series if len(t)]
    for axes_ in axes[: len(runs)]:
        axes_.set_ylim(0, peak * 1.08)
        if drawn:
            _time_span(
                axes_, np.r_[min(x[0] for x in drawn), max(x[-1] for x in drawn)]
            )
    for axes_ in axes[len(runs) :]:
        axes_.set_visible(False)
    for axes_ in axes[(rows - 1) * columns :] if own else axes:
        axes_.set_xlabel(f"time since start ({unit})")
    for axes_ in axes[::columns] if own else axes:
        axes_.set_ylabel("GPUs used")
    averaged = max((w for _, _, w in series), default=0.0)
    if own:
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(
                handles,
                labels,
                loc="outside lower center",
                ncol=1 if compact(fig) else 4,
                fontsize="small",
            )
        means = f" ({duration(averaged)} means)" if averaged else ""
        title(fig, axes[0], f"GPUs used by training jobs{means}", whole=True)
    elif axes:
        legend(axes[0], outside=False)
    return fig


def _usage_panel(
    ax: Axes, name: str, result: Result, x: np.ndarray, cols: Dict[str, np.ndarray]
) -> None:
    """One run of ``usage_grid``: stacked use and the training capacity."""
    ax.set_title(name, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if not len(x):
        _empty_timeline(ax)
        return
    train, loaned = cols["training_gpus_used"], cols["loaned_gpus_used"]
    dense = len(x) > RASTER_POINTS
    ax.fill_between(
        x,
        train,
        step="post",
        color=_TRAINING,
        alpha=0.55,
        label="used on training servers",
        rasterized=dense,
    )
    ax.fill_between(
        x,
        train,
        train + loaned,
        step="post",
        color=_LOANED,
        alpha=0.7,
        label="used on loaned servers",
        rasterized=dense,
    )
    _training_capacity(ax, result.capacity, "training capacity")


# The pieces ``usage`` and ``usage_grid`` both draw.


def _training_capacity(ax: Axes, cap: Mapping[str, Any], label: str) -> None:
    """The training GPUs as a dashed line."""
    ax.axhline(
        cap["training_gpus"], color=_TRAINING, linestyle="--", linewidth=1, label=label
    )


def _time_span(ax: Axes, x: np.ndarray) -> None:
    """The x range of a timeline (one unit wide for a single point)."""
    ax.set_xlim(x[0], x[-1] if x[-1] > x[0] else x[0] + 1)


def _empty_timeline(ax: Axes) -> None:
    ax.text(
        0.5, 0.5, "empty timeline", transform=ax.transAxes, ha="center", va="center"
    )


#: Jobs ``gantt`` draws when none are named: the first to start.
GANTT_JOBS = 30
#: The most jobs one Gantt chart takes (one row each).
GANTT_MAX_JOBS = 300
#: How ``gantt`` colours the bars.
GANTT_COLORS = ("gpu_type", "loan")
# Markers at the end of an interval: (changes, marker, colour, legend label).
_GANTT_MARKS = (
    (("reclaim_preemption",), "X", PALETTE[3], "reclaim preemption"),
    (("reclaim_scale_in",), "v", PALETTE[3], "reclaim scale-in"),
    (("preemption",), "x", "black", "preempted by the allocator"),
)


def gantt(
    result: Result,
    jobs: Optional[Sequence[object]] = None,
    color: str = "gpu_type",
    window: Optional[Tuple[float, float]] = None,
    ax: Optional[Axes] = None,
    figsize: Optional[Tuple[float, float]] = None,
) -> Figure:
    """Each job's allocation intervals over time, one row per job.

    Parameters
    ----------
    result
        A run simulated with ``history=True`` (``Result.history()``).
    jobs
        Ids of the jobs to draw, top to bottom (at most ``GANTT_MAX_JOBS``, each
        once); by default the ``GANTT_JOBS`` that started first.
    color
        ``"gpu_type"``: a bar's colour is its interval's GPU type (types joined by
        ``+`` when it spans several; at most 8 such keys); ``"loan"``: on training
        servers, on loaned inference servers, or both.
    window
        ``(start, end)`` in seconds: the stretch of time shown (default: the run).
    ax
        A matplotlib ``Axes`` to draw into (its figure is returned); ``None``: a
        new figure.
    figsize
        The new figure's (width, height) in inches (default: 10 wide, 0.3 per job
        tall).

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a thin grey line from each job's submission to its finish (or the
        end of the run), a bar per allocation interval (white edges between
        intervals) labelled with its GPUs when wide enough, and a marker where a
        reclaim preempted the job (vermillion X), scaled it in (vermillion
        triangle) or the allocator preempted it (black x).

    Raises
    ------
    TypeError
        ``window`` that is not a pair of numbers, ``jobs`` that is not a sequence,
        ``ax`` that is not one Cartesian ``Axes`` (polar and 3D axes are refused).
    ValueError
        An unknown ``color``, a ``window`` not finite or empty, ``jobs`` naming an
        unknown job or one twice (or too many), ``figsize`` with ``ax``, a run
        without history.
    """
    from ..engine.history import intervals

    if color not in GANTT_COLORS:
        raise ValueError(f"color must be one of {GANTT_COLORS}, got {color!r}")
    window = _gantt_window(window)
    table = result.history()
    frame = result.jobs
    if jobs is None:
        started = frame[frame["start_time"].notna()]
        shown = list(
            started.sort_values("start_time", kind="stable")["id"][:GANTT_JOBS]
        )
    else:
        shown = _gantt_jobs(jobs, set(frame["id"]))
    if not shown:
        raise ValueError("gantt: no job of this run ever started")
    row = {job: i for i, job in enumerate(shown)}
    spans = intervals(table[table["job"].isin(row)])
    spans["key"] = _gantt_keys(spans, color)
    styles = series_styles(
        sorted(spans["key"].unique()),
        "gantt",
        hint="draw fewer jobs or colour by loan (color='loan')",
    )
    fig, (axes,), own = canvas(
        ax, figsize, (10.0, max(2.5, 0.3 * len(shown) + 1.4)), "gantt"
    )
    end = float(result.totals.get("end_time", 0.0)) or float(spans["end"].max())
    shown_from, shown_to = window or (0.0, end)
    unit, scale = time_unit(shown_to - shown_from)
    life = frame.set_index("id").loc[shown]
    axes.hlines(
        np.arange(len(shown)),
        life["submit_time"] / scale,
        life["finish_time"].fillna(end) / scale,
        color="0.75",
        linewidth=1,
        zorder=0.5,  # under the bars
        label="from submission to finish",
    )
    y = spans["job"].map(row).to_numpy()
    left = spans["start"].to_numpy() / scale
    width = (spans["end"] - spans["start"]).to_numpy() / scale
    for key, style in styles.items():
        mine = (spans["key"] == key).to_numpy()
        bars = axes.barh(
            y[mine],
            width[mine],
            left=left[mine],
            height=0.6,
            color=style["color"],
            edgecolor="white",  # where one interval ends and the next begins
            linewidth=0.6,
            label=key,
        )
        wide = width[mine] > 0.04 * (shown_to - shown_from) / scale
        axes.bar_label(
            bars,
            labels=[f"{g}" if w else "" for g, w in zip(spans["gpus"][mine], wide)],
            label_type="center",
            fontsize="x-small",
            color=text_color(style["color"]),
            clip_on=True,  # a bar running past the window keeps its label inside
        )
    _gantt_marks(axes, spans, y, scale)
    if window is not None:
        axes.set_xlim(shown_from / scale, shown_to / scale)
    axes.set_yticks(np.arange(len(shown)), [str(j) for j in shown])
    axes.set_ylim(len(shown) - 0.5, -0.5)
    axes.set_xlabel(f"time ({unit}); bars labelled with their GPUs")
    axes.grid(True, axis="x", alpha=0.3)
    legend(axes, outside=own)
    title(fig, axes, f"Allocations over time: {result.label or 'run'}", whole=False)
    return fig


def _gantt_keys(spans: Any, color: str) -> Any:
    """Each interval's colour key: its GPU type(s), or where it ran (``"loan"``)."""
    if color == "gpu_type":
        return spans["gpu_type"]
    return np.where(
        spans["on_loan"] & spans["training"],
        "training + on loan",
        np.where(spans["on_loan"], "on loan", "training"),
    )


def _gantt_marks(ax: Axes, spans: Any, y: np.ndarray, scale: float) -> None:
    """A marker where a reclaim or the allocator ended an interval."""
    closed = spans["closed"].astype(str)
    for changes, marker, shade, label in _GANTT_MARKS:
        mine = closed.isin(changes).to_numpy()
        if mine.any():
            ax.scatter(
                spans["end"][mine] / scale,
                y[mine],
                marker=marker,
                color=shade,
                edgecolors="black",  # apart from any bar colour
                linewidths=0.5,
                zorder=3,
                label=label,
            )


def _gantt_window(window: Any) -> Optional[Tuple[float, float]]:
    """``gantt``'s ``window`` checked: ``None``, or a (start, end) pair of finite
    numbers of seconds with start < end."""
    if window is None:
        return None
    pair = (
        list(window)
        if isinstance(window, (Sequence, np.ndarray))
        and not isinstance(window, (str, bytes))
        else None
    )
    if (
        pair is None
        or len(pair) != 2
        or not all(isinstance(t, Real) and not isinstance(t, bool) for t in pair)
    ):
        raise TypeError(
            f"gantt: window must be a (start, end) pair of seconds, got {window!r}"
        )
    start, end = float(pair[0]), float(pair[1])
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise ValueError(
            f"gantt: window must be finite (start, end) with start < end, got {window!r}"
        )
    return start, end


def _gantt_jobs(jobs: Sequence[object], known: Set[object]) -> List[object]:
    """``gantt``'s ``jobs`` checked: a sequence of this run's ids, each once."""
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Iterable):
        raise TypeError(f"gantt: jobs must be a sequence of job ids, got {jobs!r}")
    shown = list(jobs)
    if not 0 < len(shown) <= GANTT_MAX_JOBS:
        raise ValueError(f"gantt draws 1 to {GANTT_MAX_JOBS} jobs, got {len(shown)}")
    for i, job in enumerate(shown):
        if job not in known:
            raise ValueError(f"gantt: no job {job!r} in this run")
        if job in shown[:i]:
            raise ValueError(f"gantt: job {job!r} given twice")
    return shown
