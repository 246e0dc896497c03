"""Microsoft Philly (ATC'19, ``msr-fiddle/philly-traces``): ``cluster_job_log``."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pandas as pd

from ..reading import MAX_JOB_GPUS, TraceError, _decoding, _lines, _Table
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
    and ``submitted_time``. Left out and counted: jobs with no attempt (never
    started), no recorded start, no end to their last attempt (still running when the
    log was taken), no GPUs, or 0 s of run time.

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
        ``jobid``; a missing ``submitted_time``; a time that is not
        ``YYYY-MM-DD HH:MM:SS``; ``attempts``, ``detail`` or ``gpus`` that are not lists;
        a last end before the first start; more GPUs than the model's limit; a repeated
        ``jobid``.
    """
    name, text = _text(source)
    jobs = Collector(name, "jobid", drop_invalid)
    records: List[Dict[str, Any]] = []
    skips: List[str] = []
    rows: List[int] = []
    lines: List[int] = []
    for row, line, job in _array(name, text):
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
    frame = pd.DataFrame.from_records(records, columns=_COLUMNS)
    chunk = _Table(
        name, frame, np.array(rows), np.array(lines), np.full(len(rows), "", object)
    )
    jobs.keep(chunk, np.ones(len(rows), bool), np.array(skips, object), frame)
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


def _text(source: Any) -> Tuple[str, str]:
    name, lines, close = _lines(source)
    try:
        with _decoding(name):
            return name, "".join(lines)
    finally:
        close()


def _array(name: str, text: str) -> Iterator[Tuple[int, int, Any]]:
    """``(index, line, value)`` of each element of the JSON array ``text``."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if text[at : at + 1] != "[":
        raise TraceError(f"{name}: not a JSON array of jobs (it starts {text[:20]!r})")
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    line, counted, index = 1, 0, 0
    while text[at : at + 1] != "]":
        line += text.count("\n", counted, at)
        counted = at
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise TraceError(
                f"{name}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"
            ) from None
        yield index, line, value
        index += 1
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] == ",":
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        elif text[at : at + 1] != "]":
            line += text.count("\n", counted, at)
            raise TraceError(
                f"{name}: line {line}: expected ',' or ']' after row {index} of the array"
            )
    if text[at + 1 :].strip():
        raise TraceError(f"{name}: text after the end of the JSON array")
    if index == 0:
        raise TraceError(f"{name}: an empty JSON array, no jobs")


def _job(job: Any) -> Tuple[Dict[str, Any], str]:
    """One job's row of the frame and why it is left out (``""`` if kept)."""
    if not isinstance(job, dict):
        raise _Bad("row", "not a JSON object", type(job).__name__)
    job_id = _field(job, "jobid")
    if not isinstance(job_id, str) or not job_id.strip():
        raise _Bad("jobid", "not a non-empty string", job_id)
    submitted = _time(job, "submitted_time", _field(job, "submitted_time"))
    if np.isnan(submitted):
        raise _Bad("submitted_time", "not recorded", job["submitted_time"])
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
        if end < start:
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
    return record, _skip(attempts, gpus, start, end)


def _skip(attempts: List[Any], gpus: int, start: float, end: float) -> str:
    if not attempts:
        return NEVER_STARTED
    if np.isnan(start):
        return NO_START
    if np.isnan(end):
        return STILL_RUNNING
    if gpus == 0:
        return NO_GPUS
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
