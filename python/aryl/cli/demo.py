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
from typing import List, Optional, Set, Tuple

from .. import _core
from ..model import Job, Server, Worker
from ..typing import Id

#: (GPUs, share of jobs) in the ITP cluster04 trace (python/aryl/data/README.md).
ITP_GPU_MIX = [(1, 0.755), (2, 0.008), (4, 0.034), (8, 0.176), (16, 0.012), (32, 0.016)]


def loaned_cluster(
    training_servers: int = 32, loaned_servers: int = 48, seed: int = 0
) -> Tuple[List[Server], List[Job], List[Worker]]:
    """A packed cluster: its servers, running jobs and their workers.

    Linear in the servers (a tightest-fit pick looks at free-GPU buckets, not at
    every server), so ``aryl demo --loaned-servers 100000`` takes seconds.
    """
    if (training_servers + loaned_servers) * 8 > _core.max_cluster_gpus:
        raise ValueError(
            f"{training_servers} + {loaned_servers} servers of 8 GPUs pass the limit "
            f"of {_core.max_cluster_gpus:,} GPUs in all"
        )
    rng = random.Random(seed)
    servers = [Server(f"train-{i}", "training") for i in range(training_servers)]
    servers += [
        Server(f"loan-{i}", "inference", on_loan=True) for i in range(loaned_servers)
    ]
    pools = {
        p: _FreeGpus([s.id for s in servers if s.pool == p], 8)
        for p in ("training", "inference")
    }
    sizes, weights = zip(*ITP_GPU_MIX)
    jobs: List[Job] = []
    workers: List[Worker] = []
    for _ in range(20 * len(servers)):
        gpus = rng.choices(sizes, weights)[0]
        d, n = min(gpus, 8), max(1, gpus // 8)
        elastic = gpus >= 8 and rng.random() < 0.3
        pool = pools["inference" if elastic or rng.random() < 0.5 else "training"]
        base = pool.fit(d, n, rng, exclude=set())
        extra = rng.randint(0, n) if elastic else 0
        flex = None if base is None else pool.fit(d, extra, rng, exclude=set(base))
        if base is None or flex is None:
            pool.release(d, base or [])
            continue
        job = Job(
            f"job-{len(jobs)}", d, n, 2 * n if elastic else n, rng.uniform(600, 86400)
        )
        jobs.append(job)
        workers += [Worker(job.id, s) for s in base]
        workers += [Worker(job.id, s, flexible=True) for s in flex]
    return servers, jobs, workers


class _FreeGpus:
    """A pool's servers bucketed by free GPUs, for tightest-fit picks in O(GPUs)."""

    def __init__(self, ids: List[Id], gpus: int):
        self.free = dict.fromkeys(ids, gpus)
        self.buckets: List[List[Id]] = [[] for _ in range(gpus + 1)]
        self.buckets[gpus] = list(ids)
        self.slot = {s: i for i, s in enumerate(ids)}

    def fit(
        self, d: int, n: int, rng: random.Random, exclude: Set[Id]
    ) -> Optional[List[Id]]:
        """Take n workers of d GPUs, each on a tightest-fitting server (ties at random)
        not in ``exclude``; None (nothing taken) if they don't fit."""
        chosen: List[Id] = []
        for _ in range(n):
            server = self._tightest(d, rng, exclude)
            if server is None:
                self.release(d, chosen)
                return None
            self._set(server, self.free[server] - d)
            chosen.append(server)
        return chosen

    def release(self, d: int, servers: List[Id]) -> None:
        """Give back workers of d GPUs taken by ``fit``."""
        for s in servers:
            self._set(s, self.free[s] + d)

    def _tightest(self, d: int, rng: random.Random, exclude: Set[Id]) -> Optional[Id]:
        for bucket in self.buckets[d:]:
            if len(bucket) > len(exclude):  # a random pick is rarely excluded
                while (s := bucket[rng.randrange(len(bucket))]) in exclude:
                    pass
                return s
            allowed = [s for s in bucket if s not in exclude]
            if allowed:
                return allowed[rng.randrange(len(allowed))]
        return None

    def _set(self, server: Id, free: int) -> None:
        bucket, i = self.buckets[self.free[server]], self.slot[server]
        bucket[i] = bucket[-1]  # swap-remove
        self.slot[bucket[i]] = i
        bucket.pop()
        self.slot[server] = len(self.buckets[free])
        self.buckets[free].append(server)
        self.free[server] = free
