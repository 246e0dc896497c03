"""``aryl live``'s OUT: one command writing there at a time (``OutLock``), a run that did
not end kept unless ``--overwrite`` (``_check_replaceable``), and the run's id, which
the jobs' checkpoint names carry (``_run_id``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any, Optional, Tuple

#: ``OUT``'s lock (the PID of the ``aryl live`` writing there) and run record (its run
#: id: the jobs' checkpoints end in ``.<run>.ckpt``).
LOCK, RUN = ".aryl-live.lock", "run-id"


def _check_replaceable(journal: Path, overwrite: bool) -> None:
    """A new run on OUT: refused when OUT's journal holds a run that did not end (one
    ``--resume`` can continue), unless ``overwrite``."""
    if overwrite or not journal.is_file() or journal.stat().st_size == 0:
        return
    if _ended(journal):
        return
    raise ValueError(
        f"{journal}: holds a run that did not end, which --resume (with --address) "
        "can continue; to start a new run there instead, discarding it (its journal "
        "and checkpoints), add --overwrite, or give another --out"
    )


def _ended(journal: Path) -> bool:
    """Whether the journal's last whole line is the ``end`` event."""
    with open(journal, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65536))
        lines = [line for line in f.read().splitlines() if line.strip()]
    try:
        return bool(lines) and json.loads(lines[-1]).get("event") == "end"
    except (ValueError, AttributeError):
        return False


def _run_id(out: Path, resume: bool) -> str:
    """The run's id: OUT's (``RUN``) when resuming, else a new one, after the earlier
    run's journal and checkpoints are removed (they are checked replaceable)."""
    from ..live.jobs import run_id

    record = out / RUN
    if resume:
        try:
            return run_id(record.read_text().strip())
        except (OSError, ValueError):
            return run_id()  # adopted agents keep their own run
    journal, checkpoints = out / "journal.jsonl", out / "checkpoints"
    if journal.exists() or checkpoints.exists():
        journal.unlink(missing_ok=True)
        shutil.rmtree(checkpoints, ignore_errors=False)
        print(
            f"aryl: replaced the earlier run's journal and checkpoints in {out}",
            file=sys.stderr,
        )
    run = run_id()
    record.write_text(run + "\n")
    return run


class OutLock:
    """One ``aryl live`` per OUT: a file holding the PID and host of the command
    writing there. A lock whose process is gone (on this host) is stale and taken
    over; a live one is refused, naming its PID."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False

    def __enter__(self) -> OutLock:
        mine = f"{os.getpid()} {socket.gethostname()}\n"
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None:
                    pid, host = holder
                    raise ValueError(
                        f"{self.path.parent}: another aryl live (PID {pid} on {host}) "
                        f"is writing there; wait for it, or give another --out (if no "
                        f"such run is going on, delete {self.path})"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(mine)
            self.held = True
            return self
        raise ValueError(f"{self.path}: could not take the lock")

    def _holder(self) -> Optional[Tuple[int, str]]:
        """(PID, host) of a live holder, or None when the lock is stale."""
        try:
            pid_text, host = (self.path.read_text().split() + ["", ""])[:2]
            pid = int(pid_text)
        except (OSError, ValueError):
            # unreadable or half-written: stale only if old (a writer takes ~ms)
            try:
                young = time.time() - self.path.stat().st_mtime < 5.0
            except OSError:
                return None
            return (0, "?") if young else None
        if host != socket.gethostname():
            return pid, host  # another machine's: cannot tell, so it holds
        if pid == os.getpid():
            return pid, host
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, another user's
            return pid, host
        return pid, host

    def __exit__(self, *exc: Any) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False
