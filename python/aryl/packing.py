"""The multiple-choice knapsack of elastic scaling (paper §5.2, phase 2 of Algorithm 2)."""

from __future__ import annotations

from typing import Any, Iterable, List, Tuple

from . import _core
from .model import _integer, _real

# The kernel takes C ints; a capacity this large would need 16 GiB of DP rows anyway.
_MAX_CAPACITY = 2**31 - 2


def knapsack(groups: Iterable[Iterable[Tuple[int, float]]], capacity: int) -> List[int]:
    """Pick at most one item per group, total weight within ``capacity``, maximising value.

    In Aryl's scheduler each elastic job is a group whose items are "``w`` more
    workers": weight ``w * gpus_per_worker`` GPUs, value the running time saved.
    The answer is exact: dynamic programming over total weight in the C++ core,
    O(items x capacity) time. Choices are kept in a table of 2 bytes per group and
    unit of capacity up to 2**25 entries; beyond that they are recovered by divide
    and conquer in O(capacity) memory per level (same answer, a few times slower).

    Parameters
    ----------
    groups
        One sequence of ``(weight, value)`` pairs per group. Weights are integers
        >= 1; values are finite numbers. Items heavier than ``capacity``, and items
        of value <= 0, are never chosen. Empty groups are allowed.
    capacity
        The total weight available, an integer >= 0.

    Returns
    -------
    list of int
        Per group, the index of the chosen item in that group, or -1 for none.

    Raises
    ------
    ValueError
        On bad input, naming the group and item (``"group 3, item 1: weight must
        be >= 1, got 0"``): a weight that is not an integer or is < 1, a value that
        is not a finite number, an item that is not a pair, a capacity that is
        negative or not an integer.

    Notes
    -----
    Ties are broken deterministically, in this order:

    1. the largest total value, where totals within ``1e-9 * scale`` count as
       equal (``scale`` = the sum over groups of the largest positive value that
       fits), so rounding in sums of floats cannot decide;
    2. then the least total weight;
    3. then the lexicographically first choice, group 0 first, with "none"
       before item 0 before item 1: earlier groups take nothing or low indices,
       later groups take what remains.

    Examples
    --------
    The paper's example: job A gains 50 from 2 more GPUs, job B 20, 30, 36 or 40
    from 1, 2, 3 or 4; on 4 free GPUs A takes its item and B its 2-GPU item.

    >>> knapsack([[(2, 50)], [(1, 20), (2, 30), (3, 36), (4, 40)]], 4)
    [0, 1]
    """
    capacity = _integer(capacity, "capacity")
    if capacity > _MAX_CAPACITY:
        raise ValueError(f"capacity must be at most {_MAX_CAPACITY}, got {capacity}")
    pairs = [_group(g, group, capacity) for g, group in enumerate(groups)]
    return list(_core.knapsack(pairs, capacity))


def _group(g: int, group: Any, capacity: int) -> List[Tuple[int, float]]:
    try:
        items = list(group)
    except TypeError:
        raise ValueError(
            f"group {g} must be a sequence of (weight, value) pairs, got {group!r}"
        ) from None
    out = []
    for i, item in enumerate(items):
        try:
            weight, value = item
        except (TypeError, ValueError):
            raise ValueError(
                f"group {g}, item {i}: expected a (weight, value) pair, got {item!r}"
            ) from None
        # Plain ints and floats skip the general checks: they are most of the cost.
        if type(weight) is not int:
            weight = _integer(weight, f"group {g}, item {i}: weight")
        if type(value) is not float:
            value = _real(value, f"group {g}, item {i}: value")
        if weight < 1:
            raise ValueError(f"group {g}, item {i}: weight must be >= 1, got {weight}")
        # Too heavy to fit either way; capacity + 1 keeps it within a C int.
        out.append((weight if weight <= capacity else capacity + 1, value))
    return out
