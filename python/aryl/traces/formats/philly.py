"""Microsoft Philly (ATC'19, ``msr-fiddle/philly-traces``): ``cluster_job_log``."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pandas as pd

from ..csv_stream import (
    TraceError,
    _decoding,
    _text,
)
from ..reading import (
    CHUNK_ROWS,
    MAX_JOB_GPUS,
    _Table,
)
from .common import (
    NEVER_STARTED,
    NO_GPUS,
    STILL_RUNNING,
    UNKNOWN,
    ZERO_RUN,
    Collector,
    one_time,
)

#: A job's first attempt has no ``start_time`` (a logging error, the release says).
NO_START = "no start time recorded"
#: A job without a ``submitted_time`` (the release's notebook tolerates them).
NO_SUBMIT = "no submit time recorded"
#: A job whose last end is before its first start by at most ``DST_SHIFT_S``: the
#: log's times are local, and the trace spans a daylight-saving change.
DST_SHIFT = "ends before it starts (local times across a daylight-saving change)"
DST_SHIFT_S = 3600.0
#: The longest JSON text of one job, in characters: far above a real job (a few
#: hundred), and what bounds the memory one record can take.
MAX_JOB_CHARS = 1 << 24
#: Characters read at a time.
_BLOCK = 1 << 16
_SPACE = re.compile(r"[ \t\n\r]*")


class _Bad(ValueError):
    """A job's value that breaks the published schema: its key and what is wrong."""

    def __init__(self, key: str, reason: str, got: Any = None):
        super().__init__(reason)
        self.key, self.reason, self.got = key, reason, got


def read_philly(source: Any, *, drop_invalid: bool = False) -> pd.DataFrame:
    """Read Philly's ``cluster_job_log``: one JSON array of jobs, as released.

    Each job has ``jobid``, ``submitted_time``, ``status`` (``Pass``, ``Killed``,
    ``Failed``), ``vc``, ``user`` and ``attempts``: each a ``start_time``,
    ``end_time`` and ``detail`` (a list of ``{"ip", "gpus"}``). As the release's
    notebook reads them: ``num_gpus`` is the number of GPUs of the first attempt;
    ``duration_s`` runs from the first attempt's start to the last attempt's end (so
    retries and the gaps between them count); ``submit_time_s`` is ``submitted_time``
    (read as written, no time zone) in seconds from the first kept job's. ``job_id`` is
    ``jobid``; ``gpu_type`` is ``unknown`` (the log does not record it). Jobs of every
    ``status`` are kept, with ``status``, ``vc``, ``user``, ``attempts`` (their count)
    and ``submitted_time``. Left out and counted: jobs with no recorded submission,
    no attempt (never started), no recorded start, no end to their last attempt
    (still running when the log was taken), no GPUs, an end up to an hour before the
    start (the log's local times cross a daylight-saving change), or 0 s of run
    time. The file is read a block at a time: memory holds the kept jobs, not the
    text.

    Parameters
    ----------
    source
        A path or a file object (text or binary); gzip is detected by its magic bytes.
    drop_invalid
        As in ``read_jobs``: skip jobs with a problem (counted) instead of raising.

    Returns
    -------
    pandas.DataFrame
        The job frame of ``read_jobs``; ``.attrs`` adds ``format``, ``skipped`` and
        ``skip_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the job's row (its position in the array, 1-based; with its
        line) and the key: text that is not a JSON array of objects; a missing or empty
        ``jobid``; a missing ``submitted_time`` key; a time that is not
        ``YYYY-MM-DD HH:MM:SS``; ``attempts``, ``detail`` or ``gpus`` that are not lists;
        a ``status``, ``vc`` or ``user`` that is not a string; a last end more than an
        hour before the first start; more GPUs than the model's limit; a repeated
        ``jobid``; a job nested too deeply or longer than ``MAX_JOB_CHARS``.
    """
    name, text, close = _text(source)
    try:
        with _decoding(name):
            return _read(name, text, drop_invalid)
    finally:
        close()


def _read(name: str, text: Any, drop_invalid: bool) -> pd.DataFrame:
    jobs = Collector(name, "jobid", drop_invalid)
    records: List[Dict[str, Any]] = []
    skips: List[str] = []
    rows: List[int] = []
    lines: List[int] = []

    def keep() -> None:
        frame = pd.DataFrame.from_records(records, columns=_COLUMNS)
        chunk = _Table(
            name, frame, np.array(rows), np.array(lines), np.full(len(rows), "", object)
        )
        jobs.keep(chunk, np.ones(len(rows), bool), np.array(skips, object), frame)
        for kept in (records, skips, rows, lines):
            kept.clear()

    for row, line, job in _JsonArray(name, text).items():
        jobs.total += 1
        try:
            record, skip = _job(job)
        except _Bad as bad:
            if not drop_invalid:
                got = "" if bad.got is None else f" (got {bad.got!r})"
                raise TraceError(
                    f"{name}: row {row + 1} (line {line}), key {bad.key!r}: "
                    f"{bad.reason}{got}"
                ) from None
            key = re.sub(r"\[[1-9][0-9]*\]", "[i]", bad.key)  # one count for all i
            jobs.dropped[f"{key}: {bad.reason}"] += 1
            continue
        records.append(record)
        skips.append(skip)
        rows.append(row)
        lines.append(line)
        if len(records) >= CHUNK_ROWS:
            keep()
    keep()
    return jobs.frame("philly")


_COLUMNS = [
    "job_id",
    "submit_time_s",
    "num_gpus",
    "duration_s",
    "gpu_type",
    "status",
    "vc",
    "user",
    "attempts",
    "submitted_time",
]


class _JsonArray:
    """The elements of the JSON array in a text stream, read a block at a time: memory
    holds one element (at most ``MAX_JOB_CHARS``), not the file."""

    def __init__(self, name: str, text: Any):
        self.name, self.text = name, text
        self.buffer, self.at, self.eof = "", 0, False
        # the line of buffer[mark], counted forward only (per element: linear time),
        # and the 0-based column of buffer[0]
        self.mark, self.mark_line, self.column = 0, 1, 0

    def _more(self, size: int = _BLOCK) -> bool:
        """Read ``size`` more characters, dropping what is consumed; False at the end."""
        data = self.text.read(size)
        if not data:
            self.eof = True
            return False
        self._line(self.at)
        newline = self.buffer.rfind("\n", 0, self.at)
        self.column = self.at - newline - 1 if newline >= 0 else self.column + self.at
        self.buffer, self.at, self.mark = self.buffer[self.at :] + data, 0, 0
        return True

    def _line(self, at: int) -> int:
        """The line (1-based) of ``buffer[at]``, for ``at`` at or after the last asked."""
        self.mark_line += self.buffer.count("\n", self.mark, at)
        self.mark = at
        return self.mark_line

    def _where(self, at: int) -> Tuple[int, int]:
        """(line, column), 1-based, of ``buffer[at]`` (for an error: once)."""
        newline = self.buffer.rfind("\n", 0, at)
        return self._line(at), at - newline if newline >= 0 else self.column + at + 1

    def _next(self) -> str:
        """The next character that is not white space (``""`` at the end)."""
        while True:
            self.at = _SPACE.match(self.buffer, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.buffer) or not self._more():
                return self.buffer[self.at : self.at + 1]

    def _value(self, row: int) -> Any:
        """Decode the element at ``at``, reading on while it may be cut by the block."""
        decoder = json.JSONDecoder()
        while True:
            try:
                value, end = decoder.raw_decode(self.buffer, self.at)
                if end < len(self.buffer) or self.eof:  # a number may go on
                    self.at = end
                    return value
            except json.JSONDecodeError as exc:
                if self.eof:
                    line, column = self._where(exc.pos)
                    raise TraceError(
                        f"{self.name}: line {line} column {column}: not valid JSON "
                        f"({exc.msg})"
                    ) from None
            except RecursionError:
                line = self._line(self.at)
                raise TraceError(
                    f"{self.name}: row {row + 1} (line {line}): nested too deeply "
                    "to be a job"
                ) from None
            if len(self.buffer) - self.at > MAX_JOB_CHARS:
                line = self._line(self.at)
                raise TraceError(
                    f"{self.name}: row {row + 1} (line {line}): longer than "
                    f"{MAX_JOB_CHARS:,} characters; no job of the log is that long"
                )
            self._more(max(_BLOCK, len(self.buffer) - self.at))  # doubles: linear

    def items(self) -> Iterator[Tuple[int, int, Any]]:
        """``(index, line, value)`` of each element of the array."""
        if self._next() != "[":
            start = self.buffer[self.at : self.at + 20]
            raise TraceError(
                f"{self.name}: not a JSON array of jobs (it starts {start!r})"
            )
        self.at += 1
        index = 0
        while self._next() != "]":
            if not self.buffer[self.at :]:
                line, column = self._where(self.at)
                raise TraceError(
                    f"{self.name}: line {line} column {column}: not valid JSON "
                    "(the array does not end)"
                )
            line = self._line(self.at)
            yield index, line, self._value(index)
            index += 1
            after = self._next()
            if after == ",":
                self.at += 1
                if self._next() == "]":
                    line = self._line(self.at)
                    raise TraceError(
                        f"{self.name}: line {line}: a ',' before ']' after row {index} "
                        "of the array (not valid JSON)"
                    )
            elif after != "]":
                line = self._line(self.at)
                raise TraceError(
                    f"{self.name}: line {line}: expected ',' or ']' after row {index} "
                    "of the array"
                )
        self.at += 1
        if self._next():
            raise TraceError(f"{self.name}: text after the end of the JSON array")
        if index == 0:
            raise TraceError(f"{self.name}: an empty JSON array, no jobs")


def _job(job: Any) -> Tuple[Dict[str, Any], str]:
    """One job's row of the frame and why it is left out (``""`` if kept)."""
    if not isinstance(job, dict):
        raise _Bad("row", "not a JSON object", type(job).__name__)
    job_id = _field(job, "jobid")
    if not isinstance(job_id, str) or not job_id.strip():
        raise _Bad("jobid", "not a non-empty string", job_id)
    submitted = _time(job, "submitted_time", _field(job, "submitted_time"))
    for key in ("status", "vc", "user"):
        if not isinstance(job.get(key), (str, type(None))):
            raise _Bad(key, "not a string", type(job[key]).__name__)
    attempts = _field(job, "attempts")
    if not isinstance(attempts, list):
        raise _Bad("attempts", "not a list", type(attempts).__name__)
    for i, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            raise _Bad(f"attempts[{i}]", "not a JSON object", type(attempt).__name__)
    gpus, start, end = 0, np.nan, np.nan
    if attempts:
        gpus = _gpus(attempts[0].get("detail", []))
        start = _time(job, "attempts[0].start_time", attempts[0].get("start_time"))
        last = f"attempts[{len(attempts) - 1}].end_time"
        end = _time(job, last, attempts[-1].get("end_time"))
        if end < start - DST_SHIFT_S:
            raise _Bad(last, "before attempts[0].start_time", attempts[-1]["end_time"])
    record = {
        "job_id": job_id,
        "submit_time_s": submitted,
        "num_gpus": gpus,
        "duration_s": end - start,
        "gpu_type": UNKNOWN,
        "status": job.get("status"),
        "vc": job.get("vc"),
        "user": job.get("user"),
        "attempts": len(attempts),
        "submitted_time": job["submitted_time"],
    }
    return record, _skip(submitted, attempts, gpus, start, end)


def _skip(
    submitted: float, attempts: List[Any], gpus: int, start: float, end: float
) -> str:
    if np.isnan(submitted):
        return NO_SUBMIT
    if not attempts:
        return NEVER_STARTED
    if np.isnan(start):
        return NO_START
    if np.isnan(end):
        return STILL_RUNNING
    if gpus == 0:
        return NO_GPUS
    if end < start:
        return DST_SHIFT
    return ZERO_RUN if end == start else ""


def _field(job: Dict[str, Any], key: str) -> Any:
    if key not in job:
        raise _Bad(key, "missing")
    return job[key]


def _time(job: Dict[str, Any], key: str, value: Any) -> float:
    try:
        return one_time(value)
    except ValueError as exc:
        raise _Bad(key, str(exc), value) from None


def _gpus(detail: Any) -> int:
    """GPUs of an attempt: the sum over its servers of their ``gpus`` lists."""
    if not isinstance(detail, list):
        raise _Bad("attempts[0].detail", "not a list", type(detail).__name__)
    total = 0
    for i, server in enumerate(detail):
        gpus = server.get("gpus") if isinstance(server, dict) else None
        if not isinstance(gpus, list):
            raise _Bad(f"attempts[0].detail[{i}].gpus", "not a list")
        total += len(gpus)
    if total > MAX_JOB_GPUS:
        raise _Bad("attempts[0].detail", f"above {MAX_JOB_GPUS:g} GPUs", total)
    return total
