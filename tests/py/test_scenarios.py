"""Scenario presets (aryl.engine.scenarios): shares, ranges, work, determinism, bad input."""

import dataclasses
import math

import numpy as np
import pytest

import aryl
from aryl.engine.scenarios import (
    SCENARIOS,
    apply_prediction_error,
    describe,
    elastic_bound,
    scenario,
    scenario_config,
)


def itp_like(n=500, seed=1):
    """``n`` inelastic jobs with the ITP trace's mix: 75% 1 GPU, ~18% 8, a few 16/32/2/4.

    Durations are log-uniform between 10 minutes and 3 days; multi-GPU jobs use 8-GPU
    workers (a 16-GPU job is 2 workers of 8), smaller ones a single worker.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.choice(
        [1, 2, 4, 8, 16, 32], size=n, p=[0.75, 0.01, 0.03, 0.18, 0.015, 0.015]
    )
    durations = np.exp(rng.uniform(np.log(600), np.log(3 * 86400), size=n))
    jobs = []
    for i, (g, d) in enumerate(zip(sizes, durations)):
        gpw = min(int(g), 8)
        w = int(g) // gpw
        jobs.append(aryl.Job(f"j{i}", gpw, w, w, float(d), submit_time=float(i)))
    return jobs


def gpus(job):
    return job.gpus_per_worker * job.max_workers


@pytest.fixture
def jobs():
    return itp_like()


def gpu_time(job):
    return job.duration * job.gpus_per_worker * job.reference_workers


def test_basic_shares_ranges_and_work(jobs):
    out = scenario(jobs, "basic")
    assert [j.id for j in out] == [j.id for j in jobs]
    elastic = [(a, b) for a, b in zip(jobs, out) if b.elastic]
    for before, after in elastic:
        assert gpus(before) >= 8 and after.gpus_per_worker == before.gpus_per_worker
        w = before.max_workers
        assert (after.min_workers, after.max_workers, after.reference_workers) == (
            w,
            2 * w,
            w,
        )
        assert after.duration == before.duration and gpu_time(after) == gpu_time(before)
        assert after.estimated_duration == pytest.approx(after.duration)
    for before, after in zip(jobs, out):
        if not after.elastic:
            assert after == before
    assert not any(j.hetero for j in out)
    d = describe(out)
    assert d["elastic_jobs"] == len(elastic) and d["hetero_jobs"] == 0
    assert d["checkpoint_share"] == 1.0 and d["checkpoint_gpu_time_share"] == 1.0


@pytest.mark.parametrize("target", [0.0, 0.1, 0.36, 0.6])
def test_basic_stops_at_the_first_job_reaching_the_gpu_share(jobs, target):
    """The elastic jobs' GPU-time reaches the target, and without the last one drawn it would not."""
    out = scenario(jobs, "basic", seed=4, elastic_gpu_share=target)
    total = sum(map(gpu_time, jobs))
    chosen = [gpu_time(b) for b in out if b.elastic]
    share = sum(chosen) / total
    assert share >= target
    if target == 0.0:
        assert chosen == []
    else:  # the overshoot is less than the job that crossed the target
        assert share - max(chosen) / total < target
        assert describe(out)["elastic_gpu_time_share"] == pytest.approx(share)
        again = scenario(jobs, "basic", seed=4, elastic_gpu_share=share - 1e-9)
        assert again == out  # the same draw, stopped at the same job


def test_basic_is_the_keyed_prefix(jobs):
    """A larger target extends the same draw: the elastic set only grows."""
    small = {
        j.id
        for j in scenario(jobs, "basic", seed=2, elastic_gpu_share=0.2)
        if j.elastic
    }
    large = {
        j.id
        for j in scenario(jobs, "basic", seed=2, elastic_gpu_share=0.5)
        if j.elastic
    }
    assert small < large


def test_basic_favours_large_gpu_time(jobs):
    """The weighted draw picks long, wide jobs far more often than the candidates' mean."""
    out = scenario(jobs, "basic")
    chosen = [describe([b])["gpu_time"] for b in out if b.elastic]
    candidates = [gpus(j) * j.duration for j in jobs if gpus(j) >= 8]
    assert np.median(chosen) > np.median(candidates)


def test_single_worker_8_gpu_job_scales_over_one_to_two_workers():
    job = aryl.Job("big", 8, 1, 1, 1000.0)
    [out] = scenario([job], "basic", elastic_gpu_share=1.0)
    assert (
        out.gpus_per_worker,
        out.min_workers,
        out.max_workers,
        out.reference_workers,
        out.duration,
    ) == (8, 1, 2, 1, 1000.0)


def test_too_few_candidates_warns_and_takes_all():
    small = [aryl.Job(i, 1, 1, 1, 100.0) for i in range(19)]
    small.append(aryl.Job("big", 8, 2, 2, 100.0))
    with pytest.warns(
        UserWarning, match="the 1 jobs with >= 8 GPUs hold only 45.7% of the GPU-time"
    ):
        out = scenario(small, "basic", elastic_gpu_share=0.5)
    assert [j.id for j in out if j.elastic] == ["big"]


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("flag", [True, False])
def test_checkpoint_option(jobs, name, flag):
    out = scenario(jobs[:50], name, checkpoint=flag)
    assert all(j.checkpoint is flag for j in out)
    assert describe(out)["checkpoint_share"] == float(flag)


def test_advanced_is_basic_plus_hetero(jobs):
    jobs = [
        dataclasses.replace(j, gpu_type="V100") if i % 10 == 0 else j
        for i, j in enumerate(jobs)
    ]
    basic, advanced = (
        scenario(jobs, "basic", seed=3),
        scenario(jobs, "advanced", seed=3),
    )
    assert [j.elastic for j in basic] == [j.elastic for j in advanced]
    assert [dataclasses.replace(j, hetero=False) for j in advanced] == basic
    hetero = [j for j in advanced if j.hetero]
    assert len(hetero) == round(0.10 * len(jobs)) and all(
        j.gpu_type is None for j in hetero
    )


def test_ideal_all_elastic_and_hetero(jobs):
    out = scenario(jobs, "ideal")
    assert all(j.elastic and j.hetero and j.gpu_type is None for j in out)
    for before, after in zip(jobs, out):
        assert after.max_workers == 2 * after.min_workers == 2 * before.max_workers
        assert (
            after.reference_workers == before.max_workers
            and after.duration == before.duration
        )
    pinned = scenario([aryl.Job("p", 1, 1, 1, 10.0, gpu_type="V100")], "ideal")[0]
    assert pinned.elastic and pinned.hetero and pinned.gpu_type is None
    d = describe(out)
    assert d["elastic_gpu_time_share"] == d["hetero_gpu_time_share"] == 1.0


def test_baseline_all_inelastic():
    given = [aryl.Job("e", 4, 1, 3, 60.0, hetero=True), aryl.Job("i", 1, 1, 1, 30.0)]
    out = scenario(given, "baseline")
    assert [(j.min_workers, j.max_workers, j.duration, j.hetero) for j in out] == [
        (3, 3, 60.0, False),
        (1, 1, 30.0, False),
    ]
    assert describe(out)["elastic_jobs"] == 0


@pytest.mark.parametrize("name", SCENARIOS)
def test_inputs_untouched_and_deterministic(jobs, name):
    before = list(jobs)
    first, again = scenario(jobs, name, seed=7), scenario(jobs, name, seed=7)
    assert (
        first == again and jobs == before and all(a is b for a, b in zip(jobs, before))
    )
    assert all(a is not b for a, b in zip(jobs, first))


@pytest.mark.parametrize("name", ["basic", "advanced"])
def test_seed_changes_the_pick(jobs, name):
    picks = {
        tuple(j.elastic or j.hetero for j in scenario(jobs, name, seed=s))
        for s in range(5)
    }
    assert len(picks) > 1


def test_accepts_dicts():
    out = scenario(
        [
            {
                "id": 1,
                "gpus_per_worker": 8,
                "min_workers": 2,
                "max_workers": 2,
                "duration": 10.0,
            }
        ],
        "ideal",
    )
    assert (out[0].min_workers, out[0].max_workers, out[0].duration) == (2, 4, 10.0)


def test_scenario_config():
    assert scenario_config("baseline") == {"policy": "fifo", "loaning": False}
    assert scenario_config("advanced")["hetero_efficiency"] == 0.7
    assert scenario_config("ideal") == {"policy": "aryl", "hetero_efficiency": 1.0}
    scenario_config("basic")["policy"] = "changed"
    assert scenario_config("basic")["policy"] == "aryl"


@pytest.mark.parametrize("fraction", [0.0, 0.2, 0.6, 1.0])
def test_prediction_error_fraction_and_bounds(jobs, fraction):
    out = apply_prediction_error(jobs, fraction=fraction, max_error=0.25, seed=2)
    ratios = np.array([j.estimated_duration / j.duration for j in out])
    wrong = ratios != 1.0
    assert wrong.sum() == round(fraction * len(jobs))
    assert np.all((ratios >= 0.75) & (ratios <= 1.25))
    same = [
        dataclasses.replace(a, estimated_duration=b.estimated_duration)
        for a, b in zip(jobs, out)
    ]
    assert same == out
    assert all(j.estimated_duration == j.duration for j in jobs)
    assert apply_prediction_error(jobs, fraction, seed=2) == out


def test_prediction_error_resets_old_estimates():
    job = aryl.Job("j", 1, 1, 1, 100.0, estimated_duration=300.0)
    assert apply_prediction_error([job], fraction=0.0)[0].estimated_duration == 100.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda j: scenario(j, "fancy"), "baseline, basic, advanced, ideal"),
        (lambda j: scenario(j, "basic", elastic_gpu_share=1.5), "elastic_gpu_share"),
        (lambda j: scenario(j, "advanced", hetero_share=-0.1), "hetero_share"),
        (lambda j: scenario(j, "basic", elastic_job_share=2.0), "elastic_job_share"),
        (lambda j: scenario(j, "basic", elastic_selection="count"), "gpu_time, jobs"),
        (lambda j: scenario(j, "basic", elastic_range=0.5), "elastic_range"),
        (lambda j: scenario(j, "basic", elastic_range=math.inf), "elastic_max_gpus"),
        (lambda j: scenario(j, "basic", elastic_max_gpus=0), "elastic_max_gpus"),
        (lambda j: scenario_config("fancy"), "unknown scenario"),
        (lambda j: apply_prediction_error(j, fraction=1.2), "fraction"),
        (lambda j: apply_prediction_error(j, fraction=-0.1), "fraction"),
        (lambda j: apply_prediction_error(j, max_error=1.0), "max_error"),
        (lambda j: apply_prediction_error(j, max_error=-0.5), "max_error"),
    ],
)
def test_bad_input(jobs, call, message):
    with pytest.raises(ValueError, match=message):
        call(jobs)


def test_empty():
    assert scenario([], "advanced") == [] and apply_prediction_error([]) == []
    assert describe([])["elastic_share"] == 0.0


def small_trace():
    """Ten jobs whose GPU-times are easy to add up (8-GPU workers, 1 h units).

    Candidates (>= 8 GPUs): j0 8 GPUs x 10 h (80), j1 16 x 2 h (32), j2 8 x 3 h (24),
    j3 32 x 1 h (32), j4 8 x 1 h (8); five 1-GPU jobs of 4 h (4 each, not candidates).
    All GPU-time: 80 + 32 + 24 + 32 + 8 + 20 = 196 GPU-hours.
    """
    h = 3600.0
    big = [(8, 1, 10), (8, 2, 2), (8, 1, 3), (8, 4, 1), (8, 1, 1)]
    jobs = [aryl.Job(f"j{i}", g, w, w, d * h) for i, (g, w, d) in enumerate(big)]
    jobs += [aryl.Job(f"s{i}", 1, 1, 1, 4 * h) for i in range(5)]
    return jobs


def elastic_ids(jobs):
    return [j.id for j in jobs if j.elastic]


@pytest.mark.parametrize(
    "share, expected",
    [
        (0.1, ["j0"]),  # round(1.0) = 1 job: the largest GPU-time
        (0.2, ["j0", "j1"]),  # a tie at 32 GPU-hours: input order, j1 before j3
        (0.3, ["j0", "j1", "j3"]),
        (0.0, []),
    ],
)
def test_selection_by_jobs_takes_the_largest_gpu_time_first(share, expected):
    out = scenario(
        small_trace(), "basic", elastic_selection="jobs", elastic_job_share=share
    )
    assert sorted(elastic_ids(out)) == sorted(expected)
    assert describe(out)["elastic_jobs"] == len(expected)


def test_selection_by_jobs_ignores_the_seed_and_warns_when_short():
    jobs = small_trace()
    picks = {
        tuple(elastic_ids(scenario(jobs, "basic", s, elastic_selection="jobs")))
        for s in range(5)
    }
    assert len(picks) == 1
    with pytest.warns(UserWarning, match="only 5 jobs have >= 8 GPUs"):
        out = scenario(jobs, "basic", elastic_selection="jobs", elastic_job_share=0.8)
    assert sorted(elastic_ids(out)) == ["j0", "j1", "j2", "j3", "j4"]


def test_the_two_readings_on_the_itp_like_trace(jobs):
    """5% of the 500 jobs is 25, the largest by GPU-time: no 25 jobs hold more of it. The
    GPU-time draw (seed 0) happens to stop at 25 jobs too, holding just over 36%."""
    by_jobs = describe(scenario(jobs, "basic", elastic_selection="jobs"))
    by_time = describe(scenario(jobs, "basic"))
    assert by_jobs["elastic_jobs"] == by_time["elastic_jobs"] == 25
    assert 0.36 <= by_time["elastic_gpu_time_share"] < 0.37
    assert by_jobs["elastic_gpu_time_share"] == pytest.approx(0.4702, abs=1e-4)


@pytest.mark.parametrize(
    "factor, top",
    [(2, [2, 4, 2, 8, 2]), (4, [4, 8, 4, 16, 4]), (2.5, [2, 5, 2, 10, 2])],
)
def test_the_range_factor_sets_max_workers(factor, top):
    out = scenario(
        small_trace(),
        "basic",
        elastic_selection="jobs",
        elastic_job_share=0.5,
        elastic_range=factor,
    )
    assert [j.max_workers for j in out[:5]] == top
    assert [j.min_workers for j in out[:5]] == [1, 2, 1, 4, 1]
    assert all(not j.elastic for j in out[5:])


def test_a_range_bounded_by_the_cluster():
    """inf with 64 GPUs: every elastic job up to 64 GPUs of its 8-GPU workers."""
    out = scenario(small_trace(), "ideal", elastic_range=math.inf, elastic_max_gpus=64)
    assert [j.max_workers for j in out[:5]] == [8] * 5
    assert [j.max_workers for j in out[5:]] == [64] * 5  # 1-GPU workers
    capped = scenario(small_trace(), "ideal", elastic_range=4, elastic_max_gpus=16)
    assert [j.max_workers for j in capped[:5]] == [2, 2, 2, 4, 2]  # never below w


def test_elastic_bound_by_hand():
    """jobs by share 0.2: j0 (10 h at 1 worker, max 2) and j1 (2 h at 2, max 4).

    At their maximum j0 runs 5 h and j1 1 h: 6 h saved over ten jobs whose durations
    add up to 10 + 2 + 3 + 1 + 1 + 5 x 4 = 37 h. Range 4: 7.5 + 1.5 = 9 h saved."""
    h = 3600.0
    jobs = small_trace()
    two = elastic_bound(
        scenario(jobs, "basic", elastic_selection="jobs", elastic_job_share=0.2)
    )
    assert two["elastic_jobs"] == 2 and two["jobs"] == 10
    assert two["mean_running_time"] == pytest.approx(37 * h / 10)
    assert two["reduction"] == pytest.approx(6 * h / 10)
    assert two["reduction_share"] == pytest.approx(6 / 37)
    four = elastic_bound(
        scenario(
            jobs,
            "basic",
            elastic_selection="jobs",
            elastic_job_share=0.2,
            elastic_range=4,
        )
    )
    assert four["reduction_share"] == pytest.approx(9 / 37)
    assert elastic_bound(scenario(jobs, "baseline"))["reduction"] == 0.0
    assert elastic_bound([])["reduction_share"] == 0.0


def test_elastic_bound_holds_in_a_run():
    """No run of the scenario's jobs cuts mean running time by more than the bound:
    Elastic only, aryl on a cluster big enough to give every job its maximum at once
    reaches it exactly (linear curve, no queue)."""
    jobs = scenario(
        small_trace(), "basic", elastic_selection="jobs", elastic_job_share=0.2
    )
    bound = elastic_bound(jobs)
    result = aryl.sim.simulate(jobs, aryl.sim.Cluster(20, 0), policy="aryl")
    run = result.summary()
    assert run["jct_mean"] - run["queuing_mean"] == pytest.approx(
        bound["mean_running_time"] - bound["reduction"]
    )
