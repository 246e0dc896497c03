import subprocess
import sys

import pandas as pd
import pytest

import aryl
from aryl.cli import main

SMALL = ["--training-servers", "4", "--inference-servers", "4"]


@pytest.fixture(scope="module")
def trace_slice(tmp_path_factory):
    """The first 300 jobs of the embedded ITP trace and 3 days of its load, as CSV files."""
    from aryl import traces

    jobs, load = traces.load_default()
    folder = tmp_path_factory.mktemp("trace")
    jobs.iloc[:300].to_csv(folder / "jobs.csv", index=False)
    load[load["time_s"] < 3 * 86400].to_csv(folder / "load.csv", index=False)
    return folder / "jobs.csv", folder / "load.csv"


def test_simulate_writes_tables_and_plots(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "out"
    assert main(["simulate", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "jct_mean" in printed and "preemption_ratio" in printed
    for name in ("jobs.csv", "timeline.csv", "summary.json", "jct_cdf.png", "queuing_cdf.png"):
        assert (out / name).stat().st_size > 0, name
    assert len(pd.read_csv(out / "jobs.csv")) == 300


def test_compare_prints_the_paper_table(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "cmp"
    assert main(["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for row in ("Baseline (FIFO)", "Aryl Basic", "Aryl Ideal", "Loaning only, SCF reclaim",
                "Elastic only, AFS", "Control: SJF, no loaning", "Control: FIFO + backfill",
                "Ablation: Basic, imperfect", "Ablation: Basic, plain BFD"):
        assert row in printed
    assert "JCT speed-up" in printed and "Cluster: 4 training + 4 inference" in printed
    table = pd.read_csv(out / "compare.csv", index_col="run")
    assert len(table) == 14 and table.loc["Baseline (FIFO)", "speed-up JCT"] == 1.0
    assert (out / "preemptions.png").exists()


def test_compare_without_load_skips_loaning_rows(trace_slice, tmp_path, capsys):
    jobs, _ = trace_slice
    assert main(["compare", str(jobs), *SMALL, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "no loaning" in printed and "Loaning only" not in printed and "Aryl Basic" not in printed
    assert "Elastic only, aryl" in printed and "Control: SJF, no loaning" in printed


def test_a_broken_trace_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,two,100,unknown\n")
    assert main(["simulate", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aryl: error:") and "bad.csv" in err and "num_gpus" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_missing_file_exits_2(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "nope.csv")]) == 2
    assert "aryl: error:" in capsys.readouterr().err


def test_demo_prints_a_table(capsys):
    assert main(["demo", "--training-servers", "4", "--loaned-servers", "10", "--reclaim", "3"]) == 0
    out = capsys.readouterr().out
    assert "jobs preempted" in out
    for policy in ("aryl", "scf", "random", "exact"):
        assert f" {policy} " in out


def test_demo_errors_exit_2_without_a_traceback(capsys):
    assert main(["demo", "--loaned-servers", "4", "--reclaim", "9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aryl: error: asked to reclaim 9 servers") and "Traceback" not in err


@pytest.mark.parametrize("command", ["simulate", "compare", "demo"])
def test_help(command):
    out = subprocess.run([sys.executable, "-m", "aryl", command, "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "usage: aryl" in out and ("JOBS.csv" in out or command == "demo")


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"aryl {aryl.__version__}"
