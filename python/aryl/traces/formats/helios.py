"""SenseTime Helios (SC'21, ``S-Lab-System-Group/HeliosData``): ``cluster_log.csv``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..reading import MAX_JOB_GPUS, MAX_TIME_S, _numbers, _tables
from .common import (
    NEVER_STARTED,
    NO_GPUS,
    STILL_RUNNING,
    UNKNOWN,
    ZERO_RUN,
    Collector,
    empty_reasons,
    first_skip,
    seconds,
    whole,
)

#: The columns of ``cluster_log.csv`` the mapping reads (the release has also ``user``,
#: ``vc``, ``cpu_num``, ``node_num``, ``state``, ``start_time``, ``end_time``, ``queue``).
HELIOS_COLUMNS = ("job_id", "gpu_num", "submit_time", "duration")


def read_helios(source: Any, *, drop_invalid: bool = False) -> pd.DataFrame:
    """Read a Helios ``cluster_log.csv`` (one Slurm job a row, with a header line).

    ``job_id`` is the Slurm id; ``submit_time_s`` is ``submit_time`` (read as written,
    no time zone) in seconds from the first kept job's; ``num_gpus`` is ``gpu_num``;
    ``duration_s`` is ``duration`` (the release's ``end_time - start_time``); ``gpu_type``
    is ``unknown`` (the log does not record it). Jobs of every ``state`` are kept
    (a failed or cancelled job held its GPUs for its ``duration``). Left out and counted:
    CPU jobs (``gpu_num`` 0), jobs that ran 0 s, and, should a log hold any (the
    release holds ended jobs only), ``RUNNING`` jobs (still running when the log ends)
    and ``PENDING`` ones (never started). The other columns are kept (``user`` and
    ``vc`` as text).

    Parameters
    ----------
    source
        A path or a file object (text or binary); gzip is detected by its magic bytes.
    drop_invalid
        As in ``read_jobs``: skip rows with a problem (counted) instead of raising.

    Returns
    -------
    pandas.DataFrame
        The job frame of ``read_jobs``; ``.attrs`` adds ``format``, ``skipped`` and
        ``skip_reasons`` (a ``Counter`` of the reasons a valid row was left out).

    Raises
    ------
    TraceError
        Naming the file, the row (with its line) and the column: a missing column; an
        empty ``job_id``; an empty, non-numeric or negative ``gpu_num`` or ``duration``;
        a ``submit_time`` that is not ``YYYY-MM-DD HH:MM:SS``; values beyond the model's
        limits; a repeated ``job_id``; a row with the wrong number of fields.
    """
    jobs = Collector("", "job_id", drop_invalid)
    for chunk in _tables(source, HELIOS_COLUMNS):
        jobs.name = chunk.name
        frame = chunk.frame
        gpus, why_gpus = _numbers(frame["gpu_num"], integer=True, high=MAX_JOB_GPUS)
        duration, why_duration = _numbers(frame["duration"], high=MAX_TIME_S)
        submit, why_submit = seconds(frame["submit_time"])
        good = jobs.check(
            chunk,
            {
                "job_id": empty_reasons(frame["job_id"]),
                "gpu_num": why_gpus,
                "submit_time": np.where(
                    frame["submit_time"] == "", "empty value", why_submit
                ),
                "duration": why_duration,
            },
        )
        state = frame.get("state", pd.Series("", index=frame.index)).str.upper()
        skip = first_skip(
            [
                (gpus == 0, NO_GPUS),
                ((state == "PENDING").to_numpy(), NEVER_STARTED),
                ((state == "RUNNING").to_numpy(), STILL_RUNNING),
                (duration == 0, ZERO_RUN),
            ]
        )
        out = frame.drop(columns=["gpu_num", "duration"]).assign(
            submit_time_s=submit,
            num_gpus=whole(gpus),
            duration_s=duration,
            gpu_type=UNKNOWN,
        )
        jobs.keep(chunk, good, skip, out)
    return jobs.frame("helios")
