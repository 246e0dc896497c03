"""What crosses into the compiled engine and back: a run's servers, throughput
curves and ``Config`` as the core takes them, an inference load as its columns, and
the engine's raw output as a ``Result``."""

from __future__ import annotations

import dataclasses
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np
import pandas as pd

from ..jobtable import JobTable
from ..model import Records, Server, as_records
from .config import Cluster, Config
from .gpu_types import job_gpu_types
from .history import history_frame
from .result import TIMELINE_COLUMNS, Result

_NO_WORKERS: Dict[str, List[Any]] = {"job": [], "server": [], "flexible": []}


def _servers(cluster: Union[Cluster, Records]) -> List[Server]:
    """The cluster's servers, none on loan (the simulator lends them)."""
    servers = (
        cluster.servers()
        if isinstance(cluster, Cluster)
        else as_records(cluster, Server, "server")
    )
    return [dataclasses.replace(s, on_loan=False) for s in servers]


def _curves(
    table: JobTable, throughput: Optional[Mapping[Any, Sequence[float]]]
) -> List[List[float]]:
    """Per-job throughput curves in the table's order (empty list: none given)."""
    if not throughput:
        return []
    index = {id_: i for i, id_ in enumerate(table.ids.tolist())}
    curves: List[List[float]] = [[] for _ in range(len(table))]
    for job_id, curve in throughput.items():
        if job_id not in index:
            raise ValueError(f"throughput: unknown job {job_id!r}")
        curves[index[job_id]] = [float(v) for v in curve]
    return curves


def _describe_cluster(
    cluster: Union[Cluster, Records],
    servers: List[Server],
    unlisted: Optional[Dict[str, int]] = None,
) -> Dict[str, Any]:
    """The cluster as counts (a ``Cluster``'s fields, or counted from the servers),
    and, when some of its servers' GPU types have no speed in ``gpu_speed``,
    ``unlisted_gpu_types``: their server counts by type (they ran at
    ``UNLISTED_GPU_SPEED``)."""
    out: Dict[str, Any] = {}
    if isinstance(cluster, Cluster):
        out = dataclasses.asdict(cluster)
    else:
        for pool in ("training", "inference"):
            mine = [s for s in servers if s.pool == pool]
            out[f"{pool}_servers"] = len(mine)
            out[f"{pool}_gpus"] = sum(s.gpus for s in mine)
            out[f"{pool}_gpu"] = "+".join(sorted({s.gpu_type for s in mine}))
    if unlisted:
        out["unlisted_gpu_types"] = dict(unlisted)
    return out


def _config(config: Union[Config, Mapping[str, Any], None]) -> Config:
    if config is None:
        return Config()
    if isinstance(config, Config):
        return config
    names = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(config) - names)
    if unknown:
        raise ValueError(
            f"unknown config field(s) {unknown}; expected some of {sorted(names)}"
        )
    return Config(**config)


def _core_config(
    config: Config, policy: str, reclaim: str, seed: int, history: bool = False
) -> Dict[str, Any]:
    return {
        "policy": policy,
        "reclaim": reclaim,
        "placement": config.placement,
        "backfill": bool(config.backfill),
        "start_on_loan": bool(config.start_on_loan),
        "scaling": config.scaling,
        "schedule_interval": float(config.schedule_interval),
        "loan_interval": float(config.loan_interval),
        "restart_overhead": float(config.restart_overhead),
        "start_overhead": float(config.start_overhead),
        "headroom": float(config.headroom),
        "lend_hold": float(config.lend_hold),
        "hetero_efficiency": float(config.hetero_efficiency),
        "gpu_speed": {str(k): float(v) for k, v in config.gpu_speed.items()},
        "horizon": float(config.horizon),
        "seed": int(seed),
        "audit": bool(config.audit),
        "reallocation_overhead": float(config.reallocation_overhead),
        "tiresias_threshold": float(config.tiresias_threshold),
        "pollux_population": int(config.pollux_population),
        "pollux_generations": int(config.pollux_generations),
        "tuned": config.agent == "pollux",
        "history": history,
    }


def _load(inference_load: Any) -> Tuple[List[float], List[float]]:
    """(times, loads) from a DataFrame (time_s/time and load columns) or pairs."""
    if inference_load is None:
        return [], []
    if isinstance(inference_load, pd.DataFrame):
        time_col = "time_s" if "time_s" in inference_load else "time"
        if time_col not in inference_load or "load" not in inference_load:
            raise ValueError(
                "inference_load needs columns 'time_s' (or 'time') and 'load'"
            )
        rows = inference_load[[time_col, "load"]].to_numpy(dtype=float)
    else:
        rows = np.asarray(inference_load, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != 2:
            raise ValueError(
                f"inference_load must be (time_s, load) pairs, got shape {rows.shape}"
            )
    if np.isnan(rows).any():
        raise ValueError(
            f"inference_load row {int(np.isnan(rows).any(axis=1).argmax())} has NaN"
        )
    return rows[:, 0].tolist(), rows[:, 1].tolist()


def _load_integral(times: List[float], loads: List[float], end: float) -> float:
    """Integral over [0, end] of the load step function the engine uses (before the first
    point, the first value; then each value until the next point)."""
    if not times or end <= 0:
        return 0.0
    t = np.clip(np.asarray(times, dtype=float), 0.0, end)
    edges = np.r_[0.0, t[1:], end]
    return float(np.sum(np.asarray(loads, dtype=float) * np.diff(edges)))


def _result(
    servers: List[Server],
    ids: np.ndarray,
    submit: np.ndarray,
    raw: Dict[str, Any],
    label: str,
    gpus_per_worker: np.ndarray,
    groups: Tuple[np.ndarray, np.ndarray],
    history: bool = True,
) -> Result:
    """The run's ``Result`` from the engine's columns; ``history``: keep the
    allocation history (recorded also, and then dropped, to say each job's GPU types
    on a cluster whose pool mixes types: ``job_gpu_types``)."""
    start, finish = raw["start_time"], raw["finish_time"]
    on_training, on_inference = (
        raw["ran_on_training"].astype(bool),
        raw["ran_on_inference"].astype(bool),
    )
    types = job_gpu_types(servers, on_training, on_inference, raw.get("history"))
    frame = pd.DataFrame(
        {
            "id": ids.tolist(),
            "submit_time": submit,
            "start_time": start,
            "finish_time": finish,
            "queuing_time": start - submit,
            "jct": finish - submit,
            "preemptions": raw["preemptions"],
            "scaling_ops": raw["scaling_ops"],
            "work_lost": raw["work_lost"],
            "ran_on_training": on_training,
            "ran_on_inference": on_inference,
            "ran_mixed": raw["ran_mixed"].astype(bool),
            "gpu_types": types,
            "user": pd.Series(groups[0], dtype=object),  # None: not recorded
            "vc": pd.Series(groups[1], dtype=object),
        }
    )
    if "rejected" in raw:  # a policy of your own (hooks): its admit's answers
        frame["rejected"] = raw.pop("rejected").astype(bool)
    timeline = pd.DataFrame({k: raw[k] for k in TIMELINE_COLUMNS})
    totals = {k: v for k, v in raw.items() if np.isscalar(v)}
    inference = [s.gpus for s in servers if s.pool == "inference"]
    capacity = {
        "training_gpus": sum(s.gpus for s in servers if s.pool == "training"),
        "inference_gpus": sum(inference),
        "max_inference_server_gpus": max(inference, default=0),
    }
    result = Result(frame, timeline, totals, capacity, label, list(raw["violations"]))
    result.engine_counters = {
        k: int(v) for k, v in raw.get("engine_counters", {}).items()
    }
    if "history" in raw and history:
        result.allocations = history_frame(
            raw["history"], ids, gpus_per_worker, servers
        )
    return result
