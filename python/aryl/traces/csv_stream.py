"""The stream under a trace file: opening it (plain, gzip, or an archive named with the
command that extracts it), its lines and their decoding, its CSV records in tables,
its header checked against the known releases, and a last line cut short; with the
errors every reader raises (``TraceError``, ``CutShortWarning``). ``reading`` parses
the columns from here."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import zlib
from typing import Any, Callable, Iterator, List, Optional, Tuple


class TraceError(ValueError):
    """A trace that cannot be used; the message names the file, the row and the column."""


class CutShortWarning(UserWarning):
    """A trace whose last line has no line end, as a file cut short leaves it: its
    last row is read, but may be incomplete (a value cut to its first digits)."""


#: The longest line a trace may have, in characters: far above any real row (a CSV
#: field is limited to 128 KiB), and what bounds the memory one line can take.
MAX_LINE_CHARS = 1 << 20
#: Bytes read first, to recognise gzip and the archives the datasets are released in.
_SNIFF = 512
#: Leading bytes of the archives and compressors a release comes in, with the command
#: that extracts one.
_ARCHIVES = (
    (b"PK\x03\x04", "zip archive", "unzip"),
    (b"PK\x05\x06", "zip archive", "unzip"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive", "7z x"),
    (b"\xfd7zXZ\x00", "xz-compressed file", "xz -d"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed file", "zstd -d"),
)


class _Prefixed(io.RawIOBase):
    """A binary stream whose first bytes were already read (to look for gzip's magic)."""

    def __init__(self, head: bytes, rest: Any):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _archive(name: str, head: bytes) -> None:
    """A TraceError when ``head`` starts an archive or a compressed file aryl does
    not read (a release as downloaded): it says to extract it first."""
    found = [(kind, tool) for magic, kind, tool in _ARCHIVES if head.startswith(magic)]
    if head[257:262] == b"ustar":
        found.append(("tar archive", "tar xf"))
    if head[:3] == b"BZh" and head[4:10] == b"1AY&SY":
        found.append(("bzip2-compressed file", "bunzip2"))
    if found:
        kind, tool = found[0]
        raise TraceError(
            f"{name}: a {kind}, not a trace file: extract it first "
            f"({tool} {os.path.basename(name)}) and give the file inside"
        )


def _stream_name(source: Any) -> str:
    """The name of a file object in messages: its ``name`` (a ``GzipFile`` made on a
    file object has an empty one: its file object's), else ``<stream>``."""
    for holder in (source, getattr(source, "fileobj", None)):
        name = getattr(holder, "name", None)
        if name not in (None, ""):
            return str(name)
    return "<stream>"


def _text(source: Any) -> Tuple[str, Any, Callable[[], None]]:
    """``(name, text, close)`` of a path or file object: ``text`` has ``read(n)`` and
    ``readline(n)``; gunzipped when it starts with gzip's magic, decoded as UTF-8 (a BOM
    is dropped). Archives and directories are refused, naming the file."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if os.path.isdir(source):
            raise TraceError(f"{name}: a directory, not a trace file")
        stream = open(source, "rb")
        close = stream.close
    elif not callable(getattr(source, "read", None)):
        raise TypeError(f"expected a path or a file object, got {source!r}")
    else:
        name, stream, close = _stream_name(source), source, lambda: None
    try:
        with _decoding(name):
            if isinstance(stream.read(0), str):  # a text stream: nothing to sniff
                return name, _NoBom(stream), close
            head = stream.read(_SNIFF)
            _archive(name, head)
            binary: Any = io.BufferedReader(_Prefixed(head, stream))
            if head[:2] == b"\x1f\x8b":
                unzipped = gzip.GzipFile(fileobj=binary, mode="rb")
                inner = unzipped.read(_SNIFF)
                _archive(name, inner)  # a .tar.gz
                binary = io.BufferedReader(_Prefixed(inner, unzipped))
    except BaseException:
        close()
        raise
    return name, io.TextIOWrapper(binary, encoding="utf-8-sig", newline=""), close


class _NoBom:
    """A text stream without the BOM its first characters may hold."""

    def __init__(self, stream: Any):
        self.stream, self.first = stream, True

    def _strip(self, text: str) -> str:
        if self.first and text:
            self.first = False
            return text[1:] if text.startswith("\ufeff") else text
        return text

    def read(self, size: int = -1) -> str:
        return self._strip(self.stream.read(size))

    def readline(self, size: int = -1) -> str:
        return self._strip(self.stream.readline(size))


def _lines(source: Any) -> Tuple[str, _Lines, Callable[[], None]]:
    """``(name, lines, close)`` of a path or file object, read as a stream (``_text``);
    a line longer than ``MAX_LINE_CHARS`` raises a TraceError before it is held whole."""
    name, text, close = _text(source)
    return name, _Lines(name, text), close


class _Lines:
    """The lines of a text stream, each bounded by ``MAX_LINE_CHARS``. ``cut``: the
    line read last has no line end, so the stream ended inside it (the last line of a
    file without a final newline, as a truncated download leaves it); ``record``: the
    lines read since it was last cleared (a CSV reader's current record), kept once
    it is set to a list."""

    def __init__(self, name: str, text: Any):
        self.name, self.text = name, text
        self.number = 0
        self.cut = False
        self.record: Optional[List[str]] = None

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line: str = self.text.readline(MAX_LINE_CHARS + 1)
        if not line:
            raise StopIteration
        self.number += 1
        if len(line) > MAX_LINE_CHARS:
            raise TraceError(
                f"{self.name}: line {self.number}: longer than {MAX_LINE_CHARS:,} "
                "characters; no trace has lines that long (is it the right file?)"
            )
        self.cut = not line.endswith(("\n", "\r"))
        if self.record is not None:
            self.record.append(line)
        return line


@contextlib.contextmanager
def _decoding(name: str) -> Iterator[None]:
    """Stream errors as TraceErrors naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not UTF-8 text ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"{name}: corrupt gzip data ({exc})") from None


def _blank(record: List[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


def _header(
    name: str,
    reader: Any,
    required: Tuple[str, ...],
    refuse: Optional[Callable[[List[str]], Optional[str]]] = None,
) -> List[str]:
    """The header line's names (the first line, unless all are blank), checked: a
    release aryl cannot import (``_UNSUPPORTED_HEADERS``) or one ``refuse`` names is
    refused, saying why."""
    first: Optional[List[str]] = None
    content = False
    for record in reader:  # the header is the first line, unless all are blank
        first = record if first is None else first
        if not _blank(record):
            content = True
            break
    if first is None or not content:
        raise TraceError(
            f"{name}: empty file; expected a CSV header with {', '.join(required)}"
        )
    header = [h.strip() for h in first]
    why = _unsupported(header) or (refuse(header) if refuse is not None else None)
    if why:
        raise TraceError(f"{name}: {why}")
    missing = [c for c in required if c not in header]
    if missing:
        raise TraceError(
            f"{name}: line 1 (header): missing column(s) {', '.join(missing)}; "
            f"found {', '.join(header)}{_format_hint(name, header)}"
        )
    if len(set(header)) < len(header):
        raise TraceError(
            f"{name}: line 1 (header): duplicate column names in {', '.join(header)}"
        )
    return header


#: The header of each public release aryl imports (``aryl.traces.read``): a job file
#: with it is one of them, read with ``format=``.
_KNOWN_HEADERS = {
    "alibaba-2023": {"name", "num_gpu", "gpu_milli", "creation_time"},
    "helios": {"job_id", "gpu_num", "submit_time", "duration"},
    "alibaba-pai": {"job_name", "inst_id", "user", "status"},
}


#: Public releases aryl has no importer for, each by the columns of its header: what
#: the file is, and why it cannot be replayed as jobs.
_UNSUPPORTED_HEADERS = (
    (
        {"instance_sn", "role", "app_name", "gpu_request", "creation_time"},
        "the Alibaba GPU 2025 release (alibaba/clusterdata cluster-trace-gpu-v2025, "
        "disaggregated_DLRM_trace.csv: the instances of 156 DLRM inference services, "
        "NSDI'25), which aryl has no importer for: its rows are long-running, "
        "latency-sensitive inference instances on CPU and GPU nodes (one that "
        "existed before the trace began or outlived it has no time), not training "
        "jobs with a submission and a run time, so it cannot be replayed as jobs; "
        "the release's 2023 pod lists can (--trace-format alibaba-2023)",
    ),
)


def _unsupported(header: List[str]) -> Optional[str]:
    """What a file with this header is, when it is a release aryl cannot import
    (``_UNSUPPORTED_HEADERS``), else None."""
    for columns, what in _UNSUPPORTED_HEADERS:
        if columns <= set(header):
            return what
    return None


def _format_hint(name: str, header: List[str]) -> str:
    """``"; it looks like ..."`` when the file is a known release's (by its header,
    or its name for the headerless PAI tables), else ``""``."""
    known = [f for f, names in _KNOWN_HEADERS.items() if names <= set(header)]
    if header and header[0].lstrip().startswith(("[", "{")):
        known.append("philly")  # a JSON file: Philly's cluster_job_log
    if "pai_job_table" in os.path.basename(name):
        known.append("alibaba-pai")
    if not known:
        return ""
    return (
        f"; this looks like the {known[0]} release: read it with "
        f"--trace-format {known[0]} (format={known[0]!r})"
    )


#: What is said of a last line without a line end whose record is not whole.
_CUT = "the file ends there without a newline: it may have been cut short"


def _cut_short(name: str, line: int, record: List[str]) -> None:
    """A TraceError when the file ends inside a quoted field of its last record (the
    lines ``record``, from ``line``), as a file cut short leaves it: the csv module,
    not strict, would read the field as whole."""
    try:
        for _ in csv.reader(record, strict=True):
            pass
    except csv.Error as exc:
        if "end of data" in str(exc):
            raise TraceError(
                f"{name}: line {line}: the file ends inside a quoted field of its "
                f"last record ({exc}): it may have been cut short (a truncated "
                "download?)"
            ) from None
