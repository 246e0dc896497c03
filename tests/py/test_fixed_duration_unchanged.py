"""Fixed-duration runs are bit-for-bit what they were before goodput-driven jobs
entered the engine: the values in data/fixed_duration_b36ae72.json were recorded
from main at b36ae72 (``python tests/py/test_fixed_duration_unchanged.py > ...``)."""

import json
import math
import random
import sys
from pathlib import Path

import pytest

import aryl
from aryl import sim

RECORDED = Path(__file__).parent / "data" / "fixed_duration_b36ae72.json"
COLUMNS = ("start_time", "finish_time", "preemptions", "scaling_ops", "work_lost")
TOTALS = ("end_time", "training_gpu_seconds", "loaned_gpu_seconds", "work_delivered",
          "work_completed", "work_lost_total", "reclaims", "collateral_gpus", "epochs_run")
RUNS = {
    "aryl": {}, "fifo": {"policy": "fifo"}, "fifo-backfill": {"policy": "fifo", "config": {"backfill": True}},
    "sjf": {"policy": "sjf"}, "gandiva": {"policy": "gandiva"}, "afs": {"policy": "afs"},
    "aryl-imperfect-scf": {"reclaim": "scf", "config": {"scaling": "imperfect"}},
    "aryl-random": {"reclaim": "random", "seed": 3},
}


def trace(seed=7, n=80):
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        d = rng.choice([1, 2, 4, 8])
        lo = rng.randint(1, 2)
        jobs.append(aryl.Job(i, d, lo, lo + rng.randint(0, 2), rng.uniform(30, 4000),
                             submit_time=rng.uniform(0, 8000), checkpoint=rng.random() < 0.5,
                             hetero=rng.random() < 0.2,
                             gpu_type=rng.choice([None, None, "V100"])))
    load = [(300.0 * k, rng.random()) for k in range(60)]
    return jobs, load


def run(name):
    jobs, load = trace()
    kwargs = dict(RUNS[name])
    config = {"lend_hold": 600.0, **kwargs.pop("config", {})}
    result = sim.simulate(jobs, sim.Cluster(4, 4), inference_load=load, config=config, **kwargs)
    values = {c: [None if isinstance(v, float) and math.isnan(v) else v for v in result.jobs[c].tolist()]
              for c in COLUMNS}
    values.update({t: result.totals[t] for t in TOTALS})
    return values


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fixed_duration_run_is_unchanged(name):
    assert run(name) == json.loads(RECORDED.read_text())[name]


if __name__ == "__main__":
    json.dump({name: run(name) for name in sorted(RUNS)}, sys.stdout, indent=None)
    sys.stdout.write("\n")
