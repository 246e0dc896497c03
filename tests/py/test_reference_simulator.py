"""Differential test: the C++ engine against the plain-Python reference simulator.

Both get the very same input: ``aryl.sim.simulate`` is run with ``_core.simulate``
wrapped, and the reference replays the arguments the wrapper saw. Every job must
start and finish at exactly the same time (the reference repeats the engine's
float operations in the same order, so equality is exact), with the same
preemptions and scaling operations, on the same pools (training, loaned, mixed
GPU types: placement shows there even where it does not change a finish time);
the reclaim and epoch counts must agree too.
"""

from __future__ import annotations

import dataclasses
import random
from unittest import mock

import numpy as np
import pytest
from reference import simulator as reference

import aryl
import aryl.sim as sim
from aryl import _core, traces

POLICIES = ("aryl", "fifo", "sjf", "gandiva", "afs")


def engine_run(jobs, cluster, **kwargs):
    """The C++ result and the arguments ``aryl.sim.simulate`` gave the engine."""
    with mock.patch.object(_core, "simulate", wraps=_core.simulate) as spy:
        result = sim.simulate(jobs, cluster, **kwargs)
    return result, spy.call_args.args[:6]


def run_both(jobs, cluster, **kwargs):
    """(C++ result, reference outcome) on the same arguments of _core.simulate."""
    result, args = engine_run(jobs, cluster, **kwargs)
    return result, reference.simulate(*args)


def assert_same(result, outcome, what: str) -> None:
    """Same start, finish, preemptions, scaling and pools per job; same totals."""
    frame = result.jobs
    for column in ("start_time", "finish_time"):
        ours = np.asarray(getattr(outcome, column))
        theirs = frame[column].to_numpy()
        same = (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))
        if not same.all():
            j = int(np.argmin(same))
            raise AssertionError(
                f"{what}: job {frame['id'][j]} {column}: engine "
                f"{theirs[j]!r}, reference {ours[j]!r} "
                f"({int((~same).sum())} jobs differ)"
            )
    for column in (
        "preemptions",
        "scaling_ops",
        "ran_on_training",
        "ran_on_inference",
        "ran_mixed",
    ):
        assert list(frame[column]) == getattr(outcome, column), f"{what}: {column}"
    assert np.allclose(frame["work_lost"], outcome.work_lost, rtol=1e-12), what
    for key in ("reclaims", "servers_reclaimed", "collateral_gpus", "epochs_run"):
        assert result.totals[key] == getattr(outcome, key), f"{what}: {key}"
    assert result.totals["end_time"] == outcome.end_time, what


def random_jobs(
    rng: random.Random,
    n: int,
    span: float,
    servers,
    grid: bool = False,
    types=("V100", "T4"),
):
    """Mixed jobs: elastic or not, pinned or any type, some hetero, some without
    checkpoint, some mispredicted, some measured below max_workers. Each fits the
    training servers at max_workers, so that every policy can run it. On the
    ``grid`` submit times and durations are whole minutes, so that arrivals,
    completions, loan decisions and epochs often fall on the same instant."""
    jobs = []
    for i in range(n):
        d = rng.choice([1, 1, 2, 4, 8])
        slots = sum(s.gpus // d for s in servers if s.pool == "training")
        low = min(slots, rng.choice([1, 1, 2, 3]))
        high = min(slots, low + rng.choice([0, 0, 1, 2, 4]))
        duration = float(rng.choice([60, 300, 1800, 3600, 14400])) * rng.uniform(0.5, 2)
        submit = round(rng.uniform(0, span), 1)
        if grid:
            duration = 60.0 * max(1, round(duration / 60))
            submit = 60.0 * round(submit / 60)
        estimate = duration * rng.choice([1.0, 1.0, 0.5, 1.7])
        jobs.append(
            aryl.Job(
                f"j{i}",
                d,
                low,
                high,
                duration,
                submit_time=submit,
                estimated_duration=estimate,
                gpu_type=rng.choice([None, None, types[0]]) if d <= 4 else types[0],
                checkpoint=rng.random() < 0.8,
                hetero=rng.random() < 0.15,
                reference_workers=rng.randint(low, high),
            )
        )
    return jobs


def random_load(rng: random.Random, span: float, step: float = 900.0):
    """A short noisy load series."""
    times = np.arange(0.0, span, step)
    return np.c_[times, [min(1.0, max(0.0, rng.gauss(0.5, 0.25))) for _ in times]]


def cluster(rng: random.Random, training: int, inference: int):
    """Training V100 servers (some with 4 GPUs) and T4 inference servers."""
    servers = [
        aryl.Server(f"t{i}", "training", rng.choice([8, 8, 4]), "V100")
        for i in range(training)
    ]
    return servers + [
        aryl.Server(f"i{i}", "inference", 8, "T4") for i in range(inference)
    ]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(3))
def test_random_traces_with_loaning(policy, seed):
    rng = random.Random(seed * 31 + POLICIES.index(policy))
    span = 6 * 3600.0
    servers = cluster(rng, rng.randint(2, 4), rng.randint(3, 8))
    jobs = random_jobs(rng, 60, span, servers)
    reclaim = ("aryl", "scf", "random")[seed]
    config = {
        "scaling": ("linear", "imperfect")[seed % 2],
        "lend_hold": 1800.0,
        "headroom": 0.1 * seed,
        "restart_overhead": 63.0 + seed,
        "start_overhead": (0.0, 25.0, 40.0)[seed],  # starts, scale-outs and moves
        "placement": ("aryl", "bfd")[seed == 2],
        "audit": seed == 0,
    }
    result, outcome = run_both(
        jobs,
        servers,
        policy=policy,
        reclaim=reclaim,
        inference_load=random_load(rng, span),
        config=config,
        seed=seed,
    )
    assert_same(result, outcome, f"{policy}/{reclaim}/seed {seed}")


@pytest.mark.parametrize(
    "variant",
    [
        {"policy": "fifo", "config": {"backfill": True}},
        {"policy": "fifo", "config": {"loaning": False, "elasticity": False}},
        {
            "policy": "aryl",
            "config": {"gpu_speed": {"V100": 1.0, "T4": 0.5}, "hetero_efficiency": 0.9},
        },
        {"policy": "aryl", "config": {"horizon": 3 * 3600.0}},
        {"policy": "aryl", "config": {"prediction_error": (0.5, 0.4)}},
        {
            "policy": "afs",
            "config": {"schedule_interval": 37.0, "loan_interval": 120.0},
        },
        {"policy": "aryl", "throughput": True},
        {
            "policy": "aryl",
            "config": {"gpu_speed": {"T4": 1.0}},
        },  # pool preference decides
        {"policy": "gandiva", "config": {"gpu_speed": {"T4": 1.0}, "placement": "bfd"}},
    ],
)
def test_configuration_grid(variant):
    rng = random.Random(7)
    span = 4 * 3600.0
    servers = cluster(rng, 3, 6)
    jobs = random_jobs(rng, 80, span, servers, grid=True)
    variant = dict(variant)
    if variant.pop("throughput", False):  # own curves, concave, for a third of the jobs
        variant["throughput"] = {
            j.id: [w**0.8 for w in range(1, j.max_workers + 1)] for j in jobs[::3]
        }
    result, outcome = run_both(
        jobs,
        servers,
        reclaim="aryl",
        inference_load=random_load(rng, span, 600.0),
        seed=3,
        **variant,
    )
    assert_same(result, outcome, str(variant))


@pytest.mark.parametrize("policy, reclaim", [("aryl", "aryl"), ("afs", "scf")])
def test_same_gpu_type_and_a_swinging_load(policy, reclaim):
    # Loaned servers as fast as training ones and a load that lends and reclaims
    # most of them: where workers go (pool preference, base and flexible apart)
    # decides what a reclaim preempts, so placement shows in every column.
    rng = random.Random(0)
    span = 4 * 3600.0
    servers = [aryl.Server(f"t{i}", "training", 8, "V100") for i in range(3)]
    servers += [aryl.Server(f"i{i}", "inference", 8, "V100") for i in range(8)]
    jobs = random_jobs(rng, 100, span, servers, grid=True)
    times = np.arange(0.0, span, 600.0)
    load = np.c_[times, [rng.choice([0.1, 0.2, 0.9]) for _ in times]]
    result, outcome = run_both(
        jobs,
        servers,
        policy=policy,
        reclaim=reclaim,
        inference_load=load,
        config={"lend_hold": 600.0},
        seed=3,
    )
    assert_same(result, outcome, f"{policy}/{reclaim}")
    assert sum(outcome.preemptions) > 0 and sum(outcome.ran_on_inference) > 0


@pytest.mark.parametrize(
    "start, policy", [(0, "aryl"), (3000, "aryl"), (3000, "fifo"), (8000, "gandiva")]
)
def test_itp_trace_slices(start, policy):
    frame, load = traces.load_default()
    jobs = traces.to_jobs(frame.iloc[start : start + 150], seed=0)
    shift = min(j.submit_time for j in jobs)
    jobs = [dataclasses.replace(j, submit_time=j.submit_time - shift) for j in jobs]
    jobs = sim.scenario(jobs, "basic", seed=start)
    series = load[["time_s", "load"]].to_numpy()
    result, outcome = run_both(
        jobs,
        sim.Cluster(8, 6),
        policy=policy,
        reclaim="aryl",
        inference_load=series[:200],
        seed=1,
    )
    assert_same(result, outcome, f"itp {start} {policy}")
    assert result.jobs["finish_time"].notna().any()


@pytest.mark.parametrize("policy", ["aryl", "fifo", "gandiva", "afs"])
def test_handing_the_kernel_every_queued_job_changes_nothing(policy):
    # The engine hands an epoch only the queued jobs that could fit (docs/model.md
    # §5); the reference with the whole queue must take the same decisions.
    rng = random.Random(11)
    span = 3 * 3600.0
    servers = cluster(rng, 2, 4)
    jobs = random_jobs(rng, 120, span, servers)
    result, args = engine_run(
        jobs,
        servers,
        policy=policy,
        reclaim="aryl",
        inference_load=random_load(rng, span),
        seed=0,
    )
    outcome = reference.simulate(*args, full_queue=True)
    for column in ("start_time", "finish_time"):
        ours = np.asarray(getattr(outcome, column))
        theirs = result.jobs[column].to_numpy()
        assert np.array_equal(theirs, ours, equal_nan=True), column
    assert list(result.jobs["preemptions"]) == outcome.preemptions


def test_splitmix_matches_known_stream():
    # SplitMix64 from seed 0: the published first outputs of the generator.
    rng = reference.Rng(0)
    assert [rng.next() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
