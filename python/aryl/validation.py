"""Checks at the boundary of the public API: arguments that are not records.

Records (servers, jobs, workers) are checked by ``model`` and the C++ core; this
module checks the other arguments — seeds, counts, simulator settings — and
refuses up front a simulation whose time values would make unbounded work.
Wrong types raise ``TypeError``, wrong values ``ValueError``, except a flag that is
not a bool: a ``ValueError`` at every door, as a record's (``flag``); messages name
the argument.

Limits (documented in the README, "Limits"):

- a scheduling or loan interval is at least ``MIN_INTERVAL_S`` (1 ms), finite;
- a simulation runs at most 5 million scheduling epochs (and as many loan
  decisions), about 9.5 years of simulated time at the default 60 s. The count is
  bounded below by each job's submit time plus its shortest possible running time;
  a run that must pass it is refused before it starts (by the engine itself,
  ``aryl._core.simulate``, so the raw core is guarded too);
- a relative GPU speed lies in ``[MIN_GPU_SPEED, MAX_GPU_SPEED]`` (1/1000 to 1000);
- seeds are integers in ``[0, 2**64)``.
"""

from __future__ import annotations

import difflib
import math
import numbers
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Union, get_args

import numpy as np

from . import _core
from .defaults import (
    DEFAULT_GPU_TYPE,
    KNOWN_GPU_TYPES,
    MAX_ARRIVAL_SCALE,
    MAX_GPU_SPEED,
    MIN_ARRIVAL_SCALE,
    MIN_GPU_SPEED,
    MIN_HETERO_EFFICIENCY,
    POLICY_ALIASES,
)
from .model import _flag
from .typing import JobAgent, Scaling

#: Throughput scalings of jobs without their own curve.
SCALINGS = get_args(Scaling)
MIN_INTERVAL_S = 1e-3
MAX_SEED = 2**64 - 1
#: The most seeds and windows one replicated comparison takes (API and CLI): beyond
#: them its runs would not finish, and their task list would not fit in memory.
MAX_SEEDS = 10_000
MAX_WINDOWS = 1000
MAX_INT = 2**31 - 1


def integer(value: Any, what: str, low: int = 0, high: int = MAX_INT) -> int:
    """``value`` as an int in ``[low, high]``: a Python or NumPy integer, not a bool."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{what} must be in [{low}, {high}], got {number}")
    return number


def seed(value: Any, what: str = "seed") -> int:
    """A seed: an integer in ``[0, 2**64)``."""
    return integer(value, what, 0, MAX_SEED)


def real(
    value: Any,
    what: str,
    low: float = -math.inf,
    high: float = math.inf,
    finite: bool = True,
) -> float:
    """``value`` as a float in ``[low, high]`` (finite unless ``finite=False``; never NaN)."""
    if (
        type(value) is float
        and low <= value <= high
        and (not finite or value - value == 0)
    ):
        return value  # the common case, checked without the numbers.Real look-up
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int (or Fraction) beyond the float range, e.g. 2**1024
        number = -math.inf if str(value).startswith("-") else math.inf
    if (
        math.isnan(number)
        or (finite and math.isinf(number))
        or not low <= number <= high
    ):
        bounds = f"in [{low:g}, {high:g}]" if finite else f">= {low:g}"
        raise ValueError(
            f"{what} must be a {'finite ' if finite else ''}number {bounds}, got {number!r}"
        )
    return number


def flag(value: Any, what: str) -> bool:
    """A bool (Python or NumPy), nothing else: ``'no'`` is not False. A
    ``ValueError`` otherwise, as a record's flag (``model._flag``, the one check)."""
    return _flag(value, what, typed=False)


def text(value: Any, what: str, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if not isinstance(value, str):
        raise TypeError(
            f"{what} must be a str, one of {', '.join(choices)}; got {value!r}"
        )
    if value not in choices:
        raise ValueError(
            f"unknown {what} {value!r}{did_you_mean(value, choices)}; expected one of "
            f"{', '.join(choices)}"
        )
    return value


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'T4'?"`` for a mistyped name, else ``""``.

    A policy's other name among the choices comes first (``POLICY_ALIASES``: ``las``
    is answered "did you mean 'tiresias' (least attained service)?"); then a choice
    that differs only in case (``scf`` for ``SCF``, ``T4`` for ``t4``), then the one
    choice that starts with ``name`` (``--training-servers`` for ``--train``), else
    the closest by ``difflib`` (ratio >= 0.6).
    """
    choices = [str(c) for c in choices]
    key = "-".join(name.strip().lower().replace("_", " ").split())
    if key in POLICY_ALIASES and POLICY_ALIASES[key][0] in choices:
        policy, meaning = POLICY_ALIASES[key]
        return f"; did you mean {policy!r} ({meaning})?"
    same = [c for c in choices if c.lower() == name.lower()]
    starting = [c for c in choices if c.lower().startswith(name.lower())]
    close = (
        same
        or starting[:1] * (len(starting) == 1)
        or difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    )
    return f"; did you mean {close[0]!r}?" if close else ""


def gpu_speeds(value: Any) -> Dict[str, float]:
    """``Config.gpu_speed``: a mapping of GPU type (str) to a relative speed."""
    if not isinstance(value, Mapping):
        raise TypeError(
            f"gpu_speed must be a dict of GPU type to relative speed, got {value!r}"
        )
    out = {}
    for name, speed in value.items():
        if not isinstance(name, str):
            raise TypeError(f"gpu_speed: GPU type must be a str, got {name!r}")
        out[name] = real(speed, f"gpu_speed[{name!r}]", MIN_GPU_SPEED, MAX_GPU_SPEED)
    return out


def run_gpu_speeds(value: Any, types: Iterable[str]) -> Dict[str, float]:
    """``gpu_speed`` checked against the GPU types of a run (its servers' and jobs').

    A name the run has is taken, and so are the types of aryl's own pools
    (``DEFAULT_GPU_TYPE``: V100, T4), which one set of speeds names across runs with
    and without inference servers. Another well-known GPU type the run does not have
    (``KNOWN_GPU_TYPES``, e.g. ``A100``) can take no effect: a ``UserWarning`` names it.
    Any other name is a ``ValueError`` with a "did you mean" (``t4`` for ``T4``): names
    are case-sensitive, as the types in a trace are.
    """
    speeds = gpu_speeds(value)
    have = sorted({str(t) for t in types if t})
    for name in speeds:
        if name in have or name in DEFAULT_GPU_TYPE.values():
            continue
        if name not in KNOWN_GPU_TYPES:
            raise ValueError(
                f"gpu_speed: unknown GPU type {name!r}"
                f"{did_you_mean(name, have + list(KNOWN_GPU_TYPES))} (this run's GPU "
                f"types: {', '.join(have) or 'none'})"
            )
        warnings.warn(
            f"gpu_speed[{name!r}] has no effect: no server or job of this run has GPU "
            f"type {name} (its types: {', '.join(have) or 'none'})",
            UserWarning,
            stacklevel=3,
        )
    return speeds


def hetero_efficiency(value: Any) -> float:
    """A throughput factor of jobs spanning GPU types: finite, in ``[1e-9, 1]``."""
    return real(value, "hetero_efficiency", MIN_HETERO_EFFICIENCY, 1.0)


def check_config(config: Any, placements: Sequence[str]) -> None:
    """Every field of a ``sim.Config``, by type and range (see the module's limits)."""
    text(config.placement, "placement", placements)
    text(config.scaling, "scaling", SCALINGS)
    for name in ("backfill", "loaning", "elasticity", "audit", "start_on_loan"):
        flag(getattr(config, name), name)
    for name in ("schedule_interval", "loan_interval"):
        real(getattr(config, name), name, MIN_INTERVAL_S)
    real(config.restart_overhead, "restart_overhead", 0.0)
    real(config.start_overhead, "start_overhead", 0.0)
    real(config.reallocation_overhead, "reallocation_overhead", 0.0)
    real(config.headroom, "headroom", 0.0)
    # inf: never lend / never demote
    real(config.lend_hold, "lend_hold", 0.0, finite=False)
    real(config.tiresias_threshold, "tiresias_threshold", 0.0, finite=False)
    hetero_efficiency(config.hetero_efficiency)
    gpu_speeds(config.gpu_speed)
    real(config.arrival_scale, "arrival_scale", MIN_ARRIVAL_SCALE, MAX_ARRIVAL_SCALE)
    real(config.horizon, "horizon", 0.0, finite=False)
    integer(config.pollux_population, "pollux_population", 2, 1_000_000)
    # 0 generations would leave the Pollux policy inert: no job ever scheduled.
    integer(config.pollux_generations, "pollux_generations", 1, 1_000_000)
    if config.agent is not None:
        text(config.agent, "agent", get_args(JobAgent))
    error = config.prediction_error
    if error is not None:
        if (
            isinstance(error, (str, bytes))
            or not isinstance(error, Sequence)
            or len(error) != 2
        ):
            raise TypeError(
                f"prediction_error must be None or a (fraction, max_error) pair, got {error!r}"
            )
        real(error[0], "prediction_error fraction", 0.0, 1.0)
        real(error[1], "prediction_error max_error", 0.0, 1.0)


def check_cluster_counts(cluster: Any) -> None:
    """A ``sim.Cluster``'s counts: servers >= 0, GPUs per server in [1, 65,536], types
    as str, and at most ``_core.max_cluster_gpus`` GPUs in all, checked from the counts
    before any server record exists."""
    integer(cluster.training_servers, "training_servers")
    integer(cluster.inference_servers, "inference_servers")
    integer(cluster.gpus_per_server, "gpus_per_server", 1, _core.max_server_gpus)
    for name in ("training_gpu", "inference_gpu"):
        if not isinstance(getattr(cluster, name), str):
            raise TypeError(f"{name} must be a str, got {getattr(cluster, name)!r}")
    servers = cluster.training_servers + cluster.inference_servers
    if servers * cluster.gpus_per_server > _core.max_cluster_gpus:
        raise ValueError(
            f"the cluster would have {servers * cluster.gpus_per_server:,} GPUs; the "
            f"limit is {_core.max_cluster_gpus:,} ({cluster.training_servers:,} + "
            f"{cluster.inference_servers:,} servers of {cluster.gpus_per_server} GPUs)"
        )


def check_progress(progress: Any) -> None:
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {progress!r}")


def check_durations(jobs: Any) -> None:
    """Refuse zero-length jobs: the engine models progress as a fraction of work.

    ``jobs``: a ``JobTable`` or anything ``JobTable.of`` takes."""
    from .jobtable import JobTable

    table = JobTable.of(jobs)
    bad = np.flatnonzero(table.column("duration") <= 0.0)
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"job {table.ids[i]!r}: duration must be > 0 to simulate, "
            f"got {float(table.column('duration')[i])!r}"
        )


def unplaceable(
    jobs: Any,
    demands: Sequence[int],
    servers: Sequence[Any],
    lendable: Union[None, int, Sequence[int]] = None,
    core: Any = None,
) -> Dict[Any, str]:
    """Jobs whose base demand could not be placed even on an empty cluster: id -> reason.

    ``jobs``: ``Job`` records or a ``JobTable``; ``demands[i]`` is job i's base demand
    in workers (the kernel's rule, ``_core.base_demands``). The room is the core's
    rule (``_core.job_rooms``, the one the simulator refuses runs by): usable servers
    are the training servers and the inference servers on loan, or, with
    ``lendable`` (one count, or one per job), the best ``lendable`` inference servers
    of each GPU type. A job that requires a GPU type uses only servers of that type;
    a job that is not ``hetero`` must fit on servers of one type. The test errs
    towards placeable: a job reported here can never start; one not reported may
    still wait. ``core``: the ``_core.ClusterState`` of ``servers`` and ``jobs``, if
    the caller has it.
    """
    from .jobtable import JobTable
    from .model import server_columns

    table = JobTable.of(jobs)
    n = len(table)
    if n == 0:
        return {}
    if core is None:
        no_workers: Dict[str, List[Any]] = {"job": [], "server": [], "flexible": []}
        core = _core.ClusterState(
            server_columns(list(servers)), table.core_columns(), no_workers
        )
    lend: List[int] = []
    if lendable is not None:
        counts = [lendable] * n if isinstance(lendable, int) else list(lendable)
        lend = [int(c) for c in counts]
    rooms = np.asarray(_core.job_rooms(core, lend), dtype=np.int64)
    return reasons(
        table.ids,
        table.column("gpus_per_worker"),
        table.column("hetero"),
        np.asarray(demands, dtype=np.int64),
        rooms,
    )


def reasons(
    ids: np.ndarray,
    gpus_per_worker: np.ndarray,
    hetero: np.ndarray,
    demands: np.ndarray,
    rooms: np.ndarray,
) -> Dict[Any, str]:
    """id -> why, for the jobs whose base demand exceeds their room (by row)."""
    out = {}
    for i in np.flatnonzero(rooms < demands).tolist():
        kind = "" if hetero[i] else " of one GPU type"
        out[ids[i]] = (
            f"needs {demands[i]} workers of {gpus_per_worker[i]} GPUs but the usable "
            f"servers{kind} hold at most {rooms[i]}"
        )
    return out


def check_can_run(
    servers: Sequence[Any],
    jobs: Any,
    core: Any,
    policy: str,
    load_time: Sequence[float],
    load: Sequence[float],
    headroom: float,
) -> None:
    """Refuse a simulation with a job that can never start, and warn of the jobs
    that will wait for ever.

    ``jobs`` is a ``JobTable``, ``core`` the ``_core.ClusterState`` of ``servers`` and
    ``jobs``. A job that fits nowhere even with every inference server lent is
    refused (as the engine refuses it). A job that fits only with more inference
    servers lent than the load series lends at most from its submission on (a T4
    job on a cluster whose T4s are all inference servers, with no load) is not: it
    would run when they are lent, and waits, unfinished; a ``RuntimeWarning``
    counts such jobs up front.
    """

    inference = sum(s.pool == "inference" for s in servers)
    lendable = [0] * len(jobs)
    if len(load) and inference:
        # The simulator's lending rule, from the core (one home).
        loanable = np.asarray(
            _core.spare_servers(list(load), inference, headroom), dtype=np.int64
        )
        later = np.maximum.accumulate(loanable[::-1])[
            ::-1
        ]  # the most lent from row i on
        rows = (
            np.searchsorted(
                np.asarray(load_time, dtype=float),
                jobs.column("submit_time"),
                side="right",
            )
            - 1
        )
        lendable = later[np.clip(rows, 0, None)].tolist()
    demands = _core.base_demands(core, policy)
    for job_id, reason in unplaceable(jobs, demands, servers, inference, core).items():
        raise ValueError(
            f"job {job_id!r} can never run: it {reason}, even with every inference "
            "server lent"
        )
    waiting = unplaceable(jobs, demands, servers, lendable, core)
    if waiting:
        _warn_waiting(list(waiting))


def _warn_waiting(ids: List[Any]) -> None:
    """Jobs that fit only with inference servers the load series never lends them
    (after their submission) are not refused: they would run on those servers when
    lent, and wait for ever here, left unfinished (``jobs_unfinished``). One warning
    counts them."""
    shown = ", ".join(repr(i) for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
    warnings.warn(
        f"{len(ids):,} job(s) ({shown}) fit only with inference servers lent (their "
        "GPU type, or their size, needs the inference pool), and this run never lends "
        "them enough (no load series, loaning off, or a load that never spares "
        "enough after their submission): they wait, left unfinished (the "
        "'unfinished' column, jobs_unfinished)",
        RuntimeWarning,
        stacklevel=4,
    )
