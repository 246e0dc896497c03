"""One column codec (aryl.columns) for JobTable and ClusterState, one "any type" spelling."""

import numpy as np
import pandas as pd
import pytest

import aryl
from aryl import columns
from aryl.jobtable import JobTable

GOOD = {
    "int": [
        ([1, 2], [1, 2]),
        (np.array([1.0, 3.0]), [1, 3]),
        (np.array([7], dtype=np.uint8), [7]),
    ],
    "real": [([1, 2.5], [1.0, 2.5]), (np.array([3], dtype=np.int32), [3.0])],
    "flag": [([True, False], [True, False]), (np.array([True]), [True])],
}
BAD = {
    "int": [[1.5], [np.nan], [True], ["1"], [None], np.array([np.inf])],
    "real": [[True], ["x"], [None]],
    "flag": [[1, 0], [np.True_, 1], ["yes"]],
}
CODECS = {
    "int": columns.int_column,
    "real": columns.real_column,
    "flag": columns.flag_column,
}


@pytest.mark.parametrize("kind", CODECS)
def test_each_kind_converts_its_values_and_declines_the_rest(kind):
    for values, expected in GOOD[kind]:
        assert CODECS[kind](values).tolist() == expected
        assert CODECS[kind](pd.Series(values)).tolist() == expected
    for values in BAD[kind]:
        assert CODECS[kind](np.asarray(values, dtype=object)) is None, values


def test_gpu_types_share_strings_and_spell_any_type_none():
    out = columns.type_column(pd.Series(["V100", None, np.nan, "T4", "V100"]))
    assert out.tolist() == ["V100", None, None, "T4", "V100"]
    assert out[0] is out[4]  # one shared str per distinct type
    assert columns.type_column([1, "V100"]) is None
    assert columns.core_types(out) == ["V100", "", "", "T4", "V100"]


def frame(**column):
    base = {
        "id": ["a", "b"],
        "gpus_per_worker": [8, 8],
        "min_workers": [1, 1],
        "max_workers": [1, 2],
        "duration": [60.0, 120.0],
    }
    return pd.DataFrame({**base, **column})


@pytest.mark.parametrize(
    "column",
    [
        {"gpus_per_worker": [8.0, 4.0]},
        {"gpus_per_worker": [8.5, 4.0]},
        {"duration": [True, 60.0]},
        {"hetero": [1, 0]},
        {"hetero": [True, False]},
        {"gpu_type": ["V100", None]},
        {"gpu_type": ["V100", 3]},
    ],
)
def test_jobtable_and_clusterstate_take_or_refuse_a_column_alike(column):
    servers = pd.DataFrame({"id": ["s"], "gpus": [8]})
    outcomes = []
    for build in (
        lambda f: JobTable.of(f),
        lambda f: JobTable.of(aryl.ClusterState.from_frames(servers, f).jobs()),
    ):
        try:
            outcomes.append(build(frame(**column)).to_frame())
        except (ValueError, TypeError):
            outcomes.append("refused")
    if isinstance(outcomes[0], str) or isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        pd.testing.assert_frame_equal(outcomes[0], outcomes[1])


def test_any_type_is_none_in_both_tables():
    jobs = [aryl.Job("a", 8, 1, 1, 60.0), aryl.Job("b", 8, 1, 1, 60.0, gpu_type="T4")]
    table = JobTable.of(jobs)
    state = aryl.ClusterState.from_records([aryl.Server("s")], jobs)
    assert table.column("gpu_type").tolist() == [None, "T4"]
    assert state._jobs["gpu_type"].tolist() == [None, "T4"]
    assert [j.gpu_type for j in state.jobs()] == [None, "T4"]
    assert table.core_columns()["gpu_type"] == ["", "T4"]
