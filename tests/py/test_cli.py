import io
import json
import math
import subprocess
import sys

import pandas as pd
import pytest

import aryl
from aryl._display import Table, render
from aryl.cli import main
from aryl.cli.console import Progress, simulated_day

SMALL = ["--training-servers", "4", "--inference-servers", "4"]
#: Room enough that the mean queue stays shorter than the slice spans (no warning that
#: the cluster is far too small): for the tests of an exact stderr.
ROOMY = ["--training-servers", "12", "--inference-servers", "4"]


def test_simulate_writes_tables_and_plots(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "out"
    assert (
        main(["simulate", str(jobs), "--load", str(load), *SMALL, "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "jct_mean" in printed and "preemption_ratio" in printed
    for name in (
        "jobs.csv",
        "timeline.csv",
        "summary.json",
        "jct_cdf.png",
        "queuing_cdf.png",
        "usage.png",
        "usage.svg",
        "preemptions.svg",
    ):
        assert (out / name).stat().st_size > 0, name
    assert len(pd.read_csv(out / "jobs.csv")) == 300


def test_compare_prints_the_paper_table(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "cmp"
    assert (
        main(["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    for row in (
        "Baseline (FIFO)",
        "Aryl Basic",
        "Aryl Ideal",
        "Loaning only, SCF reclaim",
        "Elastic only, AFS",
        "Control: SJF, no loaning",
        "Control: FIFO + backfill",
        "Ablation: Basic, imperfect",
        "Ablation: Basic, plain BFD",
    ):
        assert row in printed
    assert "speed-up" in printed and "Cluster: 4 training + 4 inference" in printed
    table = pd.read_csv(out / "compare.csv", index_col="run")
    assert len(table) == 14 and table.loc["Baseline (FIFO)", "speed-up JCT"] == 1.0
    for name in ("preemptions", "speedups", "usage", "jct_cdf", "jct_cdf_2"):
        assert (out / f"{name}.png").exists() and (out / f"{name}.svg").exists(), name
    assert not list(out.glob("usage_*"))  # one grid figure, not one file per run


def test_compare_without_load_skips_loaning_rows(trace_slice, tmp_path, capsys):
    jobs, _ = trace_slice
    argv = [
        "compare",
        str(jobs),
        *SMALL,
        "--out",
        str(tmp_path),
        "--plot-format",
        "png",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    rows = [line.split("  ")[0] for line in printed.splitlines()]
    assert "no loaning" in printed and "Aryl Basic" not in rows
    assert not any(row.startswith("Loaning only") for row in rows)
    assert "Elastic only, aryl" in rows and "Control: SJF, no loaning" in rows
    # the answers say why loaning cannot be judged, and judge elasticity without it
    assert "Loaning: cannot tell, the row(s) 'Aryl Basic' did not run" in printed
    assert "Elastic only, aryl over Control: SJF, no loaning)" in printed


def test_a_broken_trace_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,two,100,unknown\n"
    )
    assert main(["simulate", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aryl: error:") and "bad.csv" in err and "num_gpus" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_missing_file_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["simulate", str(tmp_path / "nope.csv")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("aryl: error:") and "nope.csv: no such file" in err


def test_demo_prints_a_table(capsys):
    assert (
        main(
            [
                "demo",
                "--training-servers",
                "4",
                "--loaned-servers",
                "10",
                "--reclaim",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "preempted" in out  # "jobs preempted", wrapped on a narrow terminal
    for policy in aryl.defaults.RECLAIM_POLICIES:
        assert f" {policy} " in out


def test_demo_errors_exit_2_without_a_traceback(capsys):
    assert main(["demo", "--loaned-servers", "4", "--reclaim", "9"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("aryl: error: asked to reclaim 9 servers")
        and "Traceback" not in err
    )


@pytest.mark.parametrize("command", ["simulate", "compare", "demo"])
def test_help(command):
    out = subprocess.run(
        [sys.executable, "-m", "aryl", command, "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "usage: aryl" in out and ("JOBS.csv" in out or command == "demo")


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"aryl {aryl.__version__}"


@pytest.fixture
def few_rows(monkeypatch):
    """``aryl compare`` with only its first three rows (Baseline, Elastic only, ...)."""
    from aryl import sim

    every = sim.paper_runs

    def first_three(*args, **kwargs):
        return dict(list(every(*args, **kwargs).items())[:3])

    monkeypatch.setattr(sim, "paper_runs", first_three)


# ---- tables: fit the terminal, --format ----------------------------------------------


def wide_table():
    header = ["run (times in s)"] + [f"metric number {i}" for i in range(11)]
    rows = [
        [f"Row name number {r}"] + [r * 1000 + i for i in range(11)] for r in range(5)
    ]
    return Table(header, rows)


@pytest.mark.parametrize("width", [50, 80, 100])
def test_text_tables_fit_the_width_and_keep_every_cell(width):
    text = render(wide_table(), "table", width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    blocks = sum(line.startswith("---") for line in lines)
    assert blocks > 1  # too wide for one block at any of these widths
    for r in range(5):
        assert (
            text.count(f"Row name number {r}") == blocks
        )  # each block repeats the names
    tokens = text.split()
    assert all(str(r * 1000 + i) in tokens for r in range(5) for i in range(11))
    assert text.count("metric") == 11  # every header once


def test_a_narrow_table_stays_one_block():
    table = Table(["metric", "value"], [("jct_mean", "1,234 s")])
    assert (
        render(table, "table", width=80)
        == "metric      value\n--------  -------\njct_mean  1,234 s"
    )


def test_machine_formats_keep_numbers():
    table = Table(
        ["name", "x", "y"],
        [("a|b", 1, float("nan")), ("c", 2, 0.5)],
        [("a|b", "1", "—"), ("c", "2", "50%")],
    )
    assert render(table, "csv") == "name,x,y\na|b,1,\nc,2,0.5"
    assert json.loads(render(table, "json")) == [
        {"name": "a|b", "x": 1, "y": None},
        {"name": "c", "x": 2, "y": 0.5},
    ]
    lines = render(table, "markdown").splitlines()
    assert (
        lines[:2] == ["| name | x | y |", "|---|---:|---:|"]
        and lines[2] == "| a\\|b | 1 | — |"
    )


def test_compare_fits_an_80_column_terminal(
    trace_slice, tmp_path, capsys, monkeypatch, few_rows
):
    jobs, load = trace_slice
    monkeypatch.setenv("COLUMNS", "80")
    argv = [
        "compare",
        str(jobs),
        *SMALL,
        "--out",
        str(tmp_path),
        "--plot-format",
        "png",
    ]
    assert main([*argv, "--quiet"]) == 0  # the table alone (messages name long paths)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Elastic only, AFS" in out and "speed-up" in out


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown"])
def test_compare_formats_print_only_the_table_on_stdout(
    trace_slice, tmp_path, capsys, fmt, few_rows
):
    jobs, _ = trace_slice
    assert (
        main(
            [
                "compare",
                str(jobs),
                *SMALL,
                "--out",
                str(tmp_path),
                "--format",
                fmt,
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "Cluster: 4 training" in captured.err and "Cluster" not in captured.out
    if fmt == "csv":
        table = pd.read_csv(io.StringIO(captured.out), index_col=0)
        assert table.loc["Baseline (FIFO)", "queue speed-up"] == 1.0
        assert table["JCT mean"].dtype == float
    elif fmt == "json":  # the whole answer (compare.json), not the table alone
        answer = json.loads(captured.out)
        rows = answer["rows"]
        assert answer["reference"] == "Baseline (FIFO)" and answer["answers"]
        assert rows[0]["run"] == "Baseline (FIFO)" and rows[0]["speed-up JCT"] == 1.0
    else:
        assert (
            captured.out.startswith("| run (times in s) |") and "|---|" in captured.out
        )


def test_simulate_json_summary_and_demo_csv(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    assert (
        main(
            [
                "simulate",
                str(jobs),
                "--load",
                str(load),
                *SMALL,
                "--out",
                str(tmp_path),
                "--format",
                "json",
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    summary = json.loads((tmp_path / "summary.json").read_text())

    def plain(value):  # NaN (stdout) and null (summary.json) both mean "none"
        return None if isinstance(value, float) and math.isnan(value) else value

    assert {r["metric"]: plain(r["value"]) for r in rows} == {
        k: plain(summary[k]) for k in summary if k != "provenance"
    }
    assert (
        main(
            [
                "demo",
                "--training-servers",
                "4",
                "--loaned-servers",
                "6",
                "--reclaim",
                "2",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table["policy"]) == list(aryl.defaults.RECLAIM_POLICIES)


# ---- progress and --quiet ------------------------------------------------------------


def test_progress_counts_runs_and_shows_the_day_and_an_eta():
    stream = io.StringIO()
    day = 86400.0
    with Progress(3, enabled=True, stream=stream) as progress:
        for name in ("first", "second", "third"):
            report = progress.run(name, last_submit=58.3 * day)
            assert report(0.5, 2.5 * day) is True and report(1.0, 60 * day) is True
    text = stream.getvalue()
    assert "run 1/3" in text and "first" in text and "run 3/3" in text
    assert "third" in text  # the run under way has a bar of its own
    assert "first: day 3 of 59" in text
    assert "3 runs done" in text and "ETA" in text


@pytest.mark.parametrize(
    "now, last_submit, shown",
    [
        (0.0, 0.0, "day 1 of 1"),
        (86399.0, 86399.0, "day 1 of 1"),
        (86400.0, 86399.0, "day 2 (arrivals ended on day 1)"),
        (2.5 * 86400, 58.3 * 86400, "day 3 of 59"),
        (59.0 * 86400, 59.45 * 86400, "day 60 of 60"),
        (61.2 * 86400, 59.45 * 86400, "day 62 (arrivals ended on day 60)"),
    ],
)
def test_simulated_day_counts_from_day_one(now, last_submit, shown):
    assert simulated_day(now, last_submit) == shown


def test_progress_redraws_in_a_terminal(trace_slice, tmp_path):
    # Under a pseudo-terminal (as a person sees it) the bars are redrawn in place;
    # they never were when the console was told it was not a terminal.
    import os
    import pty
    import select

    jobs, load = trace_slice
    command = [sys.executable, "-m", "aryl", "compare", str(jobs), "--load", str(load)]
    command += ["--training-servers", "4", "--inference-servers", "4"]
    command += ["--out", str(tmp_path / "out")]
    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        command, stdin=child_fd, stdout=child_fd, stderr=child_fd, close_fds=True
    )
    os.close(child_fd)
    chunks = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=120) == 0
    os.close(main_fd)
    text = b"".join(chunks).decode(errors="replace")
    assert "\x1b[2K" in text  # rich erased and redrew its lines in place
    assert text.count("run 1/14") + text.count("run 14/14") >= 2
    assert "14 runs done" in text
    # the run under way: its simulated day (the slice's jobs arrive over 3 days)
    assert "Baseline (FIFO): day 1 of 3" in text and "ETA" in text


def test_progress_counts_replications_with_an_eta():
    stream = io.StringIO()
    with Progress(5, enabled=True, stream=stream, unit="replication") as progress:
        progress.set(2.4)
        assert "replications: 2.4/5" in stream.getvalue()
    assert "5 replications done" in stream.getvalue() and "ETA" in stream.getvalue()


def test_progress_disabled_writes_nothing(capsys):
    with Progress(2, enabled=False) as progress:
        assert progress.run("x")(0.3, 100.0) is True
    assert capsys.readouterr() == ("", "")


def test_no_progress_when_not_a_terminal_and_quiet_prints_only_the_table(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    assert (
        main(
            [
                "simulate",
                str(jobs),
                "--load",
                str(load),
                *ROOMY,
                "--out",
                str(tmp_path / "a"),
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    loud = capsys.readouterr()
    assert (
        loud.err == "" and "Simulating 300 jobs" in loud.out
    )  # not a terminal: no bar
    assert (
        main(
            [
                "simulate",
                str(jobs),
                "--load",
                str(load),
                *ROOMY,
                "--quiet",
                "--out",
                str(tmp_path / "b"),
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out.splitlines()[0].startswith("metric")
    assert "Simulating" not in quiet.out and "Wrote" not in quiet.out
    assert (tmp_path / "b" / "summary.json").exists()


# ---- --gpu-speed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, expected",
    [
        (["--gpu-speed", "T4=1"], {"V100": 1.0, "T4": 1.0}),
        (["--gpu-speed", "T4=0.5,A100=2"], {"V100": 1.0, "T4": 0.5, "A100": 2.0}),
        (
            ["--gpu-speed", "T4=0.5", "--gpu-speed", "V100=1.5"],
            {"V100": 1.5, "T4": 0.5},
        ),
        ([], {"V100": 1.0, "T4": 0.25}),
    ],
)
def test_gpu_speed_reaches_the_simulation(
    trace_slice, tmp_path, capsys, given, expected
):
    jobs, load = trace_slice
    assert (
        main(
            [
                "simulate",
                str(jobs),
                "--load",
                str(load),
                *SMALL,
                *given,
                "--quiet",
                "--out",
                str(tmp_path),
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    run = json.loads((tmp_path / "summary.json").read_text())["provenance"]["run"]
    assert run["config"]["gpu_speed"] == expected


def test_gpu_speed_changes_the_result(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    summaries = []
    for speed in ("T4=0.25", "T4=1"):
        out = tmp_path / speed
        assert (
            main(
                [
                    "simulate",
                    str(jobs),
                    "--load",
                    str(load),
                    *SMALL,
                    "--gpu-speed",
                    speed,
                    "--quiet",
                    "--out",
                    str(out),
                    "--plot-format",
                    "png",
                ]
            )
            == 0
        )
        summaries.append(json.loads((out / "summary.json").read_text()))
    assert summaries[0]["jct_mean"] != summaries[1]["jct_mean"]


# ---- every bad option value: one line, exit 2, at parse time -------------------------

BAD_OPTIONS = [
    ["simulate", "--inference-servers", "-5"],
    ["simulate", "--training-servers", "0"],
    ["compare", "--training-servers", "-1"],
    ["simulate", "--training-servers", "3.5"],
    ["simulate", "--utilisation", "nan"],
    ["simulate", "--utilisation", "1.01"],
    ["simulate", "--utilisation", "0"],
    ["compare", "--lend-hold", "-1"],
    ["compare", "--lend-hold", "inf"],
    ["simulate", "--headroom", "nan"],
    ["simulate", "--headroom", "-0.5"],
    ["simulate", "--any-type-share", "1.2"],
    ["simulate", "--any-type-share", "-0.1"],
    ["simulate", "--seed", "-1"],
    ["simulate", "--seed", "1.5"],
    ["simulate", "--policy", "best"],
    ["simulate", "--reclaim", "oldest"],
    ["simulate", "--scenario", "huge"],
    ["simulate", "--format", "xml"],
    ["compare", "--format", "html"],
    ["simulate", "--gpu-speed", "T4=0"],
    ["simulate", "--gpu-speed", "T4=-1"],
    ["simulate", "--gpu-speed", "T4=nan"],
    ["simulate", "--gpu-speed", "T4=inf"],
    ["simulate", "--gpu-speed", "T4"],
    ["simulate", "--gpu-speed", "=1"],
    ["simulate", "--gpu-speed", "T4=fast"],
    ["compare", "--gpu-speed", "T4=0.5,,V100=1"],
    ["simulate", "--plot-window", "-1h"],
    ["simulate", "--plot-window", "soon"],
    ["simulate", "--plot-window", "nan"],
    ["compare", "--plot-format", "gif"],
    ["compare", "--plot-format", ""],
    ["simulate", "--pollux-workload", "9"],
    ["simulate", "--pollux-workload", "0"],
    ["simulate", "--pollux-cluster", "0x4"],
    ["simulate", "--pollux-cluster", "16"],
    ["simulate", "--load", "missing.csv"],
    ["compare", "missing-jobs.csv"],
    ["sweep", "--first-jobs", "0"],
    ["sweep", "--workers", "0"],
    ["sweep", "--engine", "gpu"],
    ["sweep", "--format", "yaml"],
    ["demo", "--training-servers", "-1"],
    ["demo", "--reclaim", "-2"],
    ["demo", "--loaned-servers", "x"],
    ["demo", "--format", "xml"],
]


@pytest.mark.parametrize("argv", BAD_OPTIONS, ids=" ".join)
def test_bad_option_values_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"aryl: error: {argv[0]} argument") and err.count("\n") == 1
    ), err


def test_paths_that_cannot_be_used_exit_2(tmp_path, capsys):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for argv in (
        ["simulate", str(tmp_path)],  # a directory as JOBS.csv
        ["simulate", "--out", str(a_file)],  # a file as --out
        ["simulate", "--out", str(a_file / "sub")],  # below a file
        ["sweep", "--cache", str(a_file)],
        ["simulate", "--out", ""],
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("aryl: error:") and err.count("\n") == 1, (argv, err)


def test_sweep_names_are_checked_before_any_run(capsys):
    assert main(["sweep", "--set", "seed=1", "--grid", "seed=1,2"]) == 2
    assert "given to both --set and --grid" in capsys.readouterr().err
    assert main(["sweep", "--set", "colour=red"]) == 2
    assert "unknown sweep parameter" in capsys.readouterr().err


# ---- --drop-invalid, integer counts --------------------------------------------------


def test_drop_invalid_says_one_clean_line(trace_slice, tmp_path, capsys):
    jobs, _ = trace_slice
    bad = tmp_path / "bad.csv"
    text = jobs.read_text().splitlines()
    fields = text[50].split(",")
    fields[text[0].split(",").index("num_gpus")] = "two"
    bad.write_text("\n".join(text[:50] + [",".join(fields)] + text[51:]) + "\n")
    args = [
        "simulate",
        str(bad),
        *ROOMY,
        "--drop-invalid",
        "--out",
        str(tmp_path / "o"),
        "--plot-format",
        "png",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    reason = "num_gpus: not a number: 1"
    assert err == f"aryl: skipped 1 invalid row of 300 in {bad} ({reason})\n"
    assert main([*args, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_compare_csv_writes_counts_as_integers(trace_slice, tmp_path, capsys, few_rows):
    jobs, _ = trace_slice
    assert (
        main(
            [
                "compare",
                str(jobs),
                *SMALL,
                "--out",
                str(tmp_path),
                "--quiet",
                "--plot-format",
                "png",
            ]
        )
        == 0
    )
    table = pd.read_csv(tmp_path / "compare.csv", index_col="run")
    for column in ("jobs_finished", "jobs_unfinished", "scaling_ops"):
        assert table[column].dtype == "int64", column
    raw = (tmp_path / "compare.csv").read_text().splitlines()
    header = raw[0].split(",")
    finished = header.index("jobs_finished")
    assert raw[1].split(",")[finished] == "300"


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["simlate"], "did you mean 'simulate'?"),
        (["comapre"], "did you mean 'compare'?"),
        (["simulate", "--policy", "arly"], "did you mean 'aryl'?"),
        (["simulate", "--reclaim", "sfc"], "did you mean 'scf'?"),
    ],
)
def test_a_mistyped_choice_is_answered_with_the_closest(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    # --policy also takes module:Class, so it names its choices itself
    assert "invalid choice" in err or "expected one of" in err
    assert err.rstrip().endswith(suggestion)


def test_nothing_close_gets_no_suggestion(capsys):
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    assert "did you mean" not in capsys.readouterr().err


def test_bare_aryl_prints_the_usage_and_the_commands(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: aryl") and "simulate" in err and "sweep" in err


def test_compare_with_seeds_prints_intervals_marks_and_verdicts(
    trace_slice, tmp_path, capsys, monkeypatch
):
    # tables at the default width; pytest-xdist's workers set COLUMNS=80, where the
    # tables split (test_compare_fits_an_80_column_terminal checks that layout)
    monkeypatch.setenv("COLUMNS", "120")
    jobs, load = trace_slice
    out = tmp_path / "seeds"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    assert main([*argv, "--seeds", "3", "--plot-format", "png"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    # the answers first, then the table; three seeds: said, and warned
    answers = [line for line in printed.splitlines() if line.startswith("Loaning: ")]
    assert answers and answers[0].endswith(", 3 seeds)")
    assert printed.index("Elastic scaling: ") < printed.index("run (means")
    assert "over n = 3: 3 seeds, paired" in printed and "Only 3 replications" in printed
    assert "warning: 95% intervals over n = 3 only, wide and unreliable (3 seeds)" in (
        captured.err
    )
    assert "loaning ledger" in printed and "lent GPU-h" in printed
    table = pd.read_csv(out / "compare.csv", index_col="run")
    assert len(table) == 14 and (table["replications"] == 3).all()
    lines = {}  # each row's first line: the JCT speed-up's (a narrow table wraps)
    for line in printed.splitlines():
        lines.setdefault(line.split("  ")[0], line)
    for name, row in table.iterrows():
        if name == "Baseline (FIFO)":
            continue
        if row["speed-up JCT high"] == row["speed-up JCT low"]:  # no [x, x]
            assert f"{row['speed-up JCT']:.3f}x (no spread)" in lines[name], name
            continue
        shown = (
            f"{row['speed-up JCT']:.2f}x ["
            if row["speed-up JCT high"] - row["speed-up JCT low"] >= 0.02
            else f"{row['speed-up JCT']:.3f}x ["
        )
        assert shown in lines[name], name
        includes_one = row["speed-up JCT low"] <= 1.0 <= row["speed-up JCT high"]
        marked = "] ~" in lines[name].split("x [")[1]
        assert marked == includes_one, name
    assert "what it buys" in printed and "loaning, given elasticity" in printed
    gains = pd.read_csv(out / "contributions.csv")
    for _, g in gains.iterrows():
        assert g["reading"] in printed
    assert "the paper's ordering" in printed
    verdicts = json.loads((out / "orderings.json").read_text())
    assert {v["verdict"] for v in verdicts.values()} <= {
        "holds",
        "reversed",
        "not resolved",
        "tied",
        "not tested",
    }
    assert len(pd.read_csv(out / "samples.csv")) == 14 * 3
    assert (out / "speedups.png").exists()


def test_compare_with_one_replication_marks_nothing_and_windows_say_n(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--plot-format", "png"]
    assert main([*argv, "--seeds", "1", "--out", str(tmp_path / "one")]) == 0
    captured = capsys.readouterr()
    table = captured.out.split("run (means")[1].split("\n\n")[0]
    assert (
        "~" not in table and "No intervals: one replication (one run)" in captured.out
    )
    assert "in one run, no interval" in captured.out
    assert "aryl: warning: no intervals at all (one run)" in captured.err
    out = tmp_path / "batches"
    assert main([*argv, "--seeds", "2", "--windows", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert (
        "over n = 2: 2 windows, each the mean of 2 seeds (batch means" in captured.out
    )
    assert "n = 2 only, wide and unreliable (2 windows, each the mean of 2 seeds)" in (
        captured.err
    )


def test_simulate_runs_tiresias_on_a_trace_lending_nothing(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    argv = ["simulate", str(jobs), "--load", str(load), *SMALL, "--policy", "tiresias"]
    assert main([*argv, "--plot-format", "png", "--out", str(tmp_path)]) == 0
    assert "nothing is lent" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["jobs_unfinished"] == 0 and summary["lent_gpu_hours"] == 0.0


def test_compare_seeds_and_windows_options_are_checked():
    for bad in (["--seeds", "0"], ["--windows", "0"], ["--warmup", "soon"]):
        with pytest.raises(SystemExit):
            main(["compare", *bad])
