"""Answers per team (issue 45): what each feature buys each group of jobs (``--by``)."""

import json

import pandas as pd
import pytest

from aryl import engine, sim
from aryl.cli import main
from aryl.studies.groups import group_gains

SMALL = ["--training-servers", "12", "--inference-servers", "4", "--plot-format", "png"]


@pytest.fixture
def teams(trace_slice, tmp_path):
    """The trace slice with a vc column: every third job is team-b's."""
    jobs, load = trace_slice
    frame = pd.read_csv(jobs)
    frame["vc"] = ["team-b" if i % 3 == 0 else "team-a" for i in range(len(frame))]
    path = tmp_path / "teams.csv"
    frame.to_csv(path, index=False)
    return path, load


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_group_gains_are_the_groups_paired_means(teams):
    jobs, load = teams
    frame = pd.read_csv(jobs)
    runs = sim.paper_runs(
        engine.runs.trace_jobs(frame, seed=0), pd.read_csv(load), seed=0
    )
    pair = {k: runs[k] for k in ("Aryl Basic", "Elastic only, aryl")}
    table = sim.compare(
        engine.runs.trace_jobs(frame, seed=0), sim.Cluster(12, 4), pair, seeds=[0, 1]
    )
    gains = group_gains(table, "vc")
    row = gains[gains["group"] == "team-b"].iloc[0]
    assert row["feature"] == "loaning, given elasticity" and row["jobs"] == 100
    ratios = []
    for s in (0, 1):
        a = table.runs[("Elastic only, aryl", s, 0)].jobs
        b = table.runs[("Aryl Basic", s, 0)].jobs
        both = a.merge(b, on="id", suffixes=("", "_b"))
        both = both[
            both["vc"].eq("team-b") & both["jct"].notna() & both["jct_b"].notna()
        ]
        ratios.append(both["jct"].mean() / both["jct_b"].mean())
    geometric = (ratios[0] * ratios[1]) ** 0.5
    assert row["JCT gain"] == pytest.approx(geometric)
    with pytest.raises(ValueError, match="no 'user' values"):
        group_gains(table, "user")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_compare_and_simulate_print_per_team_tables(teams, tmp_path, capsys):
    jobs, load = teams
    out = tmp_path / "o"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--by", "vc"]
    assert main([*argv, "--seeds", "2", "--no-break-even", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "loaning, given elasticity, per vc" in printed and "team-b" in printed
    groups = pd.read_csv(out / "groups.csv")
    assert set(groups["group"]) == {"team-a", "team-b"}
    assert json.loads((out / "compare.json").read_text())["groups"]
    # one run per row: one-run ratios, said to have no interval
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    assert "no intervals; --seeds 5 gives them" in capsys.readouterr().out
    simulate = ["simulate", str(jobs), "--load", str(load), *SMALL, "--by", "vc"]
    assert main([*simulate, "--out", str(tmp_path / "s")]) == 0
    printed = capsys.readouterr().out
    assert "Per vc" in printed and "team-a" in printed and "slowdown" in printed


def test_by_a_column_the_trace_lacks_is_refused_before_anything_runs(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    out = tmp_path / "o"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--by", "vc"]
    assert main([*argv, "--seeds", "2", "--out", str(out)]) == 2
    assert "--by vc: the trace has no 'vc' column" in capsys.readouterr().err
    written = {p.name for p in out.iterdir()} if out.exists() else set()
    assert written <= {".aryl-output"}  # only the folder's mark: nothing ran
