"""`aryl sweep`'s outputs: sweep.csv beside sweep.parquet, each point's mean and interval
over a seed axis (sweep_points.csv, `sim.sweep_summary`), jobs left unfinished and the
loaning ledger in the table, `gpu_speed` in `--gpu-speed`'s syntax, parameter names
with a "did you mean"."""

import contextlib
import io
import json
import math
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from aryl import sim, traces
from aryl.cli import main
from aryl.studies.sweep_runs import resolve, run_fingerprint

SMALL = {"first_jobs": 200, "training_servers": 8, "inference_servers": 8}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The embedded trace's first 200 jobs and its load, as CSV files."""
    jobs, load = traces.load_default()
    folder = tmp_path_factory.mktemp("sweep-trace")
    jobs.iloc[:200].to_csv(folder / "jobs.csv", index=False)
    load.to_csv(folder / "load.csv", index=False)
    return folder / "jobs.csv", folder / "load.csv"


def sweep_args(files, out, *grid):
    jobs, load = files
    return [
        "sweep",
        str(jobs),
        "--load",
        str(load),
        "--training-servers",
        "8",
        "--inference-servers",
        "8",
        *[a for g in grid for a in ("--grid", g)],
        "--engine",
        "threads",
        "--workers",
        "2",
        "--no-cache",
        "--out",
        str(out),
    ]


@pytest.fixture(scope="module")
def swept(files, tmp_path_factory):
    """`aryl sweep` over a horizon that leaves jobs unfinished (or not), GPU speeds in
    --gpu-speed's syntax and two seeds: (its printed output, its output folder)."""
    out = tmp_path_factory.mktemp("sweep-out") / "out"
    args = sweep_args(
        files, out, "horizon=200000,1e12", "gpu_speed=T4=0.25,T4=1", "seed=0,1"
    )
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setenv("COLUMNS", "400")  # every table in one block, a line per row
        assert main(args) == 0
    return printed.getvalue(), out


def test_sweep_csv_holds_the_parquet_rows(swept):
    _, out = swept
    parquet = pd.read_parquet(out / "sweep.parquet")
    csv = pd.read_csv(out / "sweep.csv")
    assert list(csv.columns) == list(parquet.columns) and len(csv) == len(parquet) == 8
    for column in parquet.columns:
        want, got = parquet[column], csv[column]
        if column == "gpu_speed":  # a dict: JSON in the CSV, as --grid takes it
            assert [json.loads(v) for v in got] == [
                {k: v for k, v in d.items() if v is not None} for d in want
            ]
        elif pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(
            want
        ):
            np.testing.assert_array_equal(got.to_numpy(float), want.to_numpy(float))
        else:
            assert [None if pd.isna(v) else str(v) for v in got] == [
                None
                if v is None or (isinstance(v, float) and math.isnan(v))
                else str(v)
                for v in want
            ], column


def test_points_csv_is_the_mean_and_t_interval_over_the_seeds(swept):
    _, out = swept
    runs = pd.read_parquet(out / "sweep.parquet")
    points = pd.read_csv(out / "sweep_points.csv")
    assert len(points) == 4 and (points["replications"] == 2).all()
    for _, point in points.iterrows():
        mine = runs[
            (runs["horizon"] == point["horizon"])
            & (
                runs["gpu_speed"].map(lambda d: d["T4"])
                == json.loads(point["gpu_speed"])["T4"]
            )
        ]
        assert list(mine["seed"]) == [0, 1]
        for key in ("jct_mean", "queuing_mean", "lent_gpu_hours"):
            x = mine[key].to_numpy(float)
            half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
            assert point[key] == pytest.approx(x.mean(), rel=1e-12)
            assert point[f"{key}_low"] == pytest.approx(x.mean() - half, rel=1e-9)
            assert point[f"{key}_high"] == pytest.approx(x.mean() + half, rel=1e-9)


def test_sweep_summary_over_three_seeds_equals_scipy():
    jobs, load = traces.load_default()
    table = sim.sweep(
        {**SMALL, "trace": "itp"},
        {"reclaim": ["aryl", "random"], "seed": [0, 1, 2]},
        traces={"itp": (jobs.iloc[:400], load)},
        engine="threads",
        workers=2,
        cache=False,
        progress=False,
    )
    points = sim.sweep_summary(table, over="seed")
    assert list(points["reclaim"]) == ["aryl", "random"]
    assert list(points["seeds"]) == ["0, 1, 2"] * 2
    for (_, point), reclaim in zip(points.iterrows(), ["aryl", "random"]):
        x = table.loc[table["reclaim"] == reclaim, "jct_mean"].to_numpy(float)
        low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert point["jct_mean"] == pytest.approx(x.mean(), rel=1e-12)
        assert (point["jct_mean_low"], point["jct_mean_high"]) == pytest.approx(
            (low, high), rel=1e-9
        )
        assert point["jct_mean_note"] == ""


def test_one_seed_and_no_spread_say_so_in_words():
    table = pd.DataFrame(
        {
            "policy": ["fifo", "aryl", "aryl", "aryl"],
            "seed": [0, 0, 1, 2],
            "jct_mean": [100.0, 200.0, 210.0, 230.0],
            "jobs_unfinished": [0, 3, 3, 3],
        }
    )
    points = sim.sweep_summary(table).set_index("policy")
    one, three = points.loc["fifo"], points.loc["aryl"]
    assert one["jct_mean_note"] == "1 seed: no interval"
    assert math.isnan(one["jct_mean_low"]) and math.isnan(one["jct_mean_high"])
    assert three["jobs_unfinished_note"] == "no spread: the same in all 3 seeds"
    assert three["jct_mean_note"] == "" and three["jct_mean_low"] < 200
    with pytest.raises(ValueError, match="no 'window' column"):
        sim.sweep_summary(table, over="window")


def test_the_printed_tables_show_unfinished_jobs_the_ledger_and_no_empty_intervals(
    swept,
):
    printed, _ = swept
    runs, points = printed.split("Each point's mean over its seeds")
    for header in ("unfinished", "lent GPU-h", "used of"):
        assert header in runs
    assert "4 of 8 runs left jobs unfinished" in printed
    lines = runs.splitlines()
    header = next(line for line in lines if "unfinished" in line)
    at = header.index("unfinished") + len("unfinished")  # right-aligned numbers
    column = {
        line.split()[0]: int(line[:at].split()[-1])
        for line in lines
        if line.startswith(("200000", "1e+12"))
    }
    assert len([c for c in lines if c.startswith(("200000", "1e+12"))]) == 8
    assert column["200000"] > 0 and column["1e+12"] == 0
    assert "T4=0.25" in runs and "{'T4'" not in runs
    # zero spread (no unfinished job in any seed at the long horizon) in words
    assert "0 (no spread: the same in both seeds)" in points
    assert "[0, 0]" not in points and "[0.0, 0.0]" not in points
    assert "sweep_points.csv" in printed


def test_one_seed_prints_no_interval(files, tmp_path, capsys):
    assert main(sweep_args(files, tmp_path / "out", "seed=0")) == 0
    printed = capsys.readouterr().out
    assert "(1 seed: no interval)" in printed
    points = pd.read_csv(tmp_path / "out" / "sweep_points.csv")
    assert (points["jct_mean_note"] == "1 seed: no interval").all()


def test_gpu_speed_in_the_gpu_speed_syntax_is_the_json_run():
    given = [{"T4": 0.25}, "T4=0.25", {"T4": 1}, "T4=1", "T4=0.5;P100=0.75"]
    speeds = [resolve({"gpu_speed": g})["config"]["gpu_speed"] for g in given]
    assert speeds == [{"T4": 0.25}] * 2 + [{"T4": 1.0}] * 2 + [
        {"T4": 0.5, "P100": 0.75}
    ]
    keys = [run_fingerprint(resolve({"gpu_speed": g}), "t") for g in given[:4]]
    assert keys[0] == keys[1] and keys[2] == keys[3] != keys[0]


@pytest.mark.parametrize("bad", ["T4:0.25", "T4=fast", "0.25"])
def test_a_bad_gpu_speed_shows_the_syntax(files, tmp_path, capsys, bad):
    assert main(sweep_args(files, tmp_path / "out", f"gpu_speed={bad}")) == 2
    err = capsys.readouterr().err
    assert f"gpu_speed: cannot read {bad!r}" in err or "cannot read 0.25" in err
    assert "TYPE=SPEED" in err and "--grid 'gpu_speed=T4=0.25,T4=1'" in err
    assert not (tmp_path / "out" / "sweep.parquet").exists()


def test_a_bad_value_stops_before_the_cluster_is_sized(capsys, tmp_path):
    args = ["sweep", "--grid", "policy=fifoo", "--out", str(tmp_path / "o")]
    assert main([*args, "--training-servers", "auto"]) == 2
    captured = capsys.readouterr()
    assert "did you mean 'fifo'" in captured.err and "Cluster:" not in captured.out


def test_a_misspelt_parameter_gets_a_did_you_mean(capsys):
    assert main(["sweep", "--grid", "arival_scale=1,1.5"]) == 2
    err = capsys.readouterr().err
    assert "unknown sweep parameter(s) ['arival_scale']" in err
    assert "did you mean 'arrival_scale'?" in err
    with pytest.raises(ValueError, match="did you mean 'headroom'"):
        sim.sweep({"headrom": 0.1}, engine="serial", cache=False)


def test_the_files_are_written_whole_or_not_at_all(files, tmp_path, monkeypatch):
    sweep_module = sys.modules[
        "aryl.studies.sweep"
    ]  # aryl.studies.sweep is the function

    def broken(table):
        raise OSError("disk full")

    monkeypatch.setattr(sweep_module, "csv_frame", broken)
    out = tmp_path / "out"
    assert main(sweep_args(files, out, "seed=0,1")) == 2
    assert not [p.name for p in out.iterdir() if p.name.startswith("sweep")]


def test_a_folder_of_someone_elses_files_is_left_alone(files, tmp_path, capsys):
    out = tmp_path / "theirs"
    out.mkdir()
    (out / "sweep.csv").write_text("mine\n")
    assert main(sweep_args(files, out, "seed=0")) == 2
    assert "aryl did not write" in capsys.readouterr().err
    assert (out / "sweep.csv").read_text() == "mine\n"
