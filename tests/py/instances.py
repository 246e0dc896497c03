"""Seeded random clusters for tests (one builder per shape, shared by the test files)."""

from __future__ import annotations

import random

import aryl


def random_loaned_cluster(
    seed: int, loaned: int = 8, training: int = 2, jobs: int = 16
):
    """A small packed cluster: inelastic and elastic jobs, many spanning servers.

    Workers of 1, 2, 4 or 8 GPUs; multi-worker jobs spread over a few servers so
    that returning one server can preempt a job that others host too.
    """
    rng = random.Random(seed)
    servers = [aryl.Server(f"t{i}", "training") for i in range(training)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(loaned)]
    free = {s.id: s.gpus for s in servers}
    job_list, workers = [], []
    for j in range(jobs):
        d = rng.choice([1, 1, 2, 4, 8])
        want = rng.choice([1, 1, 2, 2, 3, 4])
        where = []
        for _ in range(want):
            fits = [s for s in free if free[s] >= d]
            if not fits:
                break
            s = rng.choice(fits)
            free[s] -= d
            where.append(s)
        if not where:
            continue
        n = len(where)
        low = n if rng.random() < 0.7 else rng.randint(1, n)
        job = aryl.Job(f"j{j}", d, low, n, 3600, hetero=True)
        job_list.append(job)
        workers += [
            aryl.Worker(job.id, s, flexible=k >= low) for k, s in enumerate(where)
        ]
    return servers, job_list, workers


def random_cluster(seed, jobs=20):
    """Queued jobs of mixed sizes and GPU types on 4 training + 4 on-loan servers."""
    rng = random.Random(seed)
    servers = [aryl.Server(f"t{i}", "training") for i in range(4)]
    servers += [aryl.Server(f"l{i}", "inference", on_loan=True) for i in range(4)]
    job_list = []
    for j in range(jobs):
        d = rng.choice([1, 2, 4, 8])
        lo = rng.randint(1, 3)
        job_list.append(
            aryl.Job(
                f"j{j}",
                d,
                lo,
                lo + rng.randint(0, 3),
                rng.uniform(60, 3600),
                submit_time=j,
                hetero=rng.random() < 0.2,
                gpu_type=rng.choice([None, None, None, "V100", "T4"]),
            )
        )
    return job_list, servers


class Built:
    """A ``ClusterState`` as the kernel tests read it: records, id maps, core copy."""

    def __init__(self, servers, jobs, workers=()):
        self.state = aryl.ClusterState.from_records(servers, jobs, workers)
        self.core = self.state._core
        self.servers, self.jobs = self.state.servers(), self.state.jobs()
        self.workers = self.state.workers()
        self.server_index = self.state._server_index
        self.job_index = self.state._job_index
