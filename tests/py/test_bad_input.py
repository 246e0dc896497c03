"""Bad input raises one documented error (ValueError / TypeError) naming what is wrong.

Regression tests of the third reliability audit's N9 and N11 items outside the
front doors (those are in the ClusterState tests): reading from a non-file, plot
arguments, hand-built Pollux workloads, a setting that made a policy inert.
"""

import pandas as pd
import pytest

import aryl
from aryl import plot, sim, traces


@pytest.fixture(scope="module")
def run():
    return sim.simulate([aryl.Job("a", 8, 1, 1, 60)], sim.Cluster(1, 0))


def test_reading_what_is_not_a_file_is_a_type_error():
    with pytest.raises(TypeError, match="expected a path or a file object, got 5"):
        traces.read_jobs(5)
    with pytest.raises(TypeError, match="expected a path or a file object"):
        traces.read_load(None)


@pytest.mark.parametrize("window", [-5, -0.1, "1h", True])
def test_a_bad_usage_window_is_refused(run, window):
    with pytest.raises(ValueError, match="window must be None or seconds >= 0"):
        plot.usage(run, window=window)


def test_a_window_too_small_for_the_run_is_refused_not_out_of_memory():
    jobs = [aryl.Job("a", 8, 1, 1, 30 * 86400.0)]
    long_run = sim.simulate(jobs, sim.Cluster(1, 0), config={"schedule_interval": 3600})
    with pytest.raises(ValueError, match="more than 1,000,000"):
        plot.usage(long_run, window=0.0001)


def test_speedups_of_no_rows_is_refused():
    with pytest.raises(ValueError, match="at least one row"):
        sim.speedups({})
    empty = pd.DataFrame(columns=["speed-up JCT", "speed-up queue"])
    with pytest.raises(ValueError, match="no rows"):
        plot.speedups(empty)


def workload(**column):
    w = traces.pollux_workload(1).head(3).copy()
    for name, value in column.items():
        w[name] = value
    return w


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("num_replicas", float("nan"), "num_replicas must be a whole number"),
        ("num_replicas", 1.5, "num_replicas must be a whole number"),
        ("num_replicas", 0, "num_replicas must be a whole number"),
        ("num_replicas", 1e19, "num_replicas must be a whole number"),
        ("batch_size", 1e15, "batch_size must be in"),
        ("batch_size", float("nan"), "batch_size must be in"),
        ("batch_size", 0, "batch_size must be in"),
    ],
)
@pytest.mark.parametrize("policy", ["tiresias", "pollux", "aryl"])
def test_a_hand_edited_pollux_workload_is_refused_by_job(
    column, value, message, policy
):
    with pytest.raises(ValueError, match=f"job '.*': {message}"):
        sim.simulate(
            workload(**{column: value}),
            sim.Cluster(2, 0, gpus_per_server=4),
            policy=policy,
        )


@pytest.mark.parametrize(
    "point, error, message",
    [
        ({"first_jobs": True}, TypeError, "first_jobs must be an integer"),
        ({"first_jobs": 0}, ValueError, "first_jobs must be in"),
        ({"any_type_share": "x"}, TypeError, "any_type_share must be a"),
        ({"elastic_gpu_share": 1.5}, ValueError, "elastic_gpu_share must be"),
    ],
)
def test_a_bad_sweep_parameter_is_named_before_any_run(point, error, message):
    # N11: pandas' own messages came out of the first run.
    with pytest.raises(error, match=message):
        sim.sweep({"training_servers": 4, **point}, {"seed": [0]}, cache=False)
