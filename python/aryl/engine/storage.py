"""Saving and loading a ``Result``: Parquet tables and one JSON file in a folder.

``save(result, path)`` writes ``path/jobs.parquet``, ``path/timeline.parquet``,
``path/history.parquet`` (only for a run that recorded its allocation history) and
``path/result.json`` (label, totals, capacity, violations, provenance, the history's row
count, each Parquet file's SHA-256 and, for reading without aryl, the summary); ``aryl.sim.load(path)`` (``read``
with ``Result``'s builder, in ``engine/result.py``) reads them back into a ``Result`` equal
to the saved one (same columns, dtypes and values; floats bit for bit).

What saving promises:

* **It never destroys what aryl did not write.** An existing ``path`` is replaced only
  when it is an empty folder or an aryl result (``result.json`` of this format and no
  files but aryl's); anything else raises ``ValueError`` and stays as it was, unless
  ``overwrite=True``. The current folder and its parents are never replaced.
* **Readers never see half a result.** The folder is written to a temporary sibling and
  swapped into place in one step (Linux's ``renameat2(RENAME_EXCHANGE)``; elsewhere the
  old folder is renamed aside, then the new one in), so ``path`` holds the old result or
  the new one, whole. Concurrent saves to one path all succeed; one complete copy stays.

What reading promises (``aryl.sim.load``): a damaged or edited folder (unreadable JSON
or Parquet, a Parquet file whose SHA-256 is not the one ``result.json`` records, so
an edited or swapped table, missing keys or columns, tables that no longer give the
summary saved beside them, a history that is missing, unexpected, not the rows and
columns saved, or no longer tiles the jobs' runs as ``Result.check()`` requires)
raises ``ResultFileError`` (a ``ValueError``) naming the file; a folder swapped by a
concurrent save while it is read is read again. Only regular files are opened: a
FIFO, a device or a folder in a file's place is refused, never waited on.
"""

# Longer than the house's ~500 lines on purpose: saving and loading are one protocol
# (the folder's files and format, the swap a save makes and the re-read a load does
# when it meets one, the regular-file reads both use); split in two, each half would
# import the other's private names. Its halves are marked "saving" and "loading".

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import json
import math
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar, Union

import pandas as pd

from .history import COLUMNS as HISTORY_COLUMNS
from .history import history_problems
from .metrics import OPTIONAL_KEYS
from .provenance import _jsonable

FORMAT = "aryl.sim.Result/1"
_TABLES = ("jobs", "timeline")
#: Every file aryl writes in a result folder (``row.json``: a sweep's cache entry).
ARYL_FILES = frozenset(
    {"result.json", "jobs.parquet", "timeline.parquet", "history.parquet", "row.json"}
)
PathLike = Union[str, "os.PathLike[str]"]
T = TypeVar("T")
#: What ``read`` builds from a folder's tables and ``result.json``: ``(jobs, timeline,
#: meta, history or None) -> a Result`` (``aryl.engine.result.load``'s builder; anything
#: with the Result's ``summary()``, ``jobs`` and ``totals``).
Build = Callable[
    [pd.DataFrame, pd.DataFrame, Dict[str, Any], Optional[pd.DataFrame]], T
]


class ResultFileError(ValueError):
    """A saved result (or sweep cache entry) that cannot be read; the message names the file."""


def _parquet() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise ImportError(
            "saving and loading results needs pyarrow: pip install pyarrow"
        ) from exc


# ---- saving ---------------------------------------------------------------------------------


def save(result: Any, path: PathLike, *, overwrite: bool = False) -> Path:
    """Write ``result`` to the folder ``path``; returns the folder's path.

    An existing aryl result (or empty folder) at ``path`` is replaced whole and at once;
    any other existing file or folder raises ``ValueError`` and is left untouched, unless
    ``overwrite=True`` (the module docstring has the rules). Ids of mixed types (ints
    and strings in one run) are kept in ``result.json``, since a Parquet column holds
    one type.
    """
    return write_folder(path, lambda tmp: write_result(result, tmp), overwrite)


def write_result(result: Any, folder: Path) -> None:
    """The files of ``result`` (a ``Result``) in the existing, empty ``folder`` (no swap,
    no checks)."""
    _parquet()
    jobs, history = result.jobs, result.allocations
    meta: Dict[str, Any] = {"format": FORMAT}
    if jobs["id"].dtype == object and len({type(i) for i in jobs["id"]}) > 1:
        meta["ids"] = list(jobs["id"])
        jobs = jobs.assign(id=jobs["id"].map(str))
        if history is not None:
            history = history.assign(job=history["job"].map(str))
    jobs.to_parquet(folder / "jobs.parquet", index=False)
    result.timeline.to_parquet(folder / "timeline.parquet", index=False)
    if history is not None:
        history.to_parquet(folder / "history.parquet", index=False)
        meta["history"] = len(history)
    meta["files"] = {
        p.name: _digest(p.read_bytes()) for p in sorted(folder.glob("*.parquet"))
    }
    meta.update(
        label=result.label,
        totals=result.totals,
        capacity=result.capacity,
        violations=list(result.violations),
        provenance=None if result.provenance is None else result.provenance.to_dict(),
        summary=result.summary(),
    )
    (folder / "result.json").write_text(json.dumps(_jsonable(meta), indent=1) + "\n")


def write_folder(
    path: PathLike, fill: Callable[[Path], None], overwrite: bool = False
) -> Path:
    """Fill a temporary sibling of ``path`` with ``fill(tmp)``, then swap it into place.

    The refusal rules of ``save`` apply (checked before ``fill`` runs, and again on what
    the swap took out, so a folder that appeared meanwhile is given back). A full
    disk or a file-size limit is an ``OSError`` naming ``path``.
    """
    target = _target(path)
    _check_replaceable(target, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with naming_the_file(str(target)):
            fill(tmp)
        _publish(tmp, target, overwrite)
    finally:
        _remove(tmp)
    return target


@contextlib.contextmanager
def naming_the_file(where: str) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file (a full disk or a file-size limit,
    as a write or pyarrow reports them) with ``where`` in its message, so the user
    knows what could not be written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        why = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno is None:
            raise OSError(f"{why} (writing {where})") from None
        raise OSError(exc.errno, f"{why} (writing {where})") from None


def _target(path: PathLike) -> Path:
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"cannot save a result to {text!r}: give a folder name")
    target = Path(os.path.expanduser(text))
    if target.is_symlink():
        raise ValueError(f"{target}: is a symbolic link; give the folder itself")
    here = Path.cwd().resolve()
    if target.resolve() in (here, *here.parents):
        raise ValueError(
            f"{target}: is the current folder or contains it; give a folder inside it"
        )
    return target


def is_result_folder(path: Path) -> bool:
    """Whether ``path`` is a folder aryl wrote: ``result.json`` of this format, aryl's files only."""
    try:
        names = {p.name for p in path.iterdir()}
        if not names <= ARYL_FILES or not all(
            (path / n).is_file() and not (path / n).is_symlink() for n in names
        ):
            return False
        meta = json.loads(read_regular(path / "result.json"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def _replaceable(path: Path) -> bool:
    if not path.exists() and not path.is_symlink():
        return True
    if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
        return True
    return is_result_folder(path)


def _refusal(path: Path) -> ValueError:
    return ValueError(
        f"{path}: exists and is not an aryl result; refusing to replace it "
        "(choose another folder, or pass overwrite=True to replace it)"
    )


def _check_replaceable(path: Path, overwrite: bool) -> None:
    if not overwrite and not _replaceable(path):
        raise _refusal(path)


def _publish(tmp: Path, target: Path, overwrite: bool) -> None:
    """Move the finished folder ``tmp`` to ``target`` in one step; ``tmp`` ends empty or gone."""
    for _ in range(1000):  # other writers may move ``target`` between two steps
        try:
            os.rename(tmp, target)  # nothing there, or an empty folder: done
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
        swapped = _exchange(tmp, target)
        if swapped is None:  # no atomic swap here: rename the old folder aside
            old = tmp.with_name(tmp.name + ".old")
            try:
                os.rename(target, old)
            except FileNotFoundError:
                continue
            _take_or_give_back(old, target, overwrite)
            continue  # ``target`` is free now: the rename above places ``tmp``
        if swapped:  # ``tmp`` now holds what was at ``target``
            _take_or_give_back(tmp, target, overwrite)
            return
    raise OSError(f"{target}: could not be replaced (other writers kept changing it)")


def _take_or_give_back(old: Path, target: Path, overwrite: bool) -> None:
    """Delete ``old`` (what was at ``target``) if it may be replaced, else put it back."""
    if overwrite or _replaceable(old):
        _remove(old)
        return
    if _exchange(old, target) is None:
        os.rename(old, target)
    raise _refusal(target)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.cache
def _renameat2() -> Any:
    """libc's ``renameat2`` (Linux, glibc >= 2.28), or None."""
    if not sys.platform.startswith("linux"):
        return None
    return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)


def _exchange(a: Path, b: Path) -> Optional[bool]:
    """Swap two paths atomically: True when swapped, False when ``b`` vanished, None if unsupported."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return None
    if renameat2(
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
    ):
        code = ctypes.get_errno()
        if code == errno.ENOENT:
            return False
        if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # pragma: no cover
            return None
        raise OSError(code, os.strerror(code), str(b))
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


# ---- loading --------------------------------------------------------------------------------


def read(path: PathLike, build: Build[T]) -> T:
    """What ``build(jobs, timeline, meta)`` makes of the result saved in the folder ``path``.

    Raises ``FileNotFoundError`` when there is no saved result at ``path`` and
    ``ResultFileError`` (a ``ValueError``) naming the file when it is damaged: a file
    unreadable or missing, ``build`` failing on what it was given, or tables that no
    longer give the summary saved beside them (``build``'s object's ``summary()``).
    """
    _parquet()
    folder = Path(os.path.expanduser(os.fspath(path)))
    for _ in range(100):
        try:
            return _read_once(folder, build)
        except _Swapped:  # a concurrent save replaced the folder mid-read: read again
            continue
    raise OSError(f"{folder}: kept changing while being read")  # pragma: no cover


class _Swapped(Exception):
    pass


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a folder where a file should be."""


def open_regular(name: PathLike, flags: int, dir_fd: Optional[int] = None) -> int:
    """``os.open`` that never blocks on a FIFO and opens regular files only (an
    ``open(..., opener=...)``): anything else is ``NotRegularFile``."""
    fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, "not a regular file", os.fspath(name))
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path) -> str:
    """The text of the regular file ``path`` (``NotRegularFile`` for anything else)."""
    with open(path, encoding="utf-8", opener=open_regular) as f:
        return f.read()


def _read_once(folder: Path, build: Build[T]) -> T:
    if not (folder / "result.json").is_file():
        runs = sorted(p.parent.name for p in (folder / "runs").glob("*/result.json"))
        where = (
            f"; it holds the runs of a comparison: load one of {folder / 'runs'}/"
            f"{{{','.join(runs)}}}"
            if runs
            else ""
        )
        raise FileNotFoundError(
            f"{folder}: no saved aryl result here (expected result.json){where}"
        )
    with _Folder(folder) as files:
        meta = _read_meta(files)
        jobs = files.table("jobs", meta)
        if "ids" in meta:
            ids = meta["ids"]
            if not isinstance(ids, list) or len(ids) != len(jobs):
                raise files.damaged("result.json", "'ids' does not match the jobs")
            jobs["id"] = pd.Series(ids, dtype=object, index=jobs.index)
        timeline = files.table("timeline", meta)
        history = _read_history(files, meta)
    try:
        built = build(jobs, timeline, meta, history)
        summary = built.summary()  # type: ignore[attr-defined]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise files.damaged("result.json", f"{type(exc).__name__}: {exc}") from None
    if not _same_summary(summary, meta["summary"]):
        raise files.damaged(
            "jobs.parquet",
            "the tables do not give the summary saved in result.json (edited?)",
        )
    if history is not None:
        problems = history_problems(
            history,
            built.jobs,  # type: ignore[attr-defined]
            built.totals,  # type: ignore[attr-defined]
        )
        if problems:
            raise files.damaged("history.parquet", f"{problems[0]} (edited?)")
    return built


def _read_history(files: _Folder, meta: Dict[str, Any]) -> Optional[pd.DataFrame]:
    """The saved history, if ``result.json`` records one: its rows and columns checked."""
    rows = meta.get("history")
    if rows is None:
        if files.exists("history.parquet"):
            raise files.damaged("history.parquet", "result.json records no history")
        return None
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
        raise files.damaged("result.json", "'history' is not a row count")
    history = files.table("history", meta)
    if list(history.columns) != list(HISTORY_COLUMNS) or len(history) != rows:
        raise files.damaged(
            "history.parquet",
            f"expected {rows} rows of columns {', '.join(HISTORY_COLUMNS)}, got "
            f"{len(history)} of {', '.join(map(str, history.columns))}",
        )
    if "ids" in meta:  # ids of mixed types were saved as text
        original = {str(i): i for i in meta["ids"]}
        history["job"] = history["job"].map(original).astype(object)
    return history


_META_TYPES = {
    "label": str,
    "totals": dict,
    "capacity": dict,
    "violations": list,
    "summary": dict,
}


class _Folder:
    """The files of one result folder, read through one handle of the folder.

    A concurrent save swaps folders, never files, so every file read through the handle
    belongs to one save; a file deleted under us (the old folder being removed) is
    ``_Swapped``.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self.fd: Optional[int] = None

    def __enter__(self) -> _Folder:
        if os.open in os.supports_dir_fd:
            try:
                self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                raise _Swapped() from None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def damaged(self, name: str, why: str) -> ResultFileError:
        return ResultFileError(f"{self.folder / name}: damaged saved result: {why}")

    def open(self, name: str) -> Any:
        fd = self.fd
        try:
            return open(
                name if fd is not None else self.folder / name,
                "rb",
                opener=functools.partial(open_regular, dir_fd=fd),
            )
        except FileNotFoundError:
            if fd is not None and (self.folder / name).exists():
                raise _Swapped() from None  # gone from our folder, there in the new one
            raise self.damaged(name, "missing") from None
        except NotRegularFile:
            raise self.damaged(name, "not a regular file") from None

    def exists(self, name: str) -> bool:
        try:
            self.open(name).close()
        except ResultFileError:
            return False
        return True

    def read(self, name: str, meta: Dict[str, Any]) -> bytes:
        """The bytes of file ``name``, checked against the digest ``result.json``
        records of it (results saved before digests were recorded have none)."""
        with self.open(name) as f:
            data: bytes = f.read()
        digests = meta.get("files")
        if digests is not None:
            if not isinstance(digests, dict) or digests.get(name) != _digest(data):
                raise self.damaged(
                    name, "not the file saved with result.json (edited or swapped?)"
                )
        return data

    def table(self, name: str, meta: Dict[str, Any]) -> pd.DataFrame:
        data = self.read(f"{name}.parquet", meta)
        try:
            return parquet_frame(data)
        except Exception as exc:  # pyarrow raises its own types for bad bytes
            raise self.damaged(f"{name}.parquet", str(exc)) from None


def parquet_frame(data: bytes) -> pd.DataFrame:
    """The table in the Parquet file ``data`` (its bytes, read whole beforehand).

    Parsed from memory on the calling thread only: no Python file object for
    Arrow's I/O threads to call back into, no pre-buffering, and neither Arrow's CPU
    nor its I/O thread pool started. A process that has read a result then holds no
    Arrow thread, so the thread pools' teardown at interpreter exit, which can
    abort the process (``terminate called without an active exception``: SIGABRT,
    seen in a reader of a folder racing writers), never runs. The tables of a
    result are small; threads would save little.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    # ``ParquetFile``, not ``read_table``/``pd.read_parquet``: those go through
    # Arrow's datasets, which start an I/O thread even with use_threads=False.
    table = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(
        use_threads=False
    )
    frame: pd.DataFrame = table.to_pandas(use_threads=False)
    return frame


def _digest(data: bytes) -> str:
    """A file's content digest, as ``result.json`` records it."""
    return hashlib.sha256(data).hexdigest()


def _read_meta(files: _Folder) -> Dict[str, Any]:
    with files.open("result.json") as f:
        try:
            meta: Any = json.loads(f.read())
        except (ValueError, RecursionError) as exc:
            raise files.damaged("result.json", f"not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise files.damaged("result.json", "not an aryl result (not a JSON object)")
    if meta.get("format") != FORMAT:
        raise ResultFileError(
            f"{files.folder / 'result.json'}: unknown format {meta.get('format')!r}, "
            f"expected {FORMAT!r}"
        )
    for key, kind in _META_TYPES.items():
        if not isinstance(meta.get(key), kind):
            raise files.damaged(
                "result.json", f"{key!r} missing or not a {kind.__name__}"
            )
    if not isinstance(meta.get("provenance"), (dict, type(None))):
        raise files.damaged("result.json", "'provenance' is not an object")
    return meta


def same_value(a: Any, b: Any) -> bool:
    """Equal as saved values: NaN equals NaN, a bool equals only a bool."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _same_summary(now: Dict[str, Any], saved: Dict[str, Any]) -> bool:
    # Keys saved by an older aryl are compared; keys added since are not in the file.
    # An optional key saved empty (NaN or null, by an aryl that always wrote it) is
    # the same as its absence now.
    return bool(saved) and all(
        same_value(now[k], v) if k in now else k in OPTIONAL_KEYS and _empty(v)
        for k, v in saved.items()
    )


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def saved_summary(path: PathLike) -> Dict[str, Any]:
    """The summary saved in the result folder ``path``, after checking its files are whole.

    Cheaper than ``load``: reads ``result.json``, checks each Parquet file's digest
    and footer, and builds no table.
    Raises ``ResultFileError`` naming the damaged file (``FileNotFoundError`` when
    there is no result).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(os.path.expanduser(os.fspath(path)))
    if not (folder / "result.json").is_file():
        raise FileNotFoundError(f"{folder}: no saved aryl result here")
    with _Folder(folder) as files:
        meta = _read_meta(files)
        tables = _TABLES + (("history",) if "history" in meta else ())
        for table in tables:
            data = files.read(f"{table}.parquet", meta)
            try:
                pq.read_metadata(pa.BufferReader(data))  # no Arrow threads
            except Exception as exc:  # pyarrow's own types for bad bytes
                raise files.damaged(f"{table}.parquet", str(exc)) from None
    summary: Dict[str, Any] = meta["summary"]
    return summary
