"""Reading job and load traces from CSV files (plain or gzip), with named errors."""

from __future__ import annotations

import csv
import warnings
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..validation import flag
from .csv_stream import (
    _CUT,
    CutShortWarning,
    TraceError,
    _blank,
    _cut_short,
    _decoding,
    _header,
    _Lines,
    _lines,
)

#: Required columns of a job trace, in order.
JOB_COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s", "gpu_type")
#: Optional columns of a job trace naming who submitted a job: its user and its group
#: (virtual cluster); ``to_jobs`` makes them the jobs' ``user`` and ``vc``.
GROUP_COLUMNS = ("user", "vc")
#: Required columns of a load trace, in order.
LOAD_COLUMNS = ("time_s", "load")

#: The model's limits (``aryl._core``): a time in seconds, a job's GPUs.
MAX_TIME_S = 1e15
MAX_JOB_GPUS = 2**20

#: The embedded default traces, in ``aryl/data``.
DEFAULT_JOBS = "itp_cluster04_jobs.csv.gz"
DEFAULT_LOAD = "alibaba2018_cpu_load_5min.csv.gz"


#: Rows parsed and checked at a time: memory stays proportional to the parsed columns.
CHUNK_ROWS = 1 << 16


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


def _tables(
    source: Any,
    required: Tuple[str, ...],
    columns: Optional[Tuple[str, ...]] = None,
    refuse: Optional[Callable[[List[str]], Optional[str]]] = None,
) -> Iterator[_Table]:
    """Parse the CSV (csv module: exact line numbers) in chunks of ``CHUNK_ROWS`` rows;
    check header, columns and that rows exist. Blank lines at the end are ignored; a blank
    line before a row is a row (and fails). ``columns``: the file has no header line,
    these name its fields (a first line that is exactly these names, as the release's
    ``.header`` file has them, is skipped as a header; row numbers count from the line
    after it). ``refuse``: given the header, why
    the file cannot be read (None when it can), raised as the file's error."""
    name, lines, close = _lines(source)
    try:
        with _decoding(name):
            reader = csv.reader(lines)
            try:
                if columns is not None:
                    yield from _chunks(
                        name, list(columns), reader, lines, headerless=True
                    )
                    return
                header = _header(name, reader, required, refuse)
                yield from _chunks(name, header, reader, lines)
            except csv.Error as exc:
                raise TraceError(
                    f"{name}: line {reader.line_num}: not valid CSV ({exc})"
                ) from None
    finally:
        close()


def _chunks(
    name: str,
    header: List[str],
    reader: Any,
    source: _Lines,
    headerless: bool = False,
) -> Iterator[_Table]:
    """The rows of ``reader`` (over ``source``) in tables of ``CHUNK_ROWS``. A file
    that ends inside a quoted field is refused (``_cut_short``); a last record with
    the wrong number of fields and no line end says the file may have been cut; a
    whole one without a line end is read, with a ``CutShortWarning``."""
    width, count = len(header), 0
    rows: List[List[str]] = []
    lines: List[int] = []
    shape: List[str] = []
    # Blank records not yet known to be inside (followed by a row): their first line
    # and how many, not the records, so trailing blank lines take no memory.
    blank_line, blanks = 0, 0
    previous = reader.line_num
    # a headerless table may start with the line of the release's .header file
    maybe_header = headerless
    empty = [""] * width

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

    held: List[str] = []  # the lines of the current record
    last: List[str] = []  # those of the last record that is not blank
    last_line = 0
    source.record = held
    for record in reader:
        line, previous = previous + 1, reader.line_num
        if not _blank(record):  # its lines, to check once it is known to be the last
            held, last, last_line = last, held, line
            source.record = held
        held.clear()
        cut = source.cut and not _blank(record)  # the last record, without a line end
        if cut:
            _cut_short(name, line, last)
        if maybe_header:
            maybe_header = False
            if [v.strip() for v in record] == header:
                continue
        if len(record) != width and _blank(record):
            if not blanks:
                blank_line = line
            blanks += 1
            continue
        # blank lines followed by a row are rows (and fail), before this one; only
        # the first one's line can be shown (the first bad row stops the reader)
        for k in range(blanks):
            rows.append(empty)
            lines.append(blank_line + k)
            shape.append("blank line")
            if len(rows) >= CHUNK_ROWS:
                yield flush()
        blanks = 0
        lines.append(line)
        if len(record) == width:
            shape.append("")
            rows.append([v.strip() for v in record])
        else:
            shape.append(
                f"{len(record)} fields, the header has {width}"
                + (f"; {_CUT}" if cut else "")
            )
            rows.append(empty)
        if len(rows) >= CHUNK_ROWS:
            yield flush()
    if rows:
        yield flush()
    if last:
        _cut_short(name, last_line, last)
        if source.cut:
            warnings.warn(
                f"{name}: line {last_line}, the last, has no newline at its end: if "
                "the file was cut short (a truncated download), its last row is "
                "incomplete but read as it is; check it (a file that is whole can "
                "end with a newline)",
                CutShortWarning,
                stacklevel=2,
            )
    if count == 0:
        raise TraceError(
            f"{name}: empty file, no rows"
            if headerless
            else f"{name}: header only, no data rows"
        )


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
        when every value is, but ``user`` and ``vc``: text, see ``GROUP_COLUMNS``).
        ``.attrs`` holds ``source``, ``dropped`` and ``drop_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the data row (1-based) with its CSV line and the column: a
        missing column (suggesting ``format=`` when the header is a known release's); an
        empty, non-numeric, NaN, infinite or negative value; a non-integer or zero
        ``num_gpus``; a zero ``duration_s``; a time above ``MAX_TIME_S`` (1e15 s) or
        ``num_gpus`` above ``MAX_JOB_GPUS`` (2**20), the model's limits; an empty
        ``job_id``; a duplicate ``job_id``; a ``submit_time_s`` that goes back in time
        (these two stop the reader in the chunk where they are); a row with the wrong
        number of fields (or blank); an empty or header-only file; a line longer than
        ``MAX_LINE_CHARS``; an archive (extract it first) or a directory.
    TypeError
        When ``drop_invalid`` is not a bool.
    """
    flag(drop_invalid, "drop_invalid")
    kept: List[_Table] = []
    dropped: Counter[str] = Counter()
    ids, order = _FirstSeen("job_id"), _TimeOrder("submit_time_s")
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
        table = _rows(chunk, good, _shared_strings(frame, ("job_id",)))
        table = _rows(table, ids.first(table, drop_invalid, dropped))
        times = table.frame["submit_time_s"].to_numpy()
        kept.append(_rows(table, order.check(table, times, drop_invalid, dropped)))
    table = _concat(kept)
    return _finish(table.name, total, table.frame, JOB_COLUMNS, dropped)


def _rows(
    table: _Table, keep: np.ndarray, frame: Optional[pd.DataFrame] = None
) -> _Table:
    """The rows ``keep`` (a mask) of ``table``; ``frame``: those rows' frame, made."""
    if frame is None:
        frame = table.frame[keep].reset_index(drop=True)
    return _Table(
        table.name, frame, table.rows[keep], table.lines[keep], table.shape[keep]
    )


class _FirstSeen:
    """The ids of ``column`` read so far, each with its row, so a repeat stops the
    reader in the chunk where it is (not after the whole file)."""

    def __init__(self, column: str):
        self.column = column
        self.rows: Dict[Any, int] = {}

    def first(
        self,
        table: _Table,
        drop: bool,
        dropped: Counter[str],
        values: Optional[pd.Series] = None,
    ) -> np.ndarray:
        """Mask of the rows of ``table`` whose id (``values``, default: its column)
        was not seen before; the first repeat raises unless ``drop``, when repeats are
        counted in ``dropped``."""
        fresh = np.ones(len(table.frame), dtype=bool)
        seen = self.rows
        ids = table.frame[self.column] if values is None else values
        for i, (value, row) in enumerate(zip(ids.tolist(), table.rows.tolist())):
            first = seen.setdefault(value, row)
            if first != row:
                if not drop:
                    raise TraceError(
                        f"{table.where(i, self.column)}: duplicate {self.column} "
                        f"{value!r} (first at row {first + 1})"
                    )
                fresh[i] = False
        dropped[f"{self.column}: duplicate"] += int((~fresh).sum())
        return fresh


class _TimeOrder:
    """The latest ``column`` time kept so far (and its row), so a row that goes back
    in time stops the reader in its chunk."""

    def __init__(self, column: str):
        self.column, self.latest, self.row = column, -np.inf, -1

    def check(
        self, table: _Table, times: np.ndarray, drop: bool, dropped: Counter[str]
    ) -> np.ndarray:
        """Mask of the rows of ``table`` (with these ``times``) that do not go back in
        time; the first that does raises unless ``drop``, when they are counted."""
        before = np.maximum.accumulate(np.concatenate([[self.latest], times]))[:-1]
        back = times < before
        if back.any() and not drop:
            i = int(np.flatnonzero(back)[0])
            previous, row = (
                (times[i - 1], table.rows[i - 1]) if i else (self.latest, self.row)
            )
            raise TraceError(
                f"{table.where(i, self.column)}: goes back in time "
                f"({times[i]:g} after {previous:g} at row {row + 1}); "
                f"job traces must be sorted by {self.column}"
            )
        dropped[f"{self.column}: goes back in time"] += int(back.sum())
        ahead = np.flatnonzero(~back)
        if ahead.size:
            self.latest, self.row = times[ahead[-1]], int(table.rows[ahead[-1]])
        forward: np.ndarray = ~back
        return forward


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


def _finish(
    name: str,
    rows: int,
    out: pd.DataFrame,
    required: Tuple[str, ...],
    dropped: Counter[str],
    text: Sequence[str] = (),
) -> pd.DataFrame:
    """Numeric extra columns (but ``text`` and ``GROUP_COLUMNS``, kept as text: one
    dtype whatever a file holds), attrs, and the drop warning."""
    keep_text = set(text) | set(GROUP_COLUMNS)
    for column in out.columns.difference(list(required), sort=False):
        if column in keep_text:
            continue
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
    trace's submissions (``aryl.engine.provenance.extend_to_jobs``), as with the embedded
    jobs; ``--load embedded`` on the command line.

    Returns
    -------
    pandas.DataFrame
        ``time_s, load``; a new frame on every call.
    """
    with (files("aryl") / "data" / DEFAULT_LOAD).open("rb") as load:
        return read_load(load)
