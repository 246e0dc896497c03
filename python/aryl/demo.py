"""A real-looking loaned cluster for demonstrating reclaiming.

Job sizes follow the GPU-demand mix of the shared Microsoft ITP trace
(cluster04: 75.5% 1-GPU, 17.6% 8-GPU, ...). 30% of the jobs of 8 GPUs or more
(~6% of all jobs, the paper's large well-scaling jobs) are elastic with
``[w, 2w]`` workers of 8 GPUs and run on loaned servers, their base and
flexible workers on separate servers as aryl's placement keeps them. Servers are
filled tightest-fit first until no more jobs fit. Everything is seeded.
"""

from __future__ import annotations

import random
from typing import Dict, List, Optional, Tuple

from .model import Job, Server, Worker
from .typing import Id

#: (GPUs, share of jobs) in the ITP cluster04 trace (python/aryl/data/README.md).
ITP_GPU_MIX = [(1, 0.755), (2, 0.008), (4, 0.034), (8, 0.176), (16, 0.012), (32, 0.016)]


def loaned_cluster(
    training_servers: int = 32, loaned_servers: int = 48, seed: int = 0
) -> Tuple[List[Server], List[Job], List[Worker]]:
    """A packed cluster: its servers, running jobs and their workers."""
    rng = random.Random(seed)
    servers = [Server(f"train-{i}", "training") for i in range(training_servers)]
    servers += [
        Server(f"loan-{i}", "inference", on_loan=True) for i in range(loaned_servers)
    ]
    free = {s.id: s.gpus for s in servers}
    pool_of = {
        p: [s.id for s in servers if s.pool == p] for p in ("training", "inference")
    }
    sizes, weights = zip(*ITP_GPU_MIX)
    jobs: List[Job] = []
    workers: List[Worker] = []
    for _ in range(20 * len(servers)):
        gpus = rng.choices(sizes, weights)[0]
        d, n = min(gpus, 8), max(1, gpus // 8)
        elastic = gpus >= 8 and rng.random() < 0.3
        pool = pool_of["inference" if elastic or rng.random() < 0.5 else "training"]
        trial = dict(free)
        base = _fit(pool, trial, d, n, rng)
        extra = rng.randint(0, n) if elastic else 0
        flex = _fit([s for s in pool if s not in (base or [])], trial, d, extra, rng)
        if base is None or flex is None:
            continue
        free = trial
        job = Job(
            f"job-{len(jobs)}", d, n, 2 * n if elastic else n, rng.uniform(600, 86400)
        )
        jobs.append(job)
        workers += [Worker(job.id, s) for s in base]
        workers += [Worker(job.id, s, flexible=True) for s in flex]
    return servers, jobs, workers


def _fit(
    candidates: List[Id], free: Dict[Id, int], d: int, n: int, rng: random.Random
) -> Optional[List[Id]]:
    """Place n workers of d GPUs tightest-fit first, updating ``free``; None if they don't fit."""
    chosen: List[Id] = []
    for _ in range(n):
        fits = [s for s in candidates if free[s] >= d]
        if not fits:
            return None
        best = min(fits, key=lambda s: (free[s], rng.random()))
        free[best] -= d
        chosen.append(best)
    return chosen
