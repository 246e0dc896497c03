"""A state's columns for a policy: NumPy arrays, built once per state, read-only.

``ClusterState.columns()`` returns a ``StateColumns``: each job's fields and where it
stands (workers, GPUs held, work left, attained service, time waited, preemptions),
the queue in submit order, and each server's free GPUs and loan, as arrays in the
state's row order (``state.job_ids``, ``state.server_ids``). A policy reads them
instead of building a record per job and server each epoch.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping

import numpy as np

from ..model import POOLS

#: The service columns a state keeps per job (attained GPU-s, waited s, preemptions).
SERVICE = ("attained", "waited", "preemptions")


#: The job fields a ``StateColumns`` shows as they are (its other columns are derived).
JOB_FIELDS = (
    "submit_time",
    "gpus_per_worker",
    "min_workers",
    "max_workers",
    "reference_workers",
    "estimated_duration",
    "gpu_type",
    "hetero",
    "checkpoint",
)


#: No columns (the default of ``StateColumns``' ``known``).
_NOTHING: Mapping[str, np.ndarray] = {}


class StateColumns:
    """A state's jobs and servers as read-only NumPy arrays (``ClusterState.columns``).

    Jobs, in the state's row order (running jobs first, then queued ones, in the
    simulator's view): ``job_id``, ``submit_time``, ``gpus_per_worker``,
    ``min_workers``, ``max_workers``, ``reference_workers``, ``estimated_duration``,
    ``gpu_type`` (``None``: any type), ``hetero``, ``checkpoint``; ``workers`` and
    ``gpus`` (held now), ``running`` (has workers), ``remaining`` (fraction of its
    work left, 1 if none done), ``attained`` (GPU-seconds held so far: its attained
    service), ``waited`` (seconds without workers since it was submitted, or since
    it was added to a live state) and ``preemptions``. ``queue``: the rows of the
    queued jobs (no workers) in submit order.

    Servers, in row order: ``server_id``, ``pool`` (``"training"`` or
    ``"inference"``), ``gpus``, ``gpu_type``, ``on_loan``, ``usable`` (training, or
    inference on loan: where training workers may run) and ``free_gpus`` (GPUs not
    held by workers on usable servers; 0 on the others). ``loaned``: the rows of
    the servers on loan.

    Each column is made on first access and kept (a policy that reads a few of
    them, every epoch, pays for those only); the object cannot be changed, nor can
    its arrays (read-only views of the state's own, or the state's own when they are
    read-only already, as the simulator's are: never copies).
    """

    job_id: np.ndarray
    submit_time: np.ndarray
    gpus_per_worker: np.ndarray
    min_workers: np.ndarray
    max_workers: np.ndarray
    reference_workers: np.ndarray
    estimated_duration: np.ndarray
    gpu_type: np.ndarray
    hetero: np.ndarray
    checkpoint: np.ndarray
    workers: np.ndarray
    gpus: np.ndarray
    running: np.ndarray
    remaining: np.ndarray
    attained: np.ndarray
    waited: np.ndarray
    preemptions: np.ndarray
    queue: np.ndarray
    server_id: np.ndarray
    pool: np.ndarray
    server_gpus: np.ndarray
    server_gpu_type: np.ndarray
    on_loan: np.ndarray
    usable: np.ndarray
    free_gpus: np.ndarray
    loaned: np.ndarray

    def __init__(
        self,
        servers: Mapping[str, np.ndarray],
        jobs: Mapping[str, np.ndarray],
        workers: Mapping[str, np.ndarray],
        remaining: np.ndarray,
        service: Mapping[str, np.ndarray],
        known: Mapping[str, np.ndarray] = _NOTHING,
    ) -> None:
        """The columns of a state's tables (``ClusterState``'s ``_servers``,
        ``_jobs``, ``_workers``), each job's ``remaining`` fraction and ``service``
        (``SERVICE``), taken as they are now (tables are never changed in place).
        ``known``: columns the caller has worked out already (``workers`` and
        ``queue`` of the simulator's view, made by the engine), taken as they are."""
        given = {"remaining": remaining, **{n: service[n] for n in SERVICE}, **known}
        object.__setattr__(self, "_tables", (servers, jobs, workers, given))

    def __getattr__(self, name: str) -> np.ndarray:
        """Make column ``name`` (called only when it is not made yet)."""
        servers, jobs, workers, given = self.__dict__["_tables"]
        if name in given:
            column = given[name]
        elif name in JOB_FIELDS:  # the most read: without a builder's call
            column = jobs[name]
        elif name in _BUILDERS:
            column = _BUILDERS[name](self, servers, jobs, workers)
        else:
            raise AttributeError(f"StateColumns has no column {name!r}")
        self.__dict__[name] = column = _read_only(column)
        return column

    def __setattr__(self, name: str, value: Any) -> None:
        """Refused: the columns are read-only."""
        raise AttributeError(f"StateColumns is read-only: cannot set {name!r}")

    def __dir__(self) -> List[str]:
        """The columns (made or not) beside the methods."""
        return sorted({*super().__dir__(), *self.__annotations__})

    def __repr__(self) -> str:
        servers, jobs, _, _ = self.__dict__["_tables"]
        return f"StateColumns({len(jobs['id'])} jobs, {len(servers['id'])} servers)"


#: The pool names by code (``ClusterState`` keeps pools as codes into ``POOLS``).
_POOLS = np.asarray(POOLS, dtype=object)


def _read_only(array: Any) -> np.ndarray:
    """A read-only view of ``array`` (the array itself is not copied); ``array``
    itself if it is read-only already (the simulator's columns, a view's own)."""
    if type(array) is np.ndarray and not array.flags.writeable:
        return array
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


Builder = Callable[
    [StateColumns, Mapping[str, np.ndarray], Mapping[str, np.ndarray], Any],
    np.ndarray,
]


def _free_gpus(c: StateColumns, servers: Any, jobs: Any, workers: Any) -> np.ndarray:
    used = np.bincount(
        workers["server"],
        weights=jobs["gpus_per_worker"][workers["job"]],
        minlength=len(servers["id"]),
    ).astype(np.int64)
    return np.where(c.usable, servers["gpus"] - used, 0)


def _queue(c: StateColumns, servers: Any, jobs: Any, workers: Any) -> np.ndarray:
    queued = np.flatnonzero(c.workers == 0)
    return queued[np.argsort(jobs["submit_time"][queued], kind="stable")]


#: How each column is made from the state's tables (and the columns made before).
_BUILDERS: Dict[str, Builder] = {
    "job_id": lambda c, servers, jobs, workers: jobs["id"],
    "workers": lambda c, servers, jobs, workers: np.bincount(
        workers["job"], minlength=len(jobs["id"])
    ),
    "gpus": lambda c, servers, jobs, workers: c.workers * jobs["gpus_per_worker"],
    "running": lambda c, servers, jobs, workers: c.workers > 0,
    "queue": _queue,
    "server_id": lambda c, servers, jobs, workers: servers["id"],
    "pool": lambda c, servers, jobs, workers: _POOLS[servers["pool"]],
    "server_gpus": lambda c, servers, jobs, workers: servers["gpus"],
    "server_gpu_type": lambda c, servers, jobs, workers: servers["gpu_type"],
    "on_loan": lambda c, servers, jobs, workers: servers["on_loan"],
    "usable": lambda c, servers, jobs, workers: (
        (servers["pool"] == 0) | servers["on_loan"]
    ),
    "free_gpus": _free_gpus,
    "loaned": lambda c, servers, jobs, workers: np.flatnonzero(servers["on_loan"]),
}
