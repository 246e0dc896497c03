"""``gantt``: each job's allocation intervals over time, one row per job, from a run
simulated with ``history=True`` (bars by GPU type or by loan, markers where a reclaim
or the allocator ended an interval)."""

from __future__ import annotations

import math
from numbers import Real
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from matplotlib.figure import Figure

from ..engine.result import Result
from .style import PALETTE, canvas, legend, series_styles, text_color, time_unit, title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

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
