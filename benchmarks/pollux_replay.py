"""The Pollux search against the dense search it replaced, on recorded rounds.

``record`` runs the Pollux policy on the first ITP day (the ``tuned.py itp``
set-up, at ``--generations``) and on workload-6 of the Pollux artifact, and saves
every ``--every``-th round's inputs (the jobs' models, caps, minimums, current
allocations, service, ages and restarts, and the nodes) to ``DIR/itp.jsonl`` and
``DIR/workload6.jsonl`` (the simulator's ``ARYL_POLLUX_RECORD`` hook).
``compare`` replays up to ``--rounds`` rounds of two or more jobs from each file
through both searches (``_core.pollux_optimize``, population 100, 100
generations, seed 0, one round from the current allocations) and prints, per
file, the median and the lowest ratio of the objectives (new / dense) and the
CPU time of each search over the same rounds.

Run: python benchmarks/pollux_replay.py record DIR [--every N] [--generations G]
     python benchmarks/pollux_replay.py compare DIR [--rounds N] [--threads T]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Dict, List

from _common import machine, table


def record(folder: Path, every: int, generations: int) -> None:
    from aryl import sim, traces

    folder.mkdir(parents=True, exist_ok=True)
    os.environ["ARYL_POLLUX_RECORD_EVERY"] = str(every)
    config = {"pollux_generations": generations}
    frame, _ = traces.load_default()
    jobs = traces.to_jobs(frame[frame["submit_time_s"] < 86400], seed=0)
    runs = sim.paper_runs(jobs, None, seed=0, pollux_rows=True, config=config)
    cases = {
        "itp": dict(cluster=sim.pollux_nodes(sim.Cluster(85, 0)), **runs["Pollux"]),
        "workload6": dict(
            jobs=traces.pollux_workload(6),
            cluster=sim.Cluster(16, 0, gpus_per_server=4),
            policy="pollux",
            config=config,
        ),
    }
    for name, kwargs in cases.items():
        path = folder / f"{name}.jsonl"
        path.unlink(missing_ok=True)
        os.environ["ARYL_POLLUX_RECORD"] = str(path)
        sim.simulate(**kwargs)
        with path.open() as f:
            print(f"{name}: {sum(1 for _ in f)} rounds recorded in {path}")
    del os.environ["ARYL_POLLUX_RECORD"]


def arguments(state: Dict[str, Any]) -> Dict[str, Any]:
    """pollux_optimize's arguments for a recorded round."""
    from aryl import _core

    jobs = state["jobs"]
    models = [
        None if j["model"] is None else _core.GoodputModel(*j["model"]) for j in jobs
    ]
    return dict(
        models=models,
        max_replicas=[j["max_replicas"] for j in jobs],
        current=[j["current"] for j in jobs],
        attained_service=[j["attained_service"] for j in jobs],
        submit_time=[j["submit_time"] for j in jobs],
        age=[j["age"] for j in jobs],
        num_restarts=[j["num_restarts"] for j in jobs],
        node_gpus=state["node_gpus"],
        min_replicas=[j["min_replicas"] for j in jobs],
    )


def replay(path: Path, rounds: int, threads: int) -> List[Any]:
    """Objective ratio and CPU seconds of both searches over the file's rounds."""
    from aryl import _core

    with path.open() as f:
        states = [s for s in map(json.loads, f) if len(s["jobs"]) >= 2]
    step = max(len(states) // rounds, 1)
    chosen = states[::step][:rounds]
    ratios, cpu = [], {"dense": 0.0, "new": 0.0}
    for state in chosen:
        args = arguments(state)
        values = {}
        for name in cpu:
            start = time.process_time()
            _, values[name] = _core.pollux_optimize(
                **args, reference=name == "dense", threads=threads
            )
            cpu[name] += time.process_time() - start
        ratios.append(values["new"] / values["dense"])
    jobs = [len(s["jobs"]) for s in chosen]
    return [
        path.stem,
        f"{len(chosen)}",
        f"{min(jobs)}-{max(jobs)}",
        f"{statistics.median(ratios):.4f}",
        f"{min(ratios):.4f}",
        f"{sum(r >= 1.0 for r in ratios)}",
        f"{cpu['dense']:.1f} s",
        f"{cpu['new']:.1f} s",
        f"{cpu['dense'] / cpu['new']:.1f}x",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("record", help="run the Pollux policy and save its rounds")
    p.add_argument("folder", type=Path)
    p.add_argument("--every", type=int, default=50, help="save every N-th round")
    p.add_argument("--generations", type=int, default=10, help="of the recorded runs")
    p = sub.add_parser("compare", help="replay the rounds through both searches")
    p.add_argument("folder", type=Path)
    p.add_argument("--rounds", type=int, default=60, help="per file, at most")
    p.add_argument("--threads", type=int, default=1, help="of the new search")
    args = parser.parse_args()
    print(f"Machine: {machine()}\n")
    if args.what == "record":
        record(args.folder, args.every, args.generations)
        return
    rows = [
        replay(args.folder / f"{name}.jsonl", args.rounds, args.threads)
        for name in ("itp", "workload6")
    ]
    header = ["rounds of", "replayed", "jobs", "median new/dense", "lowest", "new >="]
    print(table([*header, "dense CPU", "new CPU", "CPU ratio"], rows))


if __name__ == "__main__":
    main()
