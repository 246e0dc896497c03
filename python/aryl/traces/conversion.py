"""Job frames to ``aryl.Job`` records; inference load to loanable servers, rescaled, extended."""

from __future__ import annotations

import math
import numbers
from typing import Tuple

import numpy as np
import pandas as pd

from .. import _core
from ..defaults import ANY_TYPE_SHARE
from ..jobtable import JobTable
from .reading import GROUP_COLUMNS, JOB_COLUMNS, LOAD_COLUMNS

#: ``gpu_type`` values (case-insensitive, stripped) meaning "not recorded".
UNKNOWN_GPU_TYPES = frozenset({"", "unknown", "nan", "none"})

#: ``gpu_type`` values (case-insensitive, stripped) meaning "any type will do" (a
#: trace that says so, as the Alibaba 2023 release's empty ``gpu_spec`` does): such a
#: job may run on any GPU type, loaned inference servers included, whatever
#: ``any_type_share``.
ANY_GPU_TYPES = frozenset({"any"})


def _columns(frame: pd.DataFrame, required: Tuple[str, ...], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(
            f"{what} must be a pandas DataFrame, got {type(frame).__name__}"
        )
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} frame: missing column(s) {', '.join(missing)}")


def worker_split(num_gpus: int, max_gpus_per_worker: int = 8) -> Tuple[int, int]:
    """``(gpus_per_worker, workers)`` of a job of ``num_gpus`` GPUs; no GPU is lost.

    Up to ``max_gpus_per_worker`` GPUs: one worker of all of them. Beyond: workers of
    ``gcd(num_gpus, max_gpus_per_worker)`` GPUs — the largest worker size that divides the
    job *and* tiles a ``max_gpus_per_worker``-GPU server — so 16 -> 2 x 8, 12 -> 3 x 4,
    20 -> 5 x 4, 9 -> 9 x 1.

    Examples
    --------
    >>> worker_split(12)
    (4, 3)
    """
    if num_gpus < 1 or max_gpus_per_worker < 1:
        raise ValueError(
            f"num_gpus and max_gpus_per_worker must be >= 1, got "
            f"{num_gpus} and {max_gpus_per_worker}"
        )
    per = (
        num_gpus
        if num_gpus <= max_gpus_per_worker
        else math.gcd(num_gpus, max_gpus_per_worker)
    )
    return per, num_gpus // per


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def to_jobs(
    frame: pd.DataFrame,
    *,
    max_gpus_per_worker: int = 8,
    any_type_share: float = ANY_TYPE_SHARE,
    training_gpu: str = "V100",
    seed: int = 0,
) -> JobTable:
    """The jobs of a job frame (``read_jobs``, ``load_default`` or ``synthetic``).

    Returned as a ``JobTable``: a read-only sequence of ``aryl.Job`` held as
    columns, which ``sim.scenario`` and ``sim.simulate`` use without a per-job object.

    Parameters
    ----------
    frame
        Columns ``job_id, submit_time_s, num_gpus, duration_s, gpu_type``, and
        optionally ``user`` and ``vc`` (``GROUP_COLUMNS``: the jobs' ``user`` and
        ``vc``); other columns are ignored.
    max_gpus_per_worker
        Largest worker; ``num_gpus`` is split by ``worker_split`` (12 GPUs -> 3 workers of 4).
    any_type_share
        Jobs whose ``gpu_type`` is ``any`` (``ANY_GPU_TYPES``: the trace says any type
        will do) get ``gpu_type=None``. Among jobs whose ``gpu_type`` is unknown
        (``UNKNOWN_GPU_TYPES``, or missing),
        ``round(any_type_share * n_unknown)`` (half up), drawn uniformly without replacement,
        get ``gpu_type=None``: they may run on any GPU type, loaned inference servers
        included. The paper (§2, Appendix E): up to 21% of jobs request no specific GPU.
    training_gpu
        ``gpu_type`` of the other unknown-type jobs. Jobs with a real type keep it.
    seed
        Seeds the draw (``np.random.default_rng``); same frame and seed, same jobs.

    Returns
    -------
    JobTable
        In frame order: ``id = job_id``, ``min_workers = max_workers`` (inelastic;
        ``aryl.sim.scenario`` adds elasticity), ``duration = duration_s``,
        ``submit_time = submit_time_s``.
    """
    _columns(frame, JOB_COLUMNS, "jobs")
    if not 0.0 <= any_type_share <= 1.0:
        raise ValueError(f"any_type_share must be in [0, 1], got {any_type_share!r}")
    worker_split(1, max_gpus_per_worker)  # checks max_gpus_per_worker
    gpus = _whole_gpus(frame, max_gpus_per_worker)
    per = np.where(gpus <= max_gpus_per_worker, gpus, np.gcd(gpus, max_gpus_per_worker))
    workers = gpus // per
    missing = frame["gpu_type"].isna().to_numpy()
    types = frame["gpu_type"].to_numpy(dtype=object).copy()
    types[~missing] = [str(t).strip() for t in types[~missing].tolist()]
    types[missing] = None
    lowered = np.char.lower(np.where(missing, "", types).astype(str))
    unknown = missing | np.isin(lowered, list(UNKNOWN_GPU_TYPES))
    anywhere = ~missing & np.isin(lowered, list(ANY_GPU_TYPES))
    candidates = np.flatnonzero(unknown)
    any_type = np.random.default_rng(seed).choice(
        candidates, size=_half_up(any_type_share * len(candidates)), replace=False
    )
    types[unknown] = training_gpu
    types[any_type] = None
    types[anywhere] = None
    return JobTable.of(
        pd.DataFrame(
            {
                "id": frame["job_id"].to_numpy(dtype=object),
                "gpus_per_worker": per,
                "min_workers": workers,
                "max_workers": workers,
                "duration": frame["duration_s"].to_numpy(dtype=float),
                "submit_time": frame["submit_time_s"].to_numpy(dtype=float),
                "gpu_type": types,
                **{
                    name: _names(frame[name])
                    for name in GROUP_COLUMNS
                    if name in frame.columns
                },
            }
        )
    )


def _names(values: pd.Series) -> np.ndarray:
    """A ``user`` or ``vc`` column as names: ``str``, None where missing or empty (a
    numeric id becomes its text: ``7`` and ``"7"`` are one user)."""
    given = values.to_numpy(dtype=object)
    missing = pd.isna(values).to_numpy() | (given == "")
    names = np.empty(len(given), dtype=object)
    names[~missing] = [str(v) for v in given[~missing].tolist()]
    return names


def _whole_gpus(frame: pd.DataFrame, max_gpus_per_worker: int) -> np.ndarray:
    """``num_gpus`` as integers >= 1; ValueError naming the first job that is not."""
    raw = frame["num_gpus"]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.floor(values)) | (values < 1)
    if bad.any():
        i = int(np.argmax(bad))
        id_, gpus = frame["job_id"].tolist()[i], raw.tolist()[i]
        if np.isfinite(values[i]) and values[i] == np.floor(values[i]):
            worker_split(int(values[i]), max_gpus_per_worker)  # raises: < 1
        raise ValueError(f"job {id_!r}: num_gpus must be an integer, got {gpus!r}")
    return values.astype(np.int64)


def _load_columns(load: pd.DataFrame) -> Tuple[np.ndarray, np.ndarray]:
    _columns(load, LOAD_COLUMNS, "load")
    return load["time_s"].to_numpy(dtype=float), load["load"].to_numpy(dtype=float)


def loanable_servers(
    load: pd.DataFrame,
    inference_servers: int,
    headroom: float = 0.0,
    lend_hold: float = 0.0,
) -> pd.DataFrame:
    """Inference servers needed, spare and lent at each time of a load series.

    The simulator's rule (``aryl.sim.simulate``, applied every ``loan_interval``; here
    at each row's time): ``needed = min(N, ceil(min(1, load * (1 + headroom)) * N -
    1e-9))`` and ``loanable = N - needed`` (the ``1e-9`` only absorbs rounding,
    ``0.3 * 10``). ``lendable`` is ``loanable`` at the peak load of the last
    ``lend_hold`` seconds: only servers spare that long are lent. ``lent`` follows
    the simulator: reclaimed down to ``loanable`` at once when the load rises, lent
    up to ``lendable`` when the hold allows, otherwise unchanged.

    Parameters
    ----------
    load
        A frame with ``time_s`` and ``load`` (``read_load``).
    inference_servers
        ``N``, the inference cluster's servers (>= 0).
    headroom
        Spare capacity the inference cluster keeps (>= 0), the simulator's ``Config.headroom``.
    lend_hold
        Seconds a server must stay spare before it is lent (>= 0), ``Config.lend_hold``.

    Returns
    -------
    pandas.DataFrame
        ``time_s, load, needed, loanable, lendable, lent`` (counts as int).
    """
    time, value = _load_columns(load)
    n = int(inference_servers)
    if n < 0 or not headroom >= 0.0 or not lend_hold >= 0.0:
        raise ValueError(
            f"inference_servers, headroom and lend_hold must be >= 0, got "
            f"{inference_servers}, {headroom}, {lend_hold}"
        )

    def spare(x: np.ndarray) -> np.ndarray:  # the simulator's rule, from the core
        return np.asarray(_core.spare_servers(x.tolist(), n, headroom), dtype=np.int64)

    loanable = spare(value)
    start = (
        np.searchsorted(time, time - lend_hold, side="right") - 1
    )  # row in force at t - hold
    peak = (
        np.array([value[max(a, 0) : i + 1].max() for i, a in enumerate(start)])
        if len(value)
        else value
    )
    lendable = np.minimum(loanable, spare(peak))
    lent = np.zeros(len(value), dtype=np.int64)
    now = 0
    for i in range(len(value)):
        now = loanable[i] if now > loanable[i] else max(now, lendable[i])
        lent[i] = now
    return pd.DataFrame(
        {
            "time_s": time,
            "load": value,
            "needed": n - loanable,
            "loanable": loanable,
            "lendable": lendable,
            "lent": lent,
        }
    )


def rescale_load(load: pd.DataFrame, floor: float = 0.3) -> pd.DataFrame:
    """``load' = floor + (1 - floor) * load``: a copy with the ``load`` column rescaled.

    A modelling choice, not data: the Alibaba series averages 0.48 of its peak while the
    paper's inference cluster averaged ~65% utilisation; ``floor=0.3`` moves the mean to
    ~0.64 and keeps the peak at 1 (the peak-to-trough ratio drops from ~2.2 to ~1.5).

    Parameters
    ----------
    load
        A frame with ``time_s`` and ``load``; extra columns are kept.
    floor
        In ``[0, 1]``: the new value of a zero load.

    Returns
    -------
    pandas.DataFrame
    """
    _, value = _load_columns(load)
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor must be in [0, 1], got {floor!r}")
    out = load.copy()
    out["load"] = floor + (1.0 - floor) * value
    return out


#: The most rows ``extend_load`` builds (the embedded series covers 59 days in 17,856).
MAX_EXTENDED_ROWS = 10_000_000


def extend_load(load: pd.DataFrame, until_s: float) -> pd.DataFrame:
    """Repeat a load series end to end until it covers ``until_s``.

    The period is ``last time - first time + step``, ``step`` being the last sampling step
    (for the Alibaba series: 690,900 + 300 s = 8 days). Copies are shifted by whole periods;
    rows of the copies at or after ``until_s`` are left out, so the last row's value holds
    until ``until_s``. A series already reaching ``until_s`` is returned unchanged (a copy).

    Parameters
    ----------
    load
        A frame with ``time_s`` (strictly increasing, at least two rows) and ``load``;
        extra columns are repeated too.
    until_s
        Time (s) to cover.

    Returns
    -------
    pandas.DataFrame
        With a fresh index.

    Raises
    ------
    ValueError
        When ``until_s`` is not finite, or the result would pass ``MAX_EXTENDED_ROWS``.
    """
    time, _ = _load_columns(load)
    if len(time) < 2 or not (np.diff(time) > 0).all():
        raise ValueError(
            "extend_load needs at least two rows with strictly increasing time_s"
        )
    if (
        isinstance(until_s, bool)
        or not isinstance(until_s, numbers.Real)
        or not math.isfinite(until_s)
    ):
        raise ValueError(f"until_s must be a finite number, got {until_s!r}")
    step = time[-1] - time[-2]
    period = time[-1] - time[0] + step
    copies = max(1, math.ceil((until_s - time[0]) / period))
    if copies * len(time) > MAX_EXTENDED_ROWS:
        raise ValueError(
            f"extending the load series ({len(time)} rows over a period of {period:g} s) to "
            f"{until_s:g} s would take {copies:.3g} copies, more than {MAX_EXTENDED_ROWS:,} rows; "
            "use a series with a longer period or a shorter trace"
        )
    # One gather and one add over arrays (a frame per copy took minutes at 10^6 copies).
    rows = np.tile(np.arange(len(time)), copies)
    times = time[rows] + np.repeat(np.arange(copies) * period, len(time))
    keep = (np.arange(len(rows)) < len(time)) | (times < until_s)
    out = load.iloc[rows[keep]].reset_index(drop=True)
    out["time_s"] = times[keep]
    return out
