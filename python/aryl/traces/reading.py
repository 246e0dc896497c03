"""Reading job and load traces from CSV files (plain or gzip), with named errors."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import itertools
import os
import warnings
import zlib
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

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


#: Rows parsed and checked at a time: memory stays proportional to the parsed columns.
CHUNK_ROWS = 1 << 16


class _Prefixed(io.RawIOBase):
    """A binary stream whose first bytes were already read (to look for gzip's magic)."""

    def __init__(self, head: bytes, rest: Any):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _lines(source: Any) -> Tuple[str, Iterator[str], Callable[[], None]]:
    """``(name, lines, close)`` of a path or file object, read as a stream: gunzipped when
    it starts with gzip's magic, decoded as UTF-8 (a BOM is dropped)."""
    if isinstance(source, (str, os.PathLike)):
        name, stream = os.fspath(source), open(source, "rb")
        close = stream.close
    elif not callable(getattr(source, "read", None)):
        raise TypeError(f"expected a path or a file object, got {source!r}")
    else:
        name, stream, close = (
            str(getattr(source, "name", "<stream>")),
            source,
            lambda: None,
        )
    head = stream.read(2)
    if isinstance(head, str):  # a text stream
        text = itertools.chain([head + stream.readline()], stream) if head else iter(())
        return (
            name,
            (line.lstrip("\ufeff") if i == 0 else line for i, line in enumerate(text)),
            close,
        )
    binary: Any = io.BufferedReader(_Prefixed(head, stream))
    if head == b"\x1f\x8b":
        binary = gzip.GzipFile(fileobj=binary, mode="rb")
    return name, io.TextIOWrapper(binary, encoding="utf-8-sig", newline=""), close


@contextlib.contextmanager
def _decoding(name: str) -> Iterator[None]:
    """Stream errors as TraceErrors naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not UTF-8 text ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"{name}: corrupt gzip data ({exc})") from None


@dataclass
class _Table:
    """Rows of a CSV file as stripped strings, with each row's number (0-based among data
    rows), its line, and what is wrong with its number of fields (``""`` if nothing)."""

    name: str
    frame: pd.DataFrame
    rows: np.ndarray
    lines: np.ndarray
    shape: np.ndarray

    def where(self, i: int, column: Optional[str] = None) -> str:
        """Where row ``i`` of this table (0-based) is in the file."""
        at = f", column {column!r}" if column else ""
        return f"{self.name}: row {self.rows[i] + 1} (line {self.lines[i]}){at}"


def _blank(record: List[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


def _tables(
    source: Any, required: Tuple[str, ...], columns: Optional[Tuple[str, ...]] = None
) -> Iterator[_Table]:
    """Parse the CSV (csv module: exact line numbers) in chunks of ``CHUNK_ROWS`` rows;
    check header, columns and that rows exist. Blank lines at the end are ignored; a blank
    line before a row is a row (and fails). ``columns``: the file has no header line,
    these name its fields."""
    name, lines, close = _lines(source)
    try:
        with _decoding(name):
            reader = csv.reader(lines)
            try:
                if columns is not None:
                    yield from _chunks(name, list(columns), reader)
                    return
                first, content = None, False
                for (
                    record
                ) in reader:  # the header is the first line, unless all are blank
                    first = record if first is None else first
                    if not _blank(record):
                        content = True
                        break
                header = [h.strip() for h in first or []]
                if not content:
                    raise TraceError(
                        f"{name}: empty file; expected a CSV header with {', '.join(required)}"
                    )
                missing = [c for c in required if c not in header]
                if missing:
                    raise TraceError(
                        f"{name}: line 1 (header): missing column(s) {', '.join(missing)}; "
                        f"found {', '.join(header)}"
                    )
                if len(set(header)) < len(header):
                    raise TraceError(
                        f"{name}: line 1 (header): duplicate column names in {', '.join(header)}"
                    )
                yield from _chunks(name, header, reader)
            except csv.Error as exc:
                raise TraceError(
                    f"{name}: line {reader.line_num}: not valid CSV ({exc})"
                ) from None
    finally:
        close()


def _chunks(name: str, header: List[str], reader: Any) -> Iterator[_Table]:
    width, count = len(header), 0
    rows: List[List[str]] = []
    lines: List[int] = []
    shape: List[str] = []
    blanks: List[Tuple[List[str], int]] = []  # blank records not yet known to be inside
    previous = reader.line_num

    def flush() -> _Table:
        nonlocal rows, lines, shape, count
        table = _Table(
            name,
            pd.DataFrame(rows, columns=header, dtype=object),
            np.arange(count, count + len(rows)),
            np.array(lines),
            np.array(shape, dtype=object),
        )
        count += len(rows)
        rows, lines, shape = [], [], []
        return table

    for record in reader:
        line, previous = previous + 1, reader.line_num
        if len(record) == width:  # the common case first
            lines.append(line)
            shape.append("")
            rows.append([v.strip() for v in record])
        elif _blank(record):
            blanks.append((record, line))
            continue
        else:
            lines.append(line)
            shape.append(f"{len(record)} fields, the header has {width}")
            rows.append([""] * width)
        if blanks:  # blank lines followed by a row are rows (and fail), before this one
            at = len(rows) - 1
            for blank, blank_line in blanks:
                lines.insert(at, blank_line)
                shape.insert(
                    at,
                    f"{len(blank)} fields, the header has {width}"
                    if blank
                    else "blank line",
                )
                rows.insert(at, [""] * width)
                at += 1
            blanks = []
        if len(rows) >= CHUNK_ROWS:
            yield flush()
    if rows:
        yield flush()
    if count == 0:
        raise TraceError(f"{name}: header only, no data rows")


def _numbers(
    text: pd.Series,
    *,
    integer: bool = False,
    high: Optional[float] = None,
    zero: Optional[str] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Values of a string column and, per row, what is wrong with it (``""`` if nothing)."""
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        checks = [
            (text == "", "empty value"),
            (text.str.lower().str.lstrip("+-") == "nan", "NaN"),
            (np.isnan(values), "not a number"),
            (np.isinf(values), "not finite"),
            (values < 0, "negative"),
        ]
        if integer:
            checks.append((values != np.floor(values), "not an integer"))
        if zero is not None:
            checks.append((values == 0, zero))
        if high is not None:
            checks.append((values > high, f"above {high:g}"))
    reasons = np.select(
        [np.asarray(c, dtype=bool) for c, _ in checks], [r for _, r in checks], ""
    )
    return values, reasons.astype(object)


def _first_problem(
    table: _Table, reasons: Dict[str, np.ndarray]
) -> Tuple[np.ndarray, List[str]]:
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
    raise TraceError(
        f"{table.where(row, column)}: {reason} (got {table.frame[column].iloc[row]!r})"
    )


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
    kept: List[_Table] = []
    dropped: Counter[str] = Counter()
    total = 0
    for chunk in _tables(source, JOB_COLUMNS):
        frame = chunk.frame
        submit, why_submit = _numbers(frame["submit_time_s"], high=MAX_TIME_S)
        gpus, why_gpus = _numbers(
            frame["num_gpus"], integer=True, zero="zero GPUs", high=MAX_JOB_GPUS
        )
        duration, why_duration = _numbers(
            frame["duration_s"], zero="zero duration", high=MAX_TIME_S
        )
        reasons = {
            "job_id": np.where(frame["job_id"] == "", "empty value", "").astype(object),
            "submit_time_s": why_submit,
            "num_gpus": why_gpus,
            "duration_s": why_duration,
        }
        bad, labels = _first_problem(chunk, reasons)
        if bad.any() and not drop_invalid:
            _raise_first(chunk, bad, labels)
        dropped.update(labels)
        total += len(frame)
        good = ~bad
        frame = frame[good].reset_index(drop=True)
        frame["submit_time_s"], frame["duration_s"] = submit[good], duration[good]
        frame["num_gpus"] = gpus[good].astype(np.int64)
        kept.append(
            _Table(
                chunk.name,
                _shared_strings(frame, ("job_id",)),
                chunk.rows[good],
                chunk.lines[good],
                chunk.shape[good],
            )
        )
    table = _concat(kept)
    keep = _unique_ids(table, np.arange(len(table.frame)), drop_invalid, dropped)
    keep = _in_time_order(
        table, table.frame["submit_time_s"].to_numpy(), keep, drop_invalid, dropped
    )
    out = (
        table.frame.iloc[keep].reset_index(drop=True)
        if len(keep) < len(table.frame)
        else table.frame
    )
    return _finish(table.name, total, out, JOB_COLUMNS, dropped)


def _shared_strings(frame: pd.DataFrame, unique: Tuple[str, ...]) -> pd.DataFrame:
    """The string columns other than ``unique`` with one object per distinct value (a
    ``gpu_type`` column of six million rows then holds a few strings, not six million)."""
    for column in frame.columns:
        if column not in unique and frame[column].dtype == object:
            codes, values = pd.factorize(frame[column], use_na_sentinel=False)
            frame[column] = np.asarray(values, dtype=object)[codes]
    return frame


def _concat(tables: List[_Table]) -> _Table:
    return _Table(
        tables[0].name,
        pd.concat([t.frame for t in tables], ignore_index=True),
        np.concatenate([t.rows for t in tables]),
        np.concatenate([t.lines for t in tables]),
        np.concatenate([t.shape for t in tables]),
    )


def _unique_ids(
    table: _Table,
    keep: np.ndarray,
    drop: bool,
    dropped: Counter[str],
    column: str = "job_id",
) -> np.ndarray:
    """``keep`` without the later rows of a repeated id (or the error for the first)."""
    ids = table.frame[column].iloc[keep]
    dup = ids.duplicated(keep="first").to_numpy()
    if dup.any() and not drop:
        i = int(np.flatnonzero(dup)[0])
        first = int(keep[np.flatnonzero((ids == ids.iloc[i]).to_numpy())[0]])
        raise TraceError(
            f"{table.where(int(keep[i]), column)}: duplicate {column} {ids.iloc[i]!r} "
            f"(first at row {table.rows[first] + 1})"
        )
    dropped[f"{column}: duplicate"] += int(dup.sum())
    unique: np.ndarray = keep[~dup]
    return unique


def _in_time_order(
    table: _Table,
    submit: np.ndarray,
    keep: np.ndarray,
    drop: bool,
    dropped: Counter[str],
) -> np.ndarray:
    """``keep`` without rows submitted before an earlier kept row (or the error for the first)."""
    times = submit[keep]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(times)[:-1]])
    back = times < before
    if back.any() and not drop:
        i = int(np.flatnonzero(back)[0])
        raise TraceError(
            f"{table.where(int(keep[i]), 'submit_time_s')}: goes back in time "
            f"({times[i]:g} after {times[i - 1]:g} at row {table.rows[keep[i - 1]] + 1}); "
            "job traces must be sorted by submit_time_s"
        )
    dropped["submit_time_s: goes back in time"] += int(back.sum())
    in_order: np.ndarray = keep[~back]
    return in_order


def _finish(
    name: str,
    rows: int,
    out: pd.DataFrame,
    required: Tuple[str, ...],
    dropped: Counter[str],
) -> pd.DataFrame:
    """Numeric extra columns, attrs, and the drop warning."""
    for column in out.columns.difference(list(required), sort=False):
        try:
            out[column] = pd.to_numeric(out[column])
        except (ValueError, TypeError):
            pass
    dropped = Counter({k: v for k, v in dropped.items() if v})
    if out.empty:
        raise TraceError(f"{name}: all {rows} rows are invalid ({dict(dropped)})")
    if dropped:
        warnings.warn(
            f"{name}: dropped {sum(dropped.values())} invalid row(s) of {rows}: "
            f"{dict(dropped)}",
            stacklevel=3,
        )
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
    parts = []
    for chunk in _tables(source, LOAD_COLUMNS):
        time, why_time = _numbers(chunk.frame["time_s"])
        load, why_load = _numbers(chunk.frame["load"], high=1.0)
        bad, labels = _first_problem(chunk, {"time_s": why_time, "load": why_load})
        if bad.any():
            _raise_first(chunk, bad, labels)
        chunk.frame["time_s"], chunk.frame["load"] = time, load
        parts.append(chunk)
    table = _concat(parts)
    time = table.frame["time_s"].to_numpy()
    back = np.flatnonzero(np.diff(time) <= 0)
    if back.size:
        i = int(back[0]) + 1
        raise TraceError(
            f"{table.where(i, 'time_s')}: time does not increase ({time[i]:g} after "
            f"{time[i - 1]:g} at row {i}); times must increase strictly"
        )
    return _finish(table.name, len(table.frame), table.frame, LOAD_COLUMNS, Counter())


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
    with (files("aryl") / "data" / DEFAULT_JOBS).open("rb") as jobs:
        return read_jobs(jobs), embedded_load()


def embedded_load() -> pd.DataFrame:
    """The embedded inference load alone (``load_default``'s second frame), to pair
    with any trace: ``aryl.sim.simulate`` repeats its 8 days end to end to cover the
    trace's submissions (``aryl.sim.provenance.extend_to_jobs``), as with the embedded
    jobs; ``--load embedded`` on the command line.

    Returns
    -------
    pandas.DataFrame
        ``time_s, load``; a new frame on every call.
    """
    with (files("aryl") / "data" / DEFAULT_LOAD).open("rb") as load:
        return read_load(load)
