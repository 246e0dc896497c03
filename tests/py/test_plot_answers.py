"""Figures that show the answer (issue 45, item 6): usage draws the GPUs lent beside
the GPUs used of them; the two rows that answer each question of the verdict share
one axes (``verdict_cdf``); no text is drawn over a legend. Checked on the figures'
artists and data, not on pixels."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import aryl  # noqa: E402
from aryl import plot, sim  # noqa: E402
from aryl.plot.files import standard_figures  # noqa: E402
from aryl.plot.style import time_unit  # noqa: E402
from aryl.plot.timeseries import lent_gpus_per_server  # noqa: E402
from test_plot import LOAD, tiny_jobs  # noqa: E402

SAME_SPEED = {"gpu_speed": {"T4": 1.0}}  # jobs spill onto the loaned servers
#: The rows each question of the verdict is answered from (with, without).
LOANING = ("Aryl Basic", "Elastic only, aryl")
ELASTIC = ("Aryl Basic", "Loaning only, aryl reclaim")
ELASTIC_NO_LOAD = ("Elastic only, aryl", "Control: SJF, no loaning")


def run(label, cluster=None, **kw):
    return sim.simulate(
        tiny_jobs(),
        cluster or sim.Cluster(2, 2),
        inference_load=LOAD,
        config=SAME_SPEED,
        label=label,
        **kw,
    ).check()


@pytest.fixture(scope="module")
def rows():
    """Four runs under the names of the paper's rows: a Baseline that lends nothing
    (no load series) and three that lend, differing in reclaim policy."""
    out = {
        "Baseline (FIFO)": sim.simulate(
            tiny_jobs(), sim.Cluster(2, 2), config=SAME_SPEED, label="Baseline (FIFO)"
        )
    }
    for name, reclaim in zip((*LOANING, ELASTIC[1]), ("aryl", "scf", "random")):
        out[name] = run(name, reclaim=reclaim)
    return out


def band_hours(ax, label, base, span):
    """The GPU-hours under a band's top line (``_lent``, ``_used``) above ``base``:
    its post-steps integrated over the run (x in the unit of a ``span`` s long run)."""
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    hours = time_unit(span)[1] / 3600
    return float((np.nan_to_num(y[:-1] - base) * np.diff(x)).sum()) * hours


def loan_coloured(ax):
    """The artists of ``ax`` drawn in the loan's colour (lines and filled areas)."""
    loan = plot.PALETTE[1].lower()
    lines = [ln for ln in ax.get_lines() if to_hex(ln.get_color()) == loan]
    areas = [
        c
        for c in ax.collections
        if len(c.get_facecolor()) and to_hex(c.get_facecolor()[0], False) == loan
    ]
    return lines + areas


# 1. Usage: GPUs lent beside GPUs used.


def test_usage_draws_the_ledger_lent_and_used_gpu_hours(rows):
    result = rows["Aryl Basic"]
    ledger = result.summary()
    assert ledger["lent_gpu_hours"] > ledger["lent_used_gpu_hours"] > 0
    top, _ = plot.usage(result, window=None).axes
    base = result.capacity["training_gpus"]
    end = result.totals["end_time"]
    # The timeline counts servers on loan; the figure draws their GPUs, on top of the
    # training capacity, and the areas are the ledger's figures.
    assert band_hours(top, "_lent", base, end) == pytest.approx(
        ledger["lent_gpu_hours"]
    )
    # GPUs used are sampled at scheduling steps while the ledger integrates between
    # them (a job ends mid-step): the drawn area is the timeline's, near the ledger's.
    tl = result.timeline
    held = np.diff(np.r_[tl["t"], result.totals["end_time"]]) / 3600
    used = float((tl["loaned_gpus_used"] * held).sum())
    assert band_hours(top, "_used", base, end) == pytest.approx(used)
    assert used == pytest.approx(ledger["lent_used_gpu_hours"], rel=0.05)
    assert "GPUs" in top.get_ylabel()
    labels = [t.get_text() for t in top.get_legend().get_texts()]
    assert "lent (inference servers on loan)" in labels
    assert "used on loaned servers" in labels
    # Every panel of the grid draws the same floors of its run.
    grid = plot.usage_grid(rows, window=None)
    longest = max(r.totals["end_time"] for r in rows.values())
    for ax, (name, each) in zip(grid.axes, rows.items()):
        if not each.summary()["lent_gpu_hours"]:
            continue
        assert ax.get_title() == name
        lent = band_hours(ax, "_lent", each.capacity["training_gpus"], longest)
        assert lent == pytest.approx(each.summary()["lent_gpu_hours"])


def test_lent_gpus_of_unlike_inference_servers_add_up_to_the_ledger():
    servers = [
        aryl.Server("t0", "training", 8, "V100"),
        aryl.Server("t1", "training", 8, "V100"),
        aryl.Server("i0", "inference", 4, "T4"),
        aryl.Server("i1", "inference", 8, "T4"),
    ]
    result = run("unlike", cluster=servers)
    ledger = result.summary()["lent_gpu_hours"]
    assert ledger > 0
    per_server = lent_gpus_per_server(result)
    assert 4 <= per_server <= 8  # servers on loan times their mean GPUs, not the max
    top, _ = plot.usage(result, window=None).axes
    lent = band_hours(top, "_lent", 16, result.totals["end_time"])
    assert lent == pytest.approx(ledger)
    # Alike servers: exactly their GPUs.
    assert lent_gpus_per_server(run("alike")) == 8.0


def test_a_run_that_lent_nothing_draws_no_loan(rows):
    baseline = rows["Baseline (FIFO)"]
    assert baseline.summary()["lent_gpu_hours"] == 0
    top, _ = plot.usage(baseline).axes
    assert loan_coloured(top) == []  # no loan-coloured edge on the capacity line
    assert top.get_legend().get_title().get_text() == ""
    grid = plot.usage_grid(rows)
    assert loan_coloured(grid.axes[0]) == []
    assert loan_coloured(grid.axes[1])  # Aryl Basic lends
    # The legend is the whole figure's, although its first panel lent nothing.
    labels = [t.get_text() for t in grid.legends[0].get_texts()]
    assert labels[2:] == ["lent (inference servers on loan)", "used on loaned servers"]


# 2. The rows that answer the verdict share one CDF.


def test_each_question_draws_its_two_rows_in_one_axes(rows):
    fig = plot.verdict_cdf(rows)
    loaning, elastic = fig.axes
    assert loaning.get_title().startswith("Loaning")
    assert elastic.get_title().startswith("Elastic scaling")
    for ax, (with_row, without_row), feature in (
        (loaning, LOANING, "loaning"),
        (elastic, ELASTIC, "elastic scaling"),
    ):
        curves = {
            ln.get_label(): ln for ln in ax.get_lines() if ln.get_label()[0] != "_"
        }
        assert list(curves) == [
            f"{with_row} (with {feature})",
            f"{without_row} (without {feature})",
        ]
        for row, line in zip((with_row, without_row), curves.values()):
            jct = np.sort(rows[row].jobs["jct"].to_numpy())
            np.testing.assert_array_equal(np.asarray(line.get_xdata())[1:], jct)
        means = [rows[r].jobs["jct"].mean() for r in (with_row, without_row)]
        marks = [ln for ln in ax.get_lines() if ln.get_label() == "_mean"]
        assert [m.get_xdata()[0] for m in marks] == pytest.approx(means)
        assert f"mean without / with: {means[1] / means[0]:.2f}x" in ax.get_title()
    # A row keeps its colour in both panels; the axes share one time scale.
    colours = {ax.get_title(): to_hex(ax.get_lines()[0].get_color()) for ax in fig.axes}
    assert len(set(colours.values())) == 1
    assert loaning.get_xlim() == elastic.get_xlim()


def test_without_a_load_elasticity_is_answered_from_its_control(rows):
    runs = {
        ELASTIC_NO_LOAD[0]: rows["Aryl Basic"],
        ELASTIC_NO_LOAD[1]: rows[LOANING[1]],
    }
    (ax,) = plot.verdict_cdf(runs).axes
    assert ax.get_title().startswith("Elastic scaling")
    with pytest.raises(ValueError, match="answer no question.*Aryl Basic and"):
        plot.verdict_cdf({"Baseline (FIFO)": rows["Baseline (FIFO)"]})
    with pytest.raises(ValueError, match="unknown metric"):
        plot.verdict_cdf(rows, metric="slowdown")


def test_save_all_writes_the_verdict_cdf_whatever_files_the_rows_fall_in(
    rows, tmp_path
):
    # Nine rows: the CDFs are split over two files, Aryl Basic's control in the second.
    many = {**{f"other {i}": rows["Baseline (FIFO)"] for i in range(7)}, **rows}
    names = [p.name for p in plot.save_all(many, tmp_path)]
    assert "jct_cdf_2.png" in names and "verdict_cdf.png" in names
    without = [p.name for p in plot.save_all(rows["Aryl Basic"], tmp_path / "one")]
    assert "verdict_cdf.png" not in without


# 3. Nothing drawn over a legend.

NOTE = "seed 0, the first of 5 seeds; means and intervals: speedups and compare.csv"


def texts_over_legends(fig):
    """(text, legend) pairs whose drawn extents overlap by more than a pixel: every
    visible text of ``fig`` outside the legends (titles, labels, ticks, captions, bar
    labels) against every legend's box."""
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend()]
    inside = {id(t) for legend in legends for t in legend.findobj(Text)}
    found = []
    for text in fig.findobj(Text):
        shown = text.get_visible() and text.get_text().strip()
        if (
            not shown
            or id(text) in inside
            or (text.axes and not text.axes.get_visible())
        ):
            continue
        box = text.get_window_extent(renderer)
        for legend in legends:
            frame = legend.get_window_extent(renderer)
            wide = min(box.x1, frame.x1) - max(box.x0, frame.x0)
            high = min(box.y1, frame.y1) - max(box.y0, frame.y0)
            if wide > 1 and high > 1:
                found.append((text.get_text(), legend.get_title().get_text()))
    return found


@pytest.mark.parametrize("size", [None, (3.3, 4.0)])
def test_no_text_is_drawn_over_a_legend(rows, size):
    headline = sim.speedups({n: r.summary() for n, r in rows.items()})
    if size is None:  # each figure save_all writes, with its caption
        drawn = [f for _, f in standard_figures(rows, headline=headline, note=NOTE)]
        drawn += [f for _, f in standard_figures(rows["Aryl Basic"], note=NOTE)]
    else:  # a paper's column: legends inside or above, no titles
        drawn = [
            plot.usage_grid(rows, figsize=size),
            plot.usage(rows["Aryl Basic"], figsize=size),
            plot.verdict_cdf(rows, figsize=size),
            plot.cdf(rows, figsize=size),
        ]
        for fig in drawn:
            fig.supxlabel(NOTE, fontsize="small")
    assert len(drawn) >= 4
    for fig in drawn:
        assert texts_over_legends(fig) == [], fig.axes[0].get_title()


def test_the_overlap_check_sees_a_caption_under_a_legend(rows):
    # The audit's figure: the usage grid's legend below the panels, the caption too.
    fig = plot.usage_grid(rows)
    handles, labels = fig.axes[1].get_legend_handles_labels()
    fig.legends[0].remove()
    fig.legend(handles, labels, loc="outside lower center", ncol=4)
    fig.supxlabel(NOTE, fontsize="small")
    assert (NOTE, "") in texts_over_legends(fig)
