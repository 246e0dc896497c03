"""No silent wrong answer on a user's inputs (issue 32, items 1, 3, 6 and 8): typed names
(GPU types, choices, options), sizing that says when it cannot, the embedded load with any
trace and the arrival rate, and output folders that are aryl's own."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import engine, sim, studies, traces
from aryl.cli import main
from aryl.studies.sweep import resolve

SMALL = ["--training-servers", "4", "--inference-servers", "4"]
QUIET = ["--quiet", "--plot-format", "png"]


def _jobs(n=6, gpus=8, duration=3600.0, gap=600.0, gpu_type=None):
    return [
        aryl.Job(f"j{i}", gpus, 1, 1, duration, i * gap, gpu_type=gpu_type)
        for i in range(n)
    ]


def _usage_error(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err


# ---- item 1: GPU type names --------------------------------------------------------------


def test_a_gpu_type_in_the_wrong_case_is_refused_with_the_right_one(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, *QUIET]
    assert main([*argv, "--gpu-speed", "t4=1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown GPU type 't4'; did you mean 'T4'?" in err, err
    assert not (tmp_path / "o" / "compare.csv").exists()


def test_a_gpu_type_the_run_lacks_warns_and_provenance_has_the_names(
    trace_slice, tmp_path, capsys
):
    jobs, load = trace_slice
    out = tmp_path / "o"
    argv = ["simulate", str(jobs), "--load", str(load), *SMALL, "--plot-format", "png"]
    assert main([*argv, "--gpu-speed", "A100=2,T4=1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "gpu_speed['A100'] has no effect" in err and "T4, V100" in err, err
    run = json.loads((out / "summary.json").read_text())["provenance"]["run"]
    assert run["config"]["gpu_speed"] == {"V100": 1.0, "T4": 1.0, "A100": 2.0}


@pytest.mark.parametrize(
    "speeds, message",
    [
        ({"t4": 1.0}, "did you mean 'T4'?"),
        ({"v100": 1.0}, "did you mean 'V100'?"),
        ({"T44": 1.0}, "did you mean 'T4'?"),
        ({"fast": 2.0}, "unknown GPU type 'fast' (this run's GPU types: T4, V100)"),
    ],
)
def test_simulate_refuses_gpu_names_of_no_type(speeds, message):
    with pytest.raises(ValueError, match="unknown GPU type") as error:
        sim.simulate(_jobs(), sim.Cluster(1, 1), config={"gpu_speed": speeds})
    assert message in str(error.value)


def test_a_type_only_jobs_name_is_a_type_of_the_run():
    jobs = _jobs(gpu_type="RTX8000")
    servers = [aryl.Server("t0", "training", 8, "RTX8000")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.simulate(jobs, servers, config={"gpu_speed": {"RTX8000": 0.5}})
    with pytest.warns(UserWarning, match="gpu_speed\\['H100'\\] has no effect"):
        # RTX8000 listed: a server type without a speed warns too (test_node_list.py)
        speeds = {"H100": 2.0, "RTX8000": 0.5}
        sim.simulate(jobs, servers, config={"gpu_speed": speeds})


def test_the_speeds_of_aryls_pools_do_not_warn_without_them():
    # One set of speeds for runs with and without inference (T4) servers.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.simulate(_jobs(), sim.Cluster(1, 0), config={"gpu_speed": {"T4": 1.0}})


def test_sweep_checks_gpu_names_before_any_run(tmp_path):
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time_s": [0.0, 60.0],
            "num_gpus": [8, 8],
            "duration_s": [600.0, 600.0],
            "gpu_type": ["unknown", "unknown"],
        }
    )
    given = {"mine": (frame, None)}
    base = {"trace": "mine", "training_servers": 1, "inference_servers": 0}
    with pytest.raises(ValueError, match="did you mean 'T4'"):
        sim.sweep(base, {"gpu_speed": [{"t4": 1.0}]}, traces=given, cache=tmp_path)
    assert not any(tmp_path.iterdir())  # nothing ran, nothing cached
    with pytest.warns(UserWarning, match="'A100'\\] has no effect"):
        sim.sweep(
            base,
            {"gpu_speed": [{"A100": 2.0}]},
            traces=given,
            engine="serial",
            cache=False,
            progress=False,
        )


def test_cluster_state_checks_gpu_names():
    state = aryl.ClusterState.from_records([aryl.Server("t0", "training", 8)], _jobs(2))
    with pytest.raises(ValueError, match="did you mean 'V100'"):
        state.schedule(gpu_speed={"v100": 1.0})
    with pytest.raises(ValueError, match="did you mean 'V100'"):
        state.advance(60.0, gpu_speed={"v100": 1.0})
    with pytest.warns(UserWarning, match="'A100'\\] has no effect"):
        state.schedule(gpu_speed={"A100": 2.0})


# ---- item 1: choices and option names ----------------------------------------------------


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["simulate", "--reclaim", "SCF"], "did you mean 'scf'?"),
        (["simulate", "--policy", "FIFO"], "did you mean 'fifo'?"),
        (["simulate", "--scenario", "Basic"], "did you mean 'basic'?"),
        (["compare", "--trace-format", "Helios"], "did you mean 'helios'?"),
    ],
)
def test_a_choice_in_the_wrong_case_gets_the_right_one(argv, suggestion, capsys):
    assert _usage_error(argv, capsys).rstrip().endswith(suggestion)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["compare", "--trainig-servers", "10"], "--training-servers"),
        (["compare", "--train", "10"], "--training-servers"),  # no abbreviations
        (["simulate", "--polcy", "fifo"], "--policy"),
        (["sweep", "--grd", "seed=1,2"], "--grid"),
        (["compare", "--window", "2"], "--windows"),
    ],
)
def test_an_unknown_option_is_named_with_the_closest(argv, option, capsys):
    err = _usage_error(argv, capsys)
    assert f"unknown option {argv[1]}; did you mean '{option}'?" in err, err
    assert "no such file" not in err


def test_values_after_double_dash_are_not_options(capsys):
    err = _usage_error(["simulate", "--", "--not-an-option.csv"], capsys)
    assert "no such file" in err


@pytest.mark.parametrize(
    "call, suggestion",
    [
        (lambda: sim.simulate(_jobs(), sim.Cluster(1, 0), policy="FIFO"), "'fifo'"),
        (lambda: sim.simulate(_jobs(), sim.Cluster(1, 0), reclaim="SCF"), "'scf'"),
        (lambda: resolve({"scenario": "Basic"}), "'basic'"),
        (lambda: resolve({"reclaim": "randm"}), "'random'"),
        (lambda: sim.scenario(_jobs(), "Ideal"), "'ideal'"),
    ],
)
def test_python_names_get_a_did_you_mean(call, suggestion):
    with pytest.raises(ValueError, match=f"did you mean {suggestion}"):
        call()


# ---- item 3: sizing that says when it cannot ----------------------------------------------


def test_sizing_refuses_when_no_size_reaches_the_target():
    # Two one-hour jobs ten days apart: even one server is idle most of the time.
    jobs = _jobs(n=2, gap=10 * 86400.0)
    with pytest.raises(ValueError, match="no cluster size reaches 72%") as error:
        sim.size_cluster(jobs)
    assert "even 1 training server" in str(error.value)


def test_the_floor_keeps_the_largest_job_placeable():
    # One job of 24 GPUs (3 servers) among small ones: the floor is 3 servers.
    jobs = _jobs(n=2, gap=10 * 86400.0) + [aryl.Job("big", 8, 3, 3, 3600.0, 0.0)]
    with pytest.raises(ValueError, match="even 3 training servers"):
        sim.size_cluster(jobs)


def test_sizing_warns_when_the_closest_count_misses():
    # Back-to-back one-server jobs: 1 server is ~100% busy, 2 are ~50%.
    jobs = _jobs(n=40, gap=3600.0)
    with pytest.warns(UserWarning, match="from the 72% target") as caught:
        sizing = sim.size_cluster(jobs)
    assert f"{sizing.gpu_usage_training:.1%}" in str(caught[0].message)
    assert abs(sizing.gpu_usage_training - 0.72) > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.size_cluster(jobs, tolerance=0.3)  # within a wider tolerance: silent


def test_sizing_on_the_embedded_trace_is_silent():
    jobs = traces.to_jobs(traces.load_default()[0].iloc[:2000])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sizing = sim.size_cluster(jobs)
    assert abs(sizing.gpu_usage_training - sizing.target) <= 0.05


def test_cli_auto_sizing_stops_with_the_reason(tmp_path, capsys):
    path = tmp_path / "sparse.csv"
    pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time_s": [0.0, 864000.0],
            "num_gpus": [8, 8],
            "duration_s": [3600.0, 3600.0],
            "gpu_type": ["unknown", "unknown"],
        }
    ).to_csv(path, index=False)
    assert main(["compare", str(path), "--out", str(tmp_path / "o"), *QUIET]) == 2
    assert "no cluster size reaches 72%" in capsys.readouterr().err


def test_a_queue_longer_than_the_trace_warns(tmp_path, capsys):
    # 30 one-day jobs submitted within an hour, on one server.
    jobs = _jobs(n=30, duration=86400.0, gap=120.0)
    result = sim.simulate(jobs, sim.Cluster(1, 0), policy="fifo")
    with pytest.warns(UserWarning, match="far too small"):
        studies.sizing.warn_if_too_small(result)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        studies.sizing.warn_if_too_small(sim.simulate(jobs, sim.Cluster(30, 0)))
    path = tmp_path / "crowded.csv"
    pd.DataFrame(
        {
            "job_id": [j.id for j in jobs],
            "submit_time_s": [j.submit_time for j in jobs],
            "num_gpus": 8,
            "duration_s": 86400.0,
            "gpu_type": "unknown",
        }
    ).to_csv(path, index=False)
    out = str(tmp_path / "o")
    argv = ["simulate", str(path), "--scenario", "baseline", "--out", out]
    assert main([*argv, "--training-servers", "1", "--plot-format", "png"]) == 0
    assert "the cluster is far too small" in capsys.readouterr().err


# ---- item 6: the embedded load with any trace, the arrival rate, the export ----------------


def test_load_embedded_pairs_any_trace_with_the_embedded_series(
    trace_slice, tmp_path, capsys
):
    jobs, _ = trace_slice
    out = tmp_path / "o"
    argv = ["simulate", str(jobs), "--load", "embedded", *SMALL, "--out", str(out)]
    assert main([*argv, *QUIET]) == 0
    record = json.loads((out / "provenance.json").read_text())
    assert "embedded Alibaba-2018 load" in record["inputs"]
    run = next(iter(record["runs"].values()))
    load = traces.embedded_load()
    assert run["load_rows"] == len(load) == 2304
    assert run["load_fingerprint"] == engine.provenance.fingerprint_load(
        load["time_s"].tolist(), load["load"].tolist()
    )
    assert traces.embedded_load().equals(traces.load_default()[1])


def test_load_embedded_repeats_to_cover_a_long_trace(tmp_path):
    jobs = _jobs(n=20, gap=86400.0)  # 19 days of submissions, 8 days of load
    result = sim.simulate(
        jobs, sim.Cluster(1, 1), inference_load=traces.embedded_load()
    )
    assert "repeated every 8.0 days" in result.provenance.load_extended


def test_arrival_scale_divides_the_inter_arrival_times(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    frames = {}
    for scale in ("1", "2"):
        out = tmp_path / scale
        argv = ["simulate", str(jobs), "--load", str(load), "--out", str(out)]
        assert main([*argv, "--arrival-scale", scale, "--inference-servers", "4"]) == 0
        frames[scale] = pd.read_csv(out / "jobs.csv")
    # --training-servers auto sizes on the trace as recorded: the same cluster.
    printed = capsys.readouterr().out
    assert len(set(line for line in printed.splitlines() if "Cluster:" in line)) == 1
    one, two = (frames[s]["submit_time"].to_numpy() for s in ("1", "2"))
    np.testing.assert_allclose(two - two[0], (one - one[0]) / 2)
    config = json.loads((tmp_path / "2" / "summary.json").read_text())
    assert config["provenance"]["run"]["config"]["arrival_scale"] == 2.0


def test_arrival_scale_is_a_config_field_and_a_sweep_parameter():
    jobs = _jobs(n=10, gap=3600.0)
    runs = {
        s: sim.simulate(jobs, sim.Cluster(1, 0), config={"arrival_scale": s})
        for s in (1.0, 4.0)
    }
    assert runs[4.0].jobs["submit_time"].max() == pytest.approx(9 * 3600.0 / 4)
    assert runs[4.0].summary()["queuing_mean"] > runs[1.0].summary()["queuing_mean"]
    assert resolve({"arrival_scale": 2})["config"]["arrival_scale"] == 2.0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="arrival_scale"):
            sim.simulate(jobs, sim.Cluster(1, 0), config={"arrival_scale": bad})


def test_arrival_scale_out_of_range_is_refused_at_parse_time(capsys):
    err = _usage_error(["compare", "--arrival-scale", "0"], capsys)
    assert "--arrival-scale must be in" in err


def test_traces_export_writes_the_embedded_pair(tmp_path, capsys):
    out = tmp_path / "my-traces"
    assert main(["traces", "export", str(out)]) == 0
    jobs, load = traces.load_default()
    assert traces.read_jobs(out / "jobs.csv").equals(jobs)
    assert traces.read_load(out / "load.csv").equals(load)
    assert "aryl compare" in capsys.readouterr().out


def test_the_readme_own_trace_commands_use_the_exported_files():
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "my_jobs.csv" not in readme and "my_load.csv" not in readme
    assert "aryl traces export && cd aryl-results/traces" in readme
    assert "aryl compare jobs.csv --load load.csv" in readme


# ---- item 8: output folders ---------------------------------------------------------------


def test_a_folder_aryl_did_not_write_is_refused(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("precious")
    for command in ("simulate", "compare", "sweep"):
        argv = [command, str(jobs), "--load", str(load), *SMALL, "--out", str(mine)]
        assert main([*argv, *(QUIET if command != "sweep" else ["--quiet"])]) == 2
        err = capsys.readouterr().err
        assert "holds files aryl did not write" in err, (command, err)
    assert sorted(p.name for p in mine.iterdir()) == ["chapter1.tex"]
    assert main(["traces", "export", str(mine)]) == 2


def test_a_folder_aryl_wrote_is_written_again_and_loads(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "o"
    argv = ["simulate", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    for seed in ("0", "1"):
        assert main([*argv, *QUIET, "--seed", seed]) == 0
    result = sim.load(out)
    summary = json.loads((out / "summary.json").read_text())
    assert result.summary()["jct_mean"] == summary["jct_mean"]
    assert result.provenance.seed == 1
    assert (out / ".aryl-output").is_file()


def test_compare_saves_each_run_for_load(trace_slice, tmp_path, capsys):
    jobs, load = trace_slice
    out = tmp_path / "cmp"
    argv = ["compare", str(jobs), "--load", str(load), *SMALL, "--out", str(out)]
    assert main([*argv, *QUIET]) == 0
    table = pd.read_csv(out / "compare.csv", index_col="run")
    baseline = sim.load(out / "runs" / "baseline-fifo")
    assert baseline.summary()["jct_mean"] == pytest.approx(
        table.loc["Baseline (FIFO)", "jct_mean"]
    )
    assert len(list((out / "runs").iterdir())) == len(table)
    with pytest.raises(FileNotFoundError, match="load one of .*baseline-fifo"):
        sim.load(out)


def test_the_documented_tolerance_is_the_default():
    import inspect
    from pathlib import Path

    default = inspect.signature(sim.size_cluster).parameters["tolerance"].default
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"{default * 100:g} points" in readme
