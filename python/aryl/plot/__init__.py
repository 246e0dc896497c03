"""Figures of simulated runs: JCT / queuing CDFs (``verdict_cdf``: the two rows that
answer each question of the verdict in one axes), GPU usage over time (GPUs lent
beside GPUs used), preemptions, speed-ups, sweeps, confidence intervals, and a Gantt
chart of jobs' allocations.

Every function takes ``aryl.sim.Result`` objects (``speedups``: the table of
``aryl.sim.speedups``; ``sweep`` and ``intervals``: a table of runs) and returns a
``matplotlib.figure.Figure`` built with the object-oriented API (no pyplot, no
global state, nothing shown), so it works headless with any backend; save it with
``fig.savefig(...)``. In a notebook the returned figure displays itself inline
(``NotebookFigure``), no ``%matplotlib`` needed.

Into your own figure: every function takes ``ax=`` -- an ``Axes``, or for the
functions that draw several panels (``usage``: 2, ``preemptions``: 2,
``speedups``: 2, ``usage_grid``: one per run, ``verdict_cdf``: one per question
answered) a sequence of exactly that many --
and draws there, returning that figure; ``figsize=`` sizes the figure it makes
otherwise::

    fig, (left, right) = plt.subplots(1, 2, figsize=(7, 2.6), layout="constrained")
    aryl.plot.cdf(runs, "queuing_time", ax=left)
    aryl.plot.sweep(table, x="inference_servers", y="queuing_mean", ax=right)

A figure narrower than ``COLUMN_WIDTH`` (6 in: ``figsize=``, or the figure of your
axes) is laid out for a paper's column: legends inside the axes, no figure title
(the caption says it), fewer time ticks. The one-axes figures (``cdf``, ``sweep``,
``intervals``, ``gantt``) fit a column; the two-panel ones want a two-column width
(about 7 in).

The look (``style``): Okabe & Ito's colour-blind-safe palette, each of its eight
colours with its own dash and marker, so at most ``MAX_SERIES`` (8) series per
axes; more raise a ``ValueError`` that asks to select (``save_all`` splits a larger
comparison's CDFs into several files). Axes are labelled in words with units
(``aryl.engine.metrics`` names the summary metrics), ratios in percent without
needless decimals, times in minutes, hours or days. Usage over time is averaged
over hourly windows by default (``window``), and series of many steps are
rasterised, so that months of 60-s steps stay readable and SVG/PDF files small.
``save_all`` writes the standard set as PNG, SVG and/or PDF; ``gantt`` draws the
allocation history of a run simulated with ``history=True``.
"""

from .allocations import GANTT_COLORS, GANTT_JOBS, GANTT_MAX_JOBS, gantt
from .comparisons import intervals, speedups, sweep
from .distributions import cdf, preemptions
from .files import FORMATS, save_all
from .style import (
    COLUMN_WIDTH,
    LINESTYLES,
    MARKERS,
    MAX_SERIES,
    PALETTE,
    NotebookFigure,
)
from .timelines import usage, usage_grid
from .timeseries import DEFAULT_WINDOW
from .verdict import verdict_cdf

__all__ = [
    "COLUMN_WIDTH",
    "DEFAULT_WINDOW",
    "FORMATS",
    "GANTT_COLORS",
    "GANTT_JOBS",
    "GANTT_MAX_JOBS",
    "LINESTYLES",
    "MARKERS",
    "MAX_SERIES",
    "NotebookFigure",
    "PALETTE",
    "cdf",
    "gantt",
    "intervals",
    "preemptions",
    "save_all",
    "speedups",
    "sweep",
    "usage",
    "usage_grid",
    "verdict_cdf",
]
