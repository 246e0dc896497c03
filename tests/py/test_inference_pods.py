"""A pod list's inference pods as the load (issue 45): `--load pods[:QOS]`."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aryl import traces
from aryl.cli import main
from aryl.traces.pods import split_inference_pods

DATA = Path(__file__).parent / "data" / "alibaba2023"
DEFAULT = DATA / "openb_pod_list_default.csv"


def read(path):
    with pytest.warns(UserWarning):  # the importer counts the pods it leaves out
        return traces.read(path, format="alibaba-2023")


def test_the_ls_pods_leave_the_jobs_and_their_gpus_are_the_load():
    frame = read(DEFAULT)
    jobs, load = split_inference_pods(DEFAULT, frame)
    assert (
        not jobs["qos"].eq("LS").any() and len(jobs) == (~frame["qos"].eq("LS")).sum()
    )
    # by hand: GPUs held by every LS pod (still running ones to the end) at each step
    raw = pd.read_csv(DEFAULT, keep_default_na=False)
    ls = raw[raw["qos"].eq("LS") & (raw["num_gpu"] > 0)]
    origin = frame["creation_time"].min()
    t = load["time_s"].to_numpy() + origin
    last = raw["deletion_time"].max()
    held = np.zeros(len(t))
    for _, pod in ls.iterrows():
        end = (
            np.inf
            if pod["pod_phase"] == "Running" and pod["deletion_time"] == last
            else pod["deletion_time"]
        )
        held += pod["num_gpu"] * ((t >= pod["scheduled_time"]) & (t < end))
    assert load["load"].to_numpy() == pytest.approx(held / held.max())
    assert load["load"].max() == 1.0 and (np.diff(load["time_s"]) == 300.0).all()


def test_a_class_the_pod_list_lacks_is_named_with_those_it_has():
    frame = read(DEFAULT)
    with pytest.raises(
        ValueError, match="no pod of qos XX .* its classes: BE, Burstable"
    ):
        split_inference_pods(DEFAULT, frame, ["XX"])


def test_the_command_line_takes_the_pods_as_the_load(tmp_path, capsys):
    argv = ["simulate", str(DEFAULT), "--trace-format", "alibaba-2023"]
    cluster = ["--training-servers", "2", "--inference-servers", "2"]
    out = tmp_path / "o"
    assert main([*argv, "--load", "pods", *cluster, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "pods of qos LS are the inference load" in printed
    assert len(pd.read_csv(out / "jobs.csv")) == 8  # 23 kept pods, 15 of them LS
    assert main([*argv, "--load", "pods:LS,BE", *cluster, "--out", str(out)]) == 0
    assert len(pd.read_csv(out / "jobs.csv")) == 1
    # only for the 2023 pod lists: an aryl CSV has no pods
    plain = tmp_path / "jobs.csv"
    pd.DataFrame(
        {
            "job_id": ["a"],
            "submit_time_s": [0],
            "num_gpus": [1],
            "duration_s": [60],
            "gpu_type": ["V100"],
        }
    ).to_csv(plain, index=False)
    assert (
        main(
            [
                "simulate",
                str(plain),
                "--load",
                "pods",
                *cluster,
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 2
    )
    assert "only for an Alibaba GPU 2023 pod list" in capsys.readouterr().err
