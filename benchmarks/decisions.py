"""Records the simulator's decisions on a set of runs, or compares them with a record.

An engine optimisation must not change a single decision: every job's start and
finish time and the summary are written exactly (floats as hex) per run, so two
records are equal only if the runs were bit for bit the same.

Run: python benchmarks/decisions.py record DIR [--small]
     python benchmarks/decisions.py compare DIR [--small]
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from _common import ROOT

SHARED = ROOT.parent / "shared" / "traces"


def exact(value):
    """A value written so that equal text means equal bits (floats as hex)."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else float.hex(value)
    if hasattr(value, "item"):  # numpy scalars
        return exact(value.item())
    return value


def small_jobs(seed: int, jobs: int = 300):
    """A small random trace (one synthetic day) and its load."""
    from aryl import traces

    frame, load = traces.synthetic(days=1, jobs=jobs, seed=seed)
    return traces.to_jobs(frame, seed=seed), load


def small_runs():
    """(name, thunk) of small configurations: every policy, reclaim and scenario."""
    import aryl.sim as sim

    runs = []
    combos = [
        ("aryl", "aryl", "basic", {}),
        ("gandiva", "scf", "advanced", {}),
        ("afs", "random", "ideal", {}),
        ("fifo", "aryl", "basic", {}),
        ("aryl", "random", "advanced", {"gpu_speed": {"T4": 1.0}}),
        ("aryl", "scf", "ideal", {"placement": "bfd"}),
        ("sjf", "aryl", "basic", {}),
        ("fifo", "aryl", "basic", {"backfill": True}),
        ("aryl", "aryl", "basic", {"scaling": "imperfect"}),
    ]
    for seed, (policy, reclaim, name, extra) in enumerate(combos):

        def thunk(seed=seed, policy=policy, reclaim=reclaim, name=name, extra=extra):
            jobs, load = small_jobs(seed)
            jobs = sim.scenario(jobs, name, seed=seed)
            preset = sim.scenario_config(name)
            preset.pop("policy", None)
            config = {**preset, **extra}
            return sim.simulate(
                jobs,
                sim.Cluster(8, 6),
                policy=policy,
                reclaim=reclaim,
                inference_load=load,
                config=config,
                seed=seed,
            )

        tag = "-".join([f"s{seed}", policy, reclaim, name] + sorted(extra))
        runs.append((tag, thunk))
    return runs


def large_runs():
    """(name, thunk) of the full traces: ITP, Philly, the paper-scale synthetic one."""
    import aryl.sim as sim
    from aryl import traces

    def itp():
        frame, load = traces.load_default()
        jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
        return sim.simulate(
            jobs,
            sim.Cluster(85, 100),
            policy="aryl",
            reclaim="aryl",
            inference_load=load,
        )

    def philly(policy, reclaim, speed=None):
        frame = traces.read_jobs(SHARED / "philly_pollux_jobs.csv")
        load = traces.load_default()[1]
        jobs = traces.to_jobs(frame, seed=0)
        jobs = sim.scenario(jobs, "basic", seed=0)
        until = max(j.submit_time for j in jobs) + 60 * 86400
        config = {"gpu_speed": speed} if speed else None
        load = traces.extend_load(load, until)
        return sim.simulate(
            jobs,
            sim.Cluster(48, 48),
            policy=policy,
            reclaim=reclaim,
            inference_load=load,
            config=config,
        )

    def paper():
        frame, load = traces.synthetic(days=15, jobs=50_000, seed=0)
        jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
        return sim.simulate(
            jobs,
            sim.Cluster(443, 520),
            policy="aryl",
            reclaim="aryl",
            inference_load=load,
        )

    return [
        ("itp-aryl", itp),
        ("philly-aryl", lambda: philly("aryl", "aryl")),
        ("philly-gandiva-scf-t4", lambda: philly("gandiva", "scf", {"T4": 1.0})),
        ("philly-fifo", lambda: philly("fifo", "aryl")),
        ("paper-aryl", paper),
    ]


def record_of(result) -> dict:
    """Every job's start and finish and the summary, exactly."""
    jobs = result.jobs
    rows = zip(jobs["id"], jobs["start_time"], jobs["finish_time"])
    return {
        "jobs": [[str(i), exact(float(s)), exact(float(f))] for i, s, f in rows],
        "summary": {k: exact(v) for k, v in result.summary().items()},
    }


def main(argv) -> int:
    mode, folder = argv[0], Path(argv[1])
    runs = small_runs() + ([] if "--small" in argv else large_runs())
    folder.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, thunk in runs:
        start = time.process_time()
        record = record_of(thunk())
        seconds = time.process_time() - start
        path = folder / f"{name}.json"
        if mode == "record":
            path.write_text(json.dumps(record))
            print(f"{name}: recorded ({seconds:.1f} s CPU)")
        else:
            same = json.loads(path.read_text()) == record
            failed += not same
            print(f"{name}: {'same' if same else 'DIFFERENT'} ({seconds:.1f} s CPU)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
