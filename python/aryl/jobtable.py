"""Jobs as columns: the form a job list takes on its way through the simulator.

A ``JobTable`` holds one NumPy array per ``aryl.Job`` field. It is a read-only
sequence of ``Job`` (``len``, indexing, iteration and ``==`` work as on a list),
but the pipeline — ``traces.to_jobs`` → ``sim.scenario`` → ``sim.simulate`` —
works on its columns, so no per-job Python object is made on the way and the
input is validated once. A ``Job`` is built only when one is asked for.

Build one with ``JobTable.of(jobs)`` from ``Job`` records, dicts, a DataFrame
with the ``Job`` field names as columns, or another table (returned as is).
"""

from __future__ import annotations

import dataclasses
import numbers
import pickle
from typing import Any, Dict, Iterator, Mapping, Sequence, Union, overload

import numpy as np
import pandas as pd

from .columns import core_types, flag_column, int_column, real_column, type_column
from .model import Job, as_records

FIELDS = tuple(f.name for f in dataclasses.fields(Job))
INT_FIELDS = ("gpus_per_worker", "min_workers", "max_workers", "reference_workers")
REAL_FIELDS = ("duration", "submit_time", "estimated_duration")
FLAG_FIELDS = ("checkpoint", "hetero")
#: Who submitted a job (optional names the simulator carries but does not use).
GROUP_FIELDS = ("user", "vc")
REQUIRED = tuple(
    f.name for f in dataclasses.fields(Job) if f.default is dataclasses.MISSING
)


class JobTable(Sequence[Job]):
    """Jobs as one column per ``Job`` field; a read-only sequence of ``Job``.

    ``column(name)`` gives a field's array (read-only), ``to_frame()`` a DataFrame,
    ``replace(**columns)`` a new table with some columns changed. Indexing with an
    int gives a ``Job``; with a slice, a table of those rows.
    """

    __slots__ = ("_columns",)

    def __init__(self, columns: Mapping[str, np.ndarray]) -> None:
        """Internal: trusts ``columns`` (use ``JobTable.of`` for user input)."""
        self._columns = {name: columns[name] for name in FIELDS}
        for array in self._columns.values():
            array.flags.writeable = False

    @classmethod
    def of(cls, jobs: Any) -> JobTable:
        """A table of ``jobs``: ``Job`` records, dicts, a DataFrame or a table.

        Values are checked as ``Job`` checks them (same messages); a DataFrame whose
        columns are clean is converted without making a ``Job`` per row.
        """
        if isinstance(jobs, JobTable):
            return jobs
        if isinstance(jobs, pd.DataFrame):
            clean = _clean_frame(jobs)
            if clean is not None:
                return cls(clean)
        return cls._from_records(as_records(jobs, Job, "job"))

    @classmethod
    def _from_records(cls, jobs: Sequence[Job]) -> JobTable:
        columns: Dict[str, np.ndarray] = {}
        for name in FIELDS:
            values = [getattr(j, name) for j in jobs]
            columns[name] = _array(name, values, [j.id for j in jobs])
        return cls(columns)

    def __len__(self) -> int:
        return len(self._columns["id"])

    @overload
    def __getitem__(self, index: int) -> Job: ...

    @overload
    def __getitem__(self, index: slice) -> JobTable: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Job, JobTable]:
        if isinstance(index, slice):
            return JobTable({k: v[index] for k, v in self._columns.items()})
        if not isinstance(index, numbers.Integral) or isinstance(index, bool):
            raise TypeError(
                f"JobTable indices must be integers or slices, got {index!r}"
            )
        return Job(**{k: _python(v[index]) for k, v in self._columns.items()})

    def __iter__(self) -> Iterator[Job]:
        rows = zip(*(self._columns[name].tolist() for name in FIELDS))
        return (Job(*row) for row in rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobTable):
            return len(self) == len(other) and all(
                _same(self._columns[k], other._columns[k]) for k in FIELDS
            )
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list

    def __repr__(self) -> str:
        return f"JobTable({len(self)} jobs)"

    @property
    def ids(self) -> np.ndarray:
        """The job ids (an object array: ids keep their Python type)."""
        return self._columns["id"]

    def column(self, name: str) -> np.ndarray:
        """The read-only array of field ``name``."""
        if name not in self._columns:
            raise KeyError(f"no job field {name!r}; fields are {', '.join(FIELDS)}")
        return self._columns[name]

    def to_frame(self) -> pd.DataFrame:
        """The jobs as a DataFrame, one column per ``Job`` field."""
        return pd.DataFrame({k: v.copy() for k, v in self._columns.items()})

    def replace(self, **columns: Any) -> JobTable:
        """A new table with the given fields replaced by whole columns."""
        unknown = sorted(set(columns) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown job field(s) {unknown}")
        out = dict(self._columns)
        for name, values in columns.items():
            array = _array(name, values, self._columns["id"])
            if array.shape != (len(self),):
                raise ValueError(
                    f"column {name!r} has {array.shape} values for {len(self)} jobs"
                )
            out[name] = array
        return JobTable(out)

    def core_columns(self) -> Dict[str, Any]:
        """The columns ``aryl._core`` reads (ids as str, no GPU type as ``""``)."""
        columns: Dict[str, Any] = {
            k: self._columns[k] for k in INT_FIELDS + REAL_FIELDS + FLAG_FIELDS
        }
        columns["id"] = [str(i) for i in self._columns["id"].tolist()]
        columns["gpu_type"] = core_types(self._columns["gpu_type"])
        return columns

    def fingerprint_bytes(self) -> bytes:
        """Every field of every job, exactly (ids keep their type): for hashing. The
        names of ``GROUP_FIELDS`` count when a job has one (so jobs without any hash
        as they did before those fields existed)."""
        parts = [
            pickle.dumps(self._columns["id"].tolist(), protocol=4),
            pickle.dumps(self._columns["gpu_type"].tolist(), protocol=4),
        ]
        for name in GROUP_FIELDS:
            names = self._columns[name].tolist()
            if any(n is not None for n in names):
                parts.append(pickle.dumps((name, names), protocol=4))
        parts += [
            np.ascontiguousarray(self._columns[k]).tobytes()
            for k in INT_FIELDS + REAL_FIELDS + FLAG_FIELDS
        ]
        return b"".join(parts)


def _array(name: str, values: Any, ids: Any = ()) -> np.ndarray:
    """``values`` as field ``name``'s column; ``ids``: the jobs', to name one whose
    value does not fit."""
    if name in INT_FIELDS:
        try:
            return np.asarray(values, dtype=np.int64)
        except OverflowError:
            values = list(values)
            i = next((i for i, v in enumerate(values) if not _fits(v)), 0)
            who = f"job {ids[i]!r}" if len(ids) > i else f"job field {name}"
            raise ValueError(
                f"{who}: {name} is out of range (a 64-bit integer), got {values[i]}"
            ) from None
    if name in REAL_FIELDS:
        return np.asarray(values, dtype=np.float64)
    if name in FLAG_FIELDS:
        return np.asarray(values, dtype=bool)
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def _names_column(values: Any) -> Union[np.ndarray, None]:
    """Optional names (``user``, ``vc``) as an object array of ``str``, None where
    missing or empty; ``None`` if a value is neither (the record path names it)."""
    column = type_column(values)
    if column is None:
        return None
    column[column == ""] = None
    return column


INT64 = np.iinfo(np.int64)


def _fits(value: Any) -> bool:
    try:
        return bool(INT64.min <= value <= INT64.max)
    except TypeError:
        return True  # not a number: numpy names that one itself


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype == object or b.dtype == object:
        return bool(a.tolist() == b.tolist())
    return bool(np.array_equal(a, b))


def _clean_frame(frame: pd.DataFrame) -> Union[Dict[str, np.ndarray], None]:
    """The frame's columns as ``Job`` fields, or None when a value needs the record
    path (which raises the same message ``Job`` does, naming the job)."""
    names = set(frame.columns)
    if not names <= set(FIELDS) or not set(REQUIRED) <= names:
        return None
    columns: Dict[str, np.ndarray] = {}
    for fields, convert in (
        (INT_FIELDS, int_column),
        (REAL_FIELDS, real_column),
        (FLAG_FIELDS, flag_column),
    ):
        for name in fields:
            if name in names:
                values = convert(frame[name])
                if values is None:
                    return None
                columns[name] = values
    gpu_type = (
        type_column(frame["gpu_type"])
        if "gpu_type" in names
        else np.full(len(frame), None)
    )
    if gpu_type is None:
        return None
    columns["gpu_type"] = gpu_type
    for name in GROUP_FIELDS:
        group = (
            _names_column(frame[name]) if name in names else np.full(len(frame), None)
        )
        if group is None:
            return None
        columns[name] = group
    if frame["id"].isna().any():  # the record path names the bad id
        return None
    columns["id"] = _array("id", frame["id"].tolist())
    n = len(frame)
    columns.setdefault("submit_time", np.zeros(n))
    columns.setdefault("estimated_duration", columns["duration"].copy())
    columns.setdefault("checkpoint", np.ones(n, dtype=bool))
    columns.setdefault("hetero", np.zeros(n, dtype=bool))
    columns.setdefault("reference_workers", columns["max_workers"].copy())
    return columns
