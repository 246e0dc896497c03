"""Loaning told straight (issue 43): when loaning buys nothing, aryl says why from the
run's figures, gives the answer under the paper's reading and the break-even speed."""

import json

import pandas as pd
import pytest

from aryl.cli import main
from aryl.studies import loaning
from aryl.studies.confidence import Estimate

SMALL = ["--training-servers", "12", "--inference-servers", "4", "--plot-format", "png"]


def gains(*points):
    return pd.DataFrame(
        [
            {
                "speed": s,
                "gain": g,
                "low": g - 0.001,
                "high": g + 0.001,
                "lent used": 0.1,
            }
            for s, g in points
        ]
    )


def test_break_even_interpolates_between_the_speeds_measured():
    # 0.5% at 0.9, 2.0% at 1.0: 1% is reached a third of the way
    assert loaning.break_even(gains((0.5, 1.0), (0.9, 1.005), (1.0, 1.02))) == (
        pytest.approx(0.9 + 0.1 * (0.005 / 0.015))
    )
    assert loaning.break_even(gains((0.5, 1.0), (1.0, 1.004))) is None
    assert loaning.break_even(gains((0.5, 1.05), (1.0, 1.2))) == 0.5
    lines = loaning.speed_lines(gains((0.5, 1.0), (1.0, 1.004)), "5 seeds")
    assert lines[0].startswith("Under the paper's reading (a loaned GPU as fast as")
    assert lines[1].startswith(
        "Break-even: loaning shortens mean JCT by 1% or more at no"
    )


def test_buys_nothing_is_an_interval_at_one_or_a_negligible_gain():
    assert loaning.buys_nothing(Estimate(1.0001, 0.9999, 1.0003, 5))
    assert loaning.buys_nothing(Estimate(1.0002, 1.0001, 1.0003, 5))  # negligible
    assert not loaning.buys_nothing(Estimate(1.02, 1.01, 1.03, 5))
    assert loaning.loaned_speed({}, "T4") == 0.25
    assert loaning.loaned_speed({"gpu_speed": {"T4": 0.5}}, "T4") == 0.5


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_compare_says_why_loaning_buys_nothing_and_where_it_pays(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    out = tmp_path / "o"
    rows = ["--rows", "Aryl Basic", "--rows", "Elastic only, aryl"]
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, *rows, "--seeds", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    answers = json.loads((out / "compare.json").read_text())["answers"]
    assert answers[0].startswith("Loaning: no "), answers[0]  # nothing on this slice
    why = next(a for a in answers if a.startswith("Why: "))
    assert "lent GPU-hours" in why and "runs at 0.25 of a training GPU" in why
    assert any(a.startswith("Under the paper's reading") for a in answers)
    assert any(a.startswith("Break-even: ") for a in answers)
    assert "8 more runs of Aryl Basic" in capsys.readouterr().err + printed
    # the runs are cached: a second time costs none, and --no-break-even skips them
    assert main([*argv, "--out", str(out), "--no-break-even", "-q"]) == 0
    again = json.loads((out / "compare.json").read_text())["answers"]
    assert any(a.startswith("Why: ") for a in again)
    assert not any(a.startswith("Break-even") for a in again)


def test_why_reads_the_rows_means():
    class Table(pd.DataFrame):
        @property
        def table(self):
            return pd.DataFrame(self)

    means = {
        "lent_gpu_hours": 1000.0,
        "lent_used_share": 0.0,
        "queuing_mean": 500.0,
        "jct_mean": 10500.0,
        "preemptions": 0.0,
    }
    table = Table(pd.DataFrame({"Aryl Basic": means}).T)
    why = loaning.why_no_gain(table, "T4", 0.25, 0.21)
    assert why.startswith("Why: training used 0.00% of the 1,000 lent GPU-hours")
    assert "no reclaim preempted a job" in why and "21% of the jobs" in why
    assert "waited 500 s on average against 10,000 s of running" in why


def _quoted(text, marker):
    return text.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]


def test_docs_model_row7_bound_is_the_papers_table():
    from pathlib import Path

    from aryl.studies import paper

    text = (Path(__file__).parents[2] / "docs" / "model.md").read_text()
    table = paper.PAPER_TABLE3
    row7 = (
        table[paper.BASELINE]["jct_mean"]
        / table["Loaning only, aryl reclaim"]["jct_mean"]
    )
    assert _quoted(text, "row7") == f"{row7:.3f}x"
    assert _quoted(text, "loaning-bound") == f"{paper.PAPER_LOANING_BOUND:.3f}x"
    assert paper.PAPER_LOANING_BOUND < row7  # no reading reaches row 7


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_docs_model_nearest_reading_is_what_the_model_gives():
    """docs/model.md's nearest reading of rows 5-7, run as its command says."""
    from pathlib import Path

    from aryl import sim, studies, traces

    jobs, load = traces.load_default()
    rows = [
        sim.BASELINE,
        *(f"Loaning only, {r} reclaim" for r in ("random", "SCF", "aryl")),
    ]
    c = sim.replicate_paper(
        jobs,
        load,
        83,
        100,
        2,
        rows=rows,
        any_type_share=1.0,
        config={"gpu_speed": {"T4": 1.0}, "lend_hold": 0.0, "headroom": 0.6},
        cache=False,
    )
    text = (Path(__file__).parents[2] / "docs" / "model.md").read_text()
    shares = " / ".join(f"{100 * c.loc[r, 'preemption_ratio']:.1f}" for r in rows[1:])
    assert _quoted(text, "nearest-preemptions") == f"{shares}%"
    gain = c.loc["Loaning only, aryl reclaim", "speed-up JCT"]
    assert _quoted(text, "nearest-gain") == f"{gain:.3f}x"
    assert gain < studies.paper.PAPER_LOANING_BOUND
    assert (c.loc[rows[1:], "lent_used_share"] < 0.10).all()
