"""A sweep's cache: one entry per run, named by its fingerprint (``sweep_runs``).

An entry is a saved ``Result`` (``Result.save``) and its row (``row.json``: the
summary, the run's own columns and ``run_by``, where and how it ran), written whole
and at once (``storage.write_folder``), so concurrent sweeps may share a cache; a
damaged entry is recomputed, with a warning naming it.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Optional

from ..engine.metrics import SUMMARY_KEYS
from ..engine.provenance import machine, source_commit
from ..engine.result import Result
from ..engine.storage import (
    ResultFileError,
    read_regular,
    same_value,
    saved_summary,
    write_folder,
    write_result,
)


def default_cache_dir() -> Path:
    """``$ARYL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aryl/sweeps``, else ``~/.cache/aryl/sweeps``."""
    if os.environ.get("ARYL_CACHE_DIR"):
        return Path(os.environ["ARYL_CACHE_DIR"])
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(root) / "aryl" / "sweeps"


def _check_writable(folder: Path, missing: int, total: int) -> None:
    """A ``PermissionError`` before anything runs when runs must be saved in a cache
    that cannot be written (a read-only cache that holds every run is only read)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the folder is made when the first run is saved
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(
            f"{folder}: the sweep cache is not writable, and {missing} of {total} "
            "runs are not in it; give a writable cache folder (or run without one: "
            "cache=False, --no-cache)"
        )


def _run_by(engine: str, workers: int) -> Dict[str, Any]:
    """Where and how a run ran: the commit of aryl's source, the command, the machine,
    the engine and when it finished (a sweep cache entry's ``row.json`` keeps it)."""
    return {
        "commit": source_commit(),
        "command": " ".join(sys.argv),
        "machine": machine(),
        "engine": engine,
        "workers": workers,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


#: What a cache entry's ``row.json`` holds besides the summary.
_ROW_KEYS = {
    "label": str,
    "jobs": int,
    "trace_fingerprint": str,
    "fingerprint": str,
    "aryl_version": str,
}


def _store(entry: Path, result: Result, row: Dict[str, Any]) -> None:
    """Save ``result`` and its row as the cache entry ``entry``, whole and at once.

    The entry is the cache's own (named by its key): a damaged one is replaced.
    """

    def fill(tmp: Path) -> None:
        write_result(result, tmp)
        text = json.dumps({**row, "cached": None}, default=repr) + "\n"
        (tmp / "row.json").write_text(text)

    if entry.is_symlink():  # the cache's own name: replace the link, not its target
        entry.unlink()
    write_folder(entry, fill, overwrite=True)


def _cached(folder: Optional[Path], key: str) -> Optional[Dict[str, Any]]:
    """The row cached under ``key``; ``None`` (recompute) if absent or damaged, with a warning."""
    if folder is None or not (folder / key).exists():
        return None
    try:
        return _read_entry(folder / key, key)
    except (ResultFileError, FileNotFoundError) as exc:
        warnings.warn(f"{exc}; recomputing this sweep run", stacklevel=3)
        return None


def _read_entry(entry: Path, key: str) -> Dict[str, Any]:
    def damaged(why: str) -> ResultFileError:
        return ResultFileError(
            f"{entry / 'row.json'}: damaged sweep cache entry: {why}"
        )

    summary = saved_summary(entry)
    try:
        row: Any = json.loads(read_regular(entry / "row.json"))
    except (OSError, ValueError, RecursionError) as exc:
        raise damaged(f"unreadable ({exc})") from None
    if not isinstance(row, dict):
        raise damaged("not a JSON object")
    for name, kind in _ROW_KEYS.items():
        if not isinstance(row.get(name), kind) or isinstance(row.get(name), bool):
            raise damaged(f"{name!r} missing or not a {kind.__name__}")
    if row["fingerprint"] != key:
        raise damaged(f"its fingerprint {row['fingerprint']!r} is not its name")
    for name in SUMMARY_KEYS:
        if name not in row or not same_value(row[name], summary.get(name)):
            raise damaged(f"{name!r} differs from the saved result's summary (edited?)")
    return row
