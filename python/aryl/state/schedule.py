"""``ClusterState.schedule``: the scheduling kernel on the state's columns."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .. import _core, validation
from ..defaults import (
    DEFAULT_GPU_SPEED,
    DEFAULT_GPU_TYPE,
    PLACEMENTS,
    UNLISTED_GPU_SPEED,
    with_published_speeds,
)
from ..defaults import SCHEDULE_POLICIES as POLICIES
from ..typing import AllocationPolicy
from .schedule_result import ScheduleResult
from .tables import _EMPTY_WORKERS, TYPE_NAMES


def schedule_state(
    state: Any,
    policy: AllocationPolicy,
    now: Optional[float],
    placement: str,
    backfill: bool,
    remaining: Optional[Mapping[Any, float]],
    gpu_speed: Optional[Mapping[str, float]],
    hetero_efficiency: float,
    throughput: Optional[Mapping[Any, Sequence[float]]],
    queue: Any = None,
    grow: Any = None,
) -> ScheduleResult:
    """``ClusterState.schedule`` (and so ``aryl.schedule``): the one argument check,
    the one unplaceable rule and the kernel, on the state's columns."""
    version = state.version  # before the kernel: a later change makes it stale
    validation.text(policy, "policy", POLICIES)
    validation.text(placement, "placement", PLACEMENTS)
    backfill = validation.flag(backfill, "backfill")
    if remaining is not None and not isinstance(remaining, Mapping):
        raise TypeError(
            f"remaining must be a mapping of job id to fraction, got {remaining!r}"
        )
    for job_id in remaining or {}:
        if job_id not in state._job_index:
            raise ValueError(f"remaining: unknown job {job_id!r}")
    jobs = state._jobs
    if "queued" not in state._cache:  # jobs without workers, until the state changes
        held = state._known_columns.get("workers")
        if held is None:
            queued = np.ones(state.n_jobs, dtype=bool)
            queued[state._workers["job"]] = False
        else:  # counted by the simulator
            queued = held == 0
        queued.flags.writeable = False
        state._cache["queued"] = queued
    queued = state._cache["queued"]
    future = None  # no job is still to come
    if now is not None:
        now = validation.real(now, "now", finite=False)
        future = queued & (jobs["submit_time"] > now)
        queued = queued & ~future
    speeds = _server_speeds(state, gpu_speed)
    hetero_efficiency = validation.hetero_efficiency(hetero_efficiency)
    unplaceable, kept, core = _state_rows(state, policy, queued, future)
    fractions = _state_remaining(state, kept, remaining)
    curves = _state_curves(state, kept, throughput)
    rows, may_grow = _caller_parts(state, kept, queue, grow)
    try:
        raw = _core.schedule(
            core,
            policy,
            placement,
            backfill,
            fractions,
            speeds,
            hetero_efficiency,
            curves,
            rows,
            may_grow,
        )
    except ValueError:
        if queue is not None and kept is None:  # the kernel checked it: name why
            _queue_rows(state, queue)
        raise
    future_rows = _NO_ROWS if future is None else np.flatnonzero(future)
    return ScheduleResult(
        state, version, policy, raw, kept, future_rows, dict(unplaceable)
    )


#: No rows (read-only: shared).
_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_ROWS.flags.writeable = False


def _state_rows(
    state: Any, policy: str, queued: np.ndarray, future: Optional[np.ndarray]
) -> Tuple[Dict[Any, str], Optional[np.ndarray], Any]:
    """The unplaceable jobs, the rows the kernel sees (None: all) and its state.

    They depend only on the state, the policy and which jobs are still to come, so
    they are kept in the state's cache (cleared by every change): an epoch on an
    unchanged state then costs the kernel alone, which now takes about a
    millisecond for 2,000 queued jobs.
    """
    key = ("rows", policy, None if future is None else np.packbits(future).tobytes())
    if key not in state._cache:
        unplaceable = _state_unplaceable(state, policy, queued)
        kept, core = None, state._core
        if unplaceable or future is not None:  # else the kernel sees every job
            left_out = np.zeros(state.n_jobs, bool) if future is None else future.copy()
            if unplaceable:
                left_out[[state._job_index[j] for j in unplaceable]] = True
            if left_out.any():
                kept = np.flatnonzero(~left_out)
                kept.flags.writeable = False  # shared by every result of this state
                core = state._sub_core(kept)
        state._cache[key] = (unplaceable, kept, core)
    rows: Tuple[Dict[Any, str], Optional[np.ndarray], Any] = state._cache[key]
    return rows


def _state_unplaceable(state: Any, policy: str, queued: np.ndarray) -> Dict[Any, str]:
    """The queued rows that can never start: a worker wider than every server, or a
    base demand beyond the room the core counts (``validation.unplaceable``'s rule)."""
    if state._queued_fit_unlent(policy, queued):
        return {}  # a simulation view whose queued jobs fit without loans
    jobs = state._jobs
    d = jobs["gpus_per_worker"]
    largest = int(state._servers["gpus"].max()) if state.n_servers else 0
    wide = queued & (d > largest)
    out = {
        j: f"a worker needs {g} GPUs, more than any server has ({largest})"
        for j, g in zip(jobs["id"][wide].tolist(), d[wide].tolist())
    }
    fits = np.flatnonzero(queued & ~wide)
    if not len(fits):
        return out
    demands = np.asarray(_core.base_demands(state._core, policy))[fits]
    rooms = np.asarray(_core.job_rooms(state._core), dtype=np.int64)[fits]
    out.update(
        validation.reasons(
            jobs["id"][fits], d[fits], jobs["hetero"][fits], demands, rooms
        )
    )
    return out


def placeable_unlent(state: Any, policy: str) -> np.ndarray:
    """Whether each job's base demand under ``policy`` fits ``state``'s servers with
    nothing on loan (then it fits whatever is lent: a loan only adds room), a
    worker no wider than the widest server."""
    servers = dict(state._servers)
    servers["on_loan"] = np.zeros(state.n_servers, dtype=bool)
    core = _core.ClusterState(
        *state._core_columns(servers, state._jobs, _EMPTY_WORKERS)
    )
    demands = np.asarray(_core.base_demands(core, policy), dtype=np.int64)
    rooms = np.asarray(_core.job_rooms(core), dtype=np.int64)
    largest = int(state._servers["gpus"].max()) if state.n_servers else 0
    fits: np.ndarray = (state._jobs["gpus_per_worker"] <= largest) & (demands <= rooms)
    return fits


def _caller_parts(
    state: Any, kept: Optional[np.ndarray], queue: Any, grow: Any
) -> Tuple[Optional[np.ndarray], np.ndarray]:
    """The kernel's ``queue`` and ``may_grow`` of a caller's ``queue`` and ``grow``
    (rows of this state), in the rows the kernel sees (``kept``).

    A queued job the kernel does not see (submitted after ``now``, or one no
    server could ever hold) is dropped from ``queue``: it stays queued, as it
    would under the built-in order.
    """
    rows = None
    if queue is not None and kept is None:
        # the kernel's rows are the state's: the kernel checks them (range, running,
        # twice), and schedule_state names a refused one by _queue_rows
        rows = _job_array(queue, "queue")
    elif queue is not None and kept is not None:
        rows = _queue_rows(state, queue)
        to_kernel = np.full(state.n_jobs, -1)
        to_kernel[kept] = np.arange(len(kept))
        rows = to_kernel[rows]
        rows = rows[rows >= 0]
    may_grow = _NO_ROWS
    if isinstance(grow, (list, tuple)) and not grow:  # no job grows
        may_grow = np.zeros(state.n_jobs if kept is None else len(kept), np.int64)
    elif grow is not None:
        mask = np.zeros(state.n_jobs, dtype=np.int64)
        mask[_job_rows(grow, "grow", state.n_jobs)] = 1
        may_grow = mask if kept is None else mask[kept]
    return rows, may_grow


def _queue_rows(state: Any, queue: Any) -> np.ndarray:
    """A caller's ``queue`` as job rows of ``state``, each in range, queued and
    listed once (``ValueError`` naming the first that is not)."""
    rows = _job_rows(queue, "queue", state.n_jobs)
    running = rows[~state._cache["queued"][rows]]  # queued: set by schedule_state
    if len(running):
        raise ValueError(
            f"queue: job {state._jobs['id'][running[0]]!r} is running; queue "
            "lists queued jobs (columns().queue)"
        )
    ordered = np.sort(rows)
    if (ordered[1:] == ordered[:-1]).any():
        raise ValueError("queue: a job is listed twice")
    return rows


def _job_array(rows: Any, what: str) -> np.ndarray:
    """``rows`` (job rows) as an int array (``TypeError`` for anything else)."""
    array = np.asarray(rows)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise TypeError(
            f"{what} must be a list or array of job rows (ints: positions in "
            f"state.job_ids, as columns() gives them), got {rows!r}"
        )
    return array if array.dtype == np.int64 else array.astype(np.int64)


def _job_rows(rows: Any, what: str, n: int) -> np.ndarray:
    """``rows`` (job rows of a state of ``n`` jobs) as an int array, checked."""
    array = _job_array(rows, what)
    if array.size and (array.min() < 0 or array.max() >= n):
        bad = array[(array < 0) | (array >= n)]
        raise ValueError(f"{what}: job row {int(bad[0])} out of range for {n} jobs")
    return array


def _state_remaining(
    state: Any, kept: Optional[np.ndarray], remaining: Optional[Mapping[Any, float]]
) -> Any:
    """Each kept job's fraction of work left: ``remaining`` (by id, checked), or
    when it is None the state's own (``advance``'s, or the simulator's column as
    it is: the engine keeps it in (0, 1], and the kernel checks it again)."""
    if remaining is None:
        rows = state._remaining_rows
        if rows is not None:
            return rows if kept is None else rows[kept]
        remaining = state._remaining
    if not remaining:
        return []
    fractions = np.ones(state.n_jobs)
    for job_id, fraction in remaining.items():
        fractions[state._job_index[job_id]] = _fraction(fraction, job_id)
    return fractions if kept is None else fractions[kept]


def _fraction(value: Any, job_id: Any) -> float:
    """A job's remaining work, in ``(0, 1]``: checked here for every job given, left
    out of the epoch or not (the kernel sees only the kept ones)."""
    what = f"remaining[{job_id!r}]"
    fraction = validation.real(value, what)
    if not 0.0 < fraction <= 1.0:  # the kernel's words, for every job
        raise ValueError(
            f"job {job_id!r}: remaining must be in (0, 1], got {fraction!r}"
        )
    return fraction


def server_type_codes(state: Any) -> Tuple[np.ndarray, Any]:
    """(each server's GPU type code, the types): kept in the state's cache."""
    if "speed_types" not in state._cache:
        import pandas as pd

        state._cache["speed_types"] = pd.factorize(state._servers["gpu_type"])
    codes: Tuple[np.ndarray, Any] = state._cache["speed_types"]
    return codes


def _server_speeds(state: Any, gpu_speed: Optional[Mapping[str, float]]) -> np.ndarray:
    """Each server's relative speed under ``gpu_speed`` (checked by ``_speeds``).

    Kept with what depends on the servers alone (a run's views share it), by the
    speeds given, when checking them could not warn: an epoch that passes the
    run's speeds again is a look-up."""
    kept = state._cache.setdefault("by_servers", {})
    try:
        key = ("given", tuple((gpu_speed or {}).items()))
        hash(key)
    except (AttributeError, TypeError):  # not a mapping, or unhashable: _speeds says
        key = None
    if key is not None and key in kept:
        known: np.ndarray = kept[key]
        return known
    speeds = _speeds(state, gpu_speed)
    out = _state_speeds(state, speeds)
    quiet = {*state._cache["gpu_types"], *DEFAULT_GPU_TYPE.values()}
    if key is not None and quiet.issuperset(gpu_speed or {}):
        kept[key] = out
    return out


def _speeds(state: Any, gpu_speed: Optional[Mapping[str, float]]) -> Dict[str, float]:
    """The default speeds with ``gpu_speed`` over them, its names checked against the
    state's GPU types (``validation.run_gpu_speeds``), and the published speed of
    each of the state's types neither lists (``defaults.PUBLISHED_GPU_SPEED``)."""
    if "gpu_types" not in state._cache:  # until the state changes
        state._cache["gpu_types"] = gpu_types(state)
    given = validation.run_gpu_speeds(gpu_speed or {}, state._cache["gpu_types"])
    return with_published_speeds(
        {**DEFAULT_GPU_SPEED, **given}, state._cache["gpu_types"]
    )


def gpu_types(state: Any) -> List[str]:
    """The GPU types of ``state``'s servers and jobs, sorted (jobs' by their codes:
    one look-up per distinct type)."""
    codes = np.unique(state._jobs["type_code"])
    job_types = [TYPE_NAMES[c] for c in codes.tolist()]
    server_types = server_type_codes(state)[1].tolist()
    return sorted({t for t in job_types + server_types if t})


def _state_speeds(state: Any, speeds: Mapping[str, float]) -> np.ndarray:
    """Per-server relative speeds, looked up once per GPU type."""
    codes, names = server_type_codes(state)
    per_type = tuple(float(speeds.get(t, UNLISTED_GPU_SPEED)) for t in names)
    # kept with what depends on the servers alone: shared by a run's views
    kept = state._cache.setdefault("by_servers", {})
    key = ("per type", per_type)
    if key not in kept:
        table = np.asarray(per_type, dtype=np.float64)
        kept[key] = table[codes] if len(codes) else np.zeros(0)
    out: np.ndarray = kept[key]
    return out


def _state_curves(
    state: Any,
    kept: Optional[np.ndarray],
    throughput: Optional[Mapping[Any, Sequence[float]]],
) -> List[List[float]]:
    if not throughput:
        return []
    curves: List[List[float]] = [[] for _ in range(state.n_jobs)]
    for job_id, curve in throughput.items():
        if job_id not in state._job_index:
            raise ValueError(f"throughput: unknown job {job_id!r}")
        curves[state._job_index[job_id]] = _curve(curve, job_id)
    return curves if kept is None else [curves[i] for i in kept.tolist()]


def _curve(curve: Any, job_id: Any) -> List[float]:
    """One job's throughput curve as floats; a value that is not a number is named
    here, and the kernel refuses values that are not > 0 (naming the job)."""
    what = f"throughput[{job_id!r}]"
    if isinstance(curve, (str, bytes, Mapping)) or not hasattr(curve, "__iter__"):
        raise TypeError(f"{what} must be a list of numbers, got {curve!r}")
    return [validation.real(v, what) for v in curve]


def advance_state(
    state: Any,
    seconds: float,
    gpu_speed: Optional[Mapping[str, float]],
    hetero_efficiency: float,
    throughput: Optional[Mapping[Any, Sequence[float]]],
) -> Dict[Any, float]:
    """``ClusterState.advance``: every running job's remaining work after ``seconds``
    on its workers, by the core's rule (``_core.advance_remaining``, the simulator's).

    Returns the new remaining fraction of every job that has workers (0 when done)."""
    seconds = validation.real(seconds, "seconds", 0.0)
    speeds = _server_speeds(state, gpu_speed)
    hetero_efficiency = validation.hetero_efficiency(hetero_efficiency)
    kept = state.remaining
    fractions = _state_remaining(state, None, kept) if kept else np.ones(state.n_jobs)
    after = np.asarray(
        _core.advance_remaining(
            state._core,
            fractions,
            seconds,
            speeds,
            hetero_efficiency,
            _state_curves(state, None, throughput),
        )
    )
    running = np.unique(state._workers["job"])
    ids = state._jobs["id"][running].tolist()
    return dict(zip(ids, after[running].tolist()))
