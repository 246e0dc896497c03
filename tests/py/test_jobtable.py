"""JobTable: jobs as columns, equal to the record path in every value and message."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import JobTable, sim, traces


def random_jobs(seed: int, n: int = 60) -> list:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        lo = int(rng.integers(1, 4))
        jobs.append(
            aryl.Job(
                id=i if seed % 2 else f"j{i}",
                gpus_per_worker=int(rng.choice([1, 2, 4, 8])),
                min_workers=lo,
                max_workers=lo + int(rng.integers(0, 3)),
                duration=float(rng.uniform(60, 5000)),
                submit_time=float(i * 30),
                gpu_type=[None, "V100", "T4"][int(rng.integers(0, 3))],
                checkpoint=bool(rng.integers(0, 2)),
                hetero=bool(rng.integers(0, 2)),
            )
        )
    return jobs


@pytest.mark.parametrize("seed", range(4))
def test_a_frame_and_records_give_the_same_table(seed):
    jobs = random_jobs(seed)
    frame = pd.DataFrame([dataclasses.asdict(j) for j in jobs])
    from_frame, from_records = JobTable.of(frame), JobTable.of(jobs)
    assert from_frame == from_records
    assert list(from_frame) == jobs and from_frame == jobs
    assert from_frame[3] == jobs[3] and from_frame[-1] == jobs[-1]
    assert list(from_frame[5:9]) == jobs[5:9]


def test_a_frame_s_gpu_types_are_shared_str_with_none_where_missing():
    # One str per distinct type, not per job: at 500k jobs that is ~25 MB.
    types = ["V100", None, "T4", float("nan"), "V100", pd.NA] * 50
    frame = pd.DataFrame(
        {
            "id": range(len(types)),
            "gpus_per_worker": 1,
            "min_workers": 1,
            "max_workers": 1,
            "duration": 60.0,
            "gpu_type": pd.Series(types, dtype=object),
        }
    )
    column = JobTable.of(frame).column("gpu_type")
    assert column.tolist() == ["V100", None, "T4", None, "V100", None] * 50
    assert len({id(t) for t in column.tolist()}) == 3  # V100, T4, None


def test_zero_and_one_are_not_flags_in_a_frame_either():
    frame = pd.DataFrame(
        {
            "id": ["a"],
            "gpus_per_worker": [8],
            "min_workers": [1],
            "max_workers": [1],
            "duration": [60.0],
            "hetero": [1],
        }
    )
    with pytest.raises(
        ValueError, match="job 'a': hetero must be True or False, got 1"
    ):
        JobTable.of(frame)


def test_defaults_of_missing_columns_are_the_jobs_defaults():
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "gpus_per_worker": [8, 4],
            "min_workers": [1, 2],
            "max_workers": [2, 2],
            "duration": [100.0, 50.0],
        }
    )
    expected = [aryl.Job("a", 8, 1, 2, 100.0), aryl.Job("b", 4, 2, 2, 50.0)]
    assert list(JobTable.of(frame)) == expected


@pytest.mark.parametrize(
    "column, value, message",
    [
        (
            "gpus_per_worker",
            2.5,
            "job 'b': gpus_per_worker must be an integer, got 2.5",
        ),
        ("min_workers", "2", "job 'b': min_workers must be an integer, got '2'"),
        ("duration", True, "job 'b': duration must be a number, got True"),
        ("hetero", 2, "job 'b': hetero must be True or False, got 2"),
        ("gpu_type", 7, "job 'b': gpu_type must be a str or None, got 7"),
        ("colour", "red", "unknown field"),
    ],
)
def test_a_bad_frame_value_names_the_job_as_the_record_path_does(
    column, value, message
):
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "gpus_per_worker": [8, 4],
            "min_workers": [1, 2],
            "max_workers": [2, 2],
            "duration": [100.0, 50.0],
        }
    )
    frame[column] = pd.Series(
        [frame[column].iloc[0] if column in frame else "x", value], dtype=object
    )
    if column == "hetero":
        frame[column] = pd.Series([False, 2], dtype=object)  # 2 is no flag
    with pytest.raises(ValueError, match=message):
        JobTable.of(frame)


def test_columns_are_read_only_and_replace_checks_shape_and_names():
    table = JobTable.of(random_jobs(0, 5))
    with pytest.raises(ValueError):
        table.column("duration")[0] = 1.0
    with pytest.raises(ValueError, match="unknown job field"):
        table.replace(colour=[1] * 5)
    with pytest.raises(
        ValueError, match="3 values for 5 jobs|\\(3,\\) values for 5 jobs"
    ):
        table.replace(duration=[1.0, 2.0, 3.0])
    with pytest.raises(KeyError, match="no job field"):
        table.column("colour")
    with pytest.raises(TypeError):
        table["a"]  # type: ignore[call-overload]


@pytest.mark.parametrize("name", sim.SCENARIOS)
def test_scenarios_on_a_table_equal_scenarios_on_records(name):
    frame, _ = traces.synthetic(days=1, jobs=400, seed=2)
    table = traces.to_jobs(frame, seed=1)
    records = list(table)
    assert isinstance(table, JobTable)
    assert sim.scenario(table, name, seed=5) == sim.scenario(records, name, seed=5)
    assert sim.describe(sim.scenario(table, name, seed=5))["jobs"] == 400


def test_the_elastic_draw_reaches_the_share_with_the_shortest_prefix():
    frame, _ = traces.synthetic(days=2, jobs=1000, seed=3)
    jobs = sim.scenario(traces.to_jobs(frame), "basic", seed=4, elastic_gpu_share=0.36)
    described = sim.describe(jobs)
    assert described["elastic_gpu_time_share"] >= 0.36
    # Dropping the last elastic job drawn would fall short: the share is just passed.
    gpu_time = (
        jobs.column("duration")
        * jobs.column("gpus_per_worker")
        * jobs.column("reference_workers")
    )
    elastic = jobs.column("max_workers") > jobs.column("min_workers")
    assert gpu_time[elastic].sum() - gpu_time[elastic].max() < 0.36 * gpu_time.sum()


def test_a_table_simulates_as_its_records_do():
    frame, load = traces.synthetic(days=1, jobs=300, seed=1)
    table = sim.scenario(traces.to_jobs(frame), "advanced", seed=2)
    a = sim.simulate(table, sim.Cluster(30, 10), inference_load=load)
    b = sim.simulate(list(table), sim.Cluster(30, 10), inference_load=load)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.provenance.jobs_fingerprint == b.provenance.jobs_fingerprint
    a.check()


def test_the_fingerprint_tells_id_types_apart():
    from aryl.engine.provenance import fingerprint_jobs

    jobs = [aryl.Job(7, 8, 1, 1, 60.0)]
    assert fingerprint_jobs(jobs) != fingerprint_jobs([aryl.Job("7", 8, 1, 1, 60.0)])
    assert fingerprint_jobs(jobs) == fingerprint_jobs(JobTable.of(jobs))
