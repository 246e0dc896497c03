"""Reference: one aryl scheduling epoch (policy "aryl", placement "aryl") in plain Python.

Mirrors cpp/core/src/schedule.cpp and placement.cpp step for step, so on the same
input it makes the same decision. Inputs are the records of an aryl.ClusterState.
"""

from __future__ import annotations

from typing import List, Tuple

from .knapsack import knapsack
from .simulator import Placer  # one placer for both references


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
    placer = Placer(servers, jobs, "aryl", speed)
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
                job.max_workers - fixed[j], placer.type_free[t] // job.gpus_per_worker
            )
            if not placer.may_use(j, t) or fit < 1:
                continue
            time = time_with(j, fit, t)
            if time < best_time * (1.0 - 1e-12):
                best, best_time = t, time
        return best

    for w, (j, s, flexible) in enumerate(workers):
        if not released[w]:
            placer.keep((j, s, flexible))
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
        for j, c in zip(group_jobs, knapsack(groups, placer.type_free[t])):
            target[j] = c + 1
    stop = []
    for w, (j, s, flexible) in enumerate(workers):
        if not released[w]:
            continue
        if extra[j] < target[j] and placer.keep((j, s, flexible)):
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
