"""Every job's allocation intervals, recorded by ``simulate(..., history=True)``.

The table (``Result.history()``) has one row per (job, interval, server): job ``job``
held ``workers`` workers (``gpus`` GPUs) of ``gpu_type`` on ``server`` from ``start``
to ``end`` (seconds); ``on_loan`` says the server is an inference server lent to
training. An interval is a stretch over which the job's allocation did not change;
its rows share the job's ``interval`` number (0, 1, ... per job). ``opened`` and
``closed`` say why it began and ended (``CHANGES``): ``start`` (placed from the
queue, first start or restart), ``scale_out`` / ``scale_in`` (the allocator gave
more / fewer workers), ``move`` (as many workers, placed elsewhere: a Tiresias or
Pollux re-placement, or a worker moved by the kernel), ``reclaim_scale_in`` (its
workers on reclaimed servers removed), ``reclaim_preemption`` (a reclaim took all
its workers: back to the queue), ``preemption`` (stopped by the Tiresias or Pollux
allocator), ``finish`` and ``end`` (still running when the run stopped). A row per
server, not a list column, so that plain pandas filters it (by GPU type, server, loan)
and sums it (GPU-seconds); ``intervals(table)`` gives one row per interval.

A job's intervals tile the time it held GPUs: from its ``start_time`` to its
``finish_time``, less its waits after preemptions. Its GPU-seconds are
``((end - start) * gpus).sum()``; over all jobs, split by ``on_loan``, they are the
run's ``training_gpu_seconds`` and ``loaned_gpu_seconds`` (goodput-driven runs, whose
totals count a finished job's GPUs until the end of its round, excepted).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import pandas as pd

from .. import _core
from ..model import Server

#: Why an interval began or ended, in the engine's order (the codes it records).
CHANGES: Tuple[str, ...] = tuple(_core.history_changes)
#: The table's columns, in order.
COLUMNS = (
    "job",
    "interval",
    "start",
    "end",
    "opened",
    "closed",
    "server",
    "workers",
    "gpus",
    "gpu_type",
    "on_loan",
)
#: Changes that end an interval because inference servers were reclaimed.
RECLAIMS = ("reclaim_preemption", "reclaim_scale_in")


def history_frame(
    raw: Dict[str, np.ndarray],
    ids: np.ndarray,
    gpus_per_worker: np.ndarray,
    servers: List[Server],
) -> pd.DataFrame:
    """The history table from the engine's columns (``raw``: job and server indices)."""
    job, server = raw["job"], raw["server"]
    ids_array = np.empty(len(ids), dtype=object)  # ids as they are, not as numbers
    ids_array[:] = ids.tolist()
    changes = pd.CategoricalDtype(list(CHANGES))
    return pd.DataFrame(
        {
            "job": ids_array[job],
            "interval": raw["interval"],
            "start": raw["start"],
            "end": raw["end"],
            "opened": pd.Categorical.from_codes(raw["opened"], dtype=changes),
            "closed": pd.Categorical.from_codes(raw["closed"], dtype=changes),
            "server": np.array([s.id for s in servers], dtype=object)[server],
            "workers": raw["workers"],
            "gpus": raw["workers"] * np.asarray(gpus_per_worker, dtype=np.int64)[job],
            "gpu_type": np.array([s.gpu_type for s in servers], dtype=object)[server],
            "on_loan": np.array([s.pool == "inference" for s in servers])[server],
        }
    )


#: Changes after which a job waits in the queue (counted in its ``preemptions``).
PREEMPTIONS = ("reclaim_preemption", "preemption")
#: Changes of a running job's workers (counted in its ``scaling_ops``).
RESIZES = ("scale_out", "scale_in", "move", "reclaim_scale_in")


def intervals(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (job, interval): ``start, end, opened, closed``, its ``workers`` and
    ``gpus`` summed over its servers, its ``gpu_type`` (types joined by ``+``), and
    whether any of it is ``on_loan`` and any on ``training`` servers."""
    keys = ["job", "interval"]
    grouped = table.groupby(keys, sort=False, observed=True)
    out = grouped.agg(
        start=("start", "first"),
        end=("end", "first"),
        opened=("opened", "first"),
        closed=("closed", "first"),
        workers=("workers", "sum"),
        gpus=("gpus", "sum"),
        gpu_type=("gpu_type", "first"),
        types=("gpu_type", "nunique"),
        on_loan=("on_loan", "any"),
        all_loaned=("on_loan", "all"),
    )
    mixed = out.index[out["types"] > 1]
    if len(mixed):  # few: joined one by one
        rows = table.set_index(keys).loc[mixed, "gpu_type"]
        joined = rows.groupby(level=keys, sort=False).agg(
            lambda t: "+".join(sorted(set(t)))
        )
        out.loc[joined.index, "gpu_type"] = joined
    out["training"] = ~out.pop("all_loaned")
    return out.drop(columns="types").reset_index()


def history_problems(
    table: pd.DataFrame, jobs: pd.DataFrame, totals: Dict[str, Any]
) -> List[str]:
    """What in ``table`` contradicts the run's jobs and totals (empty: nothing).

    Each job's intervals follow one another without overlap, the first opening
    for ``start`` at its ``start_time`` and, if it finished, the last closing for
    ``finish`` at its ``finish_time``; an interval follows the previous one at once
    unless that one ended in a preemption, and the next then opens for ``start``.
    The job's preemptions and resizes are its ``preemptions`` and ``scaling_ops``;
    the rows' GPU-seconds on training and on loaned servers (``gpu_seconds``) are at
    most the run's totals (equal in fixed-duration runs; a goodput-driven run counts a
    finished job's GPUs until the end of its round).
    """
    if list(table.columns) != list(COLUMNS):
        return [f"history columns {list(table.columns)}, expected {list(COLUMNS)}"]
    row_of = pd.Series(np.arange(len(jobs)), index=pd.Index(jobs["id"]))
    spans = intervals(table)
    pos = row_of.reindex(spans["job"]).to_numpy()
    if np.isnan(pos).any():
        return ["history names a job the run does not have"]
    spans = spans.assign(pos=pos.astype(np.int64)).sort_values(
        ["pos", "interval"], kind="stable"
    )
    pos = spans["pos"].to_numpy()
    start, end = spans["start"].to_numpy(), spans["end"].to_numpy()
    opened = spans["opened"].astype(str).to_numpy()
    closed = spans["closed"].astype(str).to_numpy()
    first = np.r_[True, pos[1:] != pos[:-1]]
    last = np.r_[pos[1:] != pos[:-1], True]
    waited = np.r_[False, np.isin(closed[:-1], PREEMPTIONS)] & ~first
    follows = ~first & ~waited
    prev_end = np.r_[np.nan, end[:-1]]
    finish = jobs["finish_time"].to_numpy()[pos]
    checks = {
        "its first interval does not open for 'start' at its start_time": first
        & ((start != jobs["start_time"].to_numpy()[pos]) | (opened != "start")),
        "an interval ends before it starts, or overlaps the previous": (end < start)
        | (~first & (start < prev_end)),
        "an interval does not follow the previous at once, without a preemption": (
            follows & (start != prev_end)
        ),
        "an interval after a preemption does not open for 'start'": waited
        & (opened != "start"),
        "its last interval does not close for 'finish' at its finish_time": last
        & ~np.isnan(finish)
        & ((end != finish) | (closed != "finish")),
    }
    problems = [
        f"job {jobs['id'].iloc[pos[bad.argmax()]]!r}: {what}"
        for what, bad in checks.items()
        if bad.any()
    ]
    for kinds, column in ((PREEMPTIONS, "preemptions"), (RESIZES, "scaling_ops")):
        counted = np.bincount(pos[np.isin(closed, kinds)], minlength=len(jobs))
        wrong = counted != jobs[column].to_numpy()
        if wrong.any():
            problems.append(
                f"job {jobs['id'].iloc[wrong.argmax()]!r}: its history has "
                f"{counted[wrong.argmax()]} {column}, the run counted "
                f"{jobs[column].iloc[wrong.argmax()]}"
            )
    ran = np.zeros(len(jobs), dtype=bool)
    ran[pos] = True
    if (jobs["start_time"].notna().to_numpy() & ~ran).any():
        problems.append("a job that ran has no interval")
    for key, got in gpu_seconds(table).items():
        if got > totals[key] + 1e-9 * max(1.0, totals[key]):
            problems.append(f"the history's {key} {got} > the run's {totals[key]}")
    return problems


def gpu_seconds(table: pd.DataFrame) -> Dict[str, float]:
    """The history's GPU-seconds on training and on loaned servers, named as the totals
    (``training_gpu_seconds``, ``loaned_gpu_seconds``) they equal in fixed-duration runs."""
    seconds = (table["end"] - table["start"]) * table["gpus"]
    loaned = table["on_loan"].to_numpy(dtype=bool)
    return {
        "training_gpu_seconds": float(seconds[~loaned].sum()),
        "loaned_gpu_seconds": float(seconds[loaned].sum()),
    }
