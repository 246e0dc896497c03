"""A sweep run's cluster: ``Cluster(training_servers, inference_servers)`` from its
counts, or its ``servers`` (a list of ``Server`` records: ``read_servers(FILE)``),
checked, fingerprinted by content for the cache key, and what the run reads of it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Mapping, Sequence, Set, Tuple

from ..engine.config import Cluster
from ..model import Server, as_records


def resolve_cluster(p: Dict[str, Any], point: Mapping[str, Any]) -> None:
    """A run's cluster: ``servers`` as a tuple of ``Server`` records, with the
    server counts theirs (so a table's columns say the cluster), or the counts
    checked against the size limit. A run that gives both, or runs the Pollux rows
    (whose nodes are cut from a cluster of counts) on a list, is a ``ValueError``."""
    if p["servers"] is None:
        Cluster(p["training_servers"], p["inference_servers"])  # its size limit
        return
    servers = server_list(p["servers"])
    counts = [n for n in ("training_servers", "inference_servers") if n in point]
    if counts:
        raise ValueError(
            f"servers gives the whole cluster ({len(servers):,} servers); a run "
            f"cannot also set {' and '.join(counts)}: drop {' and '.join(counts)} "
            "(--set/--grid), or the server list (--servers)"
        )
    if p["goodput_jobs"]:
        raise ValueError(
            "goodput_jobs (the Pollux rows) runs on a cluster of server counts, cut "
            "into 4-GPU nodes; it does not take a server list (servers)"
        )
    p["servers"] = servers
    p["training_servers"] = sum(s.pool == "training" for s in servers)
    p["inference_servers"] = len(servers) - p["training_servers"]


def server_list(value: Any) -> Tuple[Server, ...]:
    """A run's ``servers`` as a tuple of ``Server`` records (records, dicts or a
    DataFrame, as ``simulate`` takes its cluster), checked: at least one, ids unique."""
    if isinstance(value, tuple) and all(type(s) is Server for s in value):
        servers: Tuple[Server, ...] = value  # resolved before
    else:
        try:
            servers = tuple(as_records(value, Server, "server"))
        except TypeError:
            raise ValueError(
                "servers: give a list of aryl.Server records (e.g. "
                f"aryl.traces.read_servers(FILE)), got {type(value).__name__}"
            ) from None
    if not servers:
        raise ValueError("servers: the server list is empty")
    seen: Set[Any] = set()
    for s in servers:
        if s.id in seen:
            raise ValueError(f"servers: server id {s.id!r} is given twice")
        seen.add(s.id)
    return servers


def servers_fingerprint(servers: Sequence[Server]) -> str:
    """16 hex digits of SHA-256 over each server's id (with its type), pool, GPUs
    and GPU type, in order: a sweep run's cache key covers its server list's
    content (whether a server is on loan is not the list's: the simulator lends)."""
    text = json.dumps(
        [[repr(s.id), s.pool, s.gpus, s.gpu_type] for s in servers], sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_cluster(p: Mapping[str, Any]) -> Any:
    """A resolved run's cluster: its server list, or its ``Cluster`` of counts."""
    if p["servers"] is not None:
        return list(p["servers"])
    return Cluster(p["training_servers"], p["inference_servers"])


def training_gpus(cluster: Any) -> int:
    """The GPUs of a cluster's training servers (a ``Cluster`` or a server list)."""
    if isinstance(cluster, Cluster):
        return cluster.training_servers * cluster.gpus_per_server
    return sum(s.gpus for s in cluster if s.pool == "training")


def is_server_list(value: Any) -> bool:
    """Whether a sweep value is a list of ``Server`` records (``servers``)."""
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(s, Server) for s in value)
    )


def gpu_types(run: Mapping[str, Any]) -> Set[str]:
    """The GPU types of a resolved run's servers."""
    if run["servers"] is not None:
        return {s.gpu_type for s in run["servers"]}
    cluster = Cluster(run["training_servers"], run["inference_servers"])
    types = {cluster.training_gpu} if cluster.training_servers else set()
    return types | ({cluster.inference_gpu} if cluster.inference_servers else set())
