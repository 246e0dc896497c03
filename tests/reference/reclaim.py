"""Reference: Algorithm 1 with aryl's tie-breaking, as in cpp/core/src/reclaim.cpp."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

TOLERANCE = 1e-9


def aryl_reclaim(
    on_loan: Sequence[int],
    workers: Sequence[Tuple[int, int]],
    min_workers: Sequence[int],
    n: int,
) -> Tuple[List[int], List[int]]:
    """Greedy reclaim; returns (servers in the order chosen, jobs preempted).

    ``on_loan`` lists candidate server indices in input order; ``workers`` is
    (job, server) per worker (any server); ``min_workers`` per job.
    """
    count: Dict[int, int] = defaultdict(int)
    on: Dict[int, Dict[int, int]] = {s: {} for s in on_loan}
    for job, server in workers:
        count[job] += 1
        if server in on:
            on[server][job] = on[server].get(job, 0) + 1
    spans: Dict[int, List[int]] = defaultdict(list)
    for s in on_loan:
        for job in on[s]:
            spans[job].append(s)
    alive = set(count)
    returned: set = set()

    def effect(s: int) -> Tuple[float, int, int]:
        cost, preempted, scaled = 0.0, 0, 0
        for job, k in on[s].items():
            if job not in alive:
                continue
            if count[job] - k >= min_workers[job]:
                scaled += k
            else:
                span = sum(1 for t in spans[job] if t not in returned)
                cost += 1.0 / span
                preempted += 1
        return cost, preempted, scaled

    def better(a, b, last: bool) -> bool:
        if last and a[1] != b[1]:
            return a[1] < b[1]
        if abs(a[0] - b[0]) > TOLERANCE:
            return a[0] < b[0]
        return (a[1], a[2]) < (b[1], b[2])

    chosen: List[int] = []
    preempted: List[int] = []
    for pick in range(n):
        last = pick == n - 1
        best, best_effect = None, None
        for s in on_loan:
            if s in returned:
                continue
            e = effect(s)
            if best is None or better(e, best_effect, last):
                best, best_effect = s, e
        returned.add(best)
        chosen.append(best)
        for job, k in on[best].items():
            if job not in alive:
                continue
            if count[job] - k >= min_workers[job]:
                count[job] -= k
            else:
                alive.discard(job)
                preempted.append(job)
    return chosen, preempted
