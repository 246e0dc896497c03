"""Figures of simulated runs: JCT / queuing CDFs, GPU usage over time, preemptions.

Every function takes ``aryl.sim.Result`` objects and returns a
``matplotlib.figure.Figure`` built with the object-oriented API (no pyplot, no
global state, nothing shown), so it works headless with any backend; save it
with ``fig.savefig(...)``. ``save_all`` writes the standard set of PNGs. In a
notebook the returned figure displays itself inline (``NotebookFigure``), no
``%matplotlib`` needed. ``sweep`` plots a metric of an ``aryl.sim.sweep`` table.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator, PercentFormatter

from ._display import RATIO_KEYS
from .sim.result import Result

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["NotebookFigure", "cdf", "preemptions", "save_all", "sweep", "usage"]

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
    (1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"),
    (21600, "6 h"), (86400, "1 d"), (604800, "1 wk"), (2592000, "30 d"),
    (31536000, "1 y"),
)

_DPI = 120
_LINESTYLES = ("-", "--", ":", "-.")


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
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(_METRICS)}")
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
            ax.plot(np.r_[values[0], values], np.r_[0.0, y], drawstyle="steps-post",
                    linewidth=1.8, label=label, linestyle=style)
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
    ax.set_xlabel(f"{axis_label} (s, log scale{'; values below 1 s shown at 1 s' if clipped else ''})")
    ax.set_ylabel("share of jobs with a value (CDF)")
    ax.set_title(f"{title}: CDF per run")
    ax.grid(True, which="major", alpha=0.3)
    if runs:
        # Outside the axes: with many runs a legend inside covers the curves.
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0)
    return fig


def usage(result: Result, label: Optional[str] = None) -> Figure:
    """GPU usage and loaned servers over time, in two panels sharing the x axis.

    Parameters
    ----------
    result
        One simulated run.
    label
        Name for the title (default: ``result.label``).

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
    tl = result.timeline
    name = label if label is not None else (result.label or "simulation")
    cap = result.capacity
    per_server = int(cap.get("max_inference_server_gpus", 0) or 0)
    inference_servers = cap.get("inference_gpus", 0) // per_server if per_server else 0
    t = tl["t"].to_numpy(dtype=float)
    columns = {k: tl[k].to_numpy(dtype=float)
               for k in ("training_gpus_used", "loaned_gpus_used", "on_loan", "inference_needed")}
    end = float(result.totals.get("end_time", 0.0) or 0.0) if result.totals else 0.0
    if len(t) and end > t[-1]:
        # The last row holds until the end of the run: draw it up to there.
        t = np.r_[t, end]
        columns = {k: np.r_[v, v[-1]] for k, v in columns.items()}
    if len(t) > 2:
        # A step drawn "post" is the same without rows that repeat the previous row: drop
        # them (months of 60-s epochs are mostly repeats; drawing them took seconds a plot).
        stacked = np.vstack(list(columns.values()))
        keep = np.r_[True, (np.diff(stacked, axis=1) != 0).any(axis=0)]
        keep[-1] = True
        t, columns = t[keep], {k: v[keep] for k, v in columns.items()}
    span = float(t.max() - t.min()) if len(t) else 0.0
    if span > 3 * 86400:
        unit, scale = "days", 86400.0
    elif span >= 3600:
        unit, scale = "hours", 3600.0
    else:
        unit, scale = "minutes", 60.0
    x = t / scale

    fig = NotebookFigure(figsize=(10, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    # A one-row timeline has no step to draw: mark its point instead.
    step = {"where": "post", "marker": "o" if len(t) == 1 else None}

    train, loaned = columns["training_gpus_used"], columns["loaned_gpus_used"]
    on_loan, needed = columns["on_loan"], columns["inference_needed"]
    if len(t):
        top.step(x, train, color="tab:blue", linewidth=1.2, label="used on training servers", **step)
        top.axhline(cap["training_gpus"], color="tab:blue", linestyle="--", linewidth=1,
                    label=f"training capacity ({cap['training_gpus']:,} GPUs)")
        top.step(x, loaned, color="tab:orange", linewidth=1.2, label="used on loaned servers", **step)
        top.fill_between(x, loaned, step="post", color="tab:orange", alpha=0.2)
        top.step(x, on_loan * per_server, color="tab:orange", linestyle="--", linewidth=1,
                 label="loaned capacity (servers on loan x GPUs)", **step)

        bottom.step(x, on_loan, color="tab:orange", linewidth=1.2, label="on loan to training", **step)
        bottom.fill_between(x, on_loan, step="post", color="tab:orange", alpha=0.2)
        bottom.step(x, needed, color="tab:green", linewidth=1.2, label="needed by inference", **step)
        if inference_servers:
            bottom.axhline(inference_servers, color="0.4", linestyle=":", linewidth=1,
                           label=f"inference servers ({inference_servers:,})")
        top.set_xlim(x[0], x[-1] if x[-1] > x[0] else x[0] + 1)
    else:
        for ax in (top, bottom):
            ax.text(0.5, 0.5, "empty timeline", transform=ax.transAxes, ha="center", va="center")
    if not inference_servers and len(t):
        bottom.text(0.5, 0.5, "no inference servers: nothing lent", transform=bottom.transAxes,
                    ha="center", va="center", color="0.4")

    top.set_ylabel("GPUs used by training")
    top.set_ylim(bottom=0)
    bottom.set_ylabel("inference servers")
    bottom.set_ylim(bottom=0, top=max(1.0, inference_servers, np.max(on_loan, initial=0),
                                      np.max(needed, initial=0)) * 1.08)
    bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_xlabel(f"time since start ({unit})")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                      borderaxespad=0)
    top.set_title("GPUs used by training jobs")
    bottom.set_title("Inference servers")
    fig.suptitle(f"GPU usage over time: {name}")
    return fig


def preemptions(results: Results) -> Figure:
    """Preemption ratio and collateral damage per run, as grouped bars.

    Meant for runs of the same trace that differ in reclaim policy.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with two bars per run, labelled with their values:
        *preemption ratio* (preemptions / jobs; a job preempted twice counts
        twice, so it can pass 100%) and *collateral damage* (GPUs freed on
        servers that were kept, because a preempted job also ran there, per GPU
        reclaimed; see ``Result.summary``). The collateral-damage bar of a run
        that reclaimed nothing is labelled "no reclaims".
    """
    runs = _named(results)
    names = [n for n, _ in runs]
    summaries = [r.summary() for _, r in runs]
    ratio = np.array([s["preemption_ratio"] for s in summaries], dtype=float)
    damage = np.array([s["collateral_damage"] for s in summaries], dtype=float)
    counts = [int(r.jobs["preemptions"].sum()) for _, r in runs]
    reclaimed = [bool((r.totals or {}).get("reclaims", 1)) for _, r in runs]

    fig = NotebookFigure(figsize=(max(7.0, 1.3 * len(runs) + 3), 5.0), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(runs))
    width = 0.38
    a = ax.bar(x - width / 2, ratio, width, color="tab:red", label="preemption ratio (preemptions / jobs)")
    b = ax.bar(x + width / 2, damage, width, color="tab:purple",
               label="collateral damage (GPUs lost on kept servers / GPUs reclaimed)")
    ax.bar_label(a, labels=[f"{v:.1%}\n({c:,})" for v, c in zip(ratio, counts)], fontsize="small", padding=2)
    ax.bar_label(b, labels=[f"{v:.1%}" if any_ else "no\nreclaims" for v, any_ in zip(damage, reclaimed)],
                 fontsize="small", padding=2)
    ax.set_xticks(x, names)
    if sum(len(n) for n in names) > 60:
        ax.tick_params(axis="x", labelrotation=20)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    top = max(0.05, float(np.nanmax(np.r_[ratio, damage], initial=0.0)))
    ax.set_ylim(0, top * 1.35)
    ax.set_ylabel("share (%)")
    fig.suptitle("Preemptions per run (red bar labels: ratio and number of preemptions)")
    ax.grid(True, axis="y", alpha=0.3)
    # Above the axes, clear of the bars and of long (rotated) run names.
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.01), fontsize="small",
              ncol=2 if len(runs) >= 5 else 1, borderaxespad=0)
    return fig


def sweep(frame: "pd.DataFrame", x: str, y: str = "queuing_mean", by: Optional[str] = None,
          target: Optional[float] = None) -> Figure:
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
    ratio = y.startswith(RATIO_KEYS)
    time_metric = y.startswith(("queuing", "jct"))
    scale = 3600.0 if time_metric else 1.0
    fig = NotebookFigure(figsize=(8.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    groups = [(None, frame)] if by is None else list(frame.groupby(by, sort=True, dropna=False))
    for i, (value, part) in enumerate(groups):
        stats = part.groupby(x, sort=True)[y].agg(["mean", "min", "max"]) / scale
        label = None if by is None else f"{by} = {value}"
        ax.plot(stats.index, stats["mean"], marker="o", linewidth=1.8, label=label,
                linestyle=_LINESTYLES[i % len(_LINESTYLES)])
        if (stats["max"] > stats["min"]).any():
            ax.fill_between(stats.index, stats["min"], stats["max"], alpha=0.15)
    if target is not None:
        ax.axhline(target / scale, color="0.3", linestyle=":", linewidth=1.2,
                   label=f"target ({target / scale:.3g}{' h' if time_metric else ''})")
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


def save_all(results: Results, directory: Union[str, Path],
             metadata: Optional[Mapping[str, str]] = None) -> List[Path]:
    """Write the standard figures of several runs as PNGs.

    Parameters
    ----------
    results
        A mapping name -> ``Result``, a sequence of ``Result`` (named by
        ``.label``) or a single ``Result``.
    directory
        Where to write; created (with its parents) if missing.
    metadata
        PNG text chunks written into every file (``Software``, ``Description``, ...:
        the CLI records the command, inputs, parameters and version there).

    Returns
    -------
    list of pathlib.Path
        ``jct_cdf.png``, ``queuing_cdf.png``, ``preemptions.png`` and one
        ``usage_<name>.png`` per run, in that order. Names are made
        filename-safe (characters other than letters, digits, ``.``, ``_`` and
        ``-`` become ``_``) and unique (``_2``, ``_3``, ... on a clash).

    Notes
    -----
    Figures are rendered at 120 dpi and released after saving; nothing is
    left open in pyplot.
    """
    runs = _named(results)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    mapping = dict(runs)
    paths: List[Path] = []

    def write(filename: str, fig: Figure) -> None:
        path = out / filename
        try:
            fig.savefig(path, dpi=_DPI, metadata=dict(metadata or {}))
        finally:
            fig.clear()
        paths.append(path)

    write("jct_cdf.png", cdf(mapping, "jct"))
    write("queuing_cdf.png", cdf(mapping, "queuing_time"))
    write("preemptions.png", preemptions(mapping))
    taken: set = set()
    for name, result in runs:
        base = stem = _safe(name)
        k = 1
        while stem in taken:
            k += 1
            stem = f"{base}_{k}"
        taken.add(stem)
        write(f"usage_{stem}.png", usage(result, label=name))
    return paths


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
            raise TypeError(f"expected aryl.sim.Result, got {type(result).__name__} for {name!r}")
        name = name or f"run {i}"
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name} ({used[name]})"
        named.append((name, result))
    return named


def _safe(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return stem or "run"
