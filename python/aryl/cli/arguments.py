"""Option value types: each checks one option's text at parse time, so a bad value
stops ``aryl`` with one line before anything runs."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
)

from ..validation import MAX_INT, did_you_mean


def _number(
    kind: Callable[[str], float],
    what: str,
    low: Optional[float] = None,
    high: Optional[float] = None,
    low_open: bool = False,
) -> Callable[[str], float]:
    """An argparse type: a finite ``kind(text)`` in [low, high] (``(low, high]`` if ``low_open``)."""
    noun = "an integer" if kind is int else "a number"
    bounds = f"{'(' if low_open else '['}{'-inf' if low is None else low}, {'inf' if high is None else high}]"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        outside = (
            low is not None and (value < low or (low_open and value == low))
        ) or (high is not None and value > high)
        if (kind is not int and not math.isfinite(value)) or outside:
            message = f"{what} must be in {bounds}, got {text!r}"
            raise argparse.ArgumentTypeError(message)
        return value

    parse.__name__ = what
    return parse


def _servers_or_auto(what: str, low: int) -> Callable[[str], object]:
    """An argparse type: ``auto`` or an integer server count >= ``low``."""
    count = _number(int, what, low, MAX_INT)

    def parse(text: str) -> object:
        return "auto" if text.strip().lower() == "auto" else count(text)

    parse.__name__ = what
    return parse


def _elastic_range(text: str) -> float:
    """``--elastic-range``: a factor >= 1, or ``cluster`` (inf: up to the training
    servers' GPUs)."""
    if text.strip().lower() == "cluster":
        return math.inf
    return _number(float, "--elastic-range", 1.0)(text)


def _readable_file(what: str) -> Callable[[str], str]:
    """An argparse type: a path to an existing, readable file."""

    def parse(text: str) -> str:
        path = Path(text)
        if not path.exists():
            raise argparse.ArgumentTypeError(f"{text}: no such file")
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: is a directory, expected a file")
        if not os.access(path, os.R_OK):
            raise argparse.ArgumentTypeError(
                f"{text}: not readable (permission denied)"
            )
        return text

    parse.__name__ = what
    return parse


def _writable_folder(what: str) -> Callable[[str], str]:
    """An argparse type: a directory that exists or can be created, and is writable."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError("expected a directory, got ''")
        path = Path(text)
        if path.exists() and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
        existing = path
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            raise argparse.ArgumentTypeError(
                f"{text}: cannot be created ({existing} is a file)"
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text}: not writable ({existing})")
        return text

    parse.__name__ = what
    return parse


def _cache_folder(text: str) -> str:
    """An argparse type for ``--cache``: an existing folder that can be read (a
    read-only one holding every run is read; the sweep refuses it only when a run
    must be written), or a new one that can be created."""
    path = Path(text)
    if text.strip() and path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK):
            raise argparse.ArgumentTypeError(
                f"{text}: not readable (permission denied)"
            )
        return text
    return _writable_folder("--cache")(text)


def _load_source(text: str) -> str:
    """An argparse type: ``embedded`` (the embedded load series), ``pods`` or
    ``pods:QOS[,QOS]`` (the pod list's own inference pods: ``traces.pods``), or a
    readable file; a missing file named like ``embedded`` (``embeded``) is asked
    about."""
    if text.strip().lower() == "embedded":
        return "embedded"
    if text.strip().lower().split(":")[0] == "pods" and not Path(text).exists():
        return _pods_load(text)
    if not Path(text).exists():
        hint = did_you_mean(text.strip().lower(), ["embedded"])
        if hint:
            raise argparse.ArgumentTypeError(
                f"{text}: no such file{hint} (the embedded Alibaba-2018 load series)"
            )
    return _readable_file("--load")(text)


def _pods_load(text: str) -> str:
    """``pods`` (the LS pods) or ``pods:QOS[,QOS]``, written back as ``pods:LS``."""
    from ..traces.pods import INFERENCE_QOS

    _, _, classes = text.strip().partition(":")
    names = [q.strip() for q in classes.split(",") if q.strip()] or list(INFERENCE_QOS)
    return "pods:" + ",".join(names)


_PAIR = re.compile(r"^\s*([A-Za-z0-9_.+-]+)\s*=\s*(\S+?)\s*$")


def _gpu_speeds(text: str) -> Dict[str, float]:
    """An argparse type: ``TYPE=SPEED[,TYPE=SPEED...]``, speeds relative to a V100."""
    from ..defaults import MAX_GPU_SPEED, MIN_GPU_SPEED

    speed = _number(float, "--gpu-speed", MIN_GPU_SPEED, MAX_GPU_SPEED)
    speeds: Dict[str, float] = {}
    for part in text.split(","):
        match = _PAIR.match(part)
        if match is None:
            raise argparse.ArgumentTypeError(
                "expected TYPE=SPEED[,TYPE=SPEED...] (e.g. T4=0.25,V100=1), "
                f"got {text!r}"
            )
        name, value = match.groups()
        try:
            speeds[name] = speed(value)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{name}: {exc}") from None
    return speeds


_UNITS = {"": 1.0, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _window(text: str) -> float:
    """An argparse type: a plot window such as ``1h``, ``30min``, ``600`` (seconds), or
    ``raw`` (0: no resampling)."""
    if text.strip().lower() in ("raw", "0"):
        return 0.0
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*(s|min|h|d)?\s*", text)
    value = None
    if match is not None:
        try:
            value = float(match.group(1)) * _UNITS[match.group(2) or ""]
        except ValueError:
            value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive duration (e.g. 1h, 30min, 600, or raw), got {text!r}"
        )
    return value


_PLOT_FORMATS = ("png", "svg", "pdf")


def _plot_formats(text: str) -> Tuple[str, ...]:
    """An argparse type: comma-separated figure formats among png, svg and pdf."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",")))
    unknown = [n for n in names if n not in _PLOT_FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected some of {', '.join(_PLOT_FORMATS)} (comma-separated), "
            f"got {text!r}"
        )
    return names


def _pollux_workload(text: str) -> str:
    """An argparse type: an embedded Pollux workload 1..8, or a readable CSV file."""
    if text.strip().isdigit():
        if not 1 <= int(text) <= 8:
            raise argparse.ArgumentTypeError(
                f"expected an embedded workload 1..8 or a file, got {text!r}"
            )
        return text.strip()
    return _readable_file("--pollux-workload")(text)


def _pollux_cluster(text: str) -> Tuple[int, int]:
    """An argparse type: ``NODESxGPUS``, both positive integers (e.g. 16x4)."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if match is None or 0 in (int(match.group(1)), int(match.group(2))):
        raise argparse.ArgumentTypeError(
            f"expected NODESxGPUS with positive counts (e.g. 16x4), got {text!r}"
        )
    return int(match.group(1)), int(match.group(2))


def _policy(names: Sequence[str]) -> Callable[[str], str]:
    """An argparse type: one of ``names`` (built-in policies), or a policy of your
    own as ``module:Class`` / ``path.py:Class`` (loaded when the command runs)."""

    def parse(text: str) -> str:
        if text in names or ":" in text:
            return text
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(names)} or a policy of your own as "
            f"module:Class or path.py:Class, got {text!r}{did_you_mean(text, names)}"
        )

    return parse


def _name_values(text: str, what: str) -> Tuple[str, List[Any]]:
    """``NAME=V1,V2,...`` (or ``NAME=[JSON list]``) as (name, values)."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values:
        raise ValueError(f"{what} {text!r}: expected NAME=VALUE[,VALUE...]")
    parsed = (
        _value(values)
        if values.startswith("[")
        else [_value(v) for v in values.split(",")]
    )
    return name.strip().replace("-", "_"), (
        parsed if isinstance(parsed, list) else [parsed]
    )


def _value(text: str) -> Any:
    """A grid value from the command line: JSON (numbers, true/false, null, lists), else text."""
    if text.lower() == "none":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_grid(pairs: Sequence[str], what: str) -> Dict[str, List[Any]]:
    """``--grid`` / ``--set`` strings as name -> values (a name given twice is an
    error, not the last one silently)."""
    out: Dict[str, List[Any]] = {}
    for pair in pairs:
        name, values = _name_values(pair, what)
        if name in out:
            raise ValueError(
                f"{what} {name}: given twice; list every value once, e.g. "
                f"{what} {name}=1,2"
            )
        out[name] = values
    return out
