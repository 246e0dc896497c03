"""The live controller's journal on disk: an append-only JSON-lines file of events.

``Journal`` writes each event whole, flushed and synced, before the controller acts on
it; reading skips a torn last line (a crash in mid-write), and opening an existing
journal cuts it off. What the events mean, and the run rebuilt from them, is
``record.py``'s; a journal of another run is a ``JournalMismatch``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

import numpy as np


class JournalMismatch(ValueError):
    """A journal to resume from is not this run's (another trace, cluster, policy,
    configuration, load or seed), or has no header to tell."""


class JournalRepaired(UserWarning):
    """A resumed journal's torn last line (a crash in mid-write) was cut off."""


class Journal:
    """An append-only JSON-lines file of events; ``read`` gives them back.

    Every event is one line, written whole with its newline, flushed and synced. A
    crash in mid-write leaves a last line without its newline: torn, never acted on
    (the controller acts after the write returns). ``read`` skips it, and opening an
    existing journal cuts it off (``repaired`` says how many bytes), so that the next
    event starts a line of its own.
    """

    def __init__(
        self, path: Optional[os.PathLike[str] | str], keep: Optional[int] = None
    ) -> None:
        """``path=None`` keeps no file (events are still applied). An existing file is
        cut to its whole lines, or to its first ``keep`` bytes (``restore`` says
        how many: an epoch journaled in part goes too)."""
        self.path = None if path is None else Path(path)
        self._file = None
        self.repaired = 0  # bytes of a torn last line cut off an existing journal
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_file():
                size = self.path.stat().st_size
                whole = Journal.whole(self.path)
                self.repaired = size - whole  # a torn last line
                cut = whole if keep is None else min(keep, whole)
                if cut < size:
                    os.truncate(self.path, cut)
            self._file = open(self.path, "a", encoding="utf-8")

    def append(self, event: Dict[str, Any]) -> None:
        """Write one event and make it durable before the controller acts on it."""
        if self._file is None:
            return
        self._file.write(json.dumps(event, default=_plain) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None

    @staticmethod
    def whole(path: os.PathLike[str] | str) -> int:
        """The length in bytes of the journal's whole lines (up to its last newline)."""
        data = Path(path).read_bytes()
        return data.rfind(b"\n") + 1

    @staticmethod
    def read(path: os.PathLike[str] | str) -> Iterator[Dict[str, Any]]:
        """The events of the journal at ``path``, in order; a torn last line (a crash
        in mid-write: no newline) is skipped, any other bad line is a ``ValueError``
        naming the file and the line."""
        for _, _, event in Journal.lines(path):
            yield event

    @staticmethod
    def lines(
        path: os.PathLike[str] | str,
    ) -> Iterator[Tuple[int, int, Dict[str, Any]]]:
        """``(line number, byte offset, event)`` of each whole line (``read``)."""
        data = Path(path).read_bytes()
        offset = 0
        for number, raw in enumerate(data.split(b"\n")[:-1], 1):  # the last: torn
            start, offset = offset, offset + len(raw) + 1
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                raise ValueError(
                    f"{path}, line {number}: not JSON: {line[:80]!r}"
                ) from None
            if not isinstance(event, dict) or "event" not in event or "t" not in event:
                raise ValueError(f"{path}, line {number}: not an event: {line[:80]!r}")
            yield number, start, event


def _plain(value: Any) -> Any:
    """NumPy scalars as Python numbers in JSON."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot journal {value!r}")
