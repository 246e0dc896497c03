"""The engine's decisions are bit for bit those of the engine before its epoch-cost
optimisations (knapsack shortcuts, the free-capacity index, cached queue keys, the
snapshot rebuilt in place). data/engine_decisions/*.csv hold every job's start and
finish time (floats as hex) of small runs covering the policies, reclaim policies,
scenarios and a gpu_speed override, recorded with the pre-change engine (main at
df63cae) by ``ARYL_RECORD_DECISIONS=1 pytest tests/py/test_engine_decisions.py``;
re-recorded when the view an epoch builds got the work running jobs have left now
(docs/model.md, section 8), which changes decisions.
"""

import csv
import math
import os
from pathlib import Path

import pytest

from aryl import sim, traces

DATA = Path(__file__).parent / "data" / "engine_decisions"
RUNS = {  # name: (policy, reclaim, scenario, config overrides)
    "aryl-basic": ("aryl", "aryl", "basic", {}),
    "gandiva-scf-advanced": ("gandiva", "scf", "advanced", {}),
    "afs-random-ideal": ("afs", "random", "ideal", {}),
    "fifo-basic": ("fifo", "aryl", "basic", {}),
    "aryl-random-advanced-t4": (
        "aryl",
        "random",
        "advanced",
        {"gpu_speed": {"T4": 1.0}},
    ),
    "aryl-scf-ideal-bfd": ("aryl", "scf", "ideal", {"placement": "bfd"}),
}


def run(seed, name):
    """Start and finish of every job (hex floats, '' if none) of one small run."""
    policy, reclaim, scenario, extra = RUNS[name]
    frame, load = traces.synthetic(days=1, jobs=200, seed=seed)
    jobs = sim.scenario(traces.to_jobs(frame, seed=seed), scenario, seed=seed)
    config = {k: v for k, v in sim.scenario_config(scenario).items() if k != "policy"}
    result = sim.simulate(
        jobs,
        sim.Cluster(8, 6),
        policy=policy,
        reclaim=reclaim,
        inference_load=load,
        config={**config, **extra},
        seed=seed,
    )
    exact = lambda v: "" if math.isnan(v) else float.hex(float(v))  # noqa: E731
    jobs = result.jobs
    return [
        [str(i), exact(s), exact(f)]
        for i, s, f in zip(jobs["id"], jobs["start_time"], jobs["finish_time"])
    ]


@pytest.mark.parametrize("seed,name", list(enumerate(RUNS)))
def test_same_decisions_as_before(seed, name):
    path = DATA / f"{name}.csv"
    rows = run(seed, name)
    if os.environ.get("ARYL_RECORD_DECISIONS"):
        DATA.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as f:
            csv.writer(f).writerows([["id", "start_time", "finish_time"]] + rows)
    with open(path, newline="") as f:
        recorded = list(csv.reader(f))[1:]
    assert any(r[1] for r in recorded), "the run should start jobs"
    assert rows == recorded
