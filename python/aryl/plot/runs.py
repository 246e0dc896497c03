"""The runs a figure compares, named: what every plot function of several runs takes."""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple, Union

from ..engine.result import Result

#: A single ``Result``, a sequence of them (named by their ``.label``) or a
#: mapping name -> ``Result``.
Results = Union[Result, Sequence[Result], Mapping[str, Result]]


def named(results: Results) -> List[Tuple[str, Result]]:
    """(name, Result) pairs; names unique, from mapping keys or labels."""
    if isinstance(results, Result):
        pairs = [(results.label, results)]
    elif isinstance(results, Mapping):
        pairs = [(str(k), v) for k, v in results.items()]
    else:
        pairs = [(getattr(r, "label", ""), r) for r in results]
    runs: List[Tuple[str, Result]] = []
    used: Dict[str, int] = {}
    for i, (name, result) in enumerate(pairs, 1):
        if not isinstance(result, Result):
            raise TypeError(
                f"expected aryl.sim.Result, got {type(result).__name__} for {name!r}"
            )
        name = name or f"run {i}"
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name} ({used[name]})"
        runs.append((name, result))
    return runs
