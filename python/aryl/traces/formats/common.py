"""What every importer shares: parsing times, checking values, naming GPU types, and
turning the kept jobs into one job frame whose attrs count what was left out and why."""

from __future__ import annotations

import warnings
from collections import Counter
from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ...validation import flag
from ..csv_stream import (
    TraceError,
)
from ..reading import (
    JOB_COLUMNS,
    MAX_JOB_GPUS,
    _concat,
    _finish,
    _first_problem,
    _FirstSeen,
    _raise_first,
    _rows,
    _shared_strings,
    _Table,
)

#: How Philly and Helios write a time (no time zone: read as given, as their notebooks do).
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: ``gpu_type`` of a job whose trace names no GPU aryl's cluster has (``to_jobs`` then
#: gives it the training GPU or lets it run on any type).
UNKNOWN = "unknown"
#: ``gpu_type`` of a job the trace says may run on any type (``conversion.ANY_GPU_TYPES``).
ANY = "any"
#: The reasons a record is left out: it is valid, but not a GPU job aryl can replay.
NEVER_STARTED = "never started"
STILL_RUNNING = "still running at the end of the trace"
NO_GPUS = "no GPUs"
ZERO_RUN = "ran 0 s"


def gpu_types(names: pd.Series, groups: Any) -> pd.Series:
    """Per group of ``names`` (GPU type names): the type of aryl's cluster every name
    is (``aryl_gpu_type``), else ``unknown``."""
    per = names.map(aryl_gpu_type).fillna(UNKNOWN).groupby(groups)
    types: pd.Series = per.first().where(per.nunique() == 1, UNKNOWN)
    return types


def aryl_gpu_type(name: Any) -> Optional[str]:
    """The GPU type of aryl's cluster a trace's type name is: ``V100`` for ``V100``,
    ``V100M16`` and ``V100M32`` (the training GPU, whatever its memory), ``T4`` for
    ``T4`` (the inference GPU); None for any other (``P100``, ``MISC``, ``G2``...)."""
    text = str(name).strip().upper()
    if text.startswith("V100"):
        return "V100"
    return "T4" if text == "T4" else None


def empty_reasons(text: pd.Series) -> np.ndarray:
    """Per row: ``empty value`` for an empty string, else ``""``."""
    return np.where(text == "", "empty value", "").astype(object)


def seconds(text: pd.Series) -> Tuple[np.ndarray, np.ndarray]:
    """Times written ``YYYY-MM-DD HH:MM:SS`` as seconds since 1970 (NaN where empty),
    and per row what is wrong (``""`` if nothing)."""
    parsed = pd.to_datetime(text.where(text != ""), format=TIME_FORMAT, errors="coerce")
    stamps = parsed.to_numpy()
    # whole seconds in any resolution pandas picked (a subtraction in nanoseconds
    # overflows before year 1678)
    values = stamps.astype("datetime64[s]").astype(np.int64).astype(float)
    values[np.isnat(stamps)] = np.nan
    bad = (text != "").to_numpy() & np.isnan(values)
    return values, np.where(bad, "not a time (YYYY-MM-DD HH:MM:SS)", "").astype(object)


def one_time(value: Any) -> float:
    """One Philly time (a string, or ``None``/``"None"``/``""`` when not recorded) as
    seconds since 1970, NaN when not recorded; ValueError when not a time."""
    if value is None or value in ("", "None"):
        return float("nan")
    if not isinstance(value, str):
        raise ValueError("not a time (YYYY-MM-DD HH:MM:SS)")
    try:
        return (
            datetime.strptime(value, TIME_FORMAT) - datetime(1970, 1, 1)
        ).total_seconds()
    except ValueError:
        raise ValueError("not a time (YYYY-MM-DD HH:MM:SS)") from None


def whole(gpus: np.ndarray) -> np.ndarray:
    """GPU counts as integers; 0 where not a count within the model's limit (those rows
    are invalid and never kept)."""
    fits = np.isfinite(gpus) & (gpus >= 0) & (gpus <= MAX_JOB_GPUS)
    counts: np.ndarray = np.where(fits, gpus, 0).astype(np.int64)
    return counts


def first_skip(rules: Sequence[Tuple[np.ndarray, str]]) -> np.ndarray:
    """Per row, the reason of the first rule whose mask holds (``""`` if none)."""
    return np.select([m for m, _ in rules], [r for _, r in rules], "").astype(object)


class Collector:
    """The jobs an importer keeps, chunk by chunk, and the count of what it leaves out:
    ``dropped`` (invalid records, with ``drop_invalid``) and ``skipped`` (valid records
    that are not GPU jobs aryl can replay)."""

    def __init__(self, name: str, id_column: str, drop_invalid: bool):
        self.name, self.id_column = name, id_column
        self.drop_invalid = flag(drop_invalid, "drop_invalid")
        self.ids = _FirstSeen(id_column)
        self.parts: List[_Table] = []
        self.dropped: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.total = 0

    def check(self, chunk: _Table, reasons: Dict[str, np.ndarray]) -> np.ndarray:
        """Rows of ``chunk`` without a problem; the first problem raises unless
        ``drop_invalid``, when the rows with one are counted in ``dropped``."""
        bad, labels = _first_problem(chunk, reasons)
        if bad.any() and not self.drop_invalid:
            _raise_first(chunk, bad, labels)
        self.dropped.update(labels)
        self.total += len(chunk.frame)
        good: np.ndarray = ~bad
        return good

    def keep(
        self, chunk: _Table, good: np.ndarray, skip: np.ndarray, jobs: pd.DataFrame
    ) -> None:
        """Keep the rows of ``jobs`` (one per row of ``chunk``) that are ``good``, have
        no ``skip`` reason and an id not kept before (the first repeat raises unless
        ``drop_invalid``); count the skipped ones."""
        skipped = good & (skip != "")
        self.skipped.update(skip[skipped].tolist())
        rows = good & ~skipped
        table = _rows(chunk, rows, jobs[rows].reset_index(drop=True))
        fresh = self.ids.first(
            table, self.drop_invalid, self.dropped, table.frame["job_id"]
        )
        self.parts.append(_rows(table, fresh))

    def frame(
        self,
        format: str,
        *,
        text: Sequence[str] = (),
        still_running: Optional[Callable[[pd.DataFrame], np.ndarray]] = None,
    ) -> pd.DataFrame:
        """The job frame: sorted by submission (stable), ``submit_time_s`` from the
        first kept submission; ``attrs`` as ``read_jobs`` sets them, plus ``format``,
        ``skipped`` and ``skip_reasons``; a warning names each count. ``text``: the
        trace's columns kept as text even when every value is a number (``user`` and
        ``vc`` always are); ``still_running``: a mask of the kept jobs that were still
        running when the trace ended (known only once every record is read), left out
        as such."""
        parts = [p for p in self.parts if len(p.frame)]
        frame = _concat(parts).frame if parts else pd.DataFrame()
        if parts and still_running is not None:
            running = np.asarray(still_running(frame), dtype=bool)
            self.skipped[STILL_RUNNING] += int(running.sum())
            frame = frame[~running]
        if frame.empty:
            left = {**self.dropped, **self.skipped}
            raise TraceError(
                f"{self.name}: no job aryl can replay among {self.total} records "
                f"({dict(Counter({k: v for k, v in left.items() if v}))})"
            )
        frame = frame.iloc[np.argsort(frame["submit_time_s"].to_numpy(), kind="stable")]
        frame = frame.reset_index(drop=True)
        frame["submit_time_s"] -= frame["submit_time_s"].iloc[0]
        frame["job_id"] = frame["job_id"].astype(str)
        extra = [c for c in frame.columns if c not in JOB_COLUMNS]
        frame = _shared_strings(frame[[*JOB_COLUMNS, *extra]], ("job_id",))
        out = _finish(
            self.name, self.total, frame, JOB_COLUMNS, self.dropped, text=text
        )
        skipped = Counter({k: v for k, v in self.skipped.items() if v})
        if skipped:
            warnings.warn(
                f"{self.name}: left out {sum(skipped.values())} record(s) of "
                f"{self.total} that are not GPU jobs aryl can replay: {dict(skipped)}",
                stacklevel=3,
            )
        out.attrs.update(
            format=format, skipped=sum(skipped.values()), skip_reasons=skipped
        )
        return out
