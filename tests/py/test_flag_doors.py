"""A flag that is not a bool is one error at every door (issue 47, item 4): the
records, the kernels' arguments, a state's, a ``Config`` and ``simulate``'s own."""

import numpy as np
import pytest

import aryl
from aryl import sim

JOBS = [aryl.Job("a", 1, 1, 1, 60.0)]
SERVERS = [aryl.Server("s")]

#: door -> (the call with 1 for a flag, the message's start)
DOORS = {
    "Server(on_loan=1)": (lambda: aryl.Server("s", on_loan=1), "server 's': on_loan"),
    "Job(checkpoint=1)": (
        lambda: aryl.Job("j", 1, 1, 1, 60.0, checkpoint=1),
        "job 'j': checkpoint",
    ),
    "schedule(backfill=1)": (
        lambda: aryl.schedule(JOBS, SERVERS, backfill=1),
        "backfill",
    ),
    "ClusterState.schedule(backfill=1)": (
        lambda: aryl.ClusterState.from_records(SERVERS, JOBS).schedule(backfill=1),
        "backfill",
    ),
    "simulate(config={'backfill': 1})": (
        lambda: sim.simulate(JOBS, sim.Cluster(1, 0), config={"backfill": 1}),
        "backfill",
    ),
    "simulate(history=1)": (
        lambda: sim.simulate(JOBS, sim.Cluster(1, 0), history=1),
        "history",
    ),
    "ClusterState.set_on_loan(on_loan=1)": (
        lambda: aryl.ClusterState.from_records(SERVERS).set_on_loan(["s"], 1),
        "on_loan",
    ),
}


@pytest.mark.parametrize("door", DOORS)
def test_a_non_bool_flag_is_a_value_error_at_every_door(door):
    call, what = DOORS[door]
    with pytest.raises(ValueError) as raised:
        call()
    assert not isinstance(raised.value, TypeError)
    assert str(raised.value).startswith(f"{what} must be True or False, got 1"), door


def test_numpy_bools_pass_every_door():
    state = aryl.ClusterState.from_records([aryl.Server("s", "inference")])
    state.set_on_loan(["s"], np.bool_(True))
    assert state.servers()[0].on_loan is True
    assert aryl.Job("j", 1, 1, 1, 60.0, checkpoint=np.bool_(True)).checkpoint is True
    assert (
        sim.simulate(JOBS, sim.Cluster(1, 0), history=np.bool_(False)).jobs is not None
    )
