"""Reference: one round of the Pollux artifact's Tiresias policy, on index lists.

Mirrors cpp/core/src/tiresias.cpp: demotion at threshold GPU-seconds, admission by
total free GPUs in queue order, new jobs placed on the nodes with most free GPUs.
"""

from __future__ import annotations

from typing import List


def tiresias_round(
    gpus: List[int],
    executed: List[float],
    allocations: List[List[int]],
    queue0: List[int],
    queue1: List[int],
    node_gpus: List[int],
    threshold: float = 16 * 3600.0,
):
    """The artifact's TiresiasPolicy.optimize, one round, on index lists."""
    q0 = [j for j in queue0 if executed[j] * gpus[j] < threshold]
    demoted = [j for j in queue0 if executed[j] * gpus[j] >= threshold]
    q1 = list(queue1) + demoted
    total = sum(node_gpus)
    running = [False] * len(gpus)
    alloc = [[] for _ in gpus]
    for j in q0 + q1:
        if gpus[j] <= total:
            running[j] = True
            total -= gpus[j]
            alloc[j] = list(allocations[j])
    free = list(node_gpus)
    for a in alloc:
        for node in a:
            free[node] -= 1
    for j in q0 + q1:
        if running[j] and not alloc[j]:
            while len(alloc[j]) < gpus[j]:
                node = max(range(len(free)), key=lambda k: (free[k], -k))
                take = min(free[node], gpus[j] - len(alloc[j]))
                alloc[j] += [node] * take
                free[node] -= take
    return {
        "queue0": q0,
        "queue1": q1,
        "running": running,
        "allocations": alloc,
        "demoted": demoted,
    }
