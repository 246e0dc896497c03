"""The parsed options (an ``argparse.Namespace``) as the values the layers below take.

Only the command functions (``commands``, ``replicated``) hold the ``Namespace``; they
hand ``inputs`` and ``output`` plain values through these.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..policy import load_policy, policy_name
from .console import Console
from .inputs import TraceFiles, cluster_of, config_fields, servers_of

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from ..jobtable import JobTable


def console_of(args: argparse.Namespace) -> Console:
    """``--quiet`` and ``--format``."""
    return Console(bool(args.quiet), args.format)


def trace_files(args: argparse.Namespace) -> TraceFiles:
    """JOBS, ``--load``, ``--trace-format`` and ``--drop-invalid``."""
    return TraceFiles(args.jobs, args.load, args.trace_format, args.drop_invalid)


def config_of(args: argparse.Namespace) -> Dict[str, Any]:
    """The ``Config`` fields ``--headroom``, ``--lend-hold``, ``--gpu-speed``,
    ``--arrival-scale`` and ``--start-on-loan`` set."""
    return config_fields(
        args.headroom,
        args.lend_hold,
        args.gpu_speed,
        args.arrival_scale,
        args.start_on_loan,
    )


def cluster(args: argparse.Namespace, jobs: JobTable) -> Any:
    """The cluster of ``--servers`` (its servers: a list of ``aryl.Server``), or of
    ``--training-servers`` and ``--inference-servers``, ``auto`` sized on ``jobs`` at
    ``--utilisation`` (a ``sim.Cluster``)."""
    given = file_servers(args)
    if given is not None:
        if getattr(args, "pollux_rows", False):  # nodes cut from a cluster of counts
            raise ValueError(
                "--pollux-rows runs the Pollux rows on the training servers cut into "
                "4-GPU nodes, a cluster of server counts (--training-servers); it does "
                "not take --servers"
            )
        return given
    return cluster_of(
        args.training_servers,
        args.inference_servers,
        jobs,
        args.utilisation,
        config_of(args),
        console_of(args),
    )


def file_servers(args: argparse.Namespace) -> Optional[List[Any]]:
    """The servers of ``--servers`` (``inputs.servers_of``, said in one line), or
    None without it (then ``--inference-types`` is refused)."""
    types = getattr(args, "inference_types", None)
    if getattr(args, "servers", None) is None:
        if types is not None:
            raise ValueError(
                "--inference-types chooses the pools of a node list given as --servers"
            )
        return None
    return servers_of(args.servers, types, config_of(args), console_of(args))


def sweep_cluster(args: argparse.Namespace) -> Dict[str, Any]:
    """``aryl sweep``'s cluster as sweep parameters: ``servers``, the list of
    ``--servers``, or the server counts (``auto`` sized later: ``inputs.size_auto``)."""
    given = file_servers(args)
    if given is not None:
        return {"servers": given}
    return {
        "training_servers": args.training_servers,
        "inference_servers": args.inference_servers,
    }


def own_rows(args: argparse.Namespace) -> Dict[str, str]:
    """``compare --add-row`` specs by their rows' names (the policies' names)."""
    rows: Dict[str, str] = {}
    for spec in args.add_row:
        name = policy_name(load_policy(spec))
        if name in rows:
            raise ValueError(
                f"--add-row {spec} and {rows[name]} are both named {name!r}; give "
                "one a name attribute"
            )
        rows[name] = spec
    return rows


def elastic_options(
    args: argparse.Namespace, on: Optional[Any] = None
) -> Dict[str, Any]:
    """``--elastic-selection`` and ``--elastic-range`` as ``aryl.sim.scenario`` keywords.

    With the cluster ``on``, ``--elastic-range cluster`` (inf) is bounded by its training
    servers' GPUs (``elastic_max_gpus``); without, the keywords are sweep parameters
    (``aryl.studies.sweep`` bounds it the same way).
    """
    options: Dict[str, Any] = {
        "elastic_selection": args.elastic_selection,
        "elastic_range": args.elastic_range,
    }
    if on is not None and math.isinf(args.elastic_range):
        options["elastic_max_gpus"] = (
            sum(s.gpus for s in on if s.pool == "training")
            if isinstance(on, list)  # --servers
            else on.training_servers * on.gpus_per_server
        )
    return options
