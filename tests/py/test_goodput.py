"""The goodput model in aryl._core against the plain-Python reference, and its errors."""

import math

import numpy as np
import pytest
from reference import goodput as ref

from aryl import _core
from aryl.traces import POLLUX_APPLICATIONS, pollux_application


def random_params(rng):
    p = [
        rng.uniform(0.01, 0.3),
        rng.uniform(1e-4, 1e-2),
        rng.uniform(0.05, 0.5),
        rng.uniform(1e-4, 0.02),
        rng.uniform(0.01, 0.1),
        rng.uniform(1e-5, 5e-3),
        rng.uniform(1.0, 3.0),
    ]
    return tuple(p)


def random_limits(rng):
    m0 = int(rng.choice([32, 64, 128, 256]))
    return (
        m0,
        m0 * int(rng.choice([4, 16, 32])),
        int(rng.choice([8, 16, 32])),
        int(rng.choice([64, 128, 256])),
    )


ALLOCATIONS = [(1, 1), (1, 2), (1, 4), (2, 2), (2, 8), (3, 9), (4, 16), (8, 32)]


@pytest.mark.parametrize("seed", range(5))
def test_model_matches_reference(seed):
    rng = np.random.default_rng(seed)
    p, limits = random_params(rng), random_limits(rng)
    grad = (rng.uniform(0.1, 10), rng.uniform(1, 1000))
    model = _core.GoodputModel(p, *grad, *limits)
    for n, k in ALLOCATIONS:
        for m in (8, 33, 128):
            assert _core.predict_step_time(p, [n], [k], [m])[0] == pytest.approx(
                float(ref.step_time(np.array(p), n, k, m)), rel=1e-12
            )
            for s in (0, 2):
                assert model.throughput(n, k, m, s) == pytest.approx(
                    float(ref.throughput(np.array(p), n, k, m, s)), rel=1e-12
                )
        goodput, atomic, accum, _, _ = model.optimize(n, k)
        want = ref.optimize(np.array(p), grad, limits, n, k)
        assert (atomic, accum) == want[1:]
        assert goodput == pytest.approx(want[0], rel=1e-12)
        assert model.speedup(n, k) == pytest.approx(
            ref.speedup(np.array(p), grad, limits, n, k), rel=1e-12
        )
        for batch in (limits[0], 3 * limits[0] + 1, limits[1]):
            assert _core.fixed_batch(*limits, k, batch) == ref.fixed_batch(
                limits, k, batch
            )


def synthetic_profile(rng, p, configs):
    rows = []
    for n, k, m in configs:
        step = float(ref.step_time(np.array(p), n, k, m)) * rng.uniform(0.95, 1.05)
        accum = float(ref.accum_time(np.array(p), m)) * rng.uniform(0.95, 1.05)
        rows.append((n, k, m, min(accum, 0.99 * step), step))
    return [np.array(c) for c in zip(*rows)]


PROFILE_SHAPES = {
    "one batch, one GPU": [(1, 1, 64)],
    "one node": [(1, 1, 32), (1, 1, 64), (1, 2, 64), (1, 4, 64), (1, 4, 128)],
    "two replicas": [(1, 1, 32), (1, 2, 32), (2, 2, 64)],
    "full": [
        (1, 1, 32),
        (1, 1, 128),
        (1, 2, 64),
        (1, 4, 64),
        (2, 4, 64),
        (2, 8, 128),
        (4, 16, 64),
        (3, 12, 32),
    ],
}


@pytest.mark.parametrize("shape", PROFILE_SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_fit_is_as_good_as_lbfgsb(shape, seed):
    rng = np.random.default_rng(seed)
    cols = synthetic_profile(rng, random_params(rng), PROFILE_SHAPES[shape])
    got = _core.fit_perf_params(*cols)
    want, want_objective = ref.fit(*cols)
    pins = ref.pinned(cols[0], cols[1], cols[2], cols[3])
    assert [i for i, x in enumerate(got["pinned"]) if x] == sorted(pins)
    for i, v in pins.items():
        if i not in (2, 3) or np.any(cols[0] > 1):  # alpha_n/beta_n move with the prior
            assert got["params"][i] == pytest.approx(v, rel=1e-12)
    # Same objective, same local optimum or a better one.
    assert got["objective"] <= want_objective + 1e-6
    assert got["objective"] == pytest.approx(
        _core.fit_objective(_core.fit_perf_params(*cols)["params"], *cols), abs=1e-2
    )
    params = np.array(got["params"])
    assert np.all(params[:6] >= 1e-8) and 1.0 <= params[6] <= 10.0
    if not np.any(cols[0] > 1):
        assert (
            params[2] >= 1.1 * params[4] - 1e-15
            and params[3] >= 1.1 * params[5] - 1e-15
        )


def test_objective_matches_reference():
    rng = np.random.default_rng(7)
    p = random_params(rng)
    cols = synthetic_profile(rng, p, PROFILE_SHAPES["full"])
    assert _core.fit_objective(p, *cols) == pytest.approx(
        ref.objective(np.array(p), *cols), rel=1e-12
    )


@pytest.mark.parametrize("name", POLLUX_APPLICATIONS)
def test_application_tables_match_reference(name):
    app = pollux_application(name)
    core = app.core
    for key in ("1", "22", "1234", "4444", "13"):
        placement = [int(c) for c in key]
        rows = app.placements[
            app.placements["placement"].astype(str) == ref.placement_key(placement)
        ]
        for bsz in np.linspace(rows["local_bsz"].min(), rows["local_bsz"].max(), 4):
            assert core.step_time(placement[::-1], bsz) == pytest.approx(
                ref.measured_step_time(app.placements, placement[::-1], bsz), rel=1e-12
            )
    rng = np.random.default_rng(0)
    for _ in range(10):
        batch = rng.uniform(app.init_batch_size, app.max_batch_size)
        epoch = int(rng.integers(0, app.max_epochs))
        assert core.grad_stats(batch, epoch) == pytest.approx(
            ref.grad_stats(app.validation, batch, epoch), rel=1e-12
        )
        assert core.epoch_progress(epoch) == ref.epoch_progress(app.validation, epoch)
        progress = rng.uniform(0, core.epoch_progress(app.max_epochs))
        assert core.epoch_at(progress) == ref.epoch_at(app.validation, progress)


def test_unmeasured_placements_hit_the_measured_grid():
    app = pollux_application("cifar10")
    grid = app.scalability[
        (app.scalability.num_nodes == 8) & (app.scalability.num_replicas == 16)
    ]
    row = grid.iloc[0]
    assert app.core.step_time([2] * 8, row.local_bsz) == pytest.approx(
        (row.step_time, row.sync_time)
    )
    # Between measured node counts (5 nodes lies between 4 and 6): between their values.
    lo = app.core.step_time([2] * 4, 64)[0]
    hi = app.core.step_time([2] * 6, 64)[0]
    mid = app.core.step_time([2] * 5, 64)[0]
    assert min(lo, hi) <= mid <= max(lo, hi)
    # More than 16 nodes count as 16, as in the artifact.
    assert app.core.step_time([1] * 20, 64) == app.core.step_time(
        [2] * 4 + [1] * 12, 64
    )


def test_progress_rate_by_hand():
    app = pollux_application("imagenet")
    core = app.core
    step, sync = core.step_time([4], 100)
    sqr, var = core.grad_stats(800, 2)
    scale = 800 / app.init_batch_size
    gain = (var + sqr) / (var / scale + sqr)
    assert core.progress_rate([4], 100, 1, 2) == pytest.approx(
        gain / (step + (step - sync)), rel=1e-12
    )


def test_boundary_errors_name_the_argument():
    p = (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.0)
    with pytest.raises(ValueError, match="perf_params must hold 7"):
        _core.GoodputModel(p[:6], 1, 1, 32, 64, 1, 8)
    with pytest.raises(TypeError, match="perf_params must be a sequence of numbers"):
        _core.GoodputModel("abc", 1, 1, 32, 64, 1, 8)
    with pytest.raises(ValueError, match="gamma must be in"):
        _core.GoodputModel(p[:6] + (11.0,), 1, 1, 32, 64, 1, 8)
    with pytest.raises(ValueError, match="init_batch_size <= max_batch_size"):
        _core.GoodputModel(p, 1, 1, 64, 32, 1, 8)
    with pytest.raises(
        ValueError, match="num_replicas has 2 values but num_nodes has 1"
    ):
        _core.fit_perf_params([1], [1, 2], [1], [1], [1])
    with pytest.raises(ValueError, match="num_nodes must hold whole numbers"):
        _core.fit_perf_params([1.5], [2], [1], [1], [1])
    with pytest.raises(ValueError, match="profile sample 0: accum_time and step_time"):
        _core.fit_perf_params([1], [1], [8], [0.0], [1.0])
    with pytest.raises(ValueError, match="need at least one sample"):
        _core.fit_perf_params([], [], [], [], [])
    with pytest.raises(
        ValueError, match="allocation: need 0 <= num_nodes <= num_replicas"
    ):
        _core.GoodputModel(p, 1, 1, 32, 64, 1, 8).optimize(3, 2)
    with pytest.raises(ValueError, match="placements: missing 'sync_time'"):
        _core.Application(
            "x", {"placement": ["1"], "local_bsz": [1], "step_time": [1]}, {}, []
        )
    app = pollux_application("bert").core
    with pytest.raises(ValueError, match="outside the measured range"):
        app.step_time([1], 10_000)
    with pytest.raises(ValueError, match="outside the validated range"):
        app.grad_stats(1, 0)
    assert math.isfinite(app.progress_rate([1], 12, 0, 0))
