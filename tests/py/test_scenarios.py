"""Scenario presets (aryl.sim.scenarios): shares, ranges, work, determinism, bad input."""

import dataclasses

import numpy as np
import pytest

import aryl
from aryl.sim.scenarios import (
    SCENARIOS,
    apply_prediction_error,
    describe,
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
