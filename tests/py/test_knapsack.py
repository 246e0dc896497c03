import itertools
import math
import random

import numpy as np
import pytest
from reference.knapsack import knapsack as reference_knapsack

import aryl
from aryl import _core

PAPER = [[(2, 50)], [(1, 20), (2, 30), (3, 36), (4, 40)]]


def value(groups, choice):
    return sum(groups[g][i][1] for g, i in enumerate(choice) if i >= 0)


def weight(groups, choice):
    return sum(groups[g][i][0] for g, i in enumerate(choice) if i >= 0)


def brute_force(groups, capacity):
    """All choices in lexicographic order: the first of largest value, then least weight."""
    best, key = None, None
    for choice in itertools.product(*[range(-1, len(group)) for group in groups]):
        if weight(groups, choice) <= capacity:
            k = (value(groups, choice), -weight(groups, choice))
            if key is None or k > key:
                best, key = list(choice), k
    return best


def random_instance(rng, integer_values):
    """0-5 groups of 0-4 items, weights 1-8, a few values zero or negative."""
    groups = []
    for _ in range(rng.randint(0, 5)):
        group = []
        for _ in range(rng.randint(0, 4)):
            v = rng.randint(0, 11) if integer_values else 100 * rng.random()
            group.append((rng.randint(1, 8), -v if rng.random() < 0.1 else v))
        groups.append(group)
    return groups, rng.randint(0, 25)


def test_paper_example():
    choice = aryl.knapsack(PAPER, 4)
    assert choice == [0, 1]
    assert value(PAPER, choice) == 80


@pytest.mark.parametrize(
    "capacity, expected",
    [
        (0, [-1, -1]),
        (1, [-1, 0]),
        (2, [0, -1]),
        (3, [0, 0]),
        (5, [0, 2]),
        (6, [0, 3]),
        (99, [0, 3]),
    ],
)
def test_paper_example_other_capacities(capacity, expected):
    assert aryl.knapsack(PAPER, capacity) == expected
    assert reference_knapsack(PAPER, capacity) == expected


def test_ties_prefer_less_weight_then_earlier_groups_taking_less():
    assert aryl.knapsack([[(3, 10), (2, 10)]], 5) == [1]
    assert aryl.knapsack([[(2, 10), (2, 10)]], 5) == [0]
    assert aryl.knapsack([[(2, 10)], [(2, 10)]], 2) == [-1, 0]
    assert aryl.knapsack([[(1, 0.0)], [(1, -5)], [(1, 1e-30)]], 10) == [-1, -1, 0]
    assert aryl.knapsack([[(2, 1.0 + 1e-12), (1, 1.0)]], 5) == [1]


@pytest.mark.parametrize("integer_values", [True, False])
def test_kernel_reference_and_brute_force_agree(integer_values):
    rng = random.Random(1 if integer_values else 2)
    for _ in range(200):
        groups, capacity = random_instance(rng, integer_values)
        kernel = aryl.knapsack(groups, capacity)
        # Same recurrence and float operations: the same choice, ties included.
        assert kernel == reference_knapsack(groups, capacity), (groups, capacity)
        assert weight(groups, kernel) <= capacity
        best = brute_force(groups, capacity)
        scale = sum(max([v for w, v in g if w <= capacity] + [0.0]) for g in groups)
        assert value(groups, kernel) == pytest.approx(
            value(groups, best), abs=1e-9 * scale + 1e-12
        )
        if integer_values:  # exact sums: the tie rule alone decides
            assert kernel == best, (groups, capacity)


def test_larger_random_instances_match_the_reference():
    rng = random.Random(3)
    for _ in range(20):
        groups = [
            [
                (
                    rng.randint(1, 40),
                    float(rng.randint(1, 30))
                    if rng.random() < 0.5
                    else 30 * rng.random(),
                )
                for _ in range(rng.randint(0, 8))
            ]
            for _ in range(rng.randint(1, 25))
        ]
        capacity = rng.randint(0, 200)
        assert aryl.knapsack(groups, capacity) == reference_knapsack(groups, capacity)


def test_accepted_input_forms():
    as_lists = [[list(item) for item in group] for group in PAPER]
    as_arrays = [np.array(group, dtype=float) for group in PAPER]  # weights as 2.0 etc.
    generator = (iter(group) for group in PAPER)
    for groups in (as_lists, as_arrays, generator, tuple(map(tuple, PAPER))):
        assert aryl.knapsack(groups, np.int64(4)) == [0, 1]
    assert aryl.knapsack(PAPER, 4.0) == [0, 1]
    assert aryl.knapsack([], 3) == [] and aryl.knapsack([[], []], 3) == [-1, -1]
    assert aryl.knapsack([[(10**12, 5.0)], [(1, 1.0)]], 10) == [
        -1,
        0,
    ]  # too heavy, never chosen
    assert aryl.knapsack([[(3, 5)], [(2, 7), (4, 8)]], 2**31 - 2) == [0, 1]


@pytest.mark.parametrize(
    "groups, capacity, message",
    [
        (PAPER, -1, "capacity must be >= 0, got -1"),
        (PAPER, 2.5, "capacity must be an integer, got 2.5"),
        (PAPER, "4", "capacity must be an integer, got '4'"),
        (PAPER, True, "capacity must be an integer, got True"),
        (PAPER, 2**31, "capacity must be at most 2147483646, got 2147483648"),
        (
            [[(1, 1)], [], [(2, 3)], [(1, 1), (0, 2)]],
            4,
            "group 3, item 1: weight must be >= 1, got 0",
        ),
        (
            [[(1, 1), (1.5, 2)]],
            4,
            r"group 0, item 1: weight must be an integer, got 1\.5",
        ),
        (
            [[(1, 1)], [("2", 2)]],
            4,
            "group 1, item 0: weight must be an integer, got '2'",
        ),
        ([[(1, 1)], [(2, "x")]], 4, "group 1, item 0: value must be a number, got 'x'"),
        (
            [[(1, 1)], [(2, math.nan)]],
            4,
            "group 1, item 0: value must be finite, got nan",
        ),
        ([[(1, math.inf)]], 4, "group 0, item 0: value must be finite, got inf"),
        (
            [[(1, 1, 1)]],
            4,
            r"group 0, item 0: expected a \(weight, value\) pair, got \(1, 1, 1\)",
        ),
        (
            [[(1, 1)], [3]],
            4,
            r"group 1, item 0: expected a \(weight, value\) pair, got 3",
        ),
        (
            [[(1, 1)], 7],
            4,
            r"group 1 must be a sequence of \(weight, value\) pairs, got 7",
        ),
    ],
)
def test_bad_input(groups, capacity, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        aryl.knapsack(groups, capacity)


def test_raw_core_function():
    assert _core.knapsack(
        [[(2, 50.0)], [(1, 20.0), (2, 30.0), (3, 36.0), (4, 40.0)]], 4
    ) == [0, 1]
    with pytest.raises(
        ValueError, match="^group 1, item 0: weight must be >= 1, got -3$"
    ):
        _core.knapsack([[(1, 1.0)], [(-3, 1.0)]], 4)
    with pytest.raises(ValueError, match="^capacity must be >= 0, got -2$"):
        _core.knapsack([], -2)
