"""Benchmark of scheduling: the knapsack (benchmarks/knapsack.py) and whole epochs.

An epoch: 2,000 queued jobs (sizes from the ITP trace's mix, ~6% elastic with
[w, 2w] workers) on 500 empty 8-GPU servers (400 training, 100 on loan). Times the
kernel (`aryl._core.schedule` on a prepared state), building that state from
dataclasses, the whole `aryl.schedule` call, and the plain-Python reference of the
same algorithm (tests/reference/schedule.py), checking they decide the same; then
the same epoch through a reusable `aryl.ClusterState` built from DataFrames
(`state.schedule()`: index arrays; `.decision`: the friendly `Decision`), in CPU
time (`time.process_time`: the machine is shared).

Run: python benchmarks/schedule.py
"""

from __future__ import annotations

import random
from functools import partial

from reference.schedule import schedule as reference_schedule

import aryl
import knapsack as knapsack_benchmark
from _common import (
    alternated_cpu_seconds,
    cpu_seconds,
    fmt_time,
    median_seconds,
    records_api_report,
    table,
)
from aryl import _core
from aryl.cli.demo import ITP_GPU_MIX


def queued_jobs(n: int = 2000, seed: int = 2):
    rng = random.Random(seed)
    sizes, weights = zip(*ITP_GPU_MIX)
    jobs = []
    for i in range(n):
        gpus = rng.choices(sizes, weights)[0]
        d, w = min(gpus, 8), max(1, gpus // 8)
        elastic = gpus >= 8 and rng.random() < 0.3
        jobs.append(
            aryl.Job(
                i,
                d,
                w,
                2 * w if elastic else w,
                rng.uniform(600, 86400),
                submit_time=float(i),
            )
        )
    return jobs


def state_epoch() -> str:
    """The same epoch through a reusable ``aryl.ClusterState`` built from DataFrames."""
    import pandas as pd

    servers = [aryl.Server(f"t{i}", "training") for i in range(400)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(100)]
    jobs = queued_jobs()
    server_frame = pd.DataFrame([vars(s) for s in servers])
    job_frame = pd.DataFrame([vars(j) for j in jobs])
    more = pd.DataFrame([vars(j) for j in queued_jobs(3000, seed=3)])

    def build(jobs_frame):
        return aryl.ClusterState.from_frames(server_frame, jobs_frame)

    builds = [
        (
            "DataFrames: 500 servers + these 2,000 jobs",
            cpu_seconds(lambda: build(job_frame), repeat=10),
        ),
        (
            "DataFrames: 500 servers + 3,000 jobs",
            cpu_seconds(lambda: build(more), repeat=10),
        ),
        (
            "500 servers, then add_jobs(DataFrame of 3,000 jobs)",
            cpu_seconds(lambda: build(None).add_jobs(more), repeat=10),
        ),
    ]
    state = build(job_frame)
    # The kernel on the same work as state.schedule(): the servers' relative speeds
    # (a loaned T4 is 1/4 of a V100), which the kernel's defaults (all 1.0) leave out.
    speeds = [aryl.defaults.DEFAULT_GPU_SPEED.get(s.gpu_type, 1.0) for s in servers]

    def kernel_call(policy):
        return _core.schedule(state._core, policy, "aryl", False, [], speeds)

    rows = []
    for policy in aryl.defaults.SCHEDULE_POLICIES:
        kernel, whole = alternated_cpu_seconds(
            lambda: kernel_call(policy),
            lambda: state.schedule(policy=policy),
            repeat=20,
        )
        kernel_again, friendly = alternated_cpu_seconds(
            lambda: kernel_call(policy),
            lambda: state.schedule(policy=policy).decision,
            repeat=10,
        )
        expected = aryl.schedule(jobs, servers, policy=policy)
        assert state.schedule(policy=policy).decision == expected
        rows.append(
            (
                policy,
                fmt_time(kernel),
                fmt_time(whole),
                f"{whole / kernel:.3f}×",
                fmt_time(friendly),
                f"{friendly / kernel_again:.2f}×",
            )
        )
    header = [
        "policy",
        "C++ kernel",
        "state.schedule()",
        "vs kernel",
        "state.schedule().decision",
        "vs kernel",
    ]
    return (
        table(["state built from", "time"], [(what, fmt_time(t)) for what, t in builds])
        + "\n\n"
        + table(header, rows)
    )


def epoch() -> str:
    servers = [aryl.Server(f"t{i}", "training") for i in range(400)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(100)]
    jobs = queued_jobs()
    state = aryl.ClusterState.from_records(servers, jobs, [])
    rows = []
    for policy in aryl.defaults.SCHEDULE_POLICIES:
        kernel = median_seconds(partial(_core.schedule, state._core, policy), repeat=10)
        decision = aryl.schedule(jobs, servers, policy=policy)
        rows.append(
            (
                policy,
                fmt_time(kernel),
                len(jobs) - len(decision.pending),
                sum(decision.allocation.values()),
                len(decision.start),
            )
        )
    build = median_seconds(
        lambda: aryl.ClusterState.from_records(servers, jobs, []), repeat=5
    )
    whole = median_seconds(lambda: aryl.schedule(jobs, servers), repeat=5)
    kernel = median_seconds(lambda: _core.schedule(state._core), repeat=10)
    python = median_seconds(
        lambda: reference_schedule(state.servers(), state.jobs(), []),
        repeat=1,
        min_total=0,
    )
    raw = _core.schedule(state._core)
    start, stop, allocation, pending = reference_schedule(
        state.servers(), state.jobs(), []
    )
    assert [tuple(x) for x in raw.start] == start and list(raw.allocation) == allocation
    return (
        f"{len(jobs)} queued jobs, {len(servers)} servers (400 training + 100 on loan)\n\n"
        + table(
            ["", "time"],
            [
                ("C++ kernel (aryl)", fmt_time(kernel)),
                ("convert + validate", fmt_time(build)),
                ("aryl.schedule (all)", fmt_time(whole)),
                ("plain Python, same algorithm", fmt_time(python)),
                ("kernel speed-up", f"{python / kernel:,.0f}×"),
                ("records API (aryl.schedule) speed-up", f"{python / whole:,.0f}×"),
            ],
        )
        + "\n\nEvery policy on the same epoch:\n\n"
        + table(
            ["policy", "kernel", "jobs started", "workers", "workers started"], rows
        )
    )


def records_speed() -> str:
    """The records API (``aryl.schedule`` on lists of records: build the state, then
    schedule) against the kernel and the plain-Python reference on the same epoch,
    in CPU time (``time.process_time``: the machine is shared)."""
    servers = [aryl.Server(f"t{i}", "training") for i in range(400)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(100)]
    jobs = queued_jobs()
    state = aryl.ClusterState.from_records(servers, jobs, [])
    records = state.servers(), state.jobs()
    return records_api_report(
        "aryl.schedule",
        f"{len(jobs)} queued jobs, {len(servers)} servers",
        partial(_core.schedule, state._core),
        partial(aryl.ClusterState.from_records, servers, jobs, []),
        partial(aryl.schedule, jobs, servers),
        lambda: reference_schedule(*records, []),
        repeat=5,
    )


def live_epoch() -> str:
    """A live loop's epoch on a cluster with running jobs: remaining work kept by
    ``ClusterState.advance`` against rebuilt in Python each epoch (by the same rule:
    throughput x mean speed of the job's workers over its work)."""
    servers = [aryl.Server(f"t{i}", "training") for i in range(400)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(100)]
    state = aryl.ClusterState.from_records(servers, queued_jobs(), [])
    state.schedule().apply(state)  # about half the jobs start
    speed = {
        s.id: aryl.defaults.DEFAULT_GPU_SPEED.get(s.gpu_type, 1.0) for s in servers
    }
    jobs = {j.id: j for j in state.jobs()}
    elapsed = 600.0

    def rebuilt():  # what a loop without advance writes: a dict from the workers
        held: dict = {}
        for w in state.workers():
            held.setdefault(w.job, []).append(speed[w.server])
        remaining = {}
        for job_id, speeds in held.items():
            job = jobs[job_id]
            rate = len(speeds) * sum(speeds) / len(speeds)
            work = job.duration * (job.reference_workers or job.max_workers)
            remaining[job_id] = max(1e-9, 1.0 - rate * elapsed / work)
        return state.schedule(remaining=remaining)

    def kept():
        state.advance(60.0)
        return state.schedule()

    python, core = alternated_cpu_seconds(rebuilt, kept, repeat=20)
    running = len({w.job for w in state.workers()})
    return table(
        [f"epoch (500 servers, 2,000 jobs, {running} running)", "time"],
        [
            (
                "remaining rebuilt in Python + state.schedule(remaining=...)",
                fmt_time(python),
            ),
            ("state.advance(60) + state.schedule()", fmt_time(core)),
        ],
    )


if __name__ == "__main__":
    knapsack_benchmark.main()
    print("\n## Scheduling epoch\n")
    print(epoch())
    print("\n### Through a reusable `aryl.ClusterState` (same epoch)\n")
    print(state_epoch())
    print("\n### A live loop's epoch: remaining work kept by `advance`\n")
    print(live_epoch())
