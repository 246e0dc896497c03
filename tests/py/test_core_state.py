"""The private ``aryl._core`` refuses a ClusterState it cannot read (reliability audit N10).

``ClusterState.__new__(ClusterState)`` makes an instance whose C++ object was never
constructed; every entry point that takes a state raises TypeError instead of reading
raw memory (it crashed the interpreter).
"""

import pytest

from aryl import _core

ENTRY_POINTS = {
    "n_servers": lambda s: s.n_servers,
    "n_jobs": lambda s: s.n_jobs,
    "n_workers": lambda s: s.n_workers,
    "validate": _core.validate,
    "reclaim": lambda s: _core.reclaim(s, 1),
    "preemption_costs": _core.preemption_costs,
    "schedule": lambda s: _core.schedule(s),
    "base_demands": lambda s: _core.base_demands(s, "aryl"),
    "job_rooms": _core.job_rooms,
}


@pytest.mark.parametrize("call", ENTRY_POINTS, ids=list(ENTRY_POINTS))
def test_an_uninitialised_state_is_refused(call):
    with pytest.raises(TypeError, match="never initialised"):
        ENTRY_POINTS[call](_core.ClusterState.__new__(_core.ClusterState))


@pytest.mark.parametrize(
    "call", ["validate", "reclaim", "schedule", "base_demands", "job_rooms"]
)
def test_what_is_not_a_state_is_refused(call):
    with pytest.raises(TypeError, match="state must be an aryl._core.ClusterState"):
        ENTRY_POINTS[call]({"servers": []})
