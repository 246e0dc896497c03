"""The Alibaba GPU 2023 release read as a team would (issue 45, round 2): a pod not
finished at the trace's end is censored whatever its phase says, and a job whose
GPU type the cluster has only as inference servers waits for them to be lent (a
warning counts it, ``jobs_unfinished`` shows it) instead of stopping the run."""

import csv
import warnings
from pathlib import Path

import pytest

import aryl
from aryl import sim, traces
from aryl.cli import main
from aryl.traces.formats.common import STILL_RUNNING

DATA = Path(__file__).parent / "data" / "alibaba2023"
SPEC33 = DATA / "openb_pod_list_gpuspec33.csv"
NODES = DATA / "openb_node_list_gpu_node.csv"
#: speeds for the excerpt's types aryl has none for (made up: the tests' own)
SPEEDS = "P100=0.5,G2=0.5,G3=0.5"
WAIT = "fit only with inference servers lent"


def read_quietly(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return traces.read(path, format="alibaba-2023")


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


# ---- censoring by time, not by phase ----------------------------------------------------


def test_a_pod_deleted_at_the_traces_end_is_censored_whatever_its_phase(tmp_path):
    rows = rows_of(SPEC33)
    end = max(int(r["deletion_time"]) for r in rows)
    at_end = [r for r in rows if int(r["deletion_time"]) == end and r["num_gpu"] != "0"]
    assert len(at_end) >= 3
    # the release marks them Running; another phase must not make them finished jobs
    for r, phase in zip(at_end, ["Succeeded", "failed", " RUNNING "]):
        r["pod_phase"] = phase
    frame = read_quietly(write_rows(tmp_path / "pods.csv", rows))
    assert frame.attrs["skip_reasons"][STILL_RUNNING] == len(at_end)
    assert not {r["name"] for r in at_end} & set(frame["job_id"])
    assert frame.attrs["skip_reasons"] == read_quietly(SPEC33).attrs["skip_reasons"]


def test_a_running_pod_deleted_before_the_end_ran_until_its_deletion():
    rows = rows_of(SPEC33)
    end = max(int(r["deletion_time"]) for r in rows)
    # the excerpt's two LS pods of 100 days and more, phase Running, deleted early
    long = {
        r["name"]: int(r["deletion_time"]) - int(r["scheduled_time"])
        for r in rows
        if r["pod_phase"] == "Running"
        and int(r["deletion_time"]) < end
        and int(r["deletion_time"]) - int(r["scheduled_time"]) > 100 * 86400
    }
    assert len(long) == 2
    frame = read_quietly(SPEC33).set_index("job_id")
    for name, seconds in long.items():
        assert frame.loc[name, "duration_s"] == seconds
        assert frame.loc[name, "qos"] == "LS"  # --load pods:LS makes them the load


# ---- a job whose type is only in the inference pool waits -------------------------------


def test_a_job_that_fits_only_on_servers_never_lent_waits_unfinished():
    with pytest.warns(RuntimeWarning) as caught:
        result = sim.simulate(
            [
                aryl.Job("b", 8, 2, 2, 100.0, gpu_type="T4"),
                aryl.Job("a", 8, 1, 1, 100.0),
            ],
            sim.Cluster(1, 2),
            inference_load=[(0, 1.0)],
        )
    said = [str(w.message) for w in caught]
    assert any(f"1 job(s) ('b') {WAIT}" in s for s in said), said
    assert result.summary()["jobs_unfinished"] == 1
    assert result.jobs.set_index("id").loc["a", "finish_time"] > 0


def test_a_job_that_fits_nowhere_even_with_every_server_lent_is_refused():
    with pytest.raises(ValueError, match="even with every inference server lent"):
        sim.simulate(
            [aryl.Job("huge", 8, 4, 4, 100.0, gpu_type="T4")],
            sim.Cluster(1, 2),
            inference_load=[(0, 0.0)],
        )


def test_compare_on_the_gpuspec33_pods_runs_and_counts_the_waiting_jobs(
    tmp_path, capsys
):
    argv = ["compare", str(SPEC33), "--trace-format", "alibaba-2023"]
    argv += ["--servers", str(NODES), "--gpu-speed", SPEEDS]
    argv += ["--plot-format", "png", "--out", str(tmp_path)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count(WAIT) == 1 and "can never run" not in err, err  # said once
    frame = read_quietly(SPEC33)
    t4 = set(frame.loc[frame["gpu_type"] == "T4", "job_id"])
    sjf = sim.load(tmp_path / "runs" / "control-sjf-no-loaning").jobs
    assert t4 and set(sjf.loc[sjf["finish_time"].isna(), "id"]) == t4  # none lent
    # under FIFO a waiting job at the head of the queue holds back those behind it
    fifo = sim.load(tmp_path / "runs" / "baseline-fifo").jobs
    assert set(fifo.loc[fifo["finish_time"].isna(), "id"]) > t4


# ---- per QoS class ----------------------------------------------------------------------


def test_the_pods_qos_class_is_their_group(tmp_path, capsys):
    frame = read_quietly(SPEC33)
    assert (frame["vc"] == frame["qos"]).all()
    argv = ["simulate", str(SPEC33), "--trace-format", "alibaba-2023", "--by", "vc"]
    argv += ["--servers", str(NODES), "--gpu-speed", SPEEDS, "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert set(sim.load(tmp_path).jobs["vc"]) == set(frame["qos"])
