"""A policy of your own is recorded as such (R5-17) and a spec's file is run once per
process, not once per cache key (R5-18)."""

import numpy as np

import aryl
from aryl import sim
from aryl.engine.provenance import Provenance
from aryl.policy import load_policy, policy_name, policy_record

JOBS = [
    aryl.Job(f"j{k}", 8, 1, 1, 900.0 * (k + 1), submit_time=k * 60.0) for k in range(8)
]

SAME_NAME = """\
class Aryl:
    name = "aryl"

    def allocate(self, state, epoch):
        c = state.columns()
        order = c.queue[::-1]  # the last arrival first
        return state.schedule("aryl", queue=order, **epoch.schedule_options)
"""


def test_a_policy_of_your_own_named_like_a_built_in_is_never_recorded_as_it(
    tmp_path,
):
    path = tmp_path / "same.py"
    path.write_text(SAME_NAME)
    spec = f"{path}:Aryl"
    own = load_policy(spec)
    servers = sim.Cluster(1, 0)
    mine = sim.simulate(JOBS, servers, policy=own)
    builtin = sim.simulate(JOBS, servers, policy="aryl")
    assert builtin.label == builtin.provenance.policy == "aryl"
    assert mine.summary()["jct_mean"] != builtin.summary()["jct_mean"]
    assert mine.label == mine.provenance.policy == "aryl (own: same.py:Aryl)"
    # the provenance says which code ran, and keeps it when saved
    assert builtin.provenance.own_policy is None
    assert mine.provenance.own_policy == policy_record(own)
    assert mine.provenance.own_policy["file"] == str(path.resolve())
    mine.save(tmp_path / "saved")
    assert sim.load(tmp_path / "saved").provenance == mine.provenance
    # the run's label, in any case of the name, and a sweep's policy column
    own.name = "FIFO"
    assert policy_name(own) == "FIFO (own: same.py:Aryl)"
    own.name = "aryl"
    rows = sim.sweep(
        {"trace": "tiny", "training_servers": 1, "inference_servers": 0},
        {"policy": ["aryl", own]},
        traces={"tiny": (JOBS, None)},
        engine="serial",
        cache=False,
        progress=False,
    )
    assert list(rows["policy"]) == ["aryl", "aryl (own: same.py:Aryl)"]
    # a name no built-in has is kept as it is
    own.name = "reverse"
    assert policy_name(own) == "reverse"


def test_a_policy_record_says_which_code_produced_a_result(tmp_path):
    path = tmp_path / "same.py"
    path.write_text(SAME_NAME)
    own = load_policy(f"{path}:Aryl")
    record = policy_record(own)
    assert record["name"] == "aryl (own: same.py:Aryl)"
    assert record["origin"] == "same.py:Aryl"
    assert record["file"] == str(path.resolve())
    assert len(record["code"]) == 16 and record["attributes"]
    own.weights = np.ones(3)
    assert policy_record(own)["attributes"] != record["attributes"]
    # kept in a provenance, through its JSON form
    provenance = sim.simulate(JOBS, sim.Cluster(1, 0)).provenance
    provenance.own_policy = record
    again = Provenance.from_dict(provenance.to_dict())
    assert again == provenance and again.own_policy == record
    assert "own policy: same.py:Aryl" in str(again)


COUNTED = """\
with open({log!r}, "a") as log:  # one line each time this file is executed
    log.write("run\\n")


class C:
    def allocate(self, state, epoch):
        return state.schedule("aryl", **epoch.schedule_options)
"""


def test_a_spec_file_runs_once_per_process_until_it_is_edited(tmp_path):
    log = tmp_path / "log.txt"
    path = tmp_path / "count.py"
    path.write_text(COUNTED.format(log=str(log)))
    spec = f"{path}:C"

    def sweep():
        return sim.sweep(
            {"trace": "tiny", "training_servers": 1, "inference_servers": 0},
            {"policy": [spec], "seed": [0, 1, 2, 3]},
            traces={"tiny": (JOBS, None)},
            engine="serial",
            cache=tmp_path / "cache",
            progress=False,
        )

    def runs():
        return len(log.read_text().splitlines())

    assert not sweep()["cached"].any()
    assert sweep()["cached"].all()
    assert runs() == 1  # not once per cache key and per run
    path.write_text(COUNTED.format(log=str(log)) + "\n# edited\n")
    assert not sweep()["cached"].any()  # the whole file is in the key
    assert runs() == 2
