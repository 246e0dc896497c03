"""Alibaba PAI 2020 (NSDI'22 "MLaaS in the Wild", ``alibaba/clusterdata``
``cluster-trace-gpu-v2020``): ``pai_job_table.csv`` with ``pai_task_table.csv``."""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import Path
from typing import Any, Set, Tuple

import numpy as np
import pandas as pd

from ...validation import flag
from ..csv_stream import (
    TraceError,
    _stream_name,
)
from ..reading import (
    MAX_JOB_GPUS,
    MAX_TIME_S,
    _first_problem,
    _numbers,
    _raise_first,
    _tables,
)
from .common import (
    NEVER_STARTED,
    NO_GPUS,
    STILL_RUNNING,
    UNKNOWN,
    ZERO_RUN,
    Collector,
    empty_reasons,
    first_skip,
    gpu_types,
)

#: The columns of ``pai_job_table.csv`` (no header line; the release's
#: ``pai_job_table.header`` names them). ``start_time`` is the submission.
PAI_JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
#: The columns of ``pai_task_table.csv`` (no header line; ``pai_task_table.header``).
PAI_TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
NO_TASKS = "no task in the task table"
ORPHAN_TASKS = "task rows of no job in the job table"
BAD_TASK = "a task row of the job is invalid"


def read_alibaba_pai(
    source: Any, task_table: Any = None, *, drop_invalid: bool = False
) -> pd.DataFrame:
    """Read Alibaba PAI 2020's ``pai_job_table.csv`` and ``pai_task_table.csv``.

    Both are CSV without a header line, columns as the release's README lists them.
    A job is a row of the job table; its tasks are the task rows with its
    ``job_name``. ``job_id`` is ``job_name``; ``submit_time_s`` is the job's
    ``start_time`` (its submission) from the first kept job's; ``num_gpus`` is what
    its tasks ask for, the sum of ``inst_num * plan_gpu / 100`` (``plan_gpu`` is in
    percent of a GPU; empty for a CPU task), rounded up to whole GPUs (aryl allocates
    whole GPUs; the exact sum is kept as ``trace_gpus``); ``duration_s`` runs from its
    first task's launch (``start_time``) to its last task's ``end_time``, over the
    tasks that launched (a time of 0 or empty is not recorded: the task did not
    launch, or has not ended). ``gpu_type`` is ``V100`` when every GPU task ran on a
    V100 (``V100``, ``V100M32``), ``T4`` when every one ran on a T4, else ``unknown``
    (``P100``, ``MISC``, mixes); the types are kept as ``trace_gpu_type``. Jobs of
    every other ``status`` are kept. Left out and counted: jobs with no task, no GPU,
    no launched task, still running when the trace ends (``status`` ``Running``, or a
    launched task without an end), or 0 s of run time, and task rows whose job is not
    in the job table. Either table may start with the line of the release's
    ``.header`` file (the column names): it is read as a header.

    Parameters
    ----------
    source
        ``pai_job_table.csv``: a path or a file object (text or binary); gzip is
        detected by its magic bytes.
    task_table
        ``pai_task_table.csv``, the same way; default: the file beside ``source`` whose
        name has ``pai_task_table`` where ``source``'s has ``pai_job_table``.
    drop_invalid
        As in ``read_jobs``: skip rows with a problem (counted) instead of raising; a
        job with an invalid task row is skipped with it.

    Returns
    -------
    pandas.DataFrame
        The job frame of ``read_jobs``, with the job table's other columns, ``tasks``
        (the job's task rows), ``trace_gpus`` and ``trace_gpu_type``; ``.attrs`` adds
        ``format``, ``skipped`` and ``skip_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the row (with its line) and the column: in the job table an
        empty ``job_name``, an empty, non-numeric or negative ``start_time``, tasks
        asking for more GPUs than the model's limit, a repeated ``job_name``; in the
        task table an empty ``job_name``, a non-numeric, fractional or negative ``inst_num``,
        ``start_time``, ``end_time`` or ``plan_gpu``, an ``end_time`` before the
        ``start_time``; in either a row with the wrong number of fields. Also when the
        task table cannot be found, or ``source`` is a file object and no
        ``task_table`` is given.
    TypeError
        When ``source`` is neither a path nor a file object, or ``drop_invalid`` is
        not a bool.
    """
    flag(drop_invalid, "drop_invalid")
    per_job, bad_jobs, task_dropped = _tasks(
        _task_table(source) if task_table is None else task_table, drop_invalid
    )
    jobs = Collector("", "job_name", drop_invalid)
    jobs.dropped.update(task_dropped)
    seen: Set[str] = set()
    for chunk in _tables(source, (), PAI_JOB_COLUMNS):
        jobs.name = chunk.name
        frame = chunk.frame
        names = frame["job_name"]
        job = per_job.reindex(names.to_numpy())
        submit, why_submit = _numbers(frame["start_time"], high=MAX_TIME_S)
        gpus = np.ceil(job["gpus"].to_numpy() - 1e-9)
        bad_task = names.isin(bad_jobs).to_numpy()
        good = jobs.check(
            chunk,
            {
                "job_name": np.select(
                    [names == "", bad_task, gpus > MAX_JOB_GPUS],
                    [
                        "empty value",
                        BAD_TASK,
                        f"tasks ask for above {MAX_JOB_GPUS:g} GPUs",
                    ],
                    "",
                ).astype(object),
                "start_time": why_submit,
            },
        )
        seen.update(names.tolist())  # its tasks are not orphans, kept or not
        duration = job["end"].to_numpy() - job["start"].to_numpy()
        skip = first_skip(
            [
                (job["tasks"].isna().to_numpy(), NO_TASKS),
                (gpus == 0, NO_GPUS),
                (~np.isfinite(job["start"].to_numpy()), NEVER_STARTED),
                (
                    (job["running"].to_numpy() == True)  # noqa: E712 (NaN)
                    | (frame["status"] == "Running").to_numpy(),
                    STILL_RUNNING,
                ),
                (duration == 0, ZERO_RUN),
            ],
        )
        out = frame.drop(columns=["job_name"]).assign(
            job_id=names,
            submit_time_s=submit,
            num_gpus=np.where(good & (skip == ""), gpus, 0).astype(np.int64),
            duration_s=duration,
            gpu_type=job["gpu_type"].fillna(UNKNOWN).to_numpy(),
            tasks=job["tasks"].to_numpy(),
            trace_gpus=job["gpus"].to_numpy(),
            trace_gpu_type=job["types"].to_numpy(),
        )
        jobs.keep(chunk, good, skip, out)
    orphans = per_job.index.difference(pd.Index(list(seen)))
    jobs.skipped[ORPHAN_TASKS] += int(per_job.loc[orphans, "tasks"].sum())
    return jobs.frame("alibaba-pai")


def _task_table(source: Any) -> Path:
    """The task table beside the job table ``source``."""
    if not isinstance(source, (str, os.PathLike)):
        if not callable(getattr(source, "read", None)):
            raise TypeError(f"expected a path or a file object, got {source!r}")
        raise TraceError(
            f"{_stream_name(source)}: a job table given as a file object needs its "
            "task table: read_alibaba_pai(job_table, task_table) (read() finds "
            "pai_task_table.csv only beside a path)"
        )
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    if "pai_job_table" not in path.name:
        raise TraceError(
            f"{path}: cannot tell where its task table is (the name does not contain "
            "pai_job_table); give the task table (task_table=)"
        )
    tasks = path.with_name(path.name.replace("pai_job_table", "pai_task_table"))
    if not tasks.is_file():
        raise TraceError(
            f"{path}: its task table {tasks} does not exist (the release's "
            "pai_task_table.csv goes beside pai_job_table.csv)"
        )
    return tasks


def _tasks(
    source: Any, drop_invalid: bool
) -> Tuple[pd.DataFrame, Set[str], Counter[str]]:
    """Per job name: ``tasks`` (rows), ``gpus`` (the exact sum), ``start`` (first
    launch, inf if none), ``end`` (last end of a launched task), ``running`` (a
    launched task has no end), ``types`` (``+``-joined GPU types) and ``gpu_type``
    (aryl's, ``gpu_types``); the names of
    jobs with an invalid task row; the invalid rows' reasons."""
    parts = []
    bad_jobs: Set[str] = set()
    dropped: Counter[str] = Counter()
    for chunk in _tables(source, (), PAI_TASK_COLUMNS):
        frame = chunk.frame
        inst, why_inst = _numbers(frame["inst_num"], integer=True, high=MAX_JOB_GPUS)
        start, why_start = _numbers(
            frame["start_time"].replace("", "0"), high=MAX_TIME_S
        )
        end, why_end = _numbers(frame["end_time"].replace("", "0"), high=MAX_TIME_S)
        plan, why_plan = _numbers(frame["plan_gpu"].replace("", "0"), high=1e6)
        with np.errstate(invalid="ignore"):
            before = (start > 0) & (end > 0) & (end < start)
        bad, labels = _first_problem(
            chunk,
            {
                "job_name": empty_reasons(frame["job_name"]),
                "inst_num": why_inst,
                "start_time": why_start,
                "end_time": np.where(before, "before start_time", why_end).astype(
                    object
                ),
                "plan_gpu": why_plan,
            },
        )
        if bad.any() and not drop_invalid:
            _raise_first(chunk, bad, labels)
        dropped.update(f"task {label}" for label in labels)
        bad_jobs.update(frame["job_name"][bad].tolist())
        gpu_task = plan > 0
        launched = start > 0
        types = frame["gpu_type"].where(frame["gpu_type"] != "", "unrecorded")
        parts.append(
            pd.DataFrame(
                {
                    "job_name": frame["job_name"],
                    "gpus": inst * plan / 100,
                    "start": np.where(launched, start, np.inf),
                    "end": np.where(launched, end, -np.inf),
                    "running": launched & (end == 0),
                    "type": types.where(gpu_task, None),
                }
            )[~bad]
        )
    tasks = pd.concat(parts, ignore_index=True)
    groups = tasks.groupby("job_name", sort=False)
    per_job = groups.agg(
        tasks=("gpus", "size"),
        gpus=("gpus", "sum"),
        start=("start", "min"),
        end=("end", "max"),
        running=("running", "any"),
    )
    kinds = tasks.dropna(subset=["type"]).drop_duplicates(["job_name", "type"])
    kinds = kinds.sort_values("type", kind="stable")
    # "+"-joined by a string sum: a Python join per job took twice as long at PAI's size
    per_job["types"] = (kinds["type"] + "+").groupby(kinds["job_name"]).sum().str[:-1]
    per_job["gpu_type"] = gpu_types(kinds["type"], kinds["job_name"])
    return per_job, bad_jobs, dropped
