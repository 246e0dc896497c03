"""Benchmark of the multiple-choice knapsack (phase 2 of Algorithm 2).

Two instances built as the scheduler builds them: each elastic job is a group of
items "w more workers", w = 1..k, weight w*D GPUs (D = GPUs per worker) and value
T*w/(w + min), the running time saved with linear scaling (T = running time at
min workers). (a) The paper's size: 354 items over 59 jobs, 245 free GPUs.
(b) 500 jobs x 16 items on 4,096 free GPUs. Times the raw kernel
(`aryl._core.knapsack`, including the conversion of the Python lists), the public
`aryl.knapsack` (plus validation in Python), and the plain-Python reference with a full
table (tests/reference/knapsack.py), checking that all three choose the same.

Run: python benchmarks/knapsack.py
"""

from __future__ import annotations

import random
from functools import partial

from reference.knapsack import knapsack as reference_knapsack

import aryl
from _common import fmt_time, machine, median_seconds, table
from aryl import _core


def elastic_groups(jobs: int, items: int, seed: int):
    """`jobs` groups of `items` items "w more workers" each (the last may be shorter)."""
    rng = random.Random(seed)
    groups = []
    for _ in range(jobs):
        d = rng.choice([1, 2, 2, 4, 4, 8])  # GPUs per worker
        low = rng.randint(1, 4)  # min workers
        t = 3600 * 10 ** rng.uniform(-0.5, 1.5)  # seconds at min workers
        groups.append([(w * d, t * w / (w + low)) for w in range(1, items + 1)])
    return groups


def paper_size(total_items: int = 354, seed: int = 1):
    """Jobs of 2-10 extra-worker items until there are `total_items` items."""
    rng = random.Random(seed)
    groups = []
    while sum(map(len, groups)) < total_items:
        k = min(rng.randint(2, 10), total_items - sum(map(len, groups)))
        groups += elastic_groups(1, k, rng.randrange(2**32))
    return groups


def main() -> None:
    cases = [
        ("(a) paper size", paper_size(), 245),
        ("(b) 500 jobs x 16 items", elastic_groups(500, 16, seed=2), 4096),
    ]
    rows = []
    for name, groups, capacity in cases:
        choice = _core.knapsack(groups, capacity)
        assert aryl.knapsack(groups, capacity) == choice
        assert reference_knapsack(groups, capacity) == choice
        kernel = median_seconds(partial(_core.knapsack, groups, capacity))
        # At capacity 0 nothing fits, so this is the cost of converting the lists.
        convert = median_seconds(partial(_core.knapsack, groups, 0))
        public = median_seconds(partial(aryl.knapsack, groups, capacity), repeat=20)
        python = median_seconds(
            partial(reference_knapsack, groups, capacity), repeat=3, min_total=0
        )
        items = sum(map(len, groups))
        used = sum(groups[g][i][0] for g, i in enumerate(choice) if i >= 0)
        rows.append(
            (
                name,
                len(groups),
                items,
                capacity,
                fmt_time(kernel),
                fmt_time(convert),
                fmt_time(public),
                fmt_time(python),
                f"{python / kernel:,.0f}×",
                f"{sum(i >= 0 for i in choice)} jobs, {used} GPUs",
            )
        )
    print(
        table(
            [
                "instance",
                "groups",
                "items",
                "capacity",
                "C++ kernel (_core)",
                "of which conversion",
                "aryl.knapsack",
                "plain Python",
                "kernel speed-up",
                "chosen",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    print(f"Machine: {machine()}\n")
    main()
