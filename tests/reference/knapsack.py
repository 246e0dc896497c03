"""Reference: the multiple-choice knapsack by dynamic programming with a full table.

The same recurrence and tie rule as cpp/core/src/knapsack.cpp, so on the same input
it makes the same choices (the same float operations in the same order).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

TOLERANCE = 1e-9
UNREACHABLE = float("-inf")


def knapsack(groups: Sequence[Sequence[Tuple[int, float]]], capacity: int) -> List[int]:
    """Per group, the index of the chosen (weight, value) item or -1 for none."""
    # Only items that fit and are worth something can be chosen.
    options = [
        [(w, v, i) for i, (w, v) in enumerate(group) if w <= capacity and v > 0]
        for group in groups
    ]
    scale = 0.0
    for group in options:  # a plain loop: sum() of floats may round differently
        scale += max((v for _, v, _ in group), default=0.0)
    tol = TOLERANCE * scale

    # Add the groups last first, so that the traceback decides group 0 first.
    order = list(reversed(range(len(groups))))
    # best[s][c]: the best value of the first s groups added at total weight exactly c;
    # took[s][c]: the option the s-th group added took there (None for nothing).
    best = [[0.0] + [UNREACHABLE] * capacity]
    took: List[List[Optional[Tuple[int, float, int]]]] = []
    for g in order:
        prev = best[-1]
        row = list(prev)
        choice: List[Optional[Tuple[int, float, int]]] = [None] * (capacity + 1)
        for c in range(capacity + 1):
            for w, v, i in options[g]:  # none first, then in index order
                if w <= c and prev[c - w] + v > row[c] + tol:
                    row[c] = prev[c - w] + v
                    choice[c] = (w, v, i)
        best.append(row)
        took.append(choice)

    # The least total weight whose value is within the tolerance of the best.
    top = max(best[-1])
    c = next(c for c, value in enumerate(best[-1]) if value >= top - tol)
    out = [-1] * len(groups)
    for s in reversed(range(len(order))):
        option = took[s][c]
        if option is not None:
            w, _, i = option
            out[order[s]] = i
            c -= w
    return out
