import random

import pandas as pd
import pytest

import aryl
from aryl import sim

AUDIT = {"audit": True, "gpu_speed": {"V100": 1.0, "T4": 1.0}}


def test_paper_example_average_jct_is_62():
    jobs = [aryl.Job("A", 1, 2, 3, 100), aryl.Job("B", 1, 2, 6, 20)]
    result = sim.simulate(jobs, sim.Cluster(1), config=AUDIT).check()
    assert result.jobs.set_index("id")["jct"].to_dict() == {"A": 100.0, "B": 24.0}
    assert result.summary()["jct_mean"] == 62.0
    # Without elasticity SJF runs B at 6 workers first; A starts at the next epoch.
    fixed = sim.simulate(jobs, sim.Cluster(1), policy="sjf", config=AUDIT).check()
    assert fixed.jobs.set_index("id")["jct"].to_dict() == {"A": 160.0, "B": 20.0}
    assert (
        sim.simulate(
            jobs, sim.Cluster(1), config={**AUDIT, "elasticity": False}
        ).summary()["jct_mean"]
        == 90.0
    )


@pytest.mark.parametrize(
    "checkpoint, finish, lost",
    [(False, 5040 + 1000, 240.0), (True, 5040 + 63 + 760, 0.0)],
)
def test_preemption_with_and_without_checkpoint(checkpoint, finish, lost):
    jobs = [
        aryl.Job("Y", 8, 1, 1, 5000),
        aryl.Job("X", 8, 1, 1, 1000, submit_time=10, checkpoint=checkpoint),
    ]
    load = pd.DataFrame({"time_s": [0, 300], "load": [0.0, 1.0]})
    result = sim.simulate(
        jobs, sim.Cluster(1, 1), inference_load=load, config=AUDIT
    ).check()
    x = result.jobs.set_index("id").loc["X"]
    assert (x.start_time, x.finish_time, x.preemptions, x.work_lost) == (
        60.0,
        finish,
        1,
        lost,
    )
    assert (
        x.ran_on_inference and x.ran_on_training and x.gpu_types == "V100+T4"
    )  # loaned, then training
    s = result.summary()
    assert s["preemption_ratio"] == 0.5 and s["flexible_reclaim_share"] == 0.0


def test_a_reclaim_met_by_scaling_in():
    jobs = [aryl.Job("E", 1, 8, 16, 1000)]
    load = [(0, 0.0), (300, 0.5)]
    result = sim.simulate(
        jobs, sim.Cluster(0, 2), inference_load=load, config=AUDIT
    ).check()
    e = result.jobs.iloc[0]
    assert (e.preemptions, e.scaling_ops, e.finish_time) == (
        0,
        1,
        300 + (16000 - 300 * 16) / 8,
    )
    assert result.summary()["flexible_reclaim_share"] == 1.0
    assert list(result.timeline["on_loan"][:6]) == [2, 2, 2, 2, 2, 1]


def random_trace(seed, n=60):
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        d = rng.choice([1, 2, 4, 8])
        lo = rng.randint(1, 2)
        jobs.append(
            aryl.Job(
                i,
                d,
                lo,
                lo + rng.randint(0, 2),
                rng.uniform(30, 4000),
                submit_time=rng.uniform(0, 6000),
                checkpoint=rng.random() < 0.5,
                hetero=rng.random() < 0.2,
            )
        )
    load = [(300.0 * k, rng.random()) for k in range(60)]
    return jobs, load


@pytest.mark.parametrize("policy", aryl.defaults.SCHEDULE_POLICIES)
@pytest.mark.parametrize("reclaim", ["aryl", "scf", "random"])
def test_invariants_hold_for_every_policy(policy, reclaim):
    for seed in range(3):
        jobs, load = random_trace(seed)
        result = sim.simulate(
            jobs,
            sim.Cluster(4, 4),
            policy=policy,
            reclaim=reclaim,
            inference_load=load,
            config={"audit": True, "scaling": "imperfect"},
            seed=seed,
        ).check()
        summary = result.summary()
        assert summary["jobs_finished"] == len(jobs) and summary["jobs_unfinished"] == 0
        for key in (
            "gpu_usage_training",
            "gpu_usage_overall",
            "preemption_ratio",
            "flexible_reclaim_share",
        ):
            assert 0.0 <= summary[key] <= 1.0 or key == "preemption_ratio"


def test_same_seed_same_result():
    jobs, load = random_trace(7)
    runs = [
        sim.simulate(
            jobs, sim.Cluster(4, 4), reclaim="random", inference_load=load, seed=3
        )
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(runs[0].jobs, runs[1].jobs)
    pd.testing.assert_frame_equal(runs[0].timeline, runs[1].timeline)


def test_check_catches_a_broken_result():
    jobs, load = random_trace(1)
    result = sim.simulate(jobs, sim.Cluster(4, 4), inference_load=load)
    result.jobs.loc[0, "finish_time"] = result.jobs.loc[0, "start_time"] - 1
    with pytest.raises(sim.InvariantError, match="finished before it started"):
        result.check()


def test_results_tables():
    jobs, load = random_trace(2)
    result = sim.simulate(jobs, sim.Cluster(4, 4), inference_load=load)
    assert list(result.jobs.columns[:8]) == [
        "id",
        "submit_time",
        "start_time",
        "finish_time",
        "queuing_time",
        "jct",
        "preemptions",
        "scaling_ops",
    ]
    assert set(result.jobs["gpu_types"]) <= {"V100", "T4", "V100+T4"}
    assert {
        "t",
        "training_gpus_used",
        "loaned_gpus_used",
        "on_loan",
        "queue_length",
    } <= set(result.timeline)
    assert set(result.summary()) == set(sim.SUMMARY_KEYS)
    assert "mean JCT" in repr(result) and "<table>" in result._repr_html_()


def test_compare_builds_one_table():
    jobs, load = random_trace(3)
    table = sim.compare(
        jobs,
        sim.Cluster(4, 4),
        {
            "Baseline": {"policy": "fifo", "config": {"loaning": False}},
            "Aryl": {"policy": "aryl", "jobs": sim.scenario(jobs, "ideal")},
        },
        inference_load=load,
    )
    assert list(table.index) == ["Baseline", "Aryl"] and list(table.columns) == list(
        sim.SUMMARY_KEYS
    )
    assert table.loc["Baseline", "preemption_ratio"] == 0.0


def test_progress_is_reported_and_can_stop_the_run():
    jobs, load = random_trace(4)
    seen = []
    sim.simulate(jobs, sim.Cluster(4, 4), inference_load=load, progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] <= 1.0
    stopped = sim.simulate(
        jobs, sim.Cluster(4, 4), inference_load=load, progress=lambda f: f < 0.3
    )
    assert stopped.summary()["jobs_unfinished"] > 0


def test_per_job_throughput_curves():
    job = aryl.Job("J", 1, 1, 2, 100)  # W = 100 s x throughput(2)
    flat = sim.simulate([job], sim.Cluster(1), throughput={"J": [1.0, 1.0]})
    assert flat.jobs["finish_time"][0] == 100.0  # a second worker adds nothing


def test_prediction_error_changes_only_estimates():
    jobs, _ = random_trace(5)
    noisy = sim.simulate(
        jobs, sim.Cluster(4), config={"prediction_error": (0.5, 0.25)}, seed=1
    )
    assert noisy.summary()["jobs_finished"] == len(jobs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(policy="Pollux"), "unknown policy 'Pollux'"),
        (dict(reclaim="exact"), "unknown reclaim policy 'exact'"),
        (dict(config={"speed": 2}), r"unknown config field\(s\) \['speed'\]"),
        (dict(config={"placement": "tetris"}), "unknown placement 'tetris'"),
        (
            dict(config={"scaling": "quadratic"}),
            "unknown scaling 'quadratic'; expected one of linear, imperfect",
        ),
        (dict(inference_load=[1, 2, 3]), "must be \\(time_s, load\\) pairs"),
        (dict(inference_load=[(0, 0.5), (0, 0.1)]), "times must increase"),
        (dict(inference_load=[(0, float("nan"))]), "row 0 has NaN"),
        (dict(throughput={"nope": [1.0]}), "throughput: unknown job 'nope'"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sim.simulate([aryl.Job("a", 1, 1, 1, 10)], sim.Cluster(1, 1), **kwargs)


def test_a_job_that_can_never_run_is_refused():
    with pytest.raises(ValueError, match="job 'huge' can never run"):
        sim.simulate([aryl.Job("huge", 8, 4, 4, 10)], sim.Cluster(2))
    with pytest.raises(ValueError, match="duplicate job id 'a'"):
        sim.simulate([aryl.Job("a", 1, 1, 1, 10)] * 2, sim.Cluster(1))
