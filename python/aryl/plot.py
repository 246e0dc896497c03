"""Figures of simulated runs: JCT / queuing CDFs, GPU usage over time, preemptions,
speed-ups, and a Gantt chart of jobs' allocations.

Every function takes ``aryl.sim.Result`` objects (``speedups``: the table of
``aryl.sim.speedups``) and returns a ``matplotlib.figure.Figure`` built with the
object-oriented API (no pyplot, no global state, nothing shown), so it works
headless with any backend; save it with ``fig.savefig(...)``. ``save_all`` writes
the standard set as PNG, SVG and/or PDF. Usage over time is averaged over hourly
windows by default (``window``), so that months of 60-s steps stay readable. In a
notebook the returned figure displays itself inline (``NotebookFigure``), no
``%matplotlib`` needed. ``sweep`` plots a metric of an ``aryl.sim.sweep`` table,
``intervals`` estimates with their confidence intervals (replicated comparisons);
``gantt`` draws the allocation history of a run simulated with ``history=True``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator, PercentFormatter

from ._display import TIME_UNITS
from .sim.metrics import kind
from .sim.result import Result

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "NotebookFigure",
    "cdf",
    "intervals",
    "gantt",
    "preemptions",
    "save_all",
    "speedups",
    "sweep",
    "usage",
    "usage_grid",
]

#: A single ``Result``, a sequence of them (named by their ``.label``) or a
#: mapping name -> ``Result``.
Results = Union[Result, Sequence[Result], Mapping[str, Result]]

_METRICS = {
    # metric: (axis label, title, what a NaN means)
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

_DPI = 120
_LINESTYLES = ("-", "--", ":", "-.")

#: Usage is averaged over windows of this many seconds by default (an hour).
DEFAULT_WINDOW = 3600.0
#: More windows than this are refused (a tiny window over months would need GBs).
_MAX_WINDOWS = 1_000_000
#: A run shorter than this many windows is drawn at its own resolution.
_MIN_WINDOWS = 12
#: The figure formats ``save_all`` can write.
FORMATS = ("png", "svg", "pdf")
_USAGE_COLUMNS = (
    "training_gpus_used",
    "loaned_gpus_used",
    "on_loan",
    "inference_needed",
)


class NotebookFigure(Figure):
    """A ``Figure`` that Jupyter shows inline as a PNG, in a fresh kernel too.

    Figures made without pyplot have no display hook unless ``%matplotlib inline``
    registered one; ``_repr_png_`` renders with Agg at 120 dpi. Everything else is
    a plain ``matplotlib.figure.Figure``.
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=_DPI)
        return buffer.getvalue()


def cdf(results: Results, metric: str = "jct") -> Figure:
    """Empirical CDFs of a per-job metric, one curve per run, on one axes.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, or a sequence of ``Result`` (each curve
        is named by the run's ``.label``; ``run 1``, ``run 2``, ... when empty),
        or a single ``Result``.
    metric
        ``"jct"`` (job completion time, submit to finish) or
        ``"queuing_time"`` (submit to first start).

    Returns
    -------
    matplotlib.figure.Figure
        One axes with one line per run and a legend.

    Notes
    -----
    The x axis is logarithmic, in seconds (ticks read 1 s, 1 min, 1 h, 1 d, ...).
    Values below 1 s -- a job that started the moment it was submitted has a
    queuing time of 0 -- are clipped to 1 s so that the log scale can show
    them; the curve therefore starts at 1 s with the share of such jobs.
    Jobs without a value (NaN: unfinished for ``jct``, never started for
    ``queuing_time``) are left out, so each curve is over the jobs that have
    a value; when any were left out the legend says how many.
    """
    if metric not in _METRICS:
        raise ValueError(
            f"unknown metric {metric!r}; expected one of {', '.join(_METRICS)}"
        )
    runs = _named(results)
    axis_label, title, missing_word = _METRICS[metric]
    fig = NotebookFigure(figsize=(9.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    lo, hi = math.inf, -math.inf
    clipped = False
    for i, (name, result) in enumerate(runs):
        # Vary the dash too, so that identical curves stay distinguishable.
        style = _LINESTYLES[i % len(_LINESTYLES)]
        values = result.jobs[metric].to_numpy(dtype=float)
        missing = int(np.isnan(values).sum())
        values = values[~np.isnan(values)]
        clipped = clipped or bool((values < 1.0).any())
        values = np.sort(np.maximum(values, 1.0))
        label = name
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
                linestyle=style,
            )
            lo, hi = min(lo, values[0]), max(hi, values[-1])
        else:
            ax.plot([], [], label=f"{label} -- no values", linestyle=style)
    ax.set_xscale("log")
    if not math.isfinite(lo):
        lo, hi = 1.0, 10.0
    left, right = max(lo / 1.5, 0.8), max(hi * 1.5, lo * 10)
    ax.set_xlim(left, right)
    ticks = [(t, s) for t, s in _TIME_TICKS if left <= t <= right]
    if len(ticks) >= 2:
        ax.set_xticks([t for t, _ in ticks], [s for _, s in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(
        f"{axis_label} (s, log scale{'; values below 1 s shown at 1 s' if clipped else ''})"
    )
    ax.set_ylabel("share of jobs with a value (CDF)")
    ax.set_title(f"{title}: CDF per run")
    ax.grid(True, which="major", alpha=0.3)
    if runs:
        # Outside the axes: with many runs a legend inside covers the curves.
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            borderaxespad=0,
        )
    return fig


def usage(
    result: Result,
    label: Optional[str] = None,
    window: Optional[float] = DEFAULT_WINDOW,
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

    Returns
    -------
    matplotlib.figure.Figure
        Two axes. Top: GPUs used by training jobs, as counts, on training
        servers (with the training capacity as a dashed line) and on loaned
        inference servers (with the loaned capacity, servers on loan times GPUs
        per server, as a dashed step). Bottom: inference servers on loan to
        training and inference servers needed by the inference load (with the
        size of the inference cluster as a dotted line).

    Notes
    -----
    Time runs from the start of the run, in hours; in days when the run
    spans more than three days, in minutes when it spans less than an hour.
    The timeline holds one row per scheduling interval; each row's values
    hold until the next row, the last one until the run's end
    (``totals["end_time"]``), drawn as steps (rows that repeat the previous
    one are left out: the steps are the same). A one-row timeline with nothing
    to hold until is drawn as a point.
    """
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0
    ):
        raise ValueError(f"window must be None or seconds >= 0, got {window!r}")
    name = label if label is not None else (result.label or "simulation")
    cap = result.capacity
    per_server = int(cap.get("max_inference_server_gpus", 0) or 0)
    inference_servers = cap.get("inference_gpus", 0) // per_server if per_server else 0
    t, columns, averaged = _usage_series(result, window)
    unit, scale = _time_unit(float(t.max() - t.min()) if len(t) else 0.0)
    x = t / scale

    fig = NotebookFigure(figsize=(10, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    # A one-row timeline has no step to draw: mark its point instead.
    step = {"where": "post", "marker": "o" if len(t) == 1 else None}

    train, loaned = columns["training_gpus_used"], columns["loaned_gpus_used"]
    on_loan, needed = columns["on_loan"], columns["inference_needed"]
    if len(t):
        top.step(
            x,
            train,
            color="tab:blue",
            linewidth=1.2,
            label="used on training servers",
            **step,
        )
        _training_capacity(
            top, cap, f"training capacity ({cap['training_gpus']:,} GPUs)"
        )
        top.step(
            x,
            loaned,
            color="tab:orange",
            linewidth=1.2,
            label="used on loaned servers",
            **step,
        )
        top.fill_between(x, loaned, step="post", color="tab:orange", alpha=0.2)
        top.step(
            x,
            on_loan * per_server,
            color="tab:orange",
            linestyle="--",
            linewidth=1,
            label="loaned capacity (servers on loan x GPUs)",
            **step,
        )

        bottom.step(
            x,
            on_loan,
            color="tab:orange",
            linewidth=1.2,
            label="on loan to training",
            **step,
        )
        bottom.fill_between(x, on_loan, step="post", color="tab:orange", alpha=0.2)
        bottom.step(
            x,
            needed,
            color="tab:green",
            linewidth=1.2,
            label="needed by inference",
            **step,
        )
        if inference_servers:
            bottom.axhline(
                inference_servers,
                color="0.4",
                linestyle=":",
                linewidth=1,
                label=f"inference servers ({inference_servers:,})",
            )
        _time_span(top, x)
    else:
        for ax in (top, bottom):
            _empty_timeline(ax)
    if not inference_servers and len(t):
        bottom.text(
            0.5,
            0.5,
            "no inference servers: nothing lent",
            transform=bottom.transAxes,
            ha="center",
            va="center",
            color="0.4",
        )

    top.set_ylabel("GPUs used by training")
    top.set_ylim(bottom=0)
    bottom.set_ylabel("inference servers")
    bottom.set_ylim(
        bottom=0,
        top=max(
            1.0,
            inference_servers,
            np.max(on_loan, initial=0),
            np.max(needed, initial=0),
        )
        * 1.08,
    )
    bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_xlabel(f"time since start ({unit})")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                fontsize="small",
                borderaxespad=0,
            )
    top.set_title("GPUs used by training jobs")
    bottom.set_title("Inference servers")
    fig.suptitle(
        f"GPU usage over time: {name}"
        + (f" ({_duration(averaged)} means)" if averaged else "")
    )
    return fig


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


def _time_unit(span: float) -> Tuple[str, float]:
    """Days beyond three days, hours from an hour, else minutes."""
    if span > 3 * 86400:
        return "days", 86400.0
    if span >= 3600:
        return "hours", 3600.0
    return "minutes", 60.0


def _duration(seconds: float) -> str:
    """``1-h``, ``30-min``, ``1-d``, ``600-s``: a window's length, as an adjective."""
    for unit, size in TIME_UNITS:
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}-{unit}"
    return f"{seconds:g}-s"


def usage_grid(
    results: Results, window: Optional[float] = DEFAULT_WINDOW, columns: int = 2
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
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per run, all sharing both axes (GPUs used by training against time):
        used on training servers and on loaned servers stacked, the training capacity
        dashed; one legend for all (servers on loan: ``usage`` of one run).
    """
    runs = _named(results)
    rows = max(1, math.ceil(len(runs) / columns))
    fig = NotebookFigure(
        figsize=(6.2 * columns, 2.3 * rows + 1.0), layout="constrained"
    )
    axes = np.atleast_1d(
        fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    ).ravel()
    series = [_usage_series(r, window) for _, r in runs]
    span = max((float(t[-1] - t[0]) for t, _, _ in series if len(t)), default=0.0)
    unit, scale = _time_unit(span)
    for ax, (name, result), (t, cols, _) in zip(axes, runs, series):
        _usage_panel(ax, name, result, t / scale, cols)
    # One y range for all (shared): the busiest run's use or the training capacity.
    used = [c["training_gpus_used"] + c["loaned_gpus_used"] for _, c, _ in series]
    peak = max(
        [float(np.max(u, initial=0)) for u in used]
        + [float(r.capacity.get("training_gpus", 0)) for _, r in runs]
        + [1.0]
    )
    axes[0].set_ylim(0, peak * 1.08)
    for ax in axes[len(runs) :]:
        ax.set_visible(False)
    for ax in axes[(rows - 1) * columns :]:
        ax.set_xlabel(f"time since start ({unit})")
    for ax in axes[::columns]:
        ax.set_ylabel("GPUs used")
    averaged = max((w for _, _, w in series), default=0.0)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(
            handles, labels, loc="outside lower center", ncol=4, fontsize="small"
        )
    fig.suptitle(
        "GPUs used by training jobs"
        + (f" ({_duration(averaged)} means)" if averaged else "")
    )
    return fig


def _usage_panel(
    ax: Axes, name: str, result: Result, x: np.ndarray, cols: Dict[str, np.ndarray]
) -> None:
    """One run of ``usage_grid``: stacked use and the training capacity."""
    cap = result.capacity
    ax.set_title(name, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if not len(x):
        _empty_timeline(ax)
        return
    train, loaned = cols["training_gpus_used"], cols["loaned_gpus_used"]
    ax.fill_between(
        x,
        train,
        step="post",
        color="tab:blue",
        alpha=0.55,
        label="used on training servers",
    )
    ax.fill_between(
        x,
        train,
        train + loaned,
        step="post",
        color="tab:orange",
        alpha=0.7,
        label="used on loaned servers",
    )
    _training_capacity(ax, cap, "training capacity")
    _time_span(ax, x)


# The pieces ``usage`` and ``usage_grid`` both draw.


def _training_capacity(ax: Axes, cap: Mapping[str, Any], label: str) -> None:
    """The training GPUs as a dashed line."""
    ax.axhline(
        cap["training_gpus"], color="tab:blue", linestyle="--", linewidth=1, label=label
    )


def _time_span(ax: Axes, x: np.ndarray) -> None:
    """The x range of a timeline (one unit wide for a single point)."""
    ax.set_xlim(x[0], x[-1] if x[-1] > x[0] else x[0] + 1)


def _empty_timeline(ax: Axes) -> None:
    ax.text(
        0.5, 0.5, "empty timeline", transform=ax.transAxes, ha="center", va="center"
    )


def preemptions(results: Results) -> Figure:
    """Preemption ratio and collateral damage per run, one metric per axes.

    Meant for runs of the same trace that differ in reclaim policy.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes side by side sharing the run names (one horizontal bar per run,
        first run on top, labelled with its value). Left: the *preemption ratio*
        (preemptions / jobs; a job preempted twice counts twice, so it can pass
        100%), labelled with the number of preemptions too. Right: the *collateral
        damage* (GPUs freed on servers that were kept, because a preempted job also
        ran there, per GPU reclaimed; see ``Result.summary``); a run that reclaimed
        nothing is labelled "no reclaims".
    """
    runs = _named(results)
    names = [n for n, _ in runs]
    summaries = [r.summary() for _, r in runs]
    ratio = np.array([s["preemption_ratio"] for s in summaries], dtype=float)
    damage = np.array([s["collateral_damage"] for s in summaries], dtype=float)
    counts = [int(r.jobs["preemptions"].sum()) for _, r in runs]
    reclaimed = [bool((r.totals or {}).get("reclaims", 1)) for _, r in runs]

    fig = NotebookFigure(
        figsize=(11.0, max(2.8, 0.38 * len(runs) + 1.6)), layout="constrained"
    )
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(runs))
    bars = left.barh(y, ratio, color="tab:red")
    left.bar_label(
        bars,
        labels=[f"{v:.1%} ({c:,})" for v, c in zip(ratio, counts)],
        fontsize="small",
        padding=3,
    )
    bars = right.barh(y, np.nan_to_num(damage), color="tab:purple")
    right.bar_label(
        bars,
        labels=[
            f"{v:.1%}" if any_ else "no reclaims" for v, any_ in zip(damage, reclaimed)
        ],
        fontsize="small",
        padding=3,
    )
    left.set_yticks(y, names)
    left.invert_yaxis()
    for ax, values, title, label in (
        (left, ratio, "Preemption ratio", "preemptions / jobs (labels: ratio (count))"),
        (
            right,
            damage,
            "Collateral damage",
            "GPUs lost on kept servers / GPUs reclaimed",
        ),
    ):
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.xaxis.set_major_locator(MaxNLocator(4))  # few ticks: labels stay apart
        top = float(np.nanmax(np.r_[values, 0.0])) or 0.01  # all zero: a 0-1% axis
        ax.set_xlim(0, top * 1.45)  # room for the labels
        ax.set_title(title)
        ax.set_xlabel(label)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle("Preemptions per run")
    return fig


#: Jobs ``gantt`` draws when none are named: the first to start.
GANTT_JOBS = 30
#: The most jobs one Gantt chart takes (one row each).
GANTT_MAX_JOBS = 300
#: How ``gantt`` colours the bars.
GANTT_COLORS = ("gpu_type", "loan")
# Markers at the end of an interval: (changes, marker, colour, legend label).
_GANTT_MARKS = (
    (("reclaim_preemption",), "X", "tab:red", "reclaim preemption"),
    (("reclaim_scale_in",), "v", "tab:red", "reclaim scale-in"),
    (("preemption",), "x", "black", "preempted by the allocator"),
)


def gantt(
    result: Result,
    jobs: Optional[Sequence[object]] = None,
    color: str = "gpu_type",
    window: Optional[Tuple[float, float]] = None,
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
        ``+`` when it spans several); ``"loan"``: on training servers, on loaned
        inference servers, or both.
    window
        ``(start, end)`` in seconds: the stretch of time shown (default: the run).

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a thin grey line from each job's submission to its finish (or the
        end of the run), a bar per allocation interval (white edges between
        intervals) labelled with its GPUs when wide enough, and a marker where a
        reclaim preempted the job (red X), scaled it in (red triangle) or the
        allocator preempted it (black x).
    """
    from .sim.history import intervals

    if color not in GANTT_COLORS:
        raise ValueError(f"color must be one of {GANTT_COLORS}, got {color!r}")
    if window is not None and not (
        len(window) == 2 and all(map(math.isfinite, window)) and window[0] < window[1]
    ):
        raise ValueError(
            f"window must be finite (start, end) with start < end, got {window!r}"
        )
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
    if color == "loan":
        spans["key"] = np.where(
            spans["on_loan"] & spans["training"],
            "training + on loan",
            np.where(spans["on_loan"], "on loan", "training"),
        )
    else:
        spans["key"] = spans["gpu_type"]
    end = float(result.totals.get("end_time", 0.0)) or float(spans["end"].max())
    shown_from, shown_to = window or (0.0, end)
    unit, scale = _time_unit(shown_to - shown_from)

    fig = NotebookFigure(
        figsize=(10.0, max(2.5, 0.3 * len(shown) + 1.4)), layout="constrained"
    )
    ax = fig.subplots()
    life = frame.set_index("id").loc[shown]
    ax.hlines(
        np.arange(len(shown)),
        life["submit_time"] / scale,
        life["finish_time"].fillna(end) / scale,
        color="0.75",
        linewidth=1,
        zorder=0.5,  # under the bars
        label="from submission to finish",
    )
    keys = sorted(spans["key"].unique())
    palette = [f"C{i % 10}" for i in range(len(keys))]
    y = spans["job"].map(row).to_numpy()
    left = spans["start"].to_numpy() / scale
    width = (spans["end"] - spans["start"]).to_numpy() / scale
    for key, shade in zip(keys, palette):
        mine = (spans["key"] == key).to_numpy()
        bars = ax.barh(
            y[mine],
            width[mine],
            left=left[mine],
            height=0.6,
            color=shade,
            edgecolor="white",  # where one interval ends and the next begins
            linewidth=0.6,
            label=key,
        )
        wide = width[mine] > 0.04 * (shown_to - shown_from) / scale
        ax.bar_label(
            bars,
            labels=[f"{g}" if w else "" for g, w in zip(spans["gpus"][mine], wide)],
            label_type="center",
            fontsize="x-small",
            color="white",
            clip_on=True,  # a bar running past the window keeps its label inside
        )
    closed = spans["closed"].astype(str)
    for changes, marker, shade, label in _GANTT_MARKS:
        mine = closed.isin(changes).to_numpy()
        if mine.any():
            ax.scatter(
                spans["end"][mine] / scale,
                y[mine],
                marker=marker,
                color=shade,
                zorder=3,
                label=label,
            )
    if window is not None:
        ax.set_xlim(shown_from / scale, shown_to / scale)
    ax.set_yticks(np.arange(len(shown)), [str(j) for j in shown])
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlabel(f"time ({unit}); bars labelled with their GPUs")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_title(f"Allocations over time: {result.label or 'run'}")
    return fig


def _gantt_jobs(jobs: Sequence[object], known: Set[object]) -> List[object]:
    """``gantt``'s ``jobs`` checked: a sequence of this run's ids, each once."""
    if isinstance(jobs, (str, bytes)):
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


def speedups(table: pd.DataFrame, baseline: Optional[str] = None) -> Figure:
    """The headline comparison: mean-JCT and mean-queuing speed-ups per row.

    Parameters
    ----------
    table
        ``aryl.sim.speedups``' table: one row per run (its index names the rows),
        with columns ``speed-up JCT`` and ``speed-up queue``.
    baseline
        The row speed-ups are measured against, for the axis label (default: the
        first row).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes side by side sharing the row names, one metric each, as horizontal
        bars labelled ``1.19x``, with a line at 1x (no change); bars beyond 1x (better
        than the baseline) are green, the others grey. A row without a value (a mean
        of 0) is labelled "n/a". A replicated comparison's table (``compare(...,
        seeds=N)``: columns ``speed-up JCT low`` / ``high``) draws each interval as
        an error bar, and bars whose interval includes 1x grey.
    """
    missing = [c for c in ("speed-up JCT", "speed-up queue") if c not in table.columns]
    if missing:
        raise ValueError(f"speedups needs aryl.sim.speedups' table; missing {missing}")
    if table.empty:
        raise ValueError("speedups: the table has no rows to plot")
    names = [str(n) for n in table.index]
    base = baseline if baseline is not None else names[0]
    fig = NotebookFigure(
        figsize=(11.0, max(2.8, 0.38 * len(names) + 1.8)), layout="constrained"
    )
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(names))
    for ax, column, title in (
        (left, "speed-up JCT", "Mean job completion time"),
        (right, "speed-up queue", "Mean queuing time"),
    ):
        values = table[column].to_numpy(dtype=float)
        low, high = _interval(table, column, values)
        colors = ["tab:green" if v > 1 else "0.6" for v in np.nan_to_num(low, nan=1.0)]
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
        ax.set_title(f"{title}: speed-up")
        ax.set_xlabel(f"{base} mean / row mean (higher is better)")
        ax.grid(True, axis="x", alpha=0.3)
    left.set_yticks(y, names)
    left.invert_yaxis()
    fig.suptitle(f"Speed-ups over {base}")
    return fig


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
) -> Figure:
    """A metric of a sweep against one parameter, one line per value of another.

    Parameters
    ----------
    frame
        ``aryl.sim.sweep``'s table (or any frame with columns ``x``, ``y``, ``by``).
    x
        The parameter on the x axis (e.g. ``"inference_servers"``).
    y
        A summary key (``aryl.sim.SUMMARY_KEYS``): times are drawn in hours, ratios as
        percentages.
    by
        A parameter whose values get one line each (``None``: one line).
    target
        Draw a horizontal reference line at this ``y`` value (in ``y``'s unit: seconds or
        a ratio), e.g. half the baseline's mean queuing time.

    Returns
    -------
    matplotlib.figure.Figure
        One axes; runs with the same ``x`` and ``by`` (e.g. several seeds) are averaged,
        their spread shown as a band.
    """
    ratio = kind(y) == "ratio"
    time_metric = kind(y) == "time"
    scale = 3600.0 if time_metric else 1.0
    fig = NotebookFigure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    groups = (
        [(None, frame)]
        if by is None
        else list(frame.groupby(by, sort=True, dropna=False))
    )
    for i, (value, part) in enumerate(groups):
        stats = part.groupby(x, sort=True)[y].agg(["mean", "min", "max"]) / scale
        label = None if by is None else f"{by} = {value!s}"
        ax.plot(
            stats.index,
            stats["mean"],
            marker="o",
            linewidth=1.8,
            label=label,
            linestyle=_LINESTYLES[i % len(_LINESTYLES)],
        )
        if (stats["max"] > stats["min"]).any():
            ax.fill_between(stats.index, stats["min"], stats["max"], alpha=0.15)
    if target is not None:
        ax.axhline(
            target / scale,
            color="0.3",
            linestyle=":",
            linewidth=1.2,
            label=f"target ({target / scale:.3g}{' h' if time_metric else ''})",
        )
    if ratio:
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(y.replace("_", " ") + (" (hours)" if time_metric else ""))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{y.replace('_', ' ')} by {x.replace('_', ' ')}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def intervals(
    frame: pd.DataFrame,
    x: str,
    y: str,
    by: Optional[str] = None,
    reference: Optional[float] = 1.0,
) -> Figure:
    """Estimates with their confidence intervals against a parameter, as bands.

    Parameters
    ----------
    frame
        One row per point: columns ``x``, ``y`` (the estimate), ``"<y> low"`` and
        ``"<y> high"`` (its interval, as ``aryl.sim.replications.contributions`` and
        a replicated ``Comparison`` name them) and ``by``.
    x, y
        The parameter on the x axis and the estimate (e.g. ``"JCT gain"``).
    by
        A column whose values get one line each (``None``: one line).
    reference
        A horizontal line at this value (default 1: no gain); ``None`` for none.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a line per ``by`` value through the estimates, the interval as a
        band around it.
    """
    missing = [c for c in (x, y, f"{y} low", f"{y} high") if c not in frame.columns]
    if missing:
        raise ValueError(f"intervals needs columns {missing}")
    fig = NotebookFigure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    groups = [(None, frame)] if by is None else list(frame.groupby(by, sort=True))
    for i, (value, part) in enumerate(groups):
        part = part.sort_values(x)
        line = ax.plot(
            part[x],
            part[y],
            marker="o",
            linewidth=1.8,
            linestyle=_LINESTYLES[i % len(_LINESTYLES)],
            label=None if by is None else f"{by} = {value!s}",
        )[0]
        ax.fill_between(
            part[x],
            part[f"{y} low"],
            part[f"{y} high"],
            alpha=0.2,
            color=line.get_color(),
        )
    if reference is not None:
        ax.axhline(reference, color="0.3", linestyle=":", linewidth=1.2)
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(f"{y} (band: 95% interval)")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{y} by {x.replace('_', ' ')}")
    if by is not None:
        ax.legend(fontsize="small")
    return fig


def save_all(
    results: Results,
    directory: Union[str, Path],
    metadata: Optional[Mapping[str, str]] = None,
    formats: Sequence[str] = ("png",),
    window: Optional[float] = DEFAULT_WINDOW,
    headline: Optional[pd.DataFrame] = None,
) -> List[Path]:
    """Write the standard figures of one or several runs.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.
    directory
        Where to write; created (with its parents) if missing.
    metadata
        Text written into every file (``Software``, ``Description``: the CLI
        records the command, inputs, parameters and version there): PNG text
        chunks; in SVG and PDF as ``Creator`` and ``Description`` / ``Subject``.
    formats
        File formats, each figure in each: ``"png"``, ``"svg"``, ``"pdf"``.
    window
        Seconds the usage figures average over (default an hour; see ``usage``).
    headline
        ``aryl.sim.speedups``' table of the runs: adds ``speedups``' figure.

    Returns
    -------
    list of pathlib.Path
        Per format, in this order: ``jct_cdf``, ``queuing_cdf``, ``preemptions``,
        ``speedups`` (with ``headline``) and ``usage``: for one run its two-panel
        ``usage`` figure, for several one ``usage_grid`` figure.

    Notes
    -----
    PNGs are rendered at 120 dpi; figures are released after saving; nothing is
    left open in pyplot.
    """
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(
            f"unknown figure format(s) {unknown}; expected some of {FORMATS}"
        )
    runs = _named(results)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    mapping = dict(runs)
    paths: List[Path] = []

    def write(stem: str, fig: Figure) -> None:
        try:
            for fmt in formats:
                path = out / f"{stem}.{fmt}"
                fig.savefig(
                    path,
                    dpi=_DPI,
                    format=fmt,
                    metadata=_file_metadata(fmt, metadata or {}),
                )
                paths.append(path)
        finally:
            fig.clear()

    write("jct_cdf", cdf(mapping, "jct"))
    write("queuing_cdf", cdf(mapping, "queuing_time"))
    write("preemptions", preemptions(mapping))
    if headline is not None:
        write("speedups", speedups(headline))
    if len(runs) == 1:
        write("usage", usage(runs[0][1], label=runs[0][0], window=window))
    else:
        write("usage", usage_grid(mapping, window=window))
    return sorted(paths, key=lambda p: formats.index(p.suffix[1:]))


def _file_metadata(fmt: str, metadata: Mapping[str, str]) -> Dict[str, str]:
    """``metadata`` under the keys each format accepts (SVG and PDF have fixed ones)."""
    if fmt == "png":
        return dict(metadata)
    keys = {
        "svg": {"Software": "Creator", "Description": "Description"},
        "pdf": {"Software": "Creator", "Description": "Subject"},
    }[fmt]
    return {keys[k]: v for k, v in metadata.items() if k in keys}


def _named(results: Results) -> List[Tuple[str, Result]]:
    """(name, Result) pairs; names unique, from mapping keys or labels."""
    if isinstance(results, Result):
        pairs = [(results.label, results)]
    elif isinstance(results, Mapping):
        pairs = [(str(k), v) for k, v in results.items()]
    else:
        pairs = [(getattr(r, "label", ""), r) for r in results]
    named: List[Tuple[str, Result]] = []
    used: Dict[str, int] = {}
    for i, (name, result) in enumerate(pairs, 1):
        if not isinstance(result, Result):
            raise TypeError(
                f"expected aryl.sim.Result, got {type(result).__name__} for {name!r}"
            )
        name = name or f"run {i}"
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name} ({used[name]})"
        named.append((name, result))
    return named
