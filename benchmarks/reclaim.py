"""Benchmark of reclaiming: speed of the C++ kernel and quality of the policies.

Speed: 1,000 on-loan servers (plus 300 training servers) packed with 3,000 jobs
whose sizes follow the ITP trace's mix; the kernel (`aryl._core.reclaim` on a
prepared, validated state), building that state from dataclasses
(`ClusterState.from_records`: conversion and validation), the whole `aryl.reclaim` call, and the
plain-Python reference of the same heuristic (tests/reference/reclaim.py), in one
run. The kernel's answer is checked against the reference's.
Through the reusable state (`aryl.ClusterState`): building it from DataFrames or
dataclasses once, then `state.reclaim(n)` (index arrays) and `state.reclaim(n).plan`
(the friendly `ReclaimPlan`), each against the kernel on the same state, in CPU
time (`time.process_time`: the machine is shared).
Quality: mean preempted jobs of aryl, scf, random and exact on the random small
instances of the test suite.
The records API against plain Python: ``aryl.reclaim`` on lists of records (build
the state, then reclaim) against the kernel and the plain-Python reference, read in
turn round after round, for each ``--to-return`` count (default 100 and 200 of the
1,000 on-loan servers); ``--records-only`` prints only this part.

Run: python benchmarks/reclaim.py [--to-return N ...] [--records-only]
"""

from __future__ import annotations

import argparse
import random
from functools import partial

import aryl
from _common import (
    alternated_cpu_seconds,
    cpu_seconds,
    fmt_time,
    machine,
    median_seconds,
    records_api_report,
    table,
)
from aryl import _core
from aryl.cli.demo import ITP_GPU_MIX
from instances import random_loaned_cluster


def big_cluster(
    loaned: int = 1000, training: int = 300, jobs: int = 3000, seed: int = 1
):
    """Jobs placed first-fit from a random server; ~30% of 8-GPU-per-worker jobs elastic."""
    rng = random.Random(seed)
    servers = [aryl.Server(f"t{i}", "training") for i in range(training)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(loaned)]
    free = [8] * len(servers)
    sizes, weights = zip(*ITP_GPU_MIX)
    job_list, workers = [], []
    for _ in range(10 * jobs):
        if len(job_list) == jobs:
            break
        gpus = rng.choices(sizes, weights)[0]
        d, n = min(gpus, 8), max(1, gpus // 8)
        elastic = d == 8 and rng.random() < 0.3
        count = n + (rng.randint(0, n) if elastic else 0)
        where, start = [], rng.randrange(len(servers))
        for k in range(len(servers)):
            s = (start + k) % len(servers)
            while free[s] >= d and len(where) < count:
                free[s] -= d
                where.append(s)
            if len(where) == count:
                break
        if len(where) < count:
            for s in where:
                free[s] += d
            continue
        job = aryl.Job(
            f"j{len(job_list)}", d, n, 2 * n if elastic else n, 3600, hetero=True
        )
        job_list.append(job)
        workers += [aryl.Worker(job.id, servers[s].id) for s in where]
    return servers, job_list, workers


def state_speed() -> str:
    """The reusable ``aryl.ClusterState``: built once, reclaim at near kernel cost."""
    import pandas as pd

    servers, jobs, workers = big_cluster()
    frames = [pd.DataFrame([vars(r) for r in rs]) for rs in (servers, jobs, workers)]
    state = aryl.ClusterState.from_frames(*frames)
    build_frames = cpu_seconds(
        lambda: aryl.ClusterState.from_frames(*frames), repeat=10
    )
    build_records = cpu_seconds(
        lambda: aryl.ClusterState.from_records(servers, jobs, workers), repeat=5
    )
    rows = []
    for n in (1, 10, 100, 300):
        kernel, via_state = alternated_cpu_seconds(
            lambda: _core.reclaim(state._core, n, "aryl"),
            lambda: state.reclaim(n),
            repeat=200,
        )
        kernel_again, with_plan = alternated_cpu_seconds(
            lambda: _core.reclaim(state._core, n, "aryl"),
            lambda: state.reclaim(n).plan,
            repeat=200,
        )
        assert state.reclaim(n).plan == aryl.reclaim(servers, jobs, workers, n)
        rows.append(
            (
                n,
                fmt_time(kernel),
                fmt_time(via_state),
                f"{via_state / kernel:.2f}×",
                fmt_time(with_plan),
                f"{with_plan / kernel_again:.2f}×",
            )
        )
    builds = [
        ("DataFrames (servers, jobs, workers)", fmt_time(build_frames)),
        ("dataclasses", fmt_time(build_records)),
    ]
    header = [
        "servers reclaimed",
        "C++ kernel",
        "state.reclaim(n)",
        "vs kernel",
        "state.reclaim(n).plan",
        "vs kernel",
    ]
    return table(["state built from", "time"], builds) + "\n\n" + table(header, rows)


def speed() -> str:
    from reference.reclaim import aryl_reclaim  # tests/: on the path after _common

    servers, jobs, workers = big_cluster()
    state = aryl.ClusterState.from_records(servers, jobs, workers)
    on_loan = [i for i, s in enumerate(servers) if s.on_loan]
    pairs = [(state._job_index[w.job], state._server_index[w.server]) for w in workers]
    mins = [j.min_workers for j in jobs]
    rows = []
    for n in (1, 10, 100, 300):
        kernel = median_seconds(partial(_core.reclaim, state._core, n, "aryl"))
        build = median_seconds(
            lambda: aryl.ClusterState.from_records(servers, jobs, workers), repeat=5
        )
        api = median_seconds(partial(aryl.reclaim, servers, jobs, workers, n), repeat=5)
        python = median_seconds(
            partial(aryl_reclaim, on_loan, pairs, mins, n), repeat=1, min_total=0
        )
        plan = _core.reclaim(state._core, n, "aryl")
        assert list(plan.servers) == aryl_reclaim(on_loan, pairs, mins, n)[0]
        rows.append(
            (
                n,
                fmt_time(kernel),
                fmt_time(build),
                fmt_time(api),
                fmt_time(python),
                f"{python / kernel:,.0f}×",
                f"{python / api:,.0f}×",
                len(plan.preempted),
            )
        )
    header = (
        f"{len(on_loan)} on-loan + {len(servers) - len(on_loan)} training servers, "
        f"{len(jobs)} jobs, {len(workers)} workers"
    )
    return (
        header
        + "\n\n"
        + table(
            [
                "servers reclaimed",
                "C++ kernel",
                "convert + validate",
                "aryl.reclaim (all)",
                "plain Python",
                "kernel speed-up",
                "records API speed-up",
                "jobs preempted",
            ],
            rows,
        )
    )


def records_speed(n: int = 100) -> str:
    """The records API (``aryl.reclaim`` on lists of records: build the state, then
    reclaim) against the kernel and the plain-Python reference, in CPU time
    (``time.process_time``: the machine is shared), on the 1,000-server cluster; the
    four are read in turn, round after round, so that their ratios share conditions."""
    from reference.reclaim import aryl_reclaim  # tests/: on the path after _common

    servers, jobs, workers = big_cluster()
    state = aryl.ClusterState.from_records(servers, jobs, workers)
    on_loan = [i for i, s in enumerate(servers) if s.on_loan]
    pairs = [(state._job_index[w.job], state._server_index[w.server]) for w in workers]
    mins = [j.min_workers for j in jobs]
    expected = [servers[s].id for s in aryl_reclaim(on_loan, pairs, mins, n)[0]]
    assert aryl.reclaim(servers, jobs, workers, n).servers == expected
    return records_api_report(
        "aryl.reclaim",
        f"reclaim {n} of {len(on_loan)} on-loan servers, {len(jobs)} jobs, "
        f"{len(workers)} workers",
        partial(_core.reclaim, state._core, n, "aryl"),
        partial(aryl.ClusterState.from_records, servers, jobs, workers),
        partial(aryl.reclaim, servers, jobs, workers, n),
        partial(aryl_reclaim, on_loan, pairs, mins, n),
        repeat=9,
    )


def quality(instances: int = 300) -> str:
    policies = aryl.defaults.RECLAIM_POLICIES
    total = {p: 0 for p in policies}
    for seed in range(instances):
        servers, jobs, workers = random_loaned_cluster(seed)
        n = random.Random(seed).randint(1, 6)
        for p in policies:
            total[p] += len(
                aryl.reclaim(servers, jobs, workers, n, p, seed=seed).preempted
            )
    rows = [
        (p, f"{total[p] / instances:.3f}", f"{total[p] / total['exact']:.3f}")
        for p in policies
    ]
    big = big_cluster()
    big_rows = []
    for n in (10, 100, 300):
        big_rows.append(
            (
                n,
                *(
                    len(aryl.reclaim(*big, n, p, seed=0).preempted)
                    for p in policies[:3]
                ),
            )
        )
    return (
        f"{instances} random small instances (2 training + 8 on-loan servers, 16 jobs, "
        "reclaim 1-6):\n\n"
        + table(["policy", "mean preempted jobs", "vs exact"], rows)
        + "\n\nThe 1,000-server instance (exact is out of reach):\n\n"
        + table(["servers reclaimed", *policies[:3]], big_rows)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--to-return",
        type=int,
        nargs="+",
        default=[100, 200],
        metavar="N",
        help="servers to return in the records-API comparison (default: 100 200)",
    )
    parser.add_argument(
        "--records-only",
        action="store_true",
        help="only the records-API comparison",
    )
    args = parser.parse_args()
    loaned = sum(s.on_loan for s in big_cluster()[0])
    for n in args.to_return:
        if not 1 <= n <= loaned:
            parser.error(f"--to-return must be in [1, {loaned}], got {n}")
    print(f"Machine: {machine()}\n")
    if not args.records_only:
        print("## Speed\n")
        print(speed())
        print("\n### Through a reusable `aryl.ClusterState` (same cluster)\n")
        print(state_speed())
        print("\n## Quality\n")
        print(quality())
    print("\n## The records API against plain Python\n")
    for n in args.to_return:
        print(records_speed(n) + "\n")


if __name__ == "__main__":
    main()
