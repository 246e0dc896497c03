"""Reference: the whole fixed-duration simulator in plain Python.

Mirrors cpp/core/src/sim/ (engine, events, loaning, progress) and the kernels it
calls (schedule.cpp, placement.cpp, knapsack.cpp, reclaim.cpp) step for step: the
same events in the same order (time, kind, sequence), the same tie rules and the
same float operations in the same order, so on the same input it makes the same
decisions. It takes exactly what ``aryl._core.simulate`` takes (the columns
``aryl.sim.simulate`` builds), so a test can hand both the same input.

Covered: the kernel allocator under every policy (aryl, fifo with and without
backfill, sjf, gandiva, afs), both placements, capacity loaning (headroom, lend
hold) with the aryl, scf and random reclaim policies (SplitMix64 seeded as the
engine seeds it), checkpointed and non-checkpointed preemption, the restart
overhead, GPU speeds, hetero jobs, throughput curves and the horizon. Not
covered: goodput-driven (Pollux) jobs, input validation (inputs are assumed
valid: the engine refuses the others), the timeline and the GPU-second integrals.
Written for clarity, not speed.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, Sequence, Tuple

from .knapsack import knapsack
from .reclaim import aryl_reclaim

ELASTIC_POLICIES = ("aryl", "gandiva", "afs")
ARRIVAL, FINISH, LOAN, EPOCH = 0, 1, 2, 3  # event kinds: their order at equal times
MASK64 = (1 << 64) - 1


# ---- inputs -------------------------------------------------------------------


@dataclass
class Server:
    """One server as the kernels see it (``on_loan`` set per snapshot)."""

    pool: str
    gpus: int
    gpu_type: str
    on_loan: bool = False


@dataclass
class Job:
    """One job as the engine sees it (``gpu_type`` "" means any)."""

    gpus_per_worker: int
    min_workers: int
    max_workers: int
    duration: float
    submit_time: float
    estimated_duration: float
    gpu_type: str
    checkpoint: bool
    hetero: bool
    reference_workers: int

    @property
    def elastic(self) -> bool:
        """More than one worker count is possible."""
        return self.max_workers > self.min_workers

    @property
    def reference(self) -> int:
        """Workers at which ``duration`` was measured."""
        return self.reference_workers or self.max_workers


def scales_elastic_jobs(policy: str) -> bool:
    """Whether the policy gives elastic jobs workers beyond their base demand."""
    return policy in ELASTIC_POLICIES


def base_demand(job: Job, policy: str) -> int:
    """Workers a job needs to start under the policy."""
    return job.min_workers if scales_elastic_jobs(policy) else job.max_workers


def throughput(curve: Sequence[float], workers: int) -> float:
    """Throughput with ``workers`` workers; an empty curve is linear."""
    return curve[workers - 1] if curve else float(workers)


def running_time(
    job: Job, workers: int, remaining: float, curve: Sequence[float], speed: float = 1.0
) -> float:
    """The scheduler's estimate of the job's remaining running time."""
    return (
        job.estimated_duration
        * throughput(curve, job.reference)
        / (throughput(curve, workers) * speed)
        * remaining
    )


def throughput_curve(job: Job, curve: Sequence[float], scaling: str) -> List[float]:
    """The job's own curve, else the scaling model's (progress.cpp)."""
    if curve:
        return list(curve)
    mid = 0.5 * (job.min_workers + job.max_workers)
    out = []
    for w in range(1, job.max_workers + 1):
        beyond = max(0.0, w - mid) if scaling == "imperfect" else 0.0
        out.append(w * max(0.1, 1.0 - 0.1 * beyond))
    return out


class Rng:
    """SplitMix64 with rejection sampling, as cpp/core/include/aryl/rng.hpp."""

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        """The next 64-bit value."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        """Uniform in [0, bound)."""
        limit = MASK64 - MASK64 % bound
        x = self.next()
        while x >= limit:
            x = self.next()
        return x % bound

    def shuffle(self, values: list) -> None:
        """Fisher-Yates from the back, as Rng::shuffle."""
        for i in range(len(values), 1, -1):
            k = self.below(i)
            values[i - 1], values[k] = values[k], values[i - 1]


# ---- placement (placement.cpp) --------------------------------------------------


class Placer:
    """Free GPUs and roles per usable server; speed first, then best fit."""

    def __init__(
        self, servers: List[Server], jobs: List[Job], policy: str, speed: List[float]
    ):
        self.servers, self.jobs, self.policy = servers, jobs, policy
        types: Dict[str, int] = {}
        self.type_of, self.type_speed = [], []
        self.type_free, self.type_capacity, self.free = [], [], []
        self.total_free = 0
        for i, s in enumerate(servers):
            if s.gpu_type not in types:
                types[s.gpu_type] = len(types)
                self.type_speed.append(speed[i])
                self.type_free.append(0)
                self.type_capacity.append(0)
            t = types[s.gpu_type]
            self.type_of.append(t)
            usable = s.pool == "training" or s.on_loan
            self.free.append(s.gpus if usable else -1)
            self.total_free += s.gpus if usable else 0
            self.type_free[t] += s.gpus if usable else 0
            self.type_capacity[t] += s.gpus if usable else 0
        self.n_types = len(types)
        self.fixed = [0] * len(servers)
        self.flexible = [0] * len(servers)
        self.pinned = [-1] * len(jobs)
        self.required = [types.get(j.gpu_type, -2) if j.gpu_type else -1 for j in jobs]

    def job_type(self, j: int) -> int:
        """The type the job is held to: required, else pinned, else -1."""
        return self.required[j] if self.required[j] >= 0 else self.pinned[j]

    def may_use(self, j: int, t: int) -> bool:
        """Whether the job may run on type t at all."""
        return self.required[j] in (-1, t)

    def add(self, j: int, s: int, flexible: bool) -> None:
        """Puts one worker of job j on server s."""
        d = self.jobs[j].gpus_per_worker
        self.free[s] -= d
        self.total_free -= d
        self.type_free[self.type_of[s]] -= d
        (self.flexible if flexible else self.fixed)[s] += 1
        if not self.jobs[j].hetero:
            self.pinned[j] = self.type_of[s]

    def remove(self, j: int, s: int, flexible: bool) -> None:
        """Takes one worker of job j off server s (pin unchanged)."""
        d = self.jobs[j].gpus_per_worker
        self.free[s] += d
        self.total_free += d
        self.type_free[self.type_of[s]] += d
        (self.flexible if flexible else self.fixed)[s] -= 1

    def undo(self, placed: list) -> None:
        """Removes workers just placed for a job that had none (unpins it)."""
        for j, s, flexible in placed:
            self.remove(j, s, flexible)
            self.pinned[j] = -1

    def keep(self, worker: tuple) -> bool:
        """Adds an existing worker if its server still has room."""
        j, s, flexible = worker
        if self.free[s] < self.jobs[j].gpus_per_worker:
            return False
        self.add(j, s, flexible)
        return True

    def allowed(self, j: int, s: int, t: int) -> bool:
        """Server s has room for a worker of job j and is of an allowed type."""
        if self.free[s] < self.jobs[j].gpus_per_worker:
            return False
        required = self.required[j]
        if required == -2 or (required >= 0 and self.type_of[s] != required):
            return False
        return t < 0 or self.type_of[s] == t

    def pool_rank(self, j: int, s: int, flexible: bool) -> int:
        """0 on the job's preferred pool (aryl placement), else 1."""
        if self.policy == "bfd":
            return 0
        job = self.jobs[j]
        inference = self.servers[s].pool == "inference"
        wants_inference = flexible if job.hetero else job.elastic
        return 0 if inference == wants_inference else 1

    def best_server(self, j: int, flexible: bool, t: int) -> int:
        """The first server with the least key, or -1."""
        d = self.jobs[j].gpus_per_worker
        best, chosen = None, -1
        for s in range(len(self.free)):
            if not self.allowed(j, s, t):
                continue
            other = self.fixed[s] if flexible else self.flexible[s]
            mixed = int(self.policy == "aryl" and other > 0)
            empty = int(self.free[s] == self.servers[s].gpus)
            key = (
                -self.type_speed[self.type_of[s]],
                self.pool_rank(j, s, flexible),
                mixed,
                empty,
                self.free[s] - d,
            )
            if chosen < 0 or key < best:
                best, chosen = key, s
        return chosen

    def type_order(self, j: int, flexible: bool) -> List[int]:
        """Types to try: fastest first, the preferred server's type first on ties."""
        types = [t for t in range(self.n_types) if self.may_use(j, t)]
        first = self.best_server(j, flexible, -1)
        preferred = -1 if first < 0 else self.type_of[first]
        return sorted(types, key=lambda t: (-self.type_speed[t], t != preferred))

    def place(self, j: int, count: int, flexible: bool, out: list, t: int = -1) -> bool:
        """Places ``count`` workers of job j, all or nothing; appends them to out."""
        job = self.jobs[j]
        if count * job.gpus_per_worker > self.total_free:
            return False
        was_pinned = self.pinned[j]
        if t >= 0:
            if not self.may_use(j, t) or (
                not job.hetero and self.job_type(j) >= 0 and self.job_type(j) != t
            ):
                return False
            types = [t]
        elif job.hetero or self.job_type(j) >= 0 or self.required[j] == -2:
            types = [-1 if job.hetero else self.job_type(j)]
        else:
            types = self.type_order(j, flexible)
        for t in types:
            if t >= 0 and count * job.gpus_per_worker > self.type_free[t]:
                continue
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


# ---- one scheduling epoch (schedule.cpp) ---------------------------------------


def knapsack_same_width(groups: list, capacity: int) -> List[int]:
    """The reference knapsack over the weights the kernel tracks.

    The kernel tracks total weights up to min(capacity, heaviest reachable sum);
    the cells beyond stay unreachable, so the choice is the same, only cheaper.
    """
    reach = 0
    for group in groups:
        reach += max((w for w, v in group if w <= capacity and v > 0), default=0)
    return knapsack(groups, min(capacity, reach))


class Epoch:
    """One call of the schedule() kernel: returns (start, stop) workers."""

    def __init__(self, servers, jobs, workers, options: dict):
        self.servers, self.jobs, self.workers = servers, jobs, workers
        self.policy = options["policy"]
        self.backfill = options["backfill"]
        self.speed = options["speed"]
        self.efficiency = options["hetero_efficiency"]
        self.remaining = options["remaining"]
        self.curves = options["throughput"]  # empty: every curve linear
        self.placer = Placer(servers, jobs, options["placement"], self.speed)
        n = len(jobs)
        self.count = [0] * n
        for j, _, _ in workers:
            self.count[j] += 1
        self.is_flexible = [False] * len(workers)
        self.fixed, self.extra, self.released = [0] * n, [0] * n, [0] * n
        self.base_speed, self.base_type = [0.0] * n, [-1] * n
        self.flexible_type = [-1] * n
        self.releases: Optional[List[list]] = None
        self.start: list = []
        self.stop: List[int] = []
        self.pending: List[int] = []
        self.split_base_and_flexible()
        for w, worker in enumerate(workers):
            if not self.is_flexible[w]:
                self.placer.keep(worker)  # kept as base even if it no longer fits
                self.add_base(worker)

    def curve(self, j: int):
        """Job j's throughput curve as the kernel sees it."""
        return self.curves[j] if self.curves else ()

    def run(self) -> Tuple[list, List[int]]:
        """Phase 1 (admission), phase 2 (growth), then the decision."""
        self.admit(self.queue_order())
        if scales_elastic_jobs(self.policy):
            self.grow()
        self.reuse_stopped_workers()
        return self.start, self.stop

    def add_base(self, worker: tuple) -> None:
        """A base worker fixes the job's summed speed and GPU type (-2: mixed)."""
        j, s, _ = worker
        self.fixed[j] += 1
        self.base_speed[j] += self.speed[s]
        t = self.placer.type_of[s]
        self.base_type[j] = t if self.base_type[j] in (-1, t) else -2

    def time_with(self, j: int, extra: int, t: int) -> float:
        """Estimated running time on the base workers plus ``extra`` of type t."""
        workers = self.fixed[j] + extra
        more = extra * self.placer.type_speed[t] if extra > 0 else 0.0
        speed = self.base_speed[j] + more
        speed /= workers
        first = self.base_type[j]
        if first == -2 or (extra > 0 and first >= 0 and first != t):
            speed *= self.efficiency
        return running_time(
            self.jobs[j], workers, self.remaining[j], self.curve(j), speed
        )

    def find_flexible_type(self, j: int) -> int:
        """The type job j's extra workers use (hetero: the one finishing soonest)."""
        job = self.jobs[j]
        if not job.hetero:
            return self.placer.job_type(j)
        best, best_time = -1, self.time_with(j, 0, 0)
        for t in range(self.placer.n_types):
            if not self.placer.may_use(j, t):
                continue
            fit = min(
                job.max_workers - self.fixed[j],
                self.placer.type_free[t] // job.gpus_per_worker,
            )
            if fit < 1:
                continue
            time = self.time_with(j, fit, t)
            if time < best_time * (1.0 - 1e-12):
                best, best_time = t, time
        return best

    def split_base_and_flexible(self) -> None:
        """Workers beyond min_workers (flexible ones last) are released."""
        if not scales_elastic_jobs(self.policy):
            return
        base = [0] * len(self.jobs)
        for marked in (False, True):
            for w, (j, _, flexible) in enumerate(self.workers):
                if flexible != marked:
                    continue
                if base[j] < self.jobs[j].min_workers:
                    base[j] += 1
                else:
                    self.is_flexible[w] = True
                    self.released[j] += 1

    def demand(self, j: int) -> int:
        """Job j's base demand under the policy."""
        return base_demand(self.jobs[j], self.policy)

    def queue_order(self) -> List[int]:
        """Queued jobs: shortest estimate first under aryl/sjf, then submit time."""
        queue = [j for j in range(len(self.jobs)) if self.count[j] == 0]
        if self.policy in ("aryl", "sjf"):

            def key(j):
                time = running_time(
                    self.jobs[j], self.demand(j), self.remaining[j], self.curve(j)
                )
                return (time, self.jobs[j].submit_time)
        else:

            def key(j):
                return self.jobs[j].submit_time

        return sorted(queue, key=key)

    def admit(self, queue: List[int]) -> None:
        """Base demand in queue order; strict fifo stops at the first miss."""
        strict = self.policy == "fifo" and not self.backfill
        blocked = False
        for j in queue:
            if not blocked and self.admit_one(j):
                continue
            self.pending.append(j)
            blocked = strict

    def admit_one(self, j: int) -> bool:
        """Places j's base demand unless waiting for faster GPUs finishes sooner."""
        first = len(self.start)
        if not self.placer.place(j, self.demand(j), False, self.start):
            return False
        placed = self.start[first:]
        fast = self.fastest_type(j)
        speed = self.mean_speed(placed)
        fast_speed = self.placer.type_speed[fast]
        if speed < fast_speed * (1.0 - 1e-12):
            self.placer.undo(placed)

            def time_at(s: float) -> float:
                return running_time(
                    self.jobs[j], self.demand(j), self.remaining[j], self.curve(j), s
                )

            if self.wait_for(j, fast) + time_at(fast_speed) < time_at(speed):
                del self.start[first:]
                return False
            for w in placed:
                self.placer.keep(w)
        for w in placed:
            self.add_base(w)
        return True

    def mean_speed(self, workers: list) -> float:
        """Mean GPU speed of the workers, times the hetero efficiency if mixed."""
        total, mixed = 0.0, False
        first_type = self.placer.type_of[workers[0][1]]
        for _, s, _ in workers:
            total += self.speed[s]
            mixed |= self.placer.type_of[s] != first_type
        return total / len(workers) * (self.efficiency if mixed else 1.0)

    def fastest_type(self, j: int) -> int:
        """The fastest type the job may use that has usable GPUs (-1: none)."""
        best, speed = -1, self.placer.type_speed
        for t in range(self.placer.n_types):
            if (
                self.placer.may_use(j, t)
                and self.placer.type_capacity[t] > 0
                and (best < 0 or speed[t] > speed[best])
            ):
                best = t
        return best

    def wait_for(self, j: int, t: int) -> float:
        """Shadow time: when running jobs' base workers free room on type t."""
        if self.releases is None:
            self.estimate_releases()
        need = self.demand(j) * self.jobs[j].gpus_per_worker - self.placer.type_free[t]
        if need <= 0:
            return 0.0
        for time, gpus in self.releases[t]:
            need -= gpus
            if need <= 0:
                return time
        return math.inf

    def estimate_releases(self) -> None:
        """Per type, (estimated time left, GPUs) of every running job's base workers."""
        n_types = self.placer.n_types
        gpus: List[Optional[List[int]]] = [None] * len(self.jobs)
        for w, (j, s, _) in enumerate(self.workers):
            if self.is_flexible[w]:
                continue
            if gpus[j] is None:
                gpus[j] = [0] * n_types
            gpus[j][self.placer.type_of[s]] += self.jobs[j].gpus_per_worker
        self.releases = [[] for _ in range(n_types)]
        for j, per_type in enumerate(gpus):
            if per_type is None:
                continue
            left = self.time_with(j, 0, 0)
            for t in range(n_types):
                if per_type[t] > 0:
                    self.releases[t].append((left, per_type[t]))
        for r in self.releases:
            r.sort()

    def grow(self) -> None:
        """Phase 2: targets of extra workers, kept in place or placed anew."""
        jobs = [
            j for j, job in enumerate(self.jobs) if job.elastic and self.fixed[j] > 0
        ]
        if self.policy == "aryl":
            target = self.knapsack_targets(jobs)
        elif self.policy == "gandiva":
            target = self.gandiva_targets(jobs)
        else:
            self.afs_grow(jobs)
            return
        self.keep_flexible(target)
        for j in sorted(jobs, key=lambda j: -self.jobs[j].gpus_per_worker):
            while self.extra[j] < target[j] and self.placer.place(
                j, 1, True, self.start, self.flexible_type[j]
            ):
                self.extra[j] += 1

    def knapsack_targets(self, jobs: List[int]) -> List[int]:
        """aryl: one multiple-choice knapsack per GPU type."""
        by_type: List[List[int]] = [[] for _ in range(self.placer.n_types)]
        for j in jobs:
            self.flexible_type[j] = self.find_flexible_type(j)
            if self.flexible_type[j] >= 0:
                by_type[self.flexible_type[j]].append(j)
        target = [0] * len(self.jobs)
        for t, group_jobs in enumerate(by_type):
            if not group_jobs:
                continue
            groups = []
            for j in group_jobs:
                job = self.jobs[j]
                base_time = self.time_with(j, 0, t)
                groups.append(
                    [
                        (w * job.gpus_per_worker, base_time - self.time_with(j, w, t))
                        for w in range(1, job.max_workers - self.fixed[j] + 1)
                    ]
                )
            choice = knapsack_same_width(groups, self.placer.type_free[t])
            for j, c in zip(group_jobs, choice):
                target[j] = c + 1
        return target

    def gandiva_targets(self, jobs: List[int]) -> List[int]:
        """Gandiva: grow to max only when nothing is pending, else keep."""
        target = [0] * len(self.jobs)
        for j in jobs:
            self.flexible_type[j] = self.find_flexible_type(j)
            grow = not self.pending and self.flexible_type[j] >= 0
            full = self.jobs[j].max_workers - self.fixed[j]
            target[j] = full if grow else self.released[j]
        return target

    def afs_gain(self, j: int) -> float:
        """AFS: throughput gain per GPU of one more worker (0 when full)."""
        t, k = self.flexible_type[j], self.extra[j]
        if self.fixed[j] + k >= self.jobs[j].max_workers:
            return 0.0
        return (
            1.0 / self.time_with(j, k + 1, t) - 1.0 / self.time_with(j, k, t)
        ) / self.jobs[j].gpus_per_worker

    def afs_grow(self, jobs: List[int]) -> None:
        """AFS: one worker at a time to the largest gain (ties: lower job)."""
        heap = []
        for j in jobs:
            self.flexible_type[j] = self.find_flexible_type(j)
            if self.flexible_type[j] >= 0:
                heapq.heappush(heap, (-self.afs_gain(j), j))
        self.keep_flexible([0] * len(self.jobs))
        while heap:
            negative_gain, j = heapq.heappop(heap)
            full = self.fixed[j] + self.extra[j] >= self.jobs[j].max_workers
            if not (-negative_gain > 0.0) or full:
                continue
            if not self.placer.place(j, 1, True, self.start, self.flexible_type[j]):
                continue
            self.extra[j] += 1
            heapq.heappush(heap, (-self.afs_gain(j), j))

    def keep_flexible(self, target: List[int]) -> None:
        """Keeps up to target[j] released workers where they are; stops the rest."""
        for w, worker in enumerate(self.workers):
            if not self.is_flexible[w]:
                continue
            j = worker[0]
            if self.extra[j] < target[j] and self.placer.keep(worker):
                self.extra[j] += 1
            else:
                self.stop.append(w)

    def reuse_stopped_workers(self) -> None:
        """A worker stopped and started again on the same server is no change."""
        kept = []
        for w in self.stop:
            j, s, _ = self.workers[w]
            same = next(
                (
                    k
                    for k, (nj, ns, nf) in enumerate(self.start)
                    if nf and nj == j and ns == s
                ),
                None,
            )
            if same is None:
                kept.append(w)
            else:
                del self.start[same]
        self.stop = kept


# ---- reclaiming (reclaim.cpp) ------------------------------------------------------


@dataclass
class ReclaimPlan:
    """Servers returned, jobs preempted, (job, workers) scaled in, damage."""

    servers: List[int] = field(default_factory=list)
    preempted: List[int] = field(default_factory=list)
    scaled_in: List[Tuple[int, int]] = field(default_factory=list)
    collateral_gpus: int = 0
    demand_gpus: int = 0


def reclaim(servers, jobs, workers, n: int, policy: str, seed: int) -> ReclaimPlan:
    """Returns n on-loan servers under the policy; workers: (job, server, flexible)."""
    candidates = [s for s, server in enumerate(servers) if server.on_loan]
    jobs_on: Dict[int, Dict[int, int]] = {s: {} for s in candidates}
    for j, s, _ in workers:
        if s in jobs_on:
            jobs_on[s][j] = jobs_on[s].get(j, 0) + 1
    if policy == "aryl":
        order, _ = aryl_reclaim(
            candidates,
            [(j, s) for j, s, _ in workers],
            [job.min_workers for job in jobs],
            n,
        )
    elif policy == "scf":
        order = sorted(candidates, key=lambda s: len(jobs_on[s]))[:n]
    elif policy == "random":
        positions = list(range(len(candidates)))
        Rng(seed).shuffle(positions)
        order = [candidates[c] for c in positions[:n]]
    else:
        raise ValueError(f"reclaim policy {policy!r} is not in the reference")
    return give_back(servers, jobs, workers, jobs_on, order)


def give_back(servers, jobs, workers, jobs_on, order: List[int]) -> ReclaimPlan:
    """Returns the servers in order: scale in what stays >= min, preempt the rest."""
    count = [0] * len(jobs)
    for j, _, _ in workers:
        count[j] += 1
    alive, scaled = [True] * len(jobs), [0] * len(jobs)
    plan = ReclaimPlan()
    for s in order:
        plan.servers.append(s)
        plan.demand_gpus += servers[s].gpus
        for j, k in jobs_on[s].items():
            if not alive[j]:
                continue
            if count[j] - k >= jobs[j].min_workers:
                count[j] -= k
                scaled[j] += k
            else:
                alive[j] = False
                plan.preempted.append(j)
    plan.scaled_in = [(j, k) for j, k in enumerate(scaled) if alive[j] and k > 0]
    gone = set(order)
    for j, s, _ in workers:
        if not alive[j] and s not in gone:
            plan.collateral_gpus += jobs[j].gpus_per_worker
    return plan


# ---- loaning (loaning.cpp) ----------------------------------------------------------


class Lender:
    """How many inference servers can be lent, from the load series."""

    def __init__(
        self,
        servers: List[Server],
        times: List[float],
        loads: List[float],
        headroom: float,
        hold: float,
    ):
        self.times, self.loads = list(times), list(loads)
        self.headroom, self.hold = headroom, hold
        self.servers = [s for s, x in enumerate(servers) if x.pool == "inference"]

    def active(self) -> bool:
        """A load series and inference servers to lend."""
        return bool(self.times) and bool(self.servers)

    def load_at(self, t: float) -> float:
        """The load from the last point at or before t (the first before it)."""
        if not self.times:
            return 0.0
        i = bisect.bisect_right(self.times, t)
        return self.loads[0] if i == 0 else self.loads[i - 1]

    def spare_for(self, load: float) -> int:
        """N - ceil(min(1, load x (1 + headroom)) x N)."""
        n = len(self.servers)
        need = min(1.0, load * (1.0 + self.headroom)) * n
        return n - min(n, int(math.ceil(need - 1e-9)))

    def spare(self, t: float) -> int:
        """Servers the inference side can spare at t."""
        return self.spare_for(self.load_at(t))

    def lendable(self, t: float) -> int:
        """Servers spare throughout [t - hold, t]."""
        peak = self.load_at(t - self.hold)
        i = bisect.bisect_right(self.times, t - self.hold)
        while i < len(self.times) and self.times[i] <= t:
            peak = max(peak, self.loads[i])
            i += 1
        return self.spare_for(peak)

    def settled(self) -> float:
        """From then on the loan state cannot change."""
        return self.times[-1] + self.hold if self.times else 0.0


# ---- the engine (engine.hpp, simulator.cpp, progress.cpp) -------------------------


@dataclass
class Progress:
    """A job's fixed amount of work and how far it got (JobProgress)."""

    work: float
    done: float = 0.0
    rate: float = 0.0
    updated: float = 0.0
    paused_until: float = 0.0
    version: int = 0
    restarted: bool = False

    def advance(self, now: float, running: bool) -> float:
        """Brings ``done`` up to now; returns the progress gained."""
        start = max(self.updated, self.paused_until)
        gained = 0.0
        if running and now > start:
            gained = min(self.rate * (now - start), self.work - self.done)
            self.done += gained
        self.updated = now
        return gained

    def finish_time(self, now: float) -> float:
        """When the job finishes at the current rate."""
        return max(now, self.paused_until) + max(0.0, self.work - self.done) / self.rate

    def remaining_fraction(self) -> float:
        """1 - done/work, clamped to [1e-9, 1]."""
        return min(max(1.0 - self.done / self.work, 1e-9), 1.0)


@dataclass
class Outcome:
    """What the differential test compares, per job and in total."""

    start_time: List[float]
    finish_time: List[float]
    preemptions: List[int]
    scaling_ops: List[int]
    work_lost: List[float]
    ran_on_training: List[bool]
    ran_on_inference: List[bool]
    ran_mixed: List[bool]
    reclaims: int
    servers_reclaimed: int
    collateral_gpus: int
    epochs_run: int
    end_time: float


class Simulator:
    """The event loop and its handlers, as aryl::sim::Engine (fixed duration)."""

    def __init__(
        self,
        servers: List[Server],
        jobs: List[Job],
        curves: List[List[float]],
        load_time: List[float],
        load: List[float],
        config: dict,
        full_queue: bool = False,
    ):
        self.servers, self.jobs, self.config = servers, jobs, config
        # Hand every queued job to the kernel, not only those that could fit: the
        # documented rule the engine's shortcut must not change (docs/model.md §5).
        self.full_queue = full_queue
        self.policy = config["policy"]
        self.lender = Lender(
            servers, load_time, load, config["headroom"], config["lend_hold"]
        )
        speeds = config["gpu_speed"]
        self.speed = [speeds.get(s.gpu_type, 1.0) for s in servers]
        given = curves or [[] for _ in jobs]
        self.curves = [
            throughput_curve(job, c, config["scaling"]) for job, c in zip(jobs, given)
        ]
        self.linear = config["scaling"] == "linear" and not any(given)
        self.state = [
            Progress(job.duration * throughput(c, job.reference))
            for job, c in zip(jobs, self.curves)
        ]
        self.status = ["future"] * len(jobs)
        self.workers: List[List[Tuple[int, bool]]] = [[] for _ in jobs]
        self.running_ids: List[int] = []  # in trace order
        self.queue: List[Tuple[float, int]] = []  # sorted (submit time, trace index)
        self.used = [0] * len(servers)
        self.on_loan = [False] * len(servers)
        self.events: list = []
        self.seq = 0
        self.now = 0.0
        for j, job in enumerate(jobs):
            self.push(job.submit_time, ARRIVAL, j)
        self.last_arrival = max([0.0] + [job.submit_time for job in jobs])
        self.dirty = self.epoch_pending = False
        self.unfinished = len(jobs)
        n = len(jobs)
        self.out = Outcome(
            [math.nan] * n,
            [math.nan] * n,
            [0] * n,
            [0] * n,
            [0.0] * n,
            [False] * n,
            [False] * n,
            [False] * n,
            0,
            0,
            0,
            0,
            0.0,
        )

    # events
    def push(self, time: float, kind: int, job: int = -1, version: int = 0) -> None:
        """Queues an event; (time, kind, sequence) orders them."""
        heapq.heappush(self.events, (time, kind, self.seq, job, version))
        self.seq += 1

    def run(self) -> Outcome:
        """Runs to completion or the horizon."""
        if self.jobs:
            self.push(0.0, EPOCH)
            self.epoch_pending = True
            if self.lender.active():
                self.push(0.0, LOAN)
        while self.events and self.unfinished > 0:
            if self.events[0][0] > self.config["horizon"]:
                break
            time, kind, _, job, version = heapq.heappop(self.events)
            self.now = time
            if kind == ARRIVAL:
                self.on_arrival(job)
            elif kind == FINISH:
                self.on_finish(job, version)
            elif kind == LOAN:
                self.on_loan_decision()
            else:
                self.on_epoch()
        self.out.end_time = self.now
        return self.out

    # progress and workers
    def advance(self, j: int) -> None:
        """Brings job j's progress up to now."""
        self.state[j].advance(self.now, self.status[j] == "running")

    def set_rate(self, j: int) -> None:
        """Rate from the workers held; (re)schedules the completion."""
        s = self.state[j]
        s.version += 1
        s.rate = self.progress_rate(j)
        if s.rate > 0.0:
            self.push(s.finish_time(self.now), FINISH, j, s.version)

    def progress_rate(self, j: int) -> float:
        """throughput(workers) x mean speed (x hetero efficiency when mixed)."""
        workers = self.workers[j]
        if not workers:
            return 0.0
        total, mixed = 0.0, False
        first = self.servers[workers[0][0]].gpu_type
        for s, _ in workers:
            total += self.speed[s]
            mixed |= self.servers[s].gpu_type != first
        self.out.ran_mixed[j] |= mixed
        factor = self.config["hetero_efficiency"] if mixed else 1.0
        mean = total / len(workers) * factor
        return throughput(self.curves[j], len(workers)) * mean

    def add_worker(self, j: int, s: int, flexible: bool) -> None:
        """Job j takes one worker on server s."""
        self.workers[j].append((s, flexible))
        self.used[s] += self.jobs[j].gpus_per_worker
        if self.servers[s].pool == "training":
            self.out.ran_on_training[j] = True
        else:
            self.out.ran_on_inference[j] = True

    def remove_worker(self, j: int, k: int) -> None:
        """Job j leaves its k-th worker."""
        s, _ = self.workers[j].pop(k)
        self.used[s] -= self.jobs[j].gpus_per_worker

    def clear_workers(self, j: int) -> None:
        """Job j leaves all its workers."""
        while self.workers[j]:
            self.remove_worker(j, len(self.workers[j]) - 1)

    def queue_remove(self, j: int) -> None:
        """Takes job j out of the arrival-ordered queue."""
        key = (self.jobs[j].submit_time, j)
        del self.queue[bisect.bisect_left(self.queue, key)]

    # handlers
    def on_arrival(self, j: int) -> None:
        """A job joins the queue."""
        self.status[j] = "queued"
        bisect.insort(self.queue, (self.jobs[j].submit_time, j))
        self.dirty = True

    def on_finish(self, j: int, version: int) -> None:
        """A completion, unless stale."""
        if self.status[j] != "running" or version != self.state[j].version:
            return
        self.advance(j)
        s = self.state[j]
        s.done = s.work
        self.clear_workers(j)
        self.status[j] = "finished"
        self.running_ids.remove(j)
        s.version += 1
        self.out.finish_time[j] = self.now
        self.unfinished -= 1
        self.dirty = True

    def preempt(self, j: int) -> None:
        """Back to the queue: keeps progress with a checkpoint, else starts over."""
        s = self.state[j]
        self.advance(j)
        self.clear_workers(j)
        self.out.preemptions[j] += 1
        if self.jobs[j].checkpoint:
            s.restarted = True
        else:
            self.out.work_lost[j] += s.done
            s.done = 0.0
        self.status[j] = "queued"
        self.running_ids.remove(j)
        bisect.insort(self.queue, (self.jobs[j].submit_time, j))
        self.set_rate(j)

    def on_loan_decision(self) -> None:
        """Lends what the hold allows; reclaims at once what the load needs back."""
        lent = self.lent_count()
        spare = self.lender.spare(self.now)
        lendable = min(spare, self.lender.lendable(self.now))
        if lent > spare:
            self.take_back(lent - spare)
        elif lent < lendable:
            more = lendable - lent
            for s in self.lender.servers:
                if not self.on_loan[s] and more > 0:
                    self.on_loan[s] = True
                    more -= 1
            self.dirty = True
        if self.dirty:
            self.wake_epoch()
        if self.unfinished > 0 and self.now < self.lender.settled():
            self.push(self.now + self.config["loan_interval"], LOAN)

    def wake_epoch(self) -> None:
        """An epoch now, unless one is already due."""
        if self.epoch_pending or self.unfinished == 0:
            return
        self.push(self.now, EPOCH)
        self.epoch_pending = True

    def lent_count(self) -> int:
        """Inference servers on loan."""
        return sum(1 for s in self.lender.servers if self.on_loan[s])

    def take_back(self, n: int) -> None:
        """Reclaims n servers: preempt and scale in as the reclaim policy says."""
        servers, jobs, workers, job_of = self.snapshot(False)
        seed = (self.config["seed"] + self.out.reclaims) & MASK64
        plan = reclaim(servers, jobs, workers, n, self.config["reclaim"], seed)
        self.out.reclaims += 1
        self.out.collateral_gpus += plan.collateral_gpus
        self.out.servers_reclaimed += len(plan.servers)
        for j in plan.preempted:
            self.preempt(job_of[j])
        for j, _ in plan.scaled_in:
            sj = job_of[j]
            self.advance(sj)
            for k in reversed(range(len(self.workers[sj]))):
                if self.workers[sj][k][0] in plan.servers:
                    self.remove_worker(sj, k)
            self.out.scaling_ops[sj] += 1
            self.set_rate(sj)
        for s in plan.servers:
            self.on_loan[s] = False
        self.dirty = True

    def on_epoch(self) -> None:
        """Plans with the kernel if anything changed; schedules the next epoch."""
        self.epoch_pending = False
        if self.dirty:
            self.dirty = False
            servers, jobs, workers, job_of = self.snapshot(True)
            if jobs:
                options = {
                    "policy": self.policy,
                    "placement": self.config["placement"],
                    "backfill": self.config["backfill"],
                    "speed": self.speed,
                    "hetero_efficiency": self.config["hetero_efficiency"],
                    "remaining": [self.state[j].remaining_fraction() for j in job_of],
                    "throughput": []
                    if self.linear
                    else [self.curves[j] for j in job_of],
                }
                start, stop = Epoch(servers, jobs, workers, options).run()
                self.apply(start, stop, workers, job_of)
                self.out.epochs_run += 1
        if self.unfinished > 0 and not self.stuck():
            self.push(self.now + self.config["schedule_interval"], EPOCH)
            self.epoch_pending = True

    def stuck(self) -> bool:
        """Nothing runs, arrives or changes loans: queued jobs can never start."""
        if self.now < self.last_arrival or self.dirty:
            return False
        if self.lender.active() and self.now < self.lender.settled():
            return False
        return not self.running_ids

    def snapshot(self, with_queue: bool):
        """What the kernels see: servers, running (then queued) jobs, workers."""
        servers = [
            Server(s.pool, s.gpus, s.gpu_type, self.on_loan[i])
            for i, s in enumerate(self.servers)
        ]
        jobs, workers, job_of = [], [], []

        def add(j: int) -> None:
            index = len(jobs)
            job_of.append(j)
            jobs.append(self.jobs[j])
            workers.extend((index, s, flexible) for s, flexible in self.workers[j])

        for j in self.running_ids:
            self.advance(j)  # the view sees the work left now
            add(j)
        if with_queue and self.full_queue:
            for _, j in self.queue:
                add(j)
        elif with_queue:
            bound = self.releasable_gpus()
            blocker = self.fifo_blocker(bound)
            keep_hopeless = self.policy == "gandiva"  # Gandiva must see a pending job
            for key in self.queue:
                if not key < blocker:
                    break
                job = self.jobs[key[1]]
                fits = base_demand(job, self.policy) * job.gpus_per_worker <= bound
                if fits or keep_hopeless:
                    keep_hopeless = keep_hopeless and fits
                    add(key[1])
        return servers, jobs, workers, job_of

    def releasable_gpus(self) -> int:
        """Free GPUs on usable servers plus those held by flexible workers."""
        gpus = 0
        for s, server in enumerate(self.servers):
            if server.pool == "training" or self.on_loan[s]:
                gpus += server.gpus - self.used[s]
        if scales_elastic_jobs(self.policy):
            for j in self.running_ids:
                job = self.jobs[j]
                extra = len(self.workers[j]) - job.min_workers
                if extra > 0:
                    gpus += extra * job.gpus_per_worker
        return gpus

    def fifo_blocker(self, bound: int) -> Tuple[float, int]:
        """Strict fifo: the first queued job that surely cannot start."""
        none = (math.inf, 0)
        if self.policy != "fifo" or self.config["backfill"]:
            return none
        for key in self.queue:
            job = self.jobs[key[1]]
            bound -= base_demand(job, self.policy) * job.gpus_per_worker
            if bound < 0:
                return key
        return none

    def apply(
        self, start: list, stop: List[int], workers: list, job_of: List[int]
    ) -> None:
        """Carries out a decision: stops, then starts, then new rates."""
        position, seen = [], [0] * len(job_of)
        for j, _, _ in workers:
            position.append(seen[j])
            seen[j] += 1
        stops: List[List[int]] = [[] for _ in job_of]
        for w in stop:
            stops[workers[w][0]].append(position[w])
        starts = [False] * len(job_of)
        for j, _, _ in start:
            starts[j] = True
        touched = []
        for i, j in enumerate(job_of):
            if not stops[i] and not starts[i]:
                continue
            self.advance(j)
            was_running = bool(self.workers[j])
            for k in sorted(stops[i], reverse=True):
                self.remove_worker(j, k)
            if was_running:
                self.out.scaling_ops[j] += 1
            touched.append(j)
        for i, s, flexible in start:
            self.add_worker(job_of[i], s, flexible)
        started = {job_of[i] for i, _, _ in start}
        for j in touched:
            s = self.state[j]
            if self.status[j] == "queued" and self.workers[j]:
                self.status[j] = "running"
                self.queue_remove(j)
                bisect.insort(self.running_ids, j)
                s.updated = self.now
                if math.isnan(self.out.start_time[j]):
                    self.out.start_time[j] = self.now
                overhead = "restart_overhead" if s.restarted else "start_overhead"
                s.paused_until = self.now + self.config.get(overhead, 0.0)
                s.restarted = False
            elif j in started and self.config.get("start_overhead", 0.0) > 0.0:
                s.paused_until = max(
                    s.paused_until, self.now + self.config["start_overhead"]
                )
            self.set_rate(j)


def from_columns(
    server_columns: dict, job_columns: dict
) -> Tuple[List[Server], List[Job]]:
    """Servers and jobs from the columns ``aryl._core.simulate`` takes."""
    pools = ("training", "inference")
    servers = [
        Server(pools[p], g, t)
        for p, g, t in zip(
            server_columns["pool"], server_columns["gpus"], server_columns["gpu_type"]
        )
    ]
    names = [f.name for f in fields(Job)]  # aryl.Job's, less the id (a test checks)
    jobs = [Job(*values) for values in zip(*(job_columns[n] for n in names))]
    return servers, jobs


def simulate(
    server_columns: dict,
    job_columns: dict,
    curves: List[List[float]],
    load_time: List[float],
    load: List[float],
    config: dict,
    full_queue: bool = False,
) -> Outcome:
    """Runs the reference on the arguments of ``aryl._core.simulate``.

    ``full_queue``: hand the kernel every queued job at each epoch (slower; the
    decisions must be the same).
    """
    if config["policy"] == "tiresias":
        raise ValueError("the reference covers the kernel allocator only")
    servers, jobs = from_columns(server_columns, job_columns)
    return Simulator(servers, jobs, curves, load_time, load, config, full_queue).run()
