"""Paper-ready figures (issue 26, item 5): every plot function draws into the caller's
axes (``ax=``) or a figure of the caller's size (``figsize=``); at most 8 series, each
with its own colour-blind-safe colour and dash; labels in words with units; percent
ticks without needless decimals; dense usage series rasterised so SVGs stay small."""

import inspect
import io
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import aryl  # noqa: E402
from aryl import plot, sim  # noqa: E402
from aryl.plot import style  # noqa: E402
from aryl.plot.files import _cdf_groups  # noqa: E402
from test_plot import LOAD, tiny_jobs  # noqa: E402

OKABE_ITO = {
    "#000000",
    "#e69f00",
    "#56b4e9",
    "#009e73",
    "#f0e442",
    "#0072b2",
    "#d55e00",
    "#cc79a7",
}


@pytest.fixture(scope="module")
def runs():
    """Three runs of four jobs that spill onto loaned servers and get reclaimed."""
    return {
        reclaim: sim.simulate(
            tiny_jobs(),
            sim.Cluster(2, 2),
            reclaim=reclaim,
            inference_load=LOAD,
            config={"gpu_speed": {"T4": 1.0}},
            label=f"reclaim {reclaim}",
            history=True,
        )
        for reclaim in ("aryl", "scf", "random")
    }


def sweep_table(values=(600.0, 1200.0, 1800.0), by=(0, 0.5)):
    """A made-up sweep: queuing_mean (s) and preemption_ratio per point."""
    rows = [
        {
            "inference_servers": servers,
            "headroom": h,
            "queuing_mean": value * (1 + h),
            "preemption_ratio": 0.01 * servers,
        }
        for h in by
        for servers, value in zip((0, 2, 4), values)
    ]
    return pd.DataFrame(rows)


def interval_table():
    return pd.DataFrame(
        {
            "mean_load": [0.5, 0.7, 0.5, 0.7],
            "t4_speed": [0.25, 0.25, 1.0, 1.0],
            "JCT gain": [1.0, 1.1, 1.02, 1.2],
            "JCT gain low": [0.99, 1.05, 1.0, 1.1],
            "JCT gain high": [1.01, 1.15, 1.04, 1.3],
        }
    )


# Each public plot function, called on the fixture's runs with extra keyword arguments,
# and how many axes it draws (0: one Axes, not a sequence).
CALLS = {
    "cdf": (0, lambda r, **kw: plot.cdf(r, "queuing_time", **kw)),
    "usage": (2, lambda r, **kw: plot.usage(r["aryl"], **kw)),
    "usage_grid": (3, lambda r, **kw: plot.usage_grid(r, window=600, **kw)),
    "preemptions": (2, lambda r, **kw: plot.preemptions(r, **kw)),
    "gantt": (0, lambda r, **kw: plot.gantt(r["aryl"], **kw)),
    "speedups": (
        2,
        lambda r, **kw: plot.speedups(
            sim.speedups({n: x.summary() for n, x in r.items()}), **kw
        ),
    ),
    "sweep": (
        0,
        lambda r, **kw: plot.sweep(
            sweep_table(), x="inference_servers", y="queuing_mean", by="headroom", **kw
        ),
    ),
    "intervals": (
        0,
        lambda r, **kw: plot.intervals(
            interval_table(), x="mean_load", y="JCT gain", by="t4_speed", **kw
        ),
    ),
    "verdict_cdf": (2, lambda r, **kw: plot.verdict_cdf(as_rows(r), **kw)),
}


def as_rows(runs):
    """The fixture's runs under the names of the rows that answer the verdict's two
    questions (loaning: Aryl Basic over Elastic only; elastic scaling: Aryl Basic
    over Loaning only)."""
    return {
        "Aryl Basic": runs["aryl"],
        "Elastic only, aryl": runs["scf"],
        "Loaning only, aryl reclaim": runs["random"],
    }


def test_every_public_plot_function_is_covered_here():
    public = {
        name
        for name in plot.__all__
        if inspect.isfunction(getattr(plot, name)) and name != "save_all"
    }
    assert public == set(CALLS)
    for name in public:
        parameters = inspect.signature(getattr(plot, name)).parameters
        assert {"ax", "figsize"} <= set(parameters), name


@pytest.mark.parametrize("name", sorted(CALLS))
def test_plot_functions_draw_into_the_callers_axes(runs, name):
    panels, call = CALLS[name]
    fig = Figure()
    axes = list(fig.subplots(1, max(panels, 1), squeeze=False).ravel())
    given = axes[0] if panels == 0 else axes
    assert call(runs, ax=given) is fig
    assert fig.axes == axes  # drawn there, nothing added
    for ax in axes:
        assert ax.lines or ax.patches or ax.collections, (name, ax)
    assert not fig.get_suptitle()  # the figure is the caller's: its title too
    if panels:  # plt.subplots gives an array of axes
        array = Figure().subplots(1, panels, squeeze=False)
        assert call(runs, ax=array) is array[0, 0].figure


@pytest.mark.parametrize("name", sorted(CALLS))
def test_plot_functions_make_a_figure_of_the_given_size(runs, name):
    fig = CALLS[name][1](runs, figsize=(4.2, 3.1))
    assert isinstance(fig, plot.NotebookFigure)
    assert tuple(fig.get_size_inches()) == pytest.approx((4.2, 3.1))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_wrong_axes_are_refused_before_drawing(runs, name):
    panels, call = CALLS[name]
    fig = Figure()
    axes = list(fig.subplots(1, max(panels, 1) + 1, squeeze=False).ravel())
    one = axes[0] if panels == 0 else axes[:panels]
    with pytest.raises(ValueError, match="figsize"):
        call(runs, ax=one, figsize=(3, 2))
    with pytest.raises(TypeError, match="Axes"):
        call(runs, ax="left" if panels == 0 else ["left"] * panels)
    with pytest.raises(TypeError, match="Axes"):
        call(runs, ax=5)
    if panels:
        with pytest.raises(
            ValueError, match=f"draws {panels} panels.*got {panels + 1}"
        ):
            call(runs, ax=axes)
        other = Figure().subplots()
        with pytest.raises(ValueError, match="one figure"):
            call(runs, ax=[other, *axes[1:panels]])
    assert not any(a.lines or a.patches or a.collections for a in axes)


def test_palette_is_okabe_ito_with_a_dash_and_marker_per_colour():
    assert {c.lower() for c in plot.PALETTE} == OKABE_ITO
    assert plot.MAX_SERIES == 8
    for values in (plot.PALETTE, plot.LINESTYLES, plot.MARKERS):
        assert len(values) == 8 and len(set(values)) == 8


def test_eight_runs_get_eight_colours_and_dashes(runs):
    eight = {f"run {i}": runs["aryl"] for i in range(8)}
    (ax,) = plot.cdf(eight).axes
    lines = ax.get_lines()
    assert [to_hex(line.get_color()) for line in lines] == [
        c.lower() for c in plot.PALETTE
    ]
    # The dash each line is drawn with (matplotlib keeps it unscaled by width here).
    dashes = {str(line._unscaled_dash_pattern) for line in lines}
    assert len(dashes) == 8


def test_more_than_eight_series_are_refused_with_a_way_out(runs):
    nine = {f"run {i}": runs["aryl"] for i in range(9)}
    with pytest.raises(
        ValueError, match="cdf: 9 series, but at most 8.*select up to 8"
    ):
        plot.cdf(nine)
    table = sweep_table(by=range(9))
    with pytest.raises(ValueError, match="sweep: 9 series.*'headroom'"):
        plot.sweep(table, x="inference_servers", by="headroom")
    with pytest.raises(ValueError, match="intervals needs columns"):
        plot.intervals(interval_table(), x="mean_load", y="JCT gain", by="nope")


def test_save_all_splits_more_than_eight_runs_keeping_the_first(runs, tmp_path):
    many = [(f"run {i}", runs["aryl"]) for i in range(16)]
    groups = _cdf_groups(many)
    assert [s for s, _ in groups] == ["", "_2", "_3"]
    assert [[n for n, _ in g] for _, g in groups] == [
        [f"run {i}" for i in range(8)],
        ["run 0"] + [f"run {i}" for i in range(8, 15)],
        ["run 0", "run 15"],
    ]
    for _, group in groups:  # the reference run has the same colour in every file
        (ax,) = plot.cdf(dict(group)).axes
        assert to_hex(ax.get_lines()[0].get_color()) == plot.PALETTE[0].lower()
    nine = dict(many[:9])
    names = {p.name for p in plot.save_all(nine, tmp_path)}
    assert {"jct_cdf.png", "jct_cdf_2.png", "queuing_cdf_2.png"} <= names
    assert "jct_cdf_3.png" not in names
    assert _cdf_groups(many[:8]) == [("", many[:8])]


def test_a_series_has_one_colour_across_panels(runs):
    fig = plot.usage_grid(runs, window=600)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    for label in ("used on training servers", "used on loaned servers"):
        colours = {
            to_hex(c.get_facecolor()[0], keep_alpha=False)
            for ax in panels
            for c in ax.collections
            if c.get_label() == label
        }
        assert len(colours) == 1, label
    top, bottom = plot.usage(runs["aryl"]).axes
    loaned = {
        to_hex(line.get_color())
        for line in top.get_lines() + bottom.get_lines()
        if "loan" in line.get_label()
    }
    assert loaned == {plot.PALETTE[1].lower()}


def test_percentages_without_needless_decimals():
    assert style.percent(0.0) == "0%"
    assert style.percent(0.00025) == "0.025%"  # the audit's "0.0% (4)" bar
    assert style.percent(0.0123) == "1.2%"
    assert style.percent(0.123) == "12%"
    assert style.percent(1.5) == "150%"
    assert style.percent(float("nan")) == "n/a"
    fig = Figure()
    ax = fig.subplots()
    style.percent_ticks(ax.yaxis)
    labels = ax.yaxis.get_major_formatter().format_ticks(
        [0.0, 0.25, 0.0001, 0.0003, 1.0, 0.1 + 0.2]
    )
    assert labels == ["0%", "25%", "0.01%", "0.03%", "100%", "30%"]


def tick_labels(axis):
    return axis.get_major_formatter().format_ticks(axis.get_majorticklocs())


def test_drawn_percent_ticks_have_no_trailing_zeros(runs):
    (ax,) = plot.cdf(runs).axes
    labels = tick_labels(ax.yaxis)
    assert "0%" in labels and "100%" in labels
    left, right = plot.preemptions(runs).axes
    fig = plot.sweep(sweep_table(), x="inference_servers", y="preemption_ratio")
    for axis in (ax.yaxis, left.xaxis, right.xaxis, fig.axes[0].yaxis):
        labels = tick_labels(axis)
        assert labels and all(label.endswith("%") for label in labels)
        assert not [s for s in labels if re.search(r"\.\d*0%$", s)], labels


@pytest.mark.parametrize("name", sorted(CALLS))
def test_labels_are_words_not_column_names(runs, name):
    fig = CALLS[name][1](runs)
    texts = [fig.get_suptitle()]
    for ax in fig.axes:
        texts += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
        legend = ax.get_legend()
        if legend is not None:
            texts += [legend.get_title().get_text()]
            texts += [t.get_text() for t in legend.get_texts()]
    assert not [t for t in texts if "_" in t], texts


def test_sweep_labels_metrics_by_the_catalogue_in_human_units():
    table = sweep_table()
    (ax,) = plot.sweep(table, x="inference_servers", y="queuing_mean").axes
    assert ax.get_ylabel() == "queuing time, mean (minutes)"  # at most 45 min
    assert ax.get_xlabel() == "inference servers"
    assert ax.get_title() == "Queuing time, mean by inference servers"
    mean = table.groupby("inference_servers")["queuing_mean"].mean() / 60
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx(list(mean))
    days = sweep_table(values=(2 * 86400.0, 4 * 86400.0, 5 * 86400.0))
    (ax,) = plot.sweep(days, x="inference_servers", y="queuing_mean").axes
    assert ax.get_ylabel().endswith("(days)")
    (ax,) = plot.sweep(
        table, x="inference_servers", y="queuing_mean", by="headroom", target=900.0
    ).axes
    assert ax.get_legend().get_title().get_text() == "headroom"
    assert "target (15 minutes)" in [t.get_text() for t in ax.get_legend().get_texts()]


def long_run(days=10, step=60.0):
    """A made-up run of ``days`` whose usage changes every ``step`` seconds."""
    rng = np.random.default_rng(7)
    t = np.arange(0.0, days * 86400.0, step)
    timeline = pd.DataFrame(
        {
            "t": t,
            "training_gpus_used": rng.integers(0, 512, len(t)),
            "loaned_gpus_used": rng.integers(0, 256, len(t)),
            "on_loan": rng.integers(0, 64, len(t)),
            "inference_needed": rng.integers(0, 64, len(t)),
        }
    )
    capacity = {
        "training_gpus": 512,
        "inference_gpus": 512,
        "max_inference_server_gpus": 8,
    }
    return sim.Result(
        pd.DataFrame({"id": [], "jct": [], "queuing_time": []}),
        timeline,
        {"end_time": float(t[-1] + step)},
        capacity,
        "long",
    )


def svg_bytes(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", dpi=style.DPI)
    return len(buffer.getvalue())


def test_usage_svg_of_a_long_run_stays_small(monkeypatch):
    result = long_run()
    fig = plot.usage(result, window=None)  # every one of 14,400 steps
    dense = [
        line
        for ax in fig.axes
        for line in ax.get_lines()
        if len(line.get_xdata()) > style.RASTER_POINTS
    ]
    assert len(dense) == 5 and all(line.get_rasterized() for line in dense)
    assert svg_bytes(fig) < 1_000_000
    assert svg_bytes(plot.usage_grid([result], window=None)) < 1_000_000
    # The bound bites: drawn as vector paths, the same figures are larger.
    monkeypatch.setattr("aryl.plot.timelines.RASTER_POINTS", 10**9)
    assert svg_bytes(plot.usage(result, window=None)) > 1_000_000
    assert svg_bytes(plot.usage_grid([result], window=None)) > 1_000_000
    # A short series stays vector: sharp at any zoom, and small anyway.
    (ax, _) = plot.usage(result, window=6 * 3600.0).axes
    assert not any(line.get_rasterized() for line in ax.get_lines())


def test_import_aryl_does_not_import_matplotlib():
    code = (
        "import sys, aryl; assert 'matplotlib' not in sys.modules; "
        "aryl.plot.cdf; assert 'matplotlib' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_gallery_page_draws_every_figure_with_its_own_code(tmp_path):
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "docs" / "figures"))
    try:
        import gallery
    finally:
        sys.path.pop(0)
    images = [image for _, image in gallery.blocks() if image is not None]
    written = gallery.draw(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == images
    for image in images:  # the committed picture beside the page, small
        committed = root / "docs" / image
        assert 0 < committed.stat().st_size < 200_000, image
    page = gallery.PAGE.read_text(encoding="utf-8")
    for name in CALLS:  # a section and a call for every plot function
        assert f"## `{name}`" in page and f"plot.{name}(" in page, name
    mkdocs = (root / "mkdocs.yml").read_text(encoding="utf-8")
    assert "gallery.md" in mkdocs


def long_job_run():
    """Jobs of 2 min to 2 days, one after another on one server."""
    jobs = [aryl.Job(f"j{i}", 8, 1, 1, d) for i, d in enumerate([120, 7200, 172800])]
    return sim.simulate(jobs, sim.Cluster(1, 0), label="days")


def legend_inside(ax):
    ax.figure.draw_without_rendering()
    legend, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    return legend.x1 <= frame.x1 + 1


def test_a_column_wide_figure_keeps_its_legend_inside_and_no_title(runs):
    (wide,) = plot.cdf(runs).axes
    assert wide.get_title() == "Job completion time: CDF per run"
    assert not legend_inside(wide)
    (narrow,) = plot.cdf(runs, figsize=(3.3, 2.4)).axes
    assert not narrow.get_title() and legend_inside(narrow)
    ticks = [t.get_text() for t in narrow.get_xticklabels()]
    assert ticks == ["10 min", "1 h"]  # one coarse tick (1 h) fits: all are shown
    days = {"d": long_job_run()}
    (narrow,) = plot.cdf(days, figsize=(3.3, 2.4)).axes
    (wide,) = plot.cdf(days).axes
    # JCTs 120 s to 50 h: the axis spans 80 s to 3.1 days.
    assert [t.get_text() for t in narrow.get_xticklabels()] == ["1 h", "1 d"]
    assert [t.get_text() for t in wide.get_xticklabels()] == [
        "10 min",
        "1 h",
        "6 h",
        "1 d",
    ]
    fig = plot.usage(runs["aryl"], figsize=(3.3, 3.6))
    assert not fig.get_suptitle() and all(legend_inside(ax) for ax in fig.axes)
    assert plot.usage(runs["aryl"], figsize=(7.0, 3.6)).get_suptitle()
    # In the caller's axes the legend stays inside whatever the figure's width.
    (mine,) = Figure(figsize=(10, 4)).subplots(1, 1, squeeze=False)[0]
    plot.cdf(runs, ax=mine)
    assert legend_inside(mine) and mine.get_title()


def test_timelines_span_the_runs_in_the_callers_unshared_axes(runs):
    result = runs["aryl"]
    top, bottom = Figure().subplots(2, 1)  # not sharing x
    plot.usage(result, ax=[top, bottom])
    assert top.get_xlim() == bottom.get_xlim()
    short = sim.simulate(tiny_jobs()[:1], sim.Cluster(2, 2), label="short")
    fig = plot.usage_grid({"long": result, "short": short}, window=None)
    ends = [r.totals["end_time"] / 3600 for r in (result, short)]
    assert ends[0] > ends[1]
    for ax in fig.axes:  # every panel to the end of the longer run, in hours
        assert ax.get_xlim() == pytest.approx((0.0, ends[0]))
