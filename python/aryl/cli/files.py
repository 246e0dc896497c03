"""Writing a command's result files so that an interrupted run leaves none half-written."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def output_directory(path: str) -> Path:
    """``path`` created (with parents) and checked writable, before any work is done."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    if not os.access(out, os.W_OK | os.X_OK):
        raise PermissionError(f"{out}: output directory is not writable")
    return out


def write_atomically(out: Path, write: Callable[[Path], T]) -> T:
    """Run ``write(folder)`` on a fresh hidden folder inside ``out``, then move every
    file it wrote into ``out`` with an atomic rename. An interruption (Ctrl-C) or an
    error leaves each result file either complete or absent, never partial; the
    hidden folder is removed either way."""
    folder = Path(tempfile.mkdtemp(prefix=".aryl-partial-", dir=out))
    try:
        written = write(folder)
        for name in sorted(os.listdir(folder)):
            os.replace(folder / name, out / name)
        return written
    except OSError as exc:
        if exc.filename is not None:
            raise
        # a full disk or a file-size limit, raised by a writer that names no file
        raise OSError(
            exc.errno, f"{exc.strerror or exc} (writing the results into {out})"
        ) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
