"""Writing a command's result files so that an interrupted run leaves none half-written."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


#: The file that marks a folder as an output folder of aryl's commands: a command
#: writes into a folder only when it is new, empty or so marked (a folder an older
#: aryl wrote has its ``provenance.json`` instead).
MARK = ".aryl-output"


def output_directory(path: str) -> Path:
    """``path`` created (with parents), checked writable and marked as aryl's, before
    any work is done. An existing folder that holds files aryl did not write is
    refused (``ValueError``), as ``Result.save`` refuses: a command never mixes its
    files with, or overwrites, someone else's."""
    out = Path(path)
    if out.is_dir() and any(out.iterdir()) and not _written_by_aryl(out):
        raise ValueError(
            f"{out}: exists and holds files aryl did not write; refusing to write into "
            "it (give --out a new or empty folder)"
        )
    out.mkdir(parents=True, exist_ok=True)
    if not os.access(out, os.W_OK | os.X_OK):
        raise PermissionError(f"{out}: output directory is not writable")
    (out / MARK).write_text(
        "This folder holds the output of an aryl command; aryl may replace its files.\n"
    )
    return out


def _written_by_aryl(folder: Path) -> bool:
    """``MARK`` is there, or an older aryl's ``provenance.json`` naming its command."""
    if (folder / MARK).is_file():
        return True
    try:
        record = json.loads((folder / "provenance.json").read_text())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(record, dict) and str(record.get("command", "")).startswith(
        "aryl "
    )


def write_atomically(out: Path, write: Callable[[Path], T]) -> T:
    """Run ``write(folder)`` on a fresh hidden folder inside ``out``, then move every
    file it wrote into ``out`` with an atomic rename. An interruption (Ctrl-C) or an
    error leaves each result file either complete or absent, never partial; the
    hidden folder is removed either way."""
    from ..engine.storage import naming_the_file

    folder = Path(tempfile.mkdtemp(prefix=".aryl-partial-", dir=out))
    try:
        with naming_the_file(f"the results into {out}"):
            written = write(folder)
        for name in sorted(os.listdir(folder)):
            os.replace(folder / name, out / name)
        return written
    finally:
        shutil.rmtree(folder, ignore_errors=True)
