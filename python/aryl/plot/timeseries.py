"""A run's timeline as the series the usage figures draw: each row held until the
next (the last one until the run's end), repeats dropped or window means, and the
GPUs lent over time (the timeline counts servers on loan; the ledger counts GPUs)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from ..engine.result import Result

#: Usage is averaged over windows of this many seconds by default (an hour).
DEFAULT_WINDOW = 3600.0
#: More windows than this are refused (a tiny window over months would need GBs).
_MAX_WINDOWS = 1_000_000
#: A run shorter than this many windows is drawn at its own resolution.
_MIN_WINDOWS = 12
_USAGE_COLUMNS = (
    "training_gpus_used",
    "loaned_gpus_used",
    "on_loan",
    "inference_needed",
)
#: The series ``usage_series`` adds: GPUs of the inference servers on loan.
LENT = "lent_gpus"


def check_window(window: object) -> None:
    """A ``ValueError`` unless ``window`` is None or a number of seconds >= 0."""
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0
    ):
        raise ValueError(f"window must be None or seconds >= 0, got {window!r}")


def lent_gpus_per_server(result: Result) -> float:
    """GPUs per inference server on loan, to turn the timeline's servers into GPUs.

    The engine integrates the GPUs on loan (``totals["loaned_capacity_seconds"]``,
    the ledger's lent GPU-hours) while the timeline samples servers; their ratio is
    the servers' GPUs when all inference servers are alike, and the mean over the
    loans when they differ, so that the drawn series integrates to the ledger's
    figure either way. Without that total (an older saved run), or nothing lent:
    the largest inference server's GPUs.
    """
    largest = float(result.capacity.get("max_inference_server_gpus", 0) or 0)
    lent = float((result.totals or {}).get("loaned_capacity_seconds", 0.0) or 0.0)
    servers = _server_seconds_on_loan(result)
    if lent > 0 and servers > 0:
        return min(largest, lent / servers) if largest else lent / servers
    return largest


def _server_seconds_on_loan(result: Result) -> float:
    """The timeline's servers on loan integrated over the run (each row held until
    the next, the last until the run's end)."""
    tl = result.timeline
    if tl.empty:
        return 0.0
    t = tl["t"].to_numpy(dtype=float)
    end = float((result.totals or {}).get("end_time", 0.0) or 0.0)
    held = np.diff(np.r_[t, max(end, t[-1])])
    return float((tl["on_loan"].to_numpy(dtype=float) * held).sum())


def usage_series(
    result: Result, window: Optional[float]
) -> Tuple[np.ndarray, Dict[str, np.ndarray], float]:
    """(times, usage columns, window averaged over or 0) of a run as post-steps: the
    last row held until the run's end, repeated rows dropped, or window means. The
    columns are the timeline's and ``LENT``, the GPUs on loan."""
    tl = result.timeline
    t = tl["t"].to_numpy(dtype=float)
    columns = {k: tl[k].to_numpy(dtype=float) for k in _USAGE_COLUMNS}
    columns[LENT] = columns["on_loan"] * lent_gpus_per_server(result)
    end = float(result.totals.get("end_time", 0.0) or 0.0) if result.totals else 0.0
    if len(t) and end > t[-1]:
        # The last row holds until the end of the run: draw it up to there.
        t = np.r_[t, end]
        columns = {k: np.r_[v, v[-1]] for k, v in columns.items()}
    if window and len(t) > 1 and t[-1] - t[0] >= _MIN_WINDOWS * window:
        if (t[-1] - t[0]) / window > _MAX_WINDOWS:
            raise ValueError(
                f"window of {window:g} s: the run spans {(t[-1] - t[0]) / window:.3g} "
                f"windows, more than {_MAX_WINDOWS:,}; use a longer window or None "
                "(every scheduling step)"
            )
        edges, means = window_means(t, columns, float(window))
        return edges, means, float(window)
    if len(t) > 2:
        # A step drawn "post" is the same without rows that repeat the previous row:
        # drop them (months of 60-s epochs are mostly repeats; drawing them was slow).
        stacked = np.vstack(list(columns.values()))
        keep = np.r_[True, (np.diff(stacked, axis=1) != 0).any(axis=0)]
        keep[-1] = True
        t, columns = t[keep], {k: v[keep] for k, v in columns.items()}
    return t, columns, 0.0


def window_means(
    t: np.ndarray, columns: Dict[str, np.ndarray], window: float
) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """Time-weighted means of step series over consecutive windows from ``t[0]``.

    Each value holds from its time to the next; the integral of a step function is
    piecewise linear, so interpolating it at the window edges is exact. The last
    window ends at ``t[-1]`` and may be shorter; the last mean is repeated at the end
    so that a post-step draws it.
    """
    edges = np.arange(t[0], t[-1], window)
    edges = np.r_[edges, t[-1]] if edges[-1] < t[-1] else edges
    means = {}
    for key, values in columns.items():
        integral = np.r_[0.0, np.cumsum(values[:-1] * np.diff(t))]
        at_edges = np.interp(edges, t, integral)
        mean = np.diff(at_edges) / np.diff(edges)
        means[key] = np.r_[mean, mean[-1]]
    return edges, means
