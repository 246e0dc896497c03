"""Servers, jobs and workers as validated NumPy tables: what ``ClusterState`` keeps.

Records, dicts, DataFrames and mappings of columns are checked with the record API's
rules and messages (naming the record), column by column where the values allow.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

import numpy as np

from .. import _core
from ..columns import (
    ANY_TYPE,
    flag_column,
    int_column,
    real_column,
    type_column,
)
from ..defaults import DEFAULT_GPU_TYPE
from ..jobtable import FLAG_FIELDS, GROUP_FIELDS, INT_FIELDS, REAL_FIELDS
from ..model import (
    POOLS,
    Job,
    Records,
    Server,
    Worker,
    _flag,
    _gpu_type,
    _integer,
    _real,
    as_records,
)
from ..validation import MAX_INT

# The job columns by kind are JobTable's (one job field list).
_INT = {"job": INT_FIELDS, "server": ("gpus",), "worker": ()}
_REAL = {"job": REAL_FIELDS, "server": (), "worker": ()}
_FLAG = {"job": FLAG_FIELDS, "server": ("on_loan",), "worker": ("flexible",)}
_CLASS = {"job": Job, "server": Server, "worker": Worker}
#: The NumPy type of each numeric or flag field, as the tables keep it.
_DTYPES = {
    (what, name): dtype
    for kinds, dtype in ((_INT, np.int64), (_REAL, np.float64), (_FLAG, bool))
    for what, names in kinds.items()
    for name in names
}
#: Each numeric or flag field's kind as ``_core.record_columns`` reads it.
_KINDS = {key: np.dtype(dtype).kind for key, dtype in _DTYPES.items()}
Table = Dict[str, np.ndarray]


def _objects(values: Iterable[Any]) -> np.ndarray:
    """A 1-d object array of ``values`` (tuples stay elements, not rows)."""
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _is_frame(records: Any) -> bool:
    return hasattr(records, "columns") and hasattr(records, "to_numpy")


def _raw_columns(data: Any, what: str) -> Tuple[Dict[str, Any], int]:
    """A DataFrame or a mapping of equal-length columns as a dict of 1-d arrays."""
    if _is_frame(data):
        columns = {str(c): data[c].to_numpy() for c in data.columns}
    elif isinstance(data, Mapping):
        columns = {}
        for name, values in data.items():
            array = np.asarray(values)
            if array.dtype.kind in "US":  # text: keep Python str objects
                array = array.astype(object)
            columns[name] = array
    else:
        raise ValueError(
            f"{what}s must be a DataFrame or a mapping of columns, "
            f"got {type(data).__name__}"
        )
    fields = [f.name for f in dataclasses.fields(_CLASS[what])]
    unknown = sorted(set(columns) - set(fields), key=str)
    if unknown:
        raise ValueError(
            f"{what}s: unknown field(s) {unknown}; expected some of {sorted(fields)}"
        )
    required = [
        f.name
        for f in dataclasses.fields(_CLASS[what])
        if f.default is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in columns]
    if missing:
        raise ValueError(f"{what}s: missing field(s) {missing}")
    lengths = {name: (a.ndim, len(a) if a.ndim else 0) for name, a in columns.items()}
    n = lengths[required[0]][1]
    for name, (ndim, length) in lengths.items():
        if ndim != 1 or length != n:
            raise ValueError(
                f"{what}s: column {name!r} must be one-dimensional with {n} "
                f"values (one per record)"
            )
    return columns, n


def _records_columns(records: Records, what: str) -> Dict[str, Any]:
    """Dataclasses or dicts (checked one by one, as by the record API) as columns.

    The records have checked their own fields' types, so a numeric or flag field is
    built as its NumPy column in one call (no per-value check later); a field that
    does not fit one (a ``None`` ``Worker.gpus``, an int beyond 64 bits) stays an
    object column, checked value by value as other inputs are."""
    cls = _CLASS[what]
    items: List[Any] = as_records(records, cls, what)
    fields = dataclasses.fields(cls)
    kinds = "".join(_KINDS.get((what, f.name), "O") for f in fields)
    read = _core.record_columns(items, [f.name for f in fields], kinds)  # one C pass
    return {
        f.name: column
        for f, (column, all_none) in zip(fields, read)
        if not (f.default is None and all_none)  # optional, nobody gave it: default
    }


def _label(what: str, ids: np.ndarray, row: int) -> str:
    return f"{what} {ids[row]!r}" if what != "worker" else f"worker {row}"


def _int_column(
    values: np.ndarray, name: str, what: str, ids: np.ndarray
) -> np.ndarray:
    fast = int_column(values)
    if fast is not None:
        return fast
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
    elif kind != "O":
        bad = np.ones(len(values), dtype=bool)
    else:
        numbers = [
            _integer(v, f"{_label(what, ids, i)}: {name}") for i, v in enumerate(values)
        ]
        for i, number in enumerate(numbers):  # the core's ints are 32-bit
            if not -MAX_INT - 1 <= number <= MAX_INT:
                raise ValueError(
                    f"{_label(what, ids, i)}: {name} must be in "
                    f"[{-MAX_INT - 1}, {MAX_INT}], got {number}"
                )
        return np.array(numbers, dtype=np.int64)
    row = int(np.flatnonzero(bad)[0])
    value = values.tolist()[row]  # a Python number, printed as the record API does
    raise ValueError(
        f"{_label(what, ids, row)}: {name} must be an integer, got {value!r}"
    )


def _real_column(
    values: np.ndarray, name: str, what: str, ids: np.ndarray
) -> np.ndarray:
    fast = real_column(values)
    if fast is not None:
        return fast
    return np.array(
        [_real(v, f"{_label(what, ids, i)}: {name}") for i, v in enumerate(values)],
        dtype=np.float64,
    )


def _flag_column(
    values: np.ndarray, name: str, what: str, ids: np.ndarray
) -> np.ndarray:
    fast = flag_column(values)  # 0/1 are not flags, as for records
    if fast is not None:
        return fast
    values = np.asarray(values)
    return np.array(
        [
            _flag(v, f"{_label(what, ids, i)}: {name}")
            for i, v in enumerate(values.tolist())  # Python values, named as records
        ],
        dtype=bool,
    )


def _type_column(
    values: Any, what: str, ids: np.ndarray, field: str = "gpu_type"
) -> np.ndarray:
    """GPU types (or the optional names of ``field``: a job's ``user``, ``vc``) as an
    object array of str, None where missing (None, NaN, NA)."""
    if values is None:  # np.empty's object array holds None: fast, np.full is not
        missing = np.empty(len(ids), dtype=object)
        if ANY_TYPE is not None:
            missing[:] = ANY_TYPE
        return missing
    out = type_column(values)
    if out is None:  # the first bad value, named as records do
        for i, v in enumerate(np.asarray(values, dtype=object).tolist()):
            _gpu_type(v, f"{_label(what, ids, i)}: {field}")
        raise AssertionError("unreachable: a bad GPU type was found above")
    return out


#: GPU type names by code ("" = any type), shared by every state so codes concatenate.
TYPE_NAMES: List[str] = [""]
_TYPE_CODES: Dict[str, int] = {"": 0}


def _type_codes(types: np.ndarray) -> np.ndarray:
    """Jobs' GPU types as codes into ``TYPE_NAMES`` (for vectorised grouping)."""
    import pandas as pd

    codes, names = pd.factorize(
        types
    )  # any type (None) is code -1 here, 0 in TYPE_NAMES
    for name in names:
        if name not in _TYPE_CODES:
            _TYPE_CODES[name] = len(TYPE_NAMES)
            TYPE_NAMES.append(name)
    table = np.asarray([0] + [_TYPE_CODES[name] for name in names], dtype=np.int64)
    return table[codes + 1]


def _keys(ids: np.ndarray, raw: Any = None) -> np.ndarray:
    """The ids as the core's strings (``str(id)``; ids that print alike collide)."""
    import pandas as pd

    if getattr(raw, "dtype", None) is not None and raw.dtype.kind in "iu":
        return np.asarray(raw).astype(str).astype(object)  # in C, as str(int) prints

    if pd.api.types.infer_dtype(ids, skipna=False) in ("string", "empty"):
        return ids
    return _objects(map(str, ids.tolist()))


def _ids(columns: Dict[str, Any], key: str = "id") -> np.ndarray:
    ids = columns[key]
    if isinstance(ids, np.ndarray) and ids.dtype == object and ids.ndim == 1:
        return ids.copy()
    return _objects(np.asarray(ids).tolist())


def _job_table(columns: Dict[str, Any], n: int) -> Table:
    ids = _ids(columns)
    table: Table = {"id": ids, "key": _keys(ids, columns["id"])}
    for name in _INT["job"] + _REAL["job"] + _FLAG["job"]:
        values = columns.get(name)
        if values is None or (
            values.dtype.kind == "O" and any(v is None for v in values)
        ):
            values = _defaults(name, values, table, n)
        convert = (
            _int_column
            if name in _INT["job"]
            else _real_column
            if name in _REAL["job"]
            else _flag_column
        )
        table[name] = convert(values, name, "job", ids)
    types = _type_column(columns.get("gpu_type"), "job", ids)
    table["gpu_type"] = types
    table["type_code"] = _type_codes(types)
    for name in GROUP_FIELDS:  # who submitted the job: carried, never used here
        given = columns.get(name)
        names = _type_column(given, "job", ids, name)
        if given is not None:  # else None throughout already
            names[names == ""] = None
        table[name] = names
    return table


def _defaults(
    name: str, values: Optional[np.ndarray], table: Table, n: int
) -> np.ndarray:
    """A job column with its dataclass default where it is missing (None)."""
    fallback = {"estimated_duration": "duration", "reference_workers": "max_workers"}
    if name in fallback:
        default = table[fallback[name]]
    else:
        default = np.full(
            n, {"checkpoint": True, "hetero": False, "submit_time": 0.0}[name]
        )
    if values is None:
        return np.asarray(default)
    return _objects(
        d if v is None else v for v, d in zip(values.tolist(), default.tolist())
    )


def _server_table(columns: Dict[str, Any], n: int) -> Table:
    ids = _ids(columns)
    # defaults made only where a column is missing (an object array is slow to fill)
    pool = columns.get("pool")
    if pool is None:
        pool = np.full(n, "training", dtype=object)
    codes = _core.id_rows(_python_ids(pool), _POOL_CODES)  # -1: neither
    inference = codes == _POOL_CODES["inference"]
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(
            f"server {ids[row]!r}: pool must be 'training' or 'inference', "
            f"got {np.asarray(pool).tolist()[row]!r}"
        )
    table: Table = {
        "id": ids,
        "key": _keys(ids, columns["id"]),
        "pool": inference.astype(np.int64),
    }
    gpus = columns.get("gpus")
    table["gpus"] = (
        np.full(n, 8, dtype=np.int64)
        if gpus is None
        else _int_column(gpus, "gpus", "server", ids)
    )
    on_loan = columns.get("on_loan")
    table["on_loan"] = (
        np.zeros(n, dtype=bool)
        if on_loan is None
        else _flag_column(on_loan, "on_loan", "server", ids)
    )
    types = _type_column(columns.get("gpu_type"), "server", ids)
    missing = types == None  # noqa: E711 - elementwise
    defaults = np.asarray([DEFAULT_GPU_TYPE[p] for p in POOLS], dtype=object)
    types[missing] = defaults[table["pool"][missing]]
    table["gpu_type"] = types
    return table


#: A pool's name -> its code (a server table's ``pool`` column).
_POOL_CODES: Dict[str, int] = {pool: code for code, pool in enumerate(POOLS)}


def _index(ids: np.ndarray, what: str) -> Dict[Any, int]:
    """Id -> row; a duplicate is a ValueError (as in the record API)."""
    index = dict(zip(ids.tolist(), range(len(ids))))
    if len(index) != len(ids):
        seen: Set[Any] = set()
        for id_ in ids.tolist():
            if id_ in seen:
                raise ValueError(f"duplicate {what} id {id_!r}")
            seen.add(id_)
    return index


def _empty(what: str) -> Table:
    """An empty table of ``what`` (a state with no jobs, say)."""
    if what == "worker":
        return dict(_EMPTY_WORKERS)
    names = [f.name for f in dataclasses.fields(_CLASS[what]) if f.name != "gpu_type"]
    columns = {name: np.zeros(0) for name in names}
    return (_job_table if what == "job" else _server_table)(columns, 0)


#: No workers (a table never changed in place).
_EMPTY_WORKERS: Table = {
    "job": np.zeros(0, np.int64),
    "server": np.zeros(0, np.int64),
    "flexible": np.zeros(0, bool),
}


def _concat(a: Table, b: Table) -> Table:
    return {name: np.concatenate([a[name], b[name]]) for name in a}


#: The empty tables and core state every new ClusterState starts from.
_EMPTY: Dict[str, Any] = {}


def _take(table: Table, rows: np.ndarray) -> Table:
    return {name: values[rows] for name, values in table.items()}


class _TakenRows(Dict[str, np.ndarray]):
    """``_take(table, rows)`` with each column taken when first read: a simulation
    view's job table, of which a policy reads a few columns per epoch, if any.

    A ``dict`` (a ``Table``) for every reader: an item not taken yet is taken by
    ``__missing__``, and whatever lists or copies the whole table takes every
    column first.
    """

    def __init__(self, table: Table, rows: np.ndarray) -> None:
        super().__init__()
        self._table, self._rows = table, rows

    def __missing__(self, name: str) -> np.ndarray:
        column: np.ndarray = self._table[name][self._rows]  # KeyError: unknown
        column.flags.writeable = False  # the view's own copy, read-only as the view
        self[name] = column
        return column

    def _whole(self) -> None:
        for name in self._table:
            if not dict.__contains__(self, name):
                self.__missing__(name)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __iter__(self) -> Iterator[str]:
        self._whole()
        return super().__iter__()

    def __len__(self) -> int:
        return len(self._table)

    def keys(self) -> Any:  # noqa: D102 (dict's)
        self._whole()
        return super().keys()

    def values(self) -> Any:  # noqa: D102
        self._whole()
        return super().values()

    def items(self) -> Any:  # noqa: D102
        self._whole()
        return super().items()

    def get(self, name: str, default: Any = None) -> Any:  # noqa: D102
        return self[name] if name in self._table else default

    def copy(self) -> Table:  # noqa: D102
        self._whole()
        return dict(super().items())


def _any_columns(data: Any, what: str) -> Dict[str, Any]:
    """Records, dicts, a DataFrame or a mapping of columns, as raw columns."""
    if _is_frame(data) or isinstance(data, Mapping):
        return _raw_columns(data, what)[0]
    return _records_columns(data, what)


#: The ids argument of a worker column's check (a worker is named by its row).
_NO_IDS = np.empty(0, dtype=object)


def _worker_table(
    columns: Dict[str, Any],
    jobs: Table,
    job_index: Dict[Any, int],
    server_index: Dict[Any, int],
) -> Table:
    """Workers by row index, checked as the record API checks them."""
    job_ids, server_ids = _python_ids(columns["job"]), _python_ids(columns["server"])
    job = _core.id_rows(job_ids, job_index)  # -1: an unknown id
    server = _core.id_rows(server_ids, server_index)
    n = len(job)
    unknown = (job < 0) | (server < 0)
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        if job[i] < 0:
            raise ValueError(f"worker {i}: unknown job {job_ids[i]!r}")
        raise ValueError(f"worker {i}: unknown server {server_ids[i]!r}")
    table: Table = {"job": job, "server": server}
    flexible = columns.get("flexible")
    table["flexible"] = (
        np.zeros(n, dtype=bool)
        if flexible is None
        else _flag_column(np.asarray(flexible), "flexible", "worker", _NO_IDS)
    )
    gpus = columns.get("gpus")
    if gpus is not None:
        _check_worker_gpus(
            np.asarray(gpus), jobs["gpus_per_worker"][job], list(job_ids)
        )
    return table


def _python_ids(ids: Any) -> Any:
    """Ids as Python objects, the index's keys (``tolist`` of a typed column: NumPy
    scalars would not be found fast); an object array as it is."""
    ids = np.asarray(ids)
    return ids if ids.dtype == object else ids.tolist()


def _check_worker_gpus(
    gpus: np.ndarray, expected: np.ndarray, job_ids: List[Any]
) -> None:
    for i, (given, want) in enumerate(zip(gpus.tolist(), expected.tolist())):
        if given is None or (isinstance(given, float) and math.isnan(given)):
            continue
        given = _integer(given, f"worker of job {job_ids[i]!r}: gpus")
        if given != want:
            raise ValueError(
                f"worker {i} of job {job_ids[i]!r} has {given} GPUs but the "
                f"job's gpus_per_worker is {want}"
            )
