"""A Pollux workload's run: goodput-driven jobs whose applications' profiles
cross to the compiled engine once (``simulate`` hands such a workload here)."""

from __future__ import annotations

import dataclasses
from typing import (
    Any,
    Callable,
    Optional,
    Union,
    get_args,
)

import numpy as np
import pandas as pd

from .. import _core
from ..model import Job, Records, job_columns, server_columns
from ..state import ClusterState
from ..traces.pollux_mapping import (
    aryl_policy_jobs,
    optional_column,
    pollux_policy_jobs,
)
from ..typing import GoodputPolicy
from .config import Cluster, Config
from .core_io import _core_config, _describe_cluster, _result, _servers
from .gpu_types import _mixed, published_speeds, unlisted_gpu_types
from .provenance import Provenance, aryl_version, fingerprint_frame
from .result import Result

#: Allocation policies of goodput-driven (Pollux workload) runs.
GOODPUT_POLICIES = get_args(GoodputPolicy)


def _is_pollux_workload(jobs: Any) -> bool:
    from ..traces.pollux import WORKLOAD_COLUMNS

    return isinstance(jobs, pd.DataFrame) and all(
        c in jobs.columns for c in WORKLOAD_COLUMNS
    )


def _simulate_pollux(
    workload: pd.DataFrame,
    cluster: Union[Cluster, Records],
    policy: str,
    config: Config,
    seed: int,
    progress: Optional[Callable[[float, float], Optional[bool]]],
    label: str,
    history: bool = False,
) -> Result:
    """A Pollux workload's goodput-driven jobs; the applications' tables cross to C++ once."""
    from ..traces.pollux import check_workload, pollux_applications

    if policy not in GOODPUT_POLICIES and policy != "aryl":
        raise ValueError(
            "a Pollux workload runs under policy 'tiresias', 'pollux' or 'aryl', "
            f"got {policy!r}"
        )
    if config.agent is not None and policy != "aryl":
        raise ValueError(f"agent {config.agent!r} needs policy 'aryl', got {policy!r}")
    apps = dict(workload.attrs.get("applications") or {})
    missing = sorted(set(workload["application"]) - set(apps))
    if missing:
        known = pollux_applications()
        if not set(missing) <= set(known):
            raise ValueError(f"no profiles for application(s) {missing}")
        apps.update({a: known[a] for a in missing})
    check_workload(workload, apps)
    names = sorted(set(workload["application"]))
    index = {name: i for i, name in enumerate(names)}
    servers = _servers(cluster)
    config = published_speeds(config, servers)
    unlisted = unlisted_gpu_types(servers, config.gpu_speed, stacklevel=4)
    scale = optional_column(workload, "work_scale", 1.0)
    if policy == "pollux":  # the policy decides replicas; jobs choose their batch
        jobs, batch = pollux_policy_jobs(workload, servers)
    elif policy == "aryl":
        node_gpus = max((s.gpus for s in servers if s.pool == "training"), default=1)
        tuned = config.agent is not None
        jobs, batch = aryl_policy_jobs(workload, apps, node_gpus, scale, tuned)
    else:
        # duration is not used by goodput-driven jobs (their applications decide).
        replicas = workload["num_replicas"].astype(int).tolist()
        batch = workload["batch_size"].astype(float).tolist()
        jobs = [
            Job(str(name), 1, r, r, 1.0, float(t))
            for name, r, t in zip(workload["name"], replicas, workload["time"])
        ]
    ClusterState.from_records(servers, jobs)  # validates ids and records
    raw = _core.simulate(
        server_columns(servers),
        job_columns(jobs),
        [],
        [],
        [],
        _core_config(config, policy, "aryl", seed, history or _mixed(servers)),
        progress,
        applications=[apps[name].core for name in names],
        job_application=[index[a] for a in workload["application"]],
        job_batch_size=batch,
        job_work_scale=scale,
    )
    ids = np.empty(len(jobs), dtype=object)
    ids[:] = [j.id for j in jobs]
    result = _result(
        servers,
        ids,
        np.array([j.submit_time for j in jobs]),
        raw,
        label or policy,
        np.ones(len(jobs), dtype=np.int64),  # one-GPU replicas
        (
            np.array([j.user for j in jobs], dtype=object),
            np.array([j.vc for j in jobs], dtype=object),
        ),
        history,
    )
    result.provenance = Provenance(
        jobs=len(jobs),
        jobs_fingerprint=fingerprint_frame(workload) or "",
        cluster=_describe_cluster(cluster, servers, unlisted),
        policy=policy,
        reclaim="none",
        config=dataclasses.asdict(config),
        seed=int(seed),
        aryl_version=aryl_version(),
    )
    return result
