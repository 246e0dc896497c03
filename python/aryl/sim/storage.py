"""Saving and loading a ``Result``: two Parquet tables and one JSON file in a folder.

``save(result, path)`` writes ``path/jobs.parquet``, ``path/timeline.parquet`` and
``path/result.json`` (label, totals, capacity, violations, provenance and, for reading
without aryl, the summary); ``load(path)`` reads them back into a ``Result`` equal to the
saved one (same columns, dtypes and values; floats bit for bit). A folder is written
to a temporary sibling and renamed into place, so a reader never sees half a result.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Union

import pandas as pd

from .provenance import Provenance, _jsonable
from .result import Result

FORMAT = "aryl.sim.Result/1"
_TABLES = ("jobs", "timeline")


def _parquet() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise ImportError(
            "saving and loading results needs pyarrow: pip install pyarrow"
        ) from exc


def save(result: Result, path: Union[str, os.PathLike[str]]) -> Path:
    """Write ``result`` to the folder ``path`` (created; an existing result there is replaced).

    Returns the folder's path. Ids of mixed types (ints and strings in one run) are kept
    in ``result.json``, since a Parquet column holds one type.
    """
    _parquet()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        jobs = result.jobs
        meta: Dict[str, Any] = {"format": FORMAT}
        if jobs["id"].dtype == object and len({type(i) for i in jobs["id"]}) > 1:
            meta["ids"] = list(jobs["id"])
            jobs = jobs.assign(id=jobs["id"].map(str))
        jobs.to_parquet(tmp / "jobs.parquet", index=False)
        result.timeline.to_parquet(tmp / "timeline.parquet", index=False)
        meta.update(
            label=result.label,
            totals=result.totals,
            capacity=result.capacity,
            violations=list(result.violations),
            provenance=None
            if result.provenance is None
            else result.provenance.to_dict(),
            summary=result.summary(),
        )
        (tmp / "result.json").write_text(json.dumps(_jsonable(meta), indent=1) + "\n")
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def load(path: Union[str, os.PathLike[str]]) -> Result:
    """The ``Result`` saved in the folder ``path`` by ``Result.save`` (or ``save``)."""
    _parquet()
    path = Path(path)
    meta_file = path / "result.json"
    if not meta_file.is_file():
        raise FileNotFoundError(
            f"{path}: no saved aryl result here (expected result.json)"
        )
    meta: Any = json.loads(meta_file.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(
            f"{meta_file}: unknown format {meta.get('format')!r}, expected {FORMAT!r}"
        )
    jobs = pd.read_parquet(path / "jobs.parquet")
    if "ids" in meta:
        jobs["id"] = pd.Series(meta["ids"], dtype=object, index=jobs.index)
    timeline = pd.read_parquet(path / "timeline.parquet")
    provenance = meta.get("provenance")
    return Result(
        jobs,
        timeline,
        meta["totals"],
        meta["capacity"],
        meta["label"],
        list(meta["violations"]),
        None if provenance is None else Provenance.from_dict(provenance),
    )
