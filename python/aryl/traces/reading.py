"""Reading job and load traces from CSV files (plain or gzip), with named errors."""

from __future__ import annotations

import csv
import gzip
import io
import os
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, List, Optional, Tuple

import numpy as np
import pandas as pd

#: Required columns of a job trace, in order.
JOB_COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s", "gpu_type")
#: Required columns of a load trace, in order.
LOAD_COLUMNS = ("time_s", "load")

#: The model's limits (``aryl._core``): a time in seconds, a job's GPUs.
MAX_TIME_S = 1e15
MAX_JOB_GPUS = 2**20

#: The embedded default traces, in ``aryl/data``.
DEFAULT_JOBS = "itp_cluster04_jobs.csv.gz"
DEFAULT_LOAD = "alibaba2018_cpu_load_5min.csv.gz"


class TraceError(ValueError):
    """A trace that cannot be used; the message names the file, the row and the column."""


def _text(source: Any) -> Tuple[str, str]:
    """``(name, text)`` of a path or file object, gunzipped when it starts with gzip's magic."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(source, "rb") as f:
            data = f.read()
    else:
        name, data = str(getattr(source, "name", "<stream>")), source.read()
    if isinstance(data, str):
        return name, data
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{name}: corrupt gzip data ({exc})") from None
    try:
        return name, data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not UTF-8 text ({exc})") from None


@dataclass
class _Table:
    """A CSV file as stripped strings, with the line of each data row and its shape problems."""

    name: str
    frame: pd.DataFrame
    lines: List[int]
    shape: np.ndarray  # per row: "" or what is wrong with its number of fields

    def where(self, row: int, column: Optional[str] = None) -> str:
        """``row`` is 0-based among data rows."""
        at = f", column {column!r}" if column else ""
        return f"{self.name}: row {row + 1} (line {self.lines[row]}){at}"


def _table(source: Any, required: Tuple[str, ...]) -> _Table:
    """Parse the CSV (csv module: exact line numbers); check header, columns and rows exist."""
    name, text = _text(source)
    text = text.rstrip()  # trailing blank lines; a blank line inside is a row (and fails)
    if not text:
        raise TraceError(f"{name}: empty file; expected a CSV header with {', '.join(required)}")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(f"{name}: line 1 (header): missing column(s) {', '.join(missing)}; "
                             f"found {', '.join(header)}")
        if len(set(header)) < len(header):
            raise TraceError(f"{name}: line 1 (header): duplicate column names in {', '.join(header)}")
        rows, lines, shape, previous = [], [], [], reader.line_num
        for record in reader:
            lines.append(previous + 1)
            previous = reader.line_num
            shape.append("" if len(record) == len(header) else
                         f"{len(record)} fields, the header has {len(header)}" if record else "blank line")
            rows.append([v.strip() for v in record] if not shape[-1] else [""] * len(header))
    except csv.Error as exc:
        raise TraceError(f"{name}: line {reader.line_num}: not valid CSV ({exc})") from None
    if not rows:
        raise TraceError(f"{name}: header only, no data rows")
    return _Table(name, pd.DataFrame(rows, columns=header, dtype=object), lines,
                  np.array(shape, dtype=object))


def _numbers(text: pd.Series, *, integer: bool = False, high: Optional[float] = None,
             zero: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Values of a string column and, per row, what is wrong with it (``""`` if nothing)."""
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        checks = [(text == "", "empty value"),
                  (text.str.lower().str.lstrip("+-") == "nan", "NaN"),
                  (np.isnan(values), "not a number"), (np.isinf(values), "not finite"),
                  (values < 0, "negative")]
        if integer:
            checks.append((values != np.floor(values), "not an integer"))
        if zero is not None:
            checks.append((values == 0, zero))
        if high is not None:
            checks.append((values > high, f"above {high:g}"))
    reasons = np.select([np.asarray(c, dtype=bool) for c, _ in checks], [r for _, r in checks], "")
    return values, reasons.astype(object)


def _first_problem(table: _Table, reasons: dict) -> Tuple[np.ndarray, List[str]]:
    """Rows with a problem and, for each, ``"column: reason"`` of its first one (``row`` for
    a wrong number of fields)."""
    bad = np.zeros(len(table.frame), dtype=bool)
    labels = np.full(len(table.frame), "", dtype=object)
    for column, why in {"row": table.shape, **reasons}.items():
        new = (why != "") & ~bad
        labels[new] = [f"{column}: {r}" for r in why[new]]
        bad |= new
    return bad, list(labels[bad])


def _raise_first(table: _Table, bad: np.ndarray, labels: List[str]) -> None:
    row = int(np.flatnonzero(bad)[0])
    column, reason = labels[0].split(": ", 1)
    if column == "row":
        raise TraceError(f"{table.where(row)}: {reason}")
    raise TraceError(f"{table.where(row, column)}: {reason} (got {table.frame[column].iloc[row]!r})")


def read_jobs(source: Any, *, drop_invalid: bool = False) -> pd.DataFrame:
    """Read a job trace (CSV, optionally gzip-compressed).

    Parameters
    ----------
    source
        A path or a file object (text or binary). Gzip is detected by its magic bytes.
    drop_invalid
        ``False`` (default): the first problem raises. ``True``: rows with a problem are
        skipped, counted in ``.attrs["dropped"]`` and ``.attrs["drop_reasons"]`` (a
        ``Counter`` of ``"column: reason"``) and a ``UserWarning`` names the count. A
        duplicate id drops the later row; a row whose ``submit_time_s`` is below an earlier
        kept row's is dropped.

    Returns
    -------
    pandas.DataFrame
        ``job_id`` (str), ``submit_time_s``, ``duration_s`` (float), ``num_gpus`` (int),
        ``gpu_type`` (str, may be ``"unknown"`` or empty) and any extra columns (numeric
        when every value is). ``.attrs`` holds ``source``, ``dropped`` and ``drop_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the data row (1-based) with its CSV line and the column: a missing
        column; an empty, non-numeric, NaN, infinite or negative value; a non-integer or
        zero ``num_gpus``; a zero ``duration_s``; a time above ``MAX_TIME_S`` (1e15 s) or
        ``num_gpus`` above ``MAX_JOB_GPUS`` (2**20), the model's limits; an empty ``job_id``; a duplicate ``job_id``; a ``submit_time_s``
        that goes back in time; a row with the wrong number of fields (or blank); an empty
        or header-only file.
    """
    table = _table(source, JOB_COLUMNS)
    frame = table.frame
    submit, why_submit = _numbers(frame["submit_time_s"], high=MAX_TIME_S)
    gpus, why_gpus = _numbers(frame["num_gpus"], integer=True, zero="zero GPUs", high=MAX_JOB_GPUS)
    duration, why_duration = _numbers(frame["duration_s"], zero="zero duration", high=MAX_TIME_S)
    reasons = {"job_id": np.where(frame["job_id"] == "", "empty value", "").astype(object),
               "submit_time_s": why_submit, "num_gpus": why_gpus, "duration_s": why_duration}
    bad, labels = _first_problem(table, reasons)
    if bad.any() and not drop_invalid:
        _raise_first(table, bad, labels)
    dropped = Counter(labels)
    keep = _unique_ids(table, np.flatnonzero(~bad), drop_invalid, dropped)
    keep = _in_time_order(table, submit, keep, drop_invalid, dropped)
    out = frame.iloc[keep].reset_index(drop=True)
    out["submit_time_s"], out["duration_s"] = submit[keep], duration[keep]
    out["num_gpus"] = gpus[keep].astype(np.int64)
    return _finish(table, out, JOB_COLUMNS, dropped)


def _unique_ids(table: _Table, keep: np.ndarray, drop: bool, dropped: Counter) -> np.ndarray:
    """``keep`` without the later rows of a repeated ``job_id`` (or the error for the first)."""
    ids = table.frame["job_id"].iloc[keep]
    dup = ids.duplicated(keep="first").to_numpy()
    if dup.any() and not drop:
        i = int(np.flatnonzero(dup)[0])
        first = int(keep[np.flatnonzero((ids == ids.iloc[i]).to_numpy())[0]])
        raise TraceError(f"{table.where(int(keep[i]), 'job_id')}: duplicate job_id {ids.iloc[i]!r} "
                         f"(first at row {first + 1})")
    dropped["job_id: duplicate"] += int(dup.sum())
    return keep[~dup]


def _in_time_order(table: _Table, submit: np.ndarray, keep: np.ndarray, drop: bool,
                   dropped: Counter) -> np.ndarray:
    """``keep`` without rows submitted before an earlier kept row (or the error for the first)."""
    times = submit[keep]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(times)[:-1]])
    back = times < before
    if back.any() and not drop:
        i = int(np.flatnonzero(back)[0])
        raise TraceError(f"{table.where(int(keep[i]), 'submit_time_s')}: goes back in time "
                         f"({times[i]:g} after {times[i - 1]:g} at row {keep[i - 1] + 1}); "
                         "job traces must be sorted by submit_time_s")
    dropped["submit_time_s: goes back in time"] += int(back.sum())
    return keep[~back]


def _finish(table: _Table, out: pd.DataFrame, required: Tuple[str, ...],
            dropped: Counter) -> pd.DataFrame:
    """Numeric extra columns, attrs, and the drop warning."""
    name, rows = table.name, len(table.frame)
    for column in out.columns.difference(list(required), sort=False):
        try:
            out[column] = pd.to_numeric(out[column])
        except (ValueError, TypeError):
            pass
    dropped = Counter({k: v for k, v in dropped.items() if v})
    if out.empty:
        raise TraceError(f"{name}: all {rows} rows are invalid ({dict(dropped)})")
    if dropped:
        warnings.warn(f"{name}: dropped {sum(dropped.values())} invalid row(s) of {rows}: "
                      f"{dict(dropped)}", stacklevel=3)
    out.attrs.update(source=name, dropped=sum(dropped.values()), drop_reasons=dropped)
    return out


def read_load(source: Any) -> pd.DataFrame:
    """Read an inference-load trace (CSV, optionally gzip-compressed).

    Parameters
    ----------
    source
        A path or a file object (text or binary). Gzip is detected by its magic bytes.

    Returns
    -------
    pandas.DataFrame
        ``time_s`` and ``load`` (float) and any extra columns; ``.attrs["source"]``.

    Raises
    ------
    TraceError
        Naming the file, the data row (1-based) with its CSV line and the column: a missing
        column; an empty, non-numeric, NaN or infinite value; a negative ``time_s`` or one
        that does not increase strictly; a ``load`` outside ``[0, 1]``; an empty or
        header-only file.
    """
    table = _table(source, LOAD_COLUMNS)
    time, why_time = _numbers(table.frame["time_s"])
    load, why_load = _numbers(table.frame["load"], high=1.0)
    bad, labels = _first_problem(table, {"time_s": why_time, "load": why_load})
    if bad.any():
        _raise_first(table, bad, labels)
    back = np.flatnonzero(np.diff(time) <= 0)
    if back.size:
        i = int(back[0]) + 1
        raise TraceError(f"{table.where(i, 'time_s')}: time does not increase ({time[i]:g} after "
                         f"{time[i - 1]:g} at row {i}); times must increase strictly")
    out = table.frame.reset_index(drop=True)
    out["time_s"], out["load"] = time, load
    return _finish(table, out, LOAD_COLUMNS, Counter())


def load_default() -> Tuple[pd.DataFrame, pd.DataFrame]:
    """The embedded real traces: ``(jobs, load)``, read with ``read_jobs`` / ``read_load``.

    ``jobs`` is Microsoft ITP cluster04 (2021; 15,802 jobs over 59.45 days, ``gpu_type``
    unknown; MIT licence, ``microsoft/elasticflow-traces``); ``load`` is the Alibaba
    cluster-trace-v2018 mean CPU utilisation (8 days at 5 min = 2,304 rows, normalised to
    its peak, mean 0.484; CC-BY-4.0). Provenance, schemas and attribution:
    ``aryl/data/README.md``.

    Returns
    -------
    tuple of pandas.DataFrame
        New frames on every call.
    """
    data = files("aryl") / "data"
    with (data / DEFAULT_JOBS).open("rb") as jobs, (data / DEFAULT_LOAD).open("rb") as load:
        return read_jobs(jobs), read_load(load)
