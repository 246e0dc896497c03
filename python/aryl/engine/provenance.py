"""What produced a simulated run: fingerprints of its inputs, its settings, aryl's version.

Every ``Result`` of ``simulate`` carries a ``Provenance``: the jobs' and the load's
fingerprints (SHA-256 of their exact contents, so two runs on the same input say so),
the cluster, the policies, every ``Config`` field, the seed and the aryl version; and,
when the load series was shorter than the trace, how it was extended
(``extend_to_jobs``: the one rule the API, ``aryl simulate``/``compare`` and sweeps share).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .._display import html_table
from .._version import __version__
from .config import describe_config

#: How far past the last submission a repeated load series reaches (s): 90 days, as long
#: as any run on the embedded traces takes to drain its queue. Past it the last value holds.
EXTEND_MARGIN_S = 90 * 86400.0


def aryl_version() -> str:
    """The installed aryl's version (the package metadata's, else ``aryl.__version__``)."""
    try:
        from importlib.metadata import version

        return version("aryl")
    except Exception:  # pragma: no cover - running from a source tree without metadata
        return __version__


_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def code_fingerprint() -> str:
    """16 hex digits of SHA-256 over the code that computes results.

    The compiled ``aryl._core`` module's bytes and every Python source of the installed
    package (by path and contents), so a cache keyed on it misses after any change to
    the code, even one that keeps the version string (an editable install, a local build).
    Computed once per process.
    """
    from .. import _core

    return _code_fingerprint(_PACKAGE, Path(_core.__file__))


def machine() -> str:
    """The machine a run ran on: CPU model, core count and Python version."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


@functools.cache
def source_commit() -> Optional[str]:
    """The git commit of the source tree aryl runs from, or None (not a checkout).

    ``+dirty`` is appended when the code (``python/``, ``cpp/``, the build files)
    differs from that commit, so the commit alone does not reproduce the run.
    Computed once per process.
    """

    def git(*args: str) -> Optional[str]:
        try:
            done = subprocess.run(
                ["git", "-C", str(_PACKAGE), *args],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top, commit = git("rev-parse", "--show-toplevel"), git("rev-parse", "HEAD")
    if not top or not commit:
        return None
    code = ("python", "cpp", "CMakeLists.txt", "pyproject.toml")
    changed = git(
        "-C", top, "status", "--porcelain", "--untracked-files=no", "--", *code
    )
    return commit + ("+dirty" if changed else "")


def _code_fingerprint(package: Path, core: Path) -> str:
    chunks = [core.read_bytes()]
    for source in sorted(package.rglob("*.py")):
        chunks += [source.relative_to(package).as_posix().encode(), source.read_bytes()]
    return _digest(*chunks)


def _digest(*chunks: bytes) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()[:16]


def fingerprint_jobs(jobs: Any) -> str:
    """16 hex digits of SHA-256 over every field of every job, in order (``aryl.Job``
    records, dicts, a DataFrame or a ``JobTable``).

    Ids keep their type (``7`` and ``"7"`` differ); floats are hashed exactly.
    """
    from ..jobtable import JobTable

    return _digest(JobTable.of(jobs).fingerprint_bytes())


def fingerprint_frame(frame: Optional[pd.DataFrame]) -> Optional[str]:
    """16 hex digits of SHA-256 over a DataFrame's column names and values (``None`` for ``None``)."""
    if frame is None:
        return None
    values = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return _digest(
        json.dumps([str(c) for c in frame.columns]).encode(), values.tobytes()
    )


def fingerprint_load(time: Sequence[float], load: Sequence[float]) -> Optional[str]:
    """16 hex digits of SHA-256 over a load series' times and values (``None`` when empty)."""
    if len(time) == 0:
        return None
    return _digest(
        np.asarray(time, dtype=float).tobytes(), np.asarray(load, dtype=float).tobytes()
    )


def extend_to_jobs(
    time: Sequence[float],
    load: Sequence[float],
    last_submit: float,
    horizon: float = math.inf,
) -> Tuple[List[float], List[float], Optional[str]]:
    """Extend a load series that ends before the last job is submitted; say how.

    The rule every entry point shares (``simulate``, hence ``aryl simulate``, ``aryl
    compare`` and ``sweep``): a series of at least two rows whose last time is before
    ``last_submit`` is repeated end to end (``aryl.traces.extend_load``: period = last
    time - first time + last step; the embedded Alibaba series repeats every 8 days) until
    ``last_submit + EXTEND_MARGIN_S``; past its end the last value holds, as for any
    series. A series that reaches the last submission is used as given (its last value
    holds from its last time on), so a short series written for a few jobs means what it says.
    A run's ``horizon`` ends the extension earlier: nothing past it is simulated.

    Returns
    -------
    (times, loads, note)
        ``note`` is ``None`` when nothing was changed, else one sentence for the record
        (``Provenance.load_extended``).
    """
    if len(time) < 2 or time[-1] >= last_submit:
        return list(time), list(load), None
    from ..traces import extend_load

    until = min(float(last_submit) + EXTEND_MARGIN_S, float(horizon))
    if time[-1] >= until:
        return list(time), list(load), None
    out = extend_load(pd.DataFrame({"time_s": time, "load": load}), until)
    period = time[-1] - time[0] + (time[-1] - time[-2])
    note = (
        f"the load series ({_days(time[0])}-{_days(time[-1])} days) ends before the last "
        f"submission ({_days(last_submit)} days); repeated every {_days(period)} days up to "
        + (
            f"{_days(until)} days (last submission + {_days(EXTEND_MARGIN_S)} days)"
            if until < horizon
            else f"the horizon, {_days(until)} days"
        )
    )
    return out["time_s"].tolist(), out["load"].tolist(), note


def _days(seconds: float) -> str:
    return f"{seconds / 86400:.1f}"


@dataclass
class Provenance:
    """What produced a ``Result``: inputs (by fingerprint), settings, seed, version.

    ``jobs`` / ``jobs_fingerprint``: how many jobs were simulated and a hash of them
    (after any scenario transformation, i.e. exactly what ran); ``load_fingerprint`` and
    ``load_rows`` the inference load as simulated (``None`` / 0 without loaning);
    ``load_extended`` says how a short series was extended (``None`` if it was not);
    ``cluster`` the server counts and types; ``policy``, ``reclaim``, ``seed``;
    ``config`` every ``Config`` field; ``throughput`` whether per-job curves were given;
    ``aryl_version``. ``inputs`` is free-form: what the caller knows about where the
    inputs came from (the CLI and ``sweep`` record the trace, load and parameters there).
    ``own_policy`` is, for a policy of your own, what ``aryl.policy.policy_record``
    says of it (its name, class, file and a hash of its code and attributes), so a
    saved result says which code produced it; ``None`` for a built-in policy. A
    policy of your own named like a built-in is recorded as ``aryl (own: mine.py:Rev)``
    in ``policy`` (``aryl.policy.policy_name``), never as the built-in.
    """

    jobs: int
    jobs_fingerprint: str
    cluster: Dict[str, Any]
    policy: str
    reclaim: str
    config: Dict[str, Any]
    seed: int
    aryl_version: str
    load_fingerprint: Optional[str] = None
    load_rows: int = 0
    load_extended: Optional[str] = None
    throughput: bool = False
    inputs: Dict[str, Any] = field(default_factory=dict)
    own_policy: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict (``from_dict`` reverses it exactly)."""
        plain: Dict[str, Any] = _jsonable(dataclasses.asdict(self))
        return plain

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Provenance:
        """The ``Provenance`` of ``to_dict``'s output."""
        names = {f.name for f in dataclasses.fields(cls)}
        config = dict(data.get("config", {}))
        if isinstance(config.get("prediction_error"), list):
            config["prediction_error"] = tuple(config["prediction_error"])
        return cls(
            **{**{k: v for k, v in data.items() if k in names}, "config": config}
        )

    def _rows(self) -> List[Tuple[str, str]]:

        c = self.cluster
        rows = [
            ("jobs", f"{self.jobs:,} (fingerprint {self.jobs_fingerprint})"),
            (
                "cluster",
                f"{c.get('training_servers', '?')} training ({c.get('training_gpu', '')}) + "
                f"{c.get('inference_servers', '?')} inference ({c.get('inference_gpu', '')}) "
                f"servers",
            ),
            ("policy / reclaim", f"{self.policy} / {self.reclaim}"),
        ]
        if self.own_policy:
            own = self.own_policy
            rows.append(
                (
                    "own policy",
                    f"{own.get('origin')} ({own.get('file') or 'no file'}; code "
                    f"{own.get('code') or 'unknown'}, attributes "
                    f"{own.get('attributes') or 'unknown'})",
                )
            )
        rows += [
            (
                "inference load",
                f"{self.load_rows:,} rows (fingerprint {self.load_fingerprint})"
                if self.load_rows
                else "none (nothing lent)",
            ),
        ]
        if self.load_extended:
            rows.append(("load extended", self.load_extended))
        rows += [
            ("config", describe_config(self.config)),
            ("seed", str(self.seed)),
            ("aryl", self.aryl_version),
        ]
        rows += [(str(k), str(v)) for k, v in self.inputs.items()]
        return rows

    def __str__(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self._rows())

    def _repr_html_(self) -> str:

        return html_table(self._rows(), "Provenance")


def _jsonable(value: Any) -> Any:
    """Plain JSON types (tuples as lists, NumPy scalars as Python numbers)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return value  # json writes Infinity / NaN, which json reads back
    return value
