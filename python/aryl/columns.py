"""Column codecs: a column of record values as the typed array of its field, one rule
for ``JobTable`` and ``ClusterState``.

Each ``*_column(values)`` takes a one-dimensional NumPy array or pandas Series and
returns the typed array when every value is of the field's kind, else ``None``: the
caller then checks the values one by one by the record rules, to name the first bad
one (``JobTable`` through the ``Job`` records, ``ClusterState`` with its own messages).
The kinds: an integer field takes whole, finite numbers (not bools); a real field any
numbers (not bools); a flag field bools only (0 and 1 are not flags, as for records); a
GPU-type field strings, with ``None`` (``ANY_TYPE``) where missing. Object columns of
plain Python numbers or bools (what lists of records give) convert without the slow path.

"Any GPU type" is spelled ``None`` in every Python column; ``core_types`` turns it
into the compiled core's ``""`` at the boundary.
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import pandas as pd

#: A job's GPU type when it may run on any type.
ANY_TYPE = None


def _plain(values: Any, *types: type) -> np.ndarray:
    """The column as an array; an object column whose values are all of ``types``
    exactly, as a numeric array."""
    array = np.asarray(values)
    if array.dtype.kind == "O" and len(array):
        items = array.tolist()
        if all(type(v) in types for v in items):
            return np.asarray(items)
    return array


def int_column(values: Any) -> Optional[np.ndarray]:
    """Whole, finite numbers as int64; ``None`` if any value is not one."""
    array = _plain(values, int)
    kind = array.dtype.kind
    if kind == "u" and len(array) and array.max() > np.iinfo(np.int64).max:
        return None  # beyond int64 (NumPy reads 2**63 alone as uint64): would wrap
    if kind in "iu":
        return array.astype(np.int64)
    whole = (
        kind == "f" and np.isfinite(array).all() and (array == np.floor(array)).all()
    )
    if whole and (np.abs(array) < 2.0**63).all():  # beyond, the cast would wrap
        return array.astype(np.int64)
    return None


def real_column(values: Any) -> Optional[np.ndarray]:
    """Numbers as float64; ``None`` if any value is not one (bools are not)."""
    array = _plain(values, float, int)
    return array.astype(np.float64) if array.dtype.kind in "iuf" else None


def flag_column(values: Any) -> Optional[np.ndarray]:
    """Bools as a bool array; ``None`` if any value is not a bool."""
    array = _plain(values, bool)
    return array.astype(bool) if array.dtype.kind == "b" else None


def type_column(values: Any) -> Optional[np.ndarray]:
    """GPU types as an object array of ``str``, ``ANY_TYPE`` where missing (None, NaN,
    NA); ``None`` if a value is neither. One shared ``str`` per distinct type: a few
    types over 500k jobs would otherwise be 500k ``str`` objects (~25 MB)."""
    given = (
        values if isinstance(values, pd.Series) else np.asarray(values, dtype=object)
    )
    codes, names = pd.factorize(given)
    distinct = np.empty(len(names) + 1, dtype=object)  # the last: missing (code -1)
    distinct[: len(names)] = list(names)
    if not all(isinstance(v, str) for v in distinct[:-1].tolist()):
        return None
    distinct[-1] = ANY_TYPE
    out: np.ndarray = distinct[codes]
    return out


def core_types(types: np.ndarray) -> List[str]:
    """GPU types as the compiled core reads them: ``""`` for any type."""
    return ["" if t is ANY_TYPE else t for t in types.tolist()]
