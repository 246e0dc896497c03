import pandas as pd
import pytest

import aryl
from aryl import _core
from instances import Built


def test_defaults():
    assert aryl.Server("s").gpu_type == "V100"
    assert aryl.Server("s", "inference").gpu_type == "T4"
    job = aryl.Job("j", 2, 1, 4, 100.0)
    assert job.estimated_duration == 100.0 and job.elastic and job.gpu_type is None
    assert not aryl.Job("k", 8, 2, 2, 5).elastic


def test_numpy_and_integral_values_are_accepted():
    frame = pd.DataFrame(
        {
            "id": ["j"],
            "gpus_per_worker": [2.0],
            "min_workers": [1],
            "max_workers": [2],
            "duration": [10],
        }
    )
    [job] = aryl.model.as_records(frame, aryl.Job, "job")
    assert job.gpus_per_worker == 2 and isinstance(job.gpus_per_worker, int)


def _state(servers=None, jobs=None, workers=None):
    servers = (
        servers
        if servers is not None
        else [aryl.Server("s1"), aryl.Server("l1", "inference", on_loan=True)]
    )
    jobs = jobs if jobs is not None else [aryl.Job("j", 4, 1, 2, 60, hetero=True)]
    workers = (
        workers
        if workers is not None
        else [aryl.Worker("j", "s1"), aryl.Worker("j", "l1")]
    )
    state = Built(servers, jobs, workers)
    _core.validate(state.core)
    return state


def test_a_good_state():
    state = _state()
    assert (state.core.n_servers, state.core.n_jobs, state.core.n_workers) == (2, 1, 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(servers=[aryl.Server("s1"), aryl.Server("s1")]),
            "duplicate server id 's1'",
        ),
        (
            dict(jobs=[aryl.Job("j", 4, 1, 2, 60), aryl.Job("j", 1, 1, 1, 60)]),
            "duplicate job id 'j'",
        ),
        (
            dict(workers=[aryl.Worker("j", "nowhere")]),
            "worker 0: unknown server 'nowhere'",
        ),
        (dict(workers=[aryl.Worker("x", "s1")]), "worker 0: unknown job 'x'"),
        (
            dict(workers=[aryl.Worker("j", "s1", gpus=2)]),
            "worker 0 of job 'j' has 2 GPUs",
        ),
        (
            dict(jobs=[aryl.Job("j", 4, 3, 2, 60)], workers=[]),
            "job 'j': min_workers 3 > max_workers 2",
        ),
        (
            dict(jobs=[aryl.Job("j", 4, 1, 1, 60, hetero=True)]),
            "job 'j' runs 2 workers, outside",
        ),
        (
            dict(jobs=[aryl.Job("j", 4, 1, 2, -5, hetero=True)]),
            "job 'j': duration must be",
        ),
        (dict(workers=[aryl.Worker("j", "s1")] * 3), "server 's1' is over-committed"),
        (
            dict(jobs=[aryl.Job("j", 4, 1, 2, 60)]),
            "job 'j' is not hetero but runs on GPU types",
        ),
        (dict(jobs=[aryl.Job("j", 4, 1, 2, 60, gpu_type="V100")]), "needs V100"),
        (
            dict(servers=[aryl.Server("s1"), aryl.Server("l1", "inference")]),
            "which is not on loan",
        ),
        (
            dict(servers=[aryl.Server("s1", on_loan=True)], workers=[]),
            "only inference servers can be on loan",
        ),
    ],
)
def test_bad_state_names_the_record(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _state(**kwargs)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: aryl.Server("s", "gpu"), "pool must be 'training' or 'inference'"),
        (lambda: aryl.Server("s", gpus=7.5), "server 's': gpus must be an integer"),
        (
            lambda: aryl.Job("j", "2", 1, 1, 60),
            "job 'j': gpus_per_worker must be an integer",
        ),
        (lambda: aryl.Job("j", 2, 1, 1, "long"), "job 'j': duration must be a number"),
        (
            lambda: aryl.Job("j", 2, 1, 1, 60, checkpoint="yes"),
            "checkpoint must be True or False",
        ),
    ],
)
def test_bad_fields(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_records():
    with pytest.raises(ValueError, match="job record 0: unknown field"):
        Built([], [{"id": 1, "gpus": 2}], [])
    with pytest.raises(
        ValueError, match=r"job record 0: missing field\(s\) \['gpus_per_worker'"
    ):
        Built([], [{"id": 1}], [])
    with pytest.raises(ValueError, match="server record 1 must be a Server or a dict"):
        Built([aryl.Server("a"), 3], [], [])
    with pytest.raises(ValueError, match="must be a list of records"):
        Built({"id": 1}, [], [])
