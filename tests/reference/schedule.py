"""Reference: one aryl scheduling epoch (policy "aryl", placement "aryl") in plain Python.

Mirrors cpp/core/src/schedule.cpp and placement.cpp step for step, so on the same
input it makes the same decision. Inputs are the records of aryl.model.State.
"""

from __future__ import annotations

from typing import List, Tuple

from .knapsack import knapsack


def running_time(job, workers: int, remaining: float = 1.0) -> float:
    return job.estimated_duration * job.max_workers / workers * remaining


class Placer:
    """Free GPUs and roles per server; best fit with aryl's preferences."""

    def __init__(self, servers, jobs):
        self.servers, self.jobs = servers, jobs
        types: dict = {}
        self.type_of = [types.setdefault(s.gpu_type, len(types)) for s in servers]
        self.n_types = len(types)
        self.free = [s.gpus if s.pool == "training" or s.on_loan else -1 for s in servers]
        self.fixed = [0] * len(servers)
        self.flexible = [0] * len(servers)
        self.pinned = [-1] * len(jobs)
        self.required = [-1 if not j.gpu_type else types.get(j.gpu_type, -2) for j in jobs]

    def free_gpus(self) -> int:
        return sum(f for f in self.free if f > 0)

    def job_type(self, j: int) -> int:
        return self.required[j] if self.required[j] >= 0 else self.pinned[j]

    def add(self, j: int, s: int, flexible: bool) -> None:
        self.free[s] -= self.jobs[j].gpus_per_worker
        (self.flexible if flexible else self.fixed)[s] += 1
        if not self.jobs[j].hetero:
            self.pinned[j] = self.type_of[s]

    def remove(self, j: int, s: int, flexible: bool) -> None:
        self.free[s] += self.jobs[j].gpus_per_worker
        (self.flexible if flexible else self.fixed)[s] -= 1

    def keep(self, j: int, s: int, flexible: bool) -> bool:
        if self.free[s] < self.jobs[j].gpus_per_worker:
            return False
        self.add(j, s, flexible)
        return True

    def allowed(self, j: int, s: int, t: int) -> bool:
        required = self.required[j]
        if self.free[s] < self.jobs[j].gpus_per_worker or required == -2:
            return False
        if required >= 0 and self.type_of[s] != required:
            return False
        return t < 0 or self.type_of[s] == t

    def best_server(self, j: int, flexible: bool, t: int) -> int:
        job = self.jobs[j]
        wants_inference = flexible if job.hetero else job.elastic
        best, chosen = None, -1
        for s, server in enumerate(self.servers):
            if not self.allowed(j, s, t):
                continue
            rank = 0 if (server.pool == "inference") == wants_inference else 1
            mixed = int((self.fixed[s] if flexible else self.flexible[s]) > 0)
            empty = int(self.free[s] == server.gpus)
            key = (rank, mixed, empty, self.free[s] - job.gpus_per_worker)
            if chosen < 0 or key < best:
                best, chosen = key, s
        return chosen

    def place(self, j: int, count: int, flexible: bool, out: list) -> bool:
        job, was_pinned = self.jobs[j], self.pinned[j]
        if job.hetero or self.job_type(j) >= 0 or self.required[j] == -2:
            types = [-1 if job.hetero else self.job_type(j)]
        else:
            first = self.best_server(j, flexible, -1)
            if first < 0:
                return False
            types = [self.type_of[first]] + [t for t in range(self.n_types) if t != self.type_of[first]]
        for t in types:
            placed = []
            for _ in range(count):
                s = self.best_server(j, flexible, t)
                if s < 0:
                    break
                self.add(j, s, flexible)
                placed.append((j, s, flexible))
            if len(placed) == count:
                out.extend(placed)
                return True
            for w in placed:
                self.remove(*w)
            self.pinned[j] = was_pinned
        return False


def schedule(servers, jobs, workers: List[Tuple[int, int, bool]]):
    """workers: (job index, server index, flexible). Returns (start, stop, allocation, pending)."""
    n = len(jobs)
    count = [0] * n
    for j, _, _ in workers:
        count[j] += 1
    released = [False] * len(workers)
    base = [0] * n
    for marked in (False, True):
        for w, (j, _, flexible) in enumerate(workers):
            if flexible != marked:
                continue
            if base[j] < jobs[j].min_workers:
                base[j] += 1
            else:
                released[w] = True
    placer = Placer(servers, jobs)
    fixed, extra = [0] * n, [0] * n
    for w, (j, s, flexible) in enumerate(workers):
        if not released[w]:
            placer.keep(j, s, flexible)
            fixed[j] += 1

    # Phase 1: base demand, shortest estimated running time at min_workers first.
    queue = sorted((j for j in range(n) if count[j] == 0),
                   key=lambda j: (running_time(jobs[j], jobs[j].min_workers), jobs[j].submit_time))
    start, pending = [], []
    for j in queue:
        if placer.place(j, jobs[j].min_workers, False, start):
            fixed[j] = jobs[j].min_workers
        else:
            pending.append(j)

    # Phase 2: the multiple-choice knapsack over the elastic jobs.
    elastic = [j for j in range(n) if jobs[j].elastic and fixed[j] > 0]
    groups = []
    for j in elastic:
        job = jobs[j]
        t_min = running_time(job, job.min_workers)
        groups.append([(w * job.gpus_per_worker, t_min - running_time(job, job.min_workers + w))
                       for w in range(1, job.max_workers - job.min_workers + 1)])
    choice = knapsack(groups, placer.free_gpus())
    target = [0] * n
    for j, c in zip(elastic, choice):
        target[j] = c + 1
    stop = []
    for w, (j, s, flexible) in enumerate(workers):
        if not released[w]:
            continue
        if extra[j] < target[j] and placer.keep(j, s, flexible):
            extra[j] += 1
        else:
            stop.append(w)
    for j in sorted(elastic, key=lambda j: -jobs[j].gpus_per_worker):
        while extra[j] < target[j] and placer.place(j, 1, True, start):
            extra[j] += 1

    # A worker stopped and started again on the same server is no change.
    kept_stop = []
    for w in stop:
        j, s, _ = workers[w]
        same = next((k for k, x in enumerate(start) if x[2] and x[0] == j and x[1] == s), None)
        if same is None:
            kept_stop.append(w)
        else:
            del start[same]
    allocation = [fixed[j] + extra[j] for j in range(n)]
    return start, kept_stop, allocation, pending
