"""Benchmark of scheduling: the knapsack (benchmarks/knapsack.py) and whole epochs.

An epoch: 2,000 queued jobs (sizes from the ITP trace's mix, ~6% elastic with
[w, 2w] workers) on 500 empty 8-GPU servers (400 training, 100 on loan). Times the
kernel (`aryl._core.schedule` on a prepared state), building that state from
dataclasses, the whole `aryl.schedule` call, and the plain-Python reference of the
same algorithm (tests/reference/schedule.py), checking they decide the same.

Run: python benchmarks/schedule.py
"""

from __future__ import annotations

import random
from functools import partial

import knapsack as knapsack_benchmark
from _common import fmt_time, median_seconds, table
from reference.schedule import schedule as reference_schedule

import aryl
from aryl import _core
from aryl.demo import ITP_GPU_MIX
from aryl.model import State


def queued_jobs(n: int = 2000, seed: int = 2):
    rng = random.Random(seed)
    sizes, weights = zip(*ITP_GPU_MIX)
    jobs = []
    for i in range(n):
        gpus = rng.choices(sizes, weights)[0]
        d, w = min(gpus, 8), max(1, gpus // 8)
        elastic = gpus >= 8 and rng.random() < 0.3
        jobs.append(aryl.Job(i, d, w, 2 * w if elastic else w, rng.uniform(600, 86400),
                             submit_time=float(i)))
    return jobs


def epoch() -> str:
    servers = [aryl.Server(f"t{i}", "training") for i in range(400)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(100)]
    jobs = queued_jobs()
    state = State.build(servers, jobs, [])
    rows = []
    for policy in aryl.scheduling.POLICIES:
        kernel = median_seconds(partial(_core.schedule, state.core, policy), repeat=10)
        decision = aryl.schedule(jobs, servers, policy=policy)
        rows.append((policy, fmt_time(kernel), len(jobs) - len(decision.pending),
                     sum(decision.allocation.values()), len(decision.start)))
    build = median_seconds(lambda: State.build(servers, jobs, []), repeat=5)
    whole = median_seconds(lambda: aryl.schedule(jobs, servers), repeat=5)
    kernel = median_seconds(lambda: _core.schedule(state.core), repeat=10)
    python = median_seconds(lambda: reference_schedule(state.servers, state.jobs, []),
                            repeat=1, min_total=0)
    raw = _core.schedule(state.core)
    start, stop, allocation, pending = reference_schedule(state.servers, state.jobs, [])
    assert [tuple(x) for x in raw.start] == start and list(raw.allocation) == allocation
    return (f"{len(jobs)} queued jobs, {len(servers)} servers (400 training + 100 on loan)\n\n"
            + table(["", "time"], [("C++ kernel (aryl)", fmt_time(kernel)),
                                   ("convert + validate", fmt_time(build)),
                                   ("aryl.schedule (all)", fmt_time(whole)),
                                   ("plain Python, same algorithm", fmt_time(python)),
                                   ("kernel speed-up", f"{python / kernel:,.0f}×")])
            + "\n\nEvery policy on the same epoch:\n\n"
            + table(["policy", "kernel", "jobs started", "workers", "workers started"], rows))


if __name__ == "__main__":
    knapsack_benchmark.main()
    print("\n## Scheduling epoch\n")
    print(epoch())
