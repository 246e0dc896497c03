"""The Pollux artifact's workloads and applications (embedded, Apache-2.0)."""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional, Union

import numpy as np
import pandas as pd

from .. import _core
from .csv_stream import (
    TraceError,
    _decoding,
    _lines,
)
from .reading import (
    _concat,
    _first_problem,
    _numbers,
    _raise_first,
    _tables,
)

#: Columns of a Pollux workload, in order.
WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
#: The six applications of the artifact and the epochs each job runs.
POLLUX_EPOCHS = {
    "bert": 2,
    "cifar10": 100,
    "deepspeech2": 80,
    "imagenet": 90,
    "ncf": 10,
    "yolov3": 50,
}
POLLUX_APPLICATIONS = tuple(sorted(POLLUX_EPOCHS))
#: Per-GPU batch caps that override the largest measured local batch.
POLLUX_MAX_LOCAL_BSZ = {"yolov3": 8}
#: The embedded workloads: ``pollux_workload(n)`` for n in this range.
POLLUX_WORKLOADS = range(1, 9)

_VALIDATION = re.compile(r"^validation-(\d+)\.csv(\.gz)?$")
Profiles = Union[None, str, "os.PathLike[str]", Mapping[str, "PolluxApplication"]]


@dataclass(frozen=True)
class PolluxApplication:
    """One application's measured tables (the artifact's ``traces/<app>/`` folder).

    ``placements`` (``placement, local_bsz, step_time, sync_time``; ``placement`` a
    string of GPUs per node), ``scalability`` (``num_nodes, num_replicas, local_bsz,
    step_time, sync_time``) and ``validation`` (global batch -> ``progress, iteration,
    metric, grad_sqr, grad_var`` per epoch). ``core`` is the C++ ``aryl._core.Application``
    built from them: true step times, gradient statistics, epoch progress and a job's
    true progress rate for any placement, batch and epoch.
    """

    name: str
    placements: pd.DataFrame = field(repr=False)
    scalability: pd.DataFrame = field(repr=False)
    validation: Dict[int, pd.DataFrame] = field(repr=False)
    max_epochs: int
    max_local_bsz_override: Optional[int] = None
    core: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tables = [
            {
                "batch_size": b,
                **{
                    c: v[c].to_numpy(float)
                    for c in ("progress", "iteration", "grad_sqr", "grad_var")
                },
            }
            for b, v in self.validation.items()
        ]
        try:
            core = _core.Application(
                self.name,
                {
                    "placement": self.placements["placement"].astype(str).tolist(),
                    **{
                        c: self.placements[c].to_numpy(float)
                        for c in ("local_bsz", "step_time", "sync_time")
                    },
                },
                {
                    c: self.scalability[c].to_numpy(float)
                    for c in (
                        "num_nodes",
                        "num_replicas",
                        "local_bsz",
                        "step_time",
                        "sync_time",
                    )
                },
                tables,
                self.max_epochs,
                self.max_local_bsz_override or 0,
            )
        except ValueError as exc:
            raise TraceError(f"application {self.name!r}: {exc}") from None
        object.__setattr__(self, "core", core)

    def __copy__(self) -> PolluxApplication:
        return self  # immutable: pandas deep-copies ``attrs`` on every operation

    def __deepcopy__(self, memo: Any) -> PolluxApplication:
        return self

    @property
    def init_batch_size(self) -> int:
        """M0: the smallest validated global batch."""
        return int(min(self.validation))

    @property
    def max_batch_size(self) -> int:
        """The largest validated global batch."""
        return int(max(self.validation))

    @property
    def min_local_bsz(self) -> int:
        """The smallest measured per-GPU batch."""
        return int(self.core.min_local_bsz)

    @property
    def max_local_bsz(self) -> int:
        """The largest per-GPU batch (measured, or the override)."""
        return int(self.core.max_local_bsz)

    def profile(self) -> pd.DataFrame:
        """Every measured row (placements, then scalability) as
        ``num_nodes, num_replicas, atomic_bsz, accum_time, step_time`` for fitting."""
        return pd.DataFrame(self.core.profile())


def _read_csv(path: Any) -> pd.DataFrame:
    name, lines, close = _lines(path)
    try:
        with _decoding(name):
            text = "".join(lines)
    finally:
        close()
    try:
        return pd.read_csv(io.StringIO(text))
    except (ValueError, pd.errors.ParserError) as exc:
        raise TraceError(f"{name}: not valid CSV ({exc})") from None


def _columns(frame: pd.DataFrame, name: str, required: Iterable[str]) -> pd.DataFrame:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise TraceError(f"{name}: missing column(s) {', '.join(missing)}")
    return frame


def _find(folder: Any, stem: str) -> Any:
    for candidate in (stem, stem + ".gz"):
        path = folder / candidate
        if path.is_file():
            return path
    raise TraceError(f"{folder}: no {stem} (or {stem}.gz)")


def read_pollux_application(
    folder: Any,
    name: Optional[str] = None,
    *,
    max_epochs: Optional[int] = None,
    max_local_bsz: Optional[int] = None,
) -> PolluxApplication:
    """Read one application folder (``placements.csv``, ``scalability.csv``,
    ``validation-<batch>.csv``; each may be gzip-compressed with a ``.gz`` suffix).

    ``name`` defaults to the folder's name; ``max_epochs`` and ``max_local_bsz`` to the
    artifact's settings for the six known applications (else all validation rows and
    the largest measured local batch). ``TraceError`` names the file of a problem.
    """
    if isinstance(folder, str):
        folder = Path(folder)
    name = name or folder.name
    placements = _columns(
        _read_csv(_find(folder, "placements.csv")),
        f"{folder}/placements.csv",
        ("placement", "local_bsz", "step_time", "sync_time"),
    )
    scalability = _columns(
        _read_csv(_find(folder, "scalability.csv")),
        f"{folder}/scalability.csv",
        ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"),
    )
    validation: Dict[int, pd.DataFrame] = {}
    for entry in folder.iterdir():
        match = _VALIDATION.match(entry.name)
        if match:
            validation[int(match.group(1))] = _columns(
                _read_csv(entry),
                f"{folder}/{entry.name}",
                ("progress", "iteration", "grad_sqr", "grad_var"),
            )
    if not validation:
        raise TraceError(f"{folder}: no validation-<batch>.csv files")
    validation = dict(sorted(validation.items()))
    epochs = (
        max_epochs
        or POLLUX_EPOCHS.get(name)
        or min(len(v) for v in validation.values())
    )
    return PolluxApplication(
        name,
        placements,
        scalability,
        validation,
        int(epochs),
        max_local_bsz or POLLUX_MAX_LOCAL_BSZ.get(name),
    )


def _embedded() -> Any:
    return files("aryl") / "data" / "pollux"


@cache
def pollux_application(name: str) -> PolluxApplication:
    """One of the six embedded applications (``POLLUX_APPLICATIONS``), cached."""
    if name not in POLLUX_EPOCHS:
        raise ValueError(
            f"unknown Pollux application {name!r}; expected one of "
            f"{', '.join(POLLUX_APPLICATIONS)}"
        )
    return read_pollux_application(_embedded() / "traces" / name, name)


def pollux_applications(profiles: Profiles = None) -> Dict[str, PolluxApplication]:
    """Applications by name: the embedded six (``profiles=None``), every sub-folder of a
    directory, or a given mapping (returned as a dict)."""
    if profiles is None:
        return {name: pollux_application(name) for name in POLLUX_APPLICATIONS}
    if isinstance(profiles, Mapping):
        return dict(profiles)
    root = Path(profiles)
    if not root.is_dir():
        raise TraceError(f"{root}: profiles must be a directory of application folders")
    return {
        p.name: read_pollux_application(p) for p in sorted(root.iterdir()) if p.is_dir()
    }


def read_pollux_workload(source: Any, profiles: Profiles = None) -> pd.DataFrame:
    """Read a Pollux workload CSV: ``name,time,application,num_replicas,batch_size``.

    Parameters
    ----------
    source
        A path or file object (gzip detected by its magic bytes).
    profiles
        Where the applications' measured tables come from: ``None`` = the embedded six,
        a directory of ``<application>/`` folders (as the artifact's ``traces/``), or a
        mapping name -> ``PolluxApplication``.

    Returns
    -------
    pandas.DataFrame
        One row per job in file order: ``name`` (str), ``time`` (float, submission in
        s), ``application`` (str), ``num_replicas`` and ``batch_size`` (int, what the
        user asked for). ``.attrs["applications"]`` maps each application the workload
        uses to its ``PolluxApplication``; ``.attrs["source"]`` names the file.

    Raises
    ------
    TraceError
        One clear error naming the file, row (line) and column: a missing column, an
        empty name, a duplicate name, a non-numeric, negative or non-finite time, a
        ``num_replicas`` or ``batch_size`` that is not a positive integer, an
        application with no profiles, a row with the wrong number of fields, an empty file.
    """
    table = _concat(list(_tables(source, WORKLOAD_COLUMNS)))
    frame = table.frame
    apps = pollux_applications(profiles)
    time, why_time = _numbers(frame["time"])
    replicas, why_replicas = _numbers(
        frame["num_replicas"], integer=True, zero="zero replicas"
    )
    batch, why_batch = _numbers(
        frame["batch_size"], integer=True, zero="zero batch size"
    )
    known = frame["application"].isin(list(apps)).to_numpy()
    why_app = np.where(
        frame["application"] == "",
        "empty value",
        np.where(known, "", f"unknown application (known: {', '.join(sorted(apps))})"),
    )
    names = frame["name"]
    why_name = np.where(
        names == "",
        "empty value",
        np.where(names.duplicated(keep="first").to_numpy(), "duplicate name", ""),
    )
    bad, labels = _first_problem(
        table,
        {
            "name": why_name.astype(object),
            "time": why_time,
            "application": why_app.astype(object),
            "num_replicas": why_replicas,
            "batch_size": why_batch,
        },
    )
    if bad.any():
        _raise_first(table, bad, labels)
    out = frame.copy()
    out["time"] = time
    out["num_replicas"] = replicas.astype(np.int64)
    out["batch_size"] = batch.astype(np.int64)
    out = out.astype({"name": str, "application": str})
    out.attrs["source"] = table.name
    out.attrs["applications"] = {a: apps[a] for a in sorted(set(out["application"]))}
    return out


def check_workload(
    workload: pd.DataFrame, apps: Mapping[str, PolluxApplication]
) -> None:
    """Refuse a workload frame (edited after reading, or built by hand) that the
    applications cannot run: ``num_replicas`` not a whole number in [1, 2^20] or a
    ``batch_size`` not finite, below 1 or above its application's largest validated
    batch. ValueError naming the job and the column."""
    names = ("name", "application", "batch_size", "num_replicas")
    for name, app, batch, replicas in zip(*(workload[c].tolist() for c in names)):
        limit = float(apps[app].max_batch_size)
        try:
            whole = float(replicas).is_integer() and 1 <= float(replicas) <= 2**20
            fits = 1.0 <= float(batch) <= limit
        except (TypeError, ValueError):
            whole = fits = False
        if not whole:
            raise ValueError(
                f"job {name!r}: num_replicas must be a whole number in [1, 2^20], "
                f"got {replicas!r}"
            )
        if not fits:
            raise ValueError(
                f"job {name!r}: batch_size must be in [1, {limit:g}] "
                f"({app}'s largest validated batch), got {batch!r}"
            )


def pollux_workload(n: int) -> pd.DataFrame:
    """The artifact's embedded ``workload-<n>.csv`` (n in 1..8) with the embedded
    applications (``read_pollux_workload``)."""
    if isinstance(n, bool) or n not in POLLUX_WORKLOADS:
        raise ValueError(f"no embedded Pollux workload {n!r}; expected 1..8")
    return read_pollux_workload(_embedded() / "workloads" / f"workload-{n}.csv")
