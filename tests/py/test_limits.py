"""Every limit is checked before the work it limits, in bounded time and memory.

Regression tests of the third reliability audit's N3, N4, N5, N15 (a load series that
stalled a run, a cluster built before its size was refused, goodput-driven runs that
escaped the epoch limit, a demo cluster built in quadratic time).
"""

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import sim, traces


def extend_by_frames(load, until_s):
    """extend_load as it was written before (one frame per copy): the oracle."""
    time = load["time_s"].to_numpy()
    period = time[-1] - time[0] + (time[-1] - time[-2])
    copies = max(1, int(-(-(until_s - time[0]) // period)))
    out = pd.concat(
        [load.assign(time_s=time + k * period) for k in range(copies)],
        ignore_index=True,
    )
    keep = (out.index < len(load)) | (out["time_s"] < until_s)
    return out[keep].reset_index(drop=True)


@pytest.mark.parametrize("until", [0.5, 3.0, 10.0, 17.25, 100.0])
def test_extend_load_equals_the_copy_by_copy_rule(until):
    load = pd.DataFrame(
        {"time_s": [1.0, 2.0, 4.5], "load": [0.1, 0.7, 0.3], "note": ["a", "b", "c"]}
    )
    pd.testing.assert_frame_equal(
        traces.extend_load(load, until), extend_by_frames(load, until)
    )


def test_a_two_row_load_and_a_late_job_run_in_bounded_time():
    # N3: the series repeats every 2 s up to 90 days past the last submission: 7.8 M
    # rows, built with arrays (it took hours copy by copy).
    load = pd.DataFrame({"time_s": [0.0, 1.0], "load": [0.2, 0.5]})
    out = traces.extend_load(load, 100.0 + 90 * 86400)
    assert len(out) == 7_776_100 and out["time_s"].iloc[-1] == 7_776_099.0
    assert out["load"].iloc[-2:].tolist() == [0.2, 0.5]


def test_the_horizon_ends_the_load_extension():
    jobs = [aryl.Job("a", 8, 1, 1, 60), aryl.Job("b", 8, 1, 1, 60, submit_time=5000.0)]
    load = [(0.0, 0.2), (1.0, 0.5)]
    run = sim.simulate(
        jobs, sim.Cluster(1, 1), inference_load=load, config={"horizon": 7200.0}
    )
    assert run.provenance.load_rows == 7200
    assert "horizon" in run.provenance.load_extended


@pytest.mark.parametrize("name", traces.POLLUX_APPLICATIONS)
def test_no_progress_rate_passes_the_bound_of_the_span_check(name):
    # check_span bounds a goodput job's running time with max_progress_rate: it must
    # be above every rate the job can reach (random placements, batches, epochs).
    app = traces.pollux_application(name)
    core, bound = app.core, app.core.max_progress_rate()
    rng = np.random.default_rng(7)
    seen = 0
    for _ in range(1000):
        placement = [int(g) for g in rng.integers(1, 5, size=rng.integers(1, 5))]
        atomic = int(rng.integers(app.min_local_bsz, app.max_local_bsz + 1))
        accum = int(rng.integers(0, 4))
        epoch = int(rng.integers(0, app.max_epochs))
        try:
            rate = core.progress_rate(placement, atomic, accum, epoch)
        except ValueError:  # outside the measured or validated range
            continue
        seen += 1
        assert rate <= bound, (placement, atomic, accum, epoch)
    assert seen > 50


@pytest.mark.parametrize("policy", ["tiresias", "pollux"])
@pytest.mark.parametrize(
    "change", [{"work_scale": 1e12}, {"config": {"reallocation_overhead": 1e15}}]
)
def test_goodput_runs_are_held_to_the_epoch_limit_up_front(policy, change):
    # N5: their span escaped the 5 M-epoch limit and memory grew without bound.
    workload = traces.pollux_workload(1).head(5).copy()
    config = change.get("config", {})
    if "work_scale" in change:
        workload["work_scale"] = change["work_scale"]
    with pytest.raises(ValueError, match="the simulation would span at least"):
        sim.simulate(
            workload,
            sim.Cluster(4, 0, gpus_per_server=4),
            policy=policy,
            config=config,
        )


def test_a_cluster_too_large_is_refused_from_its_counts():
    # N4: the servers were built (2 M of them: 20-36 s, 4 GB) before the refusal.
    with pytest.raises(ValueError, match="4,194,304"):
        sim.Cluster(2_000_000, 0)
    with pytest.raises(ValueError, match="4,194,304"):
        sim.Cluster(100_000_000, 100_000_000, gpus_per_server=8)
    with pytest.raises(ValueError, match="gpus_per_server must be in"):
        sim.Cluster(1, 0, gpus_per_server=0)
    with pytest.raises(TypeError, match="training_servers must be an integer"):
        sim.Cluster(1.5, 0)
    assert len(sim.Cluster(524_288, 0).servers()) == 524_288  # the limit itself
    with pytest.raises(ValueError, match="4,194,304"):
        sim.sweep(
            {"training_servers": 4, "first_jobs": 10},
            {"inference_servers": [0, 100_000_000]},
            engine="serial",
            cache=False,
            progress=False,
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_demo_cluster_is_valid_and_built_in_linear_time(seed):
    # N15: it copied every server's free count per job (10,000 servers: 105 s).
    from aryl.cli.demo import loaned_cluster

    servers, jobs, workers = loaned_cluster(8, 40 + 300 * seed, seed=seed)
    aryl.ClusterState.from_records(servers, jobs, workers)  # no server over-committed
    used = {}
    for w in workers:
        job = next(j for j in jobs if j.id == w.job)
        used[w.server] = used.get(w.server, 0) + job.gpus_per_worker
    assert max(used.values()) <= 8 and len(jobs) > len(servers)
    on_loan = {s.id for s in servers if s.on_loan}
    for job in jobs:
        mine = [w for w in workers if w.job == job.id]
        assert job.min_workers <= len(mine) <= job.max_workers
        base = {w.server for w in mine if not w.flexible}
        flex = {w.server for w in mine if w.flexible}
        assert not base & flex  # base and flexible workers on separate servers
        if job.max_workers > job.min_workers:
            assert base | flex <= on_loan  # elastic jobs run on loaned servers
    with pytest.raises(ValueError, match="limit of 4,194,304 GPUs"):
        loaned_cluster(0, 600_000)


def test_a_job_left_unfinished_without_a_horizon_is_warned_about():
    # N14: a job that fits only while the inference load is low ends unfinished.
    load = [(0, 0.0), (500, 1.0), (10_000, 1.0)]
    jobs = [
        aryl.Job("a", 8, 1, 1, 1000, gpu_type="V100"),
        aryl.Job("big", 8, 3, 3, 600, submit_time=10, hetero=True),
    ]
    with pytest.warns(RuntimeWarning, match=r"1 job\(s\) never finished \('big'\)"):
        run = sim.simulate(
            jobs, sim.Cluster(1, 2), inference_load=load, config={"lend_hold": 0.0}
        )
    assert run.summary()["jobs_unfinished"] == 1
