"""A state's columns for a policy: NumPy arrays, built once per state, read-only.

``ClusterState.columns()`` returns a ``StateColumns``: each job's fields and where it
stands (workers, GPUs held, work left, attained service, time waited, preemptions),
the queue in submit order, and each server's free GPUs and loan, as arrays in the
state's row order (``state.job_ids``, ``state.server_ids``). A policy reads them
instead of building a record per job and server each epoch.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping

import numpy as np

from ..model import POOLS

#: The service columns a state keeps per job (attained GPU-s, waited s, preemptions).
SERVICE = ("attained", "waited", "preemptions")


@dataclasses.dataclass(frozen=True)
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


def state_columns(
    servers: Mapping[str, np.ndarray],
    jobs: Mapping[str, np.ndarray],
    workers: Mapping[str, np.ndarray],
    remaining: np.ndarray,
    service: Mapping[str, np.ndarray],
) -> StateColumns:
    """The columns of a state's tables (``ClusterState``'s ``_servers``, ``_jobs``,
    ``_workers``), each job's ``remaining`` fraction and ``service`` (``SERVICE``)."""
    n_jobs, n_servers = len(jobs["id"]), len(servers["id"])
    held = np.bincount(workers["job"], minlength=n_jobs)
    per_worker = jobs["gpus_per_worker"]
    used = np.bincount(
        workers["server"], weights=per_worker[workers["job"]], minlength=n_servers
    ).astype(np.int64)
    pools = np.asarray(POOLS, dtype=object)[servers["pool"]]
    usable = (pools == "training") | servers["on_loan"]
    queued = np.flatnonzero(held == 0)
    order = np.argsort(jobs["submit_time"][queued], kind="stable")
    columns: Dict[str, Any] = {
        "job_id": jobs["id"],
        **{
            name: jobs[name]
            for name in (
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
        },
        "workers": held,
        "gpus": held * per_worker,
        "running": held > 0,
        "remaining": remaining,
        **{name: service[name] for name in SERVICE},
        "queue": queued[order],
        "server_id": servers["id"],
        "pool": pools,
        "server_gpus": servers["gpus"],
        "server_gpu_type": servers["gpu_type"],
        "on_loan": servers["on_loan"],
        "usable": usable,
        "free_gpus": np.where(usable, servers["gpus"] - used, 0),
        "loaned": np.flatnonzero(servers["on_loan"]),
    }
    for name, array in columns.items():
        view = np.asarray(array).view()  # the state's own arrays, not copied
        view.flags.writeable = False
        columns[name] = view
    return StateColumns(**columns)
