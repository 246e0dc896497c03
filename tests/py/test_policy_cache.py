"""A policy of your own in the sweep cache: every change to its code or its settings
is a miss (reliability round 5: R5-09, R5-10), and a spec's file is run once per
process, not once per cache key (R5-18)."""

import importlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import aryl
from aryl import sim
from aryl.policy import load_policy, policy_identity

JOBS = [
    aryl.Job(f"j{k}", 8, 1, 2, 900.0 * (8 - k), submit_time=k * 60.0) for k in range(8)
]
BASE = {
    "trace": "tiny",
    "training_servers": 2,
    "inference_servers": 0,
    "scenario": "baseline",
}


def run_sweep(policies, cache, **kw):
    return sim.sweep(
        BASE,
        {"policy": policies},
        traces={"tiny": (JOBS, None)},
        engine="serial",
        cache=cache,
        progress=False,
        **kw,
    )


# A policy whose choice is made by module-level code only: the class body never
# changes between the two versions of the file.
POLICY_FILE = """\
LIMIT = {limit}


def kernel():
    return "fifo" if LIMIT else "sjf"


class Rev:
    def allocate(self, state, epoch):
        return state.schedule(kernel(), **epoch.schedule_options)
"""


def test_editing_a_policy_files_module_level_code_is_a_cache_miss(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(POLICY_FILE.format(limit=1))
    spec = f"{path}:Rev"
    cache = tmp_path / "cache"
    first = run_sweep([spec], cache)
    assert not first["cached"].any()
    assert run_sweep([spec], cache)["cached"].all()
    path.write_text(POLICY_FILE.format(limit=0))  # the class's source is unchanged
    second = run_sweep([spec], cache)
    assert not second["cached"].any()
    fresh = run_sweep([spec], cache=False)
    assert second["jct_mean"][0] == fresh["jct_mean"][0] != first["jct_mean"][0]


def test_a_module_spec_is_keyed_by_its_whole_module(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "aryl_test_policy_mod.py"
    identities = []
    for limit in (1, 0):
        path.write_text(POLICY_FILE.format(limit=limit))
        sys.modules.pop("aryl_test_policy_mod", None)  # as a new process would
        importlib.invalidate_caches()
        identities.append(policy_identity(load_policy("aryl_test_policy_mod:Rev")))
    sys.modules.pop("aryl_test_policy_mod", None)
    assert identities[0]["class"] == identities[1]["class"]
    assert identities[0]["code"] != identities[1]["code"]


class Weighted:
    """A policy whose settings are a big array (``repr`` elides its middle)."""

    def __init__(self, weights, tags=()):
        self.weights = weights
        self.tags = set(tags)

    def allocate(self, state, epoch):
        kernel = "fifo" if self.weights.sum() == 0 else "sjf"
        return state.schedule(kernel, **epoch.schedule_options)


def test_policies_differing_inside_a_big_array_have_their_own_entries(tmp_path):
    zeros = np.zeros(2000)
    middle = zeros.copy()
    middle[3:1997] = 1.0
    assert repr(Weighted(zeros).weights) == repr(Weighted(middle).weights)
    a, b = policy_identity(Weighted(zeros)), policy_identity(Weighted(middle))
    assert a["attributes"] != b["attributes"]
    # dtype and shape count too, not only the bytes
    same_bytes = np.zeros(4, dtype=np.float32)
    assert (
        policy_identity(Weighted(same_bytes))["attributes"]
        != policy_identity(Weighted(same_bytes.view(np.int32)))["attributes"]
        != policy_identity(Weighted(same_bytes.reshape(2, 2)))["attributes"]
    )
    cache = tmp_path / "cache"
    first = run_sweep([Weighted(zeros)], cache)
    second = run_sweep([Weighted(middle)], cache)
    assert not second["cached"].any()
    assert second["jct_mean"][0] == run_sweep([Weighted(middle)], False)["jct_mean"][0]
    assert second["jct_mean"][0] != first["jct_mean"][0]
    assert run_sweep([Weighted(middle.copy())], cache)["cached"].all()


def test_nested_containers_are_keyed_by_their_contents():
    def key(value):
        policy = Weighted(np.zeros(1))
        policy.extra = value
        return policy_identity(policy)["attributes"]

    big = list(range(2000))
    changed = big.copy()
    changed[1000] = -1
    assert key({"w": [np.zeros(2000)]}) != key({"w": [np.ones(2000)]})
    assert key({"w": big}) != key({"w": changed})
    assert key((1, 2)) != key([1, 2]) != key({1: 2})
    assert key(1) != key(1.0) != key(True)
    assert key({"b": 1, "a": 2}) == key({"a": 2, "b": 1})
    assert key(lambda job: job.id) != key(lambda job: job.size)


def test_a_set_of_strings_has_one_key_in_every_process(tmp_path):
    path = tmp_path / "tagged.py"
    path.write_text(
        "class Tagged:\n"
        "    def __init__(self):\n"
        "        self.tags = {f'gpu-{i}' for i in range(50)}\n"
        "    def allocate(self, state, epoch):\n"
        "        return state.schedule('fifo')\n"
    )
    code = (
        "import sys; from aryl.policy import load_policy, policy_identity; "
        "print(policy_identity(load_policy(sys.argv[1]))['attributes'])"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", code, f"{path}:Tagged"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(keys) == 1


def test_an_attribute_that_cannot_be_fingerprinted_is_named(tmp_path):
    policy = Weighted(np.zeros(3))
    policy.lock = threading.Lock()
    with pytest.raises(
        ValueError, match=r"attribute lock \(a _thread.lock\): its content"
    ):
        policy_identity(policy)
    with pytest.raises(ValueError, match="policy 'Weighted': the sweep cache cannot"):
        run_sweep([policy], tmp_path / "cache")


def test_a_class_made_by_exec_needs_a_version_not_an_empty_key():
    # exec without __name__ makes classes "of builtins": each must not be keyed by
    # the source of nothing, which every such class would share.
    made = [{}, {}]
    for namespace, kernel in zip(made, ("fifo", "sjf")):
        exec(
            "class P:\n"
            "    def allocate(self, state, epoch):\n"
            f"        return state.schedule({kernel!r})\n",
            namespace,
        )
    with pytest.raises(ValueError, match="give it a `version` attribute"):
        policy_identity(made[0]["P"]())
    first, second = made[0]["P"](), made[1]["P"]()
    first.version, second.version = "fifo-1", "sjf-1"
    assert policy_identity(first)["code"] != policy_identity(second)["code"]
