"""Fixed-duration runs are bit-for-bit what they were before goodput-driven jobs
entered the engine. data/fixed_duration_b36ae72.json holds the inputs (a
random_trace of test_sim) and the outputs recorded from main at b36ae72, by
``python tests/py/test_fixed_duration_unchanged.py > tests/py/data/fixed_duration_b36ae72.json``
with that build installed; re-recorded (same inputs) when the view an epoch builds got
the work running jobs have left now (docs/model.md, section 8), which changes decisions."""

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest

import aryl
from aryl import sim

RECORDED = Path(__file__).parent / "data" / "fixed_duration_b36ae72.json"
COLUMNS = ("start_time", "finish_time", "preemptions", "scaling_ops", "work_lost")
TOTALS = (
    "end_time",
    "training_gpu_seconds",
    "loaned_gpu_seconds",
    "work_delivered",
    "work_completed",
    "work_lost_total",
    "reclaims",
    "collateral_gpus",
    "epochs_run",
)
RUNS = {
    "aryl": {},
    "fifo": {"policy": "fifo"},
    "fifo-backfill": {"policy": "fifo", "config": {"backfill": True}},
    "sjf": {"policy": "sjf"},
    "gandiva": {"policy": "gandiva"},
    "afs": {"policy": "afs"},
    "aryl-imperfect-scf": {"reclaim": "scf", "config": {"scaling": "imperfect"}},
    "aryl-random": {"reclaim": "random", "seed": 3},
}


def run(name, jobs, load):
    kwargs = dict(RUNS[name])
    config = {"lend_hold": 600.0, **kwargs.pop("config", {})}
    result = sim.simulate(
        jobs, sim.Cluster(4, 4), inference_load=load, config=config, **kwargs
    )
    values = {
        c: [
            None if isinstance(v, float) and math.isnan(v) else v
            for v in result.jobs[c].tolist()
        ]
        for c in COLUMNS
    }
    values.update({t: result.totals[t] for t in TOTALS})
    return values


@pytest.fixture(scope="module")
def recorded():
    data = json.loads(RECORDED.read_text())
    return [aryl.Job(**j) for j in data["jobs"]], data["load"], data["runs"]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fixed_duration_run_is_unchanged(name, recorded):
    jobs, load, runs = recorded
    assert run(name, jobs, load) == runs[name]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from test_sim import random_trace

    jobs, load = random_trace(7, n=80)
    json.dump(
        {
            "jobs": [dataclasses.asdict(j) for j in jobs],
            "load": load,
            "runs": {name: run(name, jobs, load) for name in sorted(RUNS)},
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
