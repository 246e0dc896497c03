"""The metric catalogue (aryl.engine.metrics): one home for keys, labels, headers, kinds."""

import math

import pandas as pd
import pytest

from aryl import sim
from aryl._display import metric
from aryl.engine.metrics import METRICS, OPTIONAL_KEYS, SUMMARY_KEYS, kind


def small_result():
    jobs = [
        {
            "id": i,
            "gpus_per_worker": 8,
            "min_workers": 1,
            "max_workers": 1,
            "duration": 900.0,
            "submit_time": 60.0 * i,
        }
        for i in range(6)
    ]
    return sim.simulate(jobs, sim.Cluster(1, 0), policy="fifo")


def test_the_summary_has_the_catalogue_keys_in_order():
    assert tuple(small_result().summary()) == SUMMARY_KEYS
    # runs with users and a policy of your own's runs add the optional keys, last
    assert (*SUMMARY_KEYS, *OPTIONAL_KEYS) == tuple(METRICS)
    assert sim.SUMMARY_KEYS is SUMMARY_KEYS


def test_labels_and_headers_name_each_metric_once():
    for field in ("label", "header"):
        names = [getattr(m, field) for m in METRICS.values()]
        assert len(set(names)) == len(names), field


def test_kinds_follow_the_key_and_derived_keys():
    assert kind("jct_mean") == "time" and kind("queuing_p99_low") == "time"
    assert kind("gpu_usage_overall_high") == "ratio"
    assert kind("collateral_damage") == "ratio"
    assert kind("jobs_finished") == "count"
    assert kind("headroom") == "count" and kind("_low") == "count"


def test_values_read_by_their_kind():
    assert metric(0.25, "ratio") == "25.00%"
    assert metric(math.nan, "ratio") == "—"
    assert metric(7200.0, "time") == "7,200 s (2.0 h)"
    assert metric(1234, "count") == "1,234"


def test_a_result_in_a_notebook_shows_the_catalogue_labels():
    shown = small_result()._repr_html_()
    for key in SUMMARY_KEYS:
        assert METRICS[key].label in shown


@pytest.mark.parametrize(
    "reclaims, preemptions, undefined",
    [
        (0, 0, True),  # the Baseline: nothing reclaimed, nothing preempted
        (121, 0, False),  # reclaims that preempted nothing: a measured 0
        (0, 7, False),  # a preemptive policy's rounds (Tiresias), nothing lent
    ],
)
def test_a_preemption_ratio_is_undefined_only_where_nothing_could_preempt(
    reclaims, preemptions, undefined
):
    from aryl.engine.metrics import defined_runs, undefined_share

    row = {"preemption_ratio": 0.0, "reclaims": reclaims, "preemptions": preemptions}
    assert undefined_share("preemption_ratio", row) is undefined
    runs = pd.DataFrame([row, {**row, "reclaims": 1}])
    assert len(defined_runs("preemption_ratio", runs)) == (1 if undefined else 2)
