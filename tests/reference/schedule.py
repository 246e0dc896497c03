"""Reference: one aryl scheduling epoch (policy "aryl", placement "aryl") in plain Python.

Mirrors cpp/core/src/schedule.cpp and placement.cpp step for step, so on the same
input it makes the same decision. Inputs are the records of aryl.model.State.
"""

from __future__ import annotations

from typing import List, Tuple

from .knapsack import knapsack


def throughput(curve, workers: int) -> float:
    return curve[workers - 1] if curve else float(workers)


def running_time(
    job, workers: int, remaining: float = 1.0, curve=None, speed: float = 1.0
) -> float:
    return (
        job.estimated_duration
        * throughput(curve, job.reference_workers)
        / (throughput(curve, workers) * speed)
        * remaining
    )


class Placer:
    """Free GPUs and roles per server; speed first, then best fit with aryl's preferences."""

    def __init__(self, servers, jobs, speed):
        self.servers, self.jobs = servers, jobs
        types: dict = {}
        self.type_of = [types.setdefault(s.gpu_type, len(types)) for s in servers]
        self.n_types = len(types)
        self.type_speed = [0.0] * self.n_types
        for s in reversed(
            range(len(servers))
        ):  # the first server of a type sets its speed
            self.type_speed[self.type_of[s]] = speed[s]
        self.free = [
            s.gpus if s.pool == "training" or s.on_loan else -1 for s in servers
        ]
        self.fixed = [0] * len(servers)
        self.flexible = [0] * len(servers)
        self.pinned = [-1] * len(jobs)
        self.required = [
            -1 if not j.gpu_type else types.get(j.gpu_type, -2) for j in jobs
        ]

    def free_gpus(self, t: int = -1) -> int:
        return sum(
            f for s, f in enumerate(self.free) if f > 0 and t in (-1, self.type_of[s])
        )

    def job_type(self, j: int) -> int:
        return self.required[j] if self.required[j] >= 0 else self.pinned[j]

    def may_use(self, j: int, t: int) -> bool:
        return self.required[j] in (-1, t)

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
            key = (
                -self.type_speed[self.type_of[s]],
                rank,
                mixed,
                empty,
                self.free[s] - job.gpus_per_worker,
            )
            if chosen < 0 or key < best:
                best, chosen = key, s
        return chosen

    def type_order(self, j: int, flexible: bool) -> list:
        first = self.best_server(j, flexible, -1)
        preferred = self.type_of[first] if first >= 0 else -1
        types = [t for t in range(self.n_types) if self.may_use(j, t)]
        return sorted(types, key=lambda t: (-self.type_speed[t], t != preferred))

    def place(self, j: int, count: int, flexible: bool, out: list, t: int = -1) -> bool:
        job, was_pinned = self.jobs[j], self.pinned[j]
        if t >= 0:
            if not self.may_use(j, t) or (
                not job.hetero and self.job_type(j) not in (-1, t)
            ):
                return False
            types = [t]
        elif job.hetero or self.job_type(j) >= 0 or self.required[j] == -2:
            types = [-1 if job.hetero else self.job_type(j)]
        else:
            types = self.type_order(j, flexible)
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


def schedule(
    servers,
    jobs,
    workers: List[Tuple[int, int, bool]],
    speed=None,
    hetero_efficiency: float = 0.7,
):
    """workers: (job index, server index, flexible); speed: per server (default 1.0).

    Returns (start, stop, allocation, pending).
    """
    n = len(jobs)
    speed = speed or [1.0] * len(servers)
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
    placer = Placer(servers, jobs, speed)
    fixed, extra = [0] * n, [0] * n
    base_speed, base_type = [0.0] * n, [-1] * n

    def add_base(j: int, s: int) -> None:
        fixed[j] += 1
        base_speed[j] += speed[s]
        t = placer.type_of[s]
        base_type[j] = t if base_type[j] in (-1, t) else -2

    def time_with(j: int, more: int, t: int) -> float:
        workers_now = fixed[j] + more
        mean = (
            base_speed[j] + (more * placer.type_speed[t] if more else 0.0)
        ) / workers_now
        if base_type[j] == -2 or (more > 0 and base_type[j] >= 0 and base_type[j] != t):
            mean *= hetero_efficiency
        return running_time(jobs[j], workers_now, 1.0, None, mean)

    def flexible_type(j: int) -> int:
        job = jobs[j]
        if not job.hetero:
            return placer.job_type(j)
        best, best_time = -1, time_with(j, 0, 0)
        for t in range(placer.n_types):
            fit = min(
                job.max_workers - fixed[j], placer.free_gpus(t) // job.gpus_per_worker
            )
            if not placer.may_use(j, t) or fit < 1:
                continue
            time = time_with(j, fit, t)
            if time < best_time * (1.0 - 1e-12):
                best, best_time = t, time
        return best

    for w, (j, s, flexible) in enumerate(workers):
        if not released[w]:
            placer.keep(j, s, flexible)
            add_base(j, s)

    # Phase 1: base demand, shortest estimated running time at min_workers first.
    queue = sorted(
        (j for j in range(n) if count[j] == 0),
        key=lambda j: (running_time(jobs[j], jobs[j].min_workers), jobs[j].submit_time),
    )
    start, pending = [], []
    for j in queue:
        first = len(start)
        if placer.place(j, jobs[j].min_workers, False, start):
            for _, s, _ in start[first:]:
                add_base(j, s)
        else:
            pending.append(j)

    # Phase 2: one multiple-choice knapsack per GPU type over the elastic jobs.
    elastic = [j for j in range(n) if jobs[j].elastic and fixed[j] > 0]
    kind = {j: flexible_type(j) for j in elastic}
    target = [0] * n
    for t in range(placer.n_types):
        group_jobs = [j for j in elastic if kind[j] == t]
        if not group_jobs:
            continue
        groups = []
        for j in group_jobs:
            t_base = time_with(j, 0, t)
            groups.append(
                [
                    (w * jobs[j].gpus_per_worker, t_base - time_with(j, w, t))
                    for w in range(1, jobs[j].max_workers - fixed[j] + 1)
                ]
            )
        for j, c in zip(group_jobs, knapsack(groups, placer.free_gpus(t))):
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
        while extra[j] < target[j] and placer.place(j, 1, True, start, kind[j]):
            extra[j] += 1

    # A worker stopped and started again on the same server is no change.
    kept_stop = []
    for w in stop:
        j, s, _ = workers[w]
        same = next(
            (k for k, x in enumerate(start) if x[2] and x[0] == j and x[1] == s), None
        )
        if same is None:
            kept_stop.append(w)
        else:
            del start[same]
    allocation = [fixed[j] + extra[j] for j in range(n)]
    return start, kept_stop, allocation, pending
