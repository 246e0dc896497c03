"""Types and kinds of every model input: bools are bools, ints are ints, ids hash."""

import numpy as np
import pytest

import aryl
from instances import Built


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: aryl.Worker("a", "s", flexible="yes"),
            r"worker of job 'a' on server 's': flexible must be True or False, "
            r"got 'yes' \(str\)",
        ),
        (
            lambda: aryl.Worker("a", "s", flexible=1),
            r"flexible must be True or False, got 1 \(int\)",
        ),
        (
            lambda: aryl.Worker("a", "s", gpus="4"),
            r"gpus must be an integer, got '4' \(str\)",
        ),
        (
            lambda: aryl.Worker("a", "s", gpus=2.5),
            r"gpus must be an integer, got 2.5 \(float\)",
        ),
        (
            lambda: aryl.Worker("a", "s", gpus=True),
            r"gpus must be an integer, got True \(bool\)",
        ),
        (
            lambda: aryl.Worker(["a"], "s"),
            r"worker: job must be hashable .* got \['a'\] \(list\)",
        ),
        (
            lambda: aryl.Worker("a", None),
            "worker: server must be an int or a str, got None",
        ),
        (
            lambda: aryl.Server("s", on_loan="False"),
            r"on_loan must be True or False, got 'False'",
        ),
        (
            lambda: aryl.Server("s", on_loan=0),
            r"on_loan must be True or False, got 0 \(int\)",
        ),
        (
            lambda: aryl.Server("s", pool=1),
            r"pool must be 'training' or 'inference', got 1 \(int\)",
        ),
        (
            lambda: aryl.Server("s", gpus="8"),
            r"server 's': gpus must be an integer, got '8' \(str\)",
        ),
        (lambda: aryl.Server({"id": 1}), "server id must be hashable"),
        (
            lambda: aryl.Job("j", True, 1, 1, 60),
            r"gpus_per_worker must be an integer, got True",
        ),
        (
            lambda: aryl.Job("j", 1, "1", 1, 60),
            r"min_workers must be an integer, got '1' \(str\)",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1.5, 60),
            r"max_workers must be an integer, got 1.5 \(float\)",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, "60"),
            r"job 'j': duration must be a number, got '60' \(str\)",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, True),
            r"duration must be a number, got True \(bool\)",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, 60, submit_time="0"),
            r"submit_time must be a number",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, 60, estimated_duration=[1]),
            "estimated_duration must be a",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, 60, checkpoint=1),
            r"checkpoint must be True or False, got 1",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, 60, hetero="no"),
            r"hetero must be True or False, got 'no'",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 2, 60, reference_workers="2"),
            "reference_workers must be an",
        ),
        (
            lambda: aryl.Job("j", 1, 1, 1, 60, gpu_type=4),
            r"gpu_type must be a str or None, got 4 \(int",
        ),
    ],
)
def test_wrong_kinds_are_refused_naming_field_and_type(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_numpy_and_dataframe_kinds_are_accepted():
    job = aryl.Job(
        np.int64(3),
        np.int32(2),
        1.0,
        np.float64(2.0),
        np.float32(60),
        checkpoint=np.bool_(False),
        hetero=np.True_,
    )
    assert (job.gpus_per_worker, job.min_workers, job.max_workers) == (2, 1, 2)
    assert all(
        type(v) is int for v in (job.gpus_per_worker, job.min_workers, job.max_workers)
    )
    assert (
        job.checkpoint is False and job.hetero is True and type(job.duration) is float
    )
    server = aryl.Server("s", "inference", gpus=np.int64(8), on_loan=np.True_)
    assert server.on_loan is True and type(server.gpus) is int
    worker = aryl.Worker(np.int64(3), "s", gpus=2.0, flexible=np.False_)
    assert worker.gpus == 2 and worker.flexible is False


def test_a_wrong_worker_gpu_count_is_caught_before_the_comparison():
    # Once: "has 4 GPUs but the job's gpus_per_worker is 4" (it compared '4' with 4).
    with pytest.raises(ValueError, match=r"gpus must be an integer, got '4' \(str\)"):
        Built(
            [aryl.Server("s")],
            [aryl.Job("a", 4, 1, 1, 60)],
            [{"job": "a", "server": "s", "gpus": "4"}],
        )
    with pytest.raises(
        ValueError, match="has 2 GPUs but the job's gpus_per_worker is 4"
    ):
        Built(
            [aryl.Server("s")],
            [aryl.Job("a", 4, 1, 1, 60)],
            [aryl.Worker("a", "s", gpus=2)],
        )
