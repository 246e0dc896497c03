"""The parsed options (an ``argparse.Namespace``) as the values the layers below take.

Only the command functions (``commands``, ``replicated``) hold the ``Namespace``; they
hand ``inputs`` and ``output`` plain values through these.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, Dict, Optional

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
    given = getattr(args, "servers", None)
    types = getattr(args, "inference_types", None)
    if given is None:
        if types is not None:
            raise ValueError(
                "--inference-types chooses the pools of a node list given as --servers"
            )
    else:
        # these run on clusters of counts (sweep points): not yet on a file's servers
        for option, used in (
            ("--seeds", getattr(args, "seeds", None) is not None),
            ("--windows", getattr(args, "windows", None) is not None),
            ("--pollux-rows", bool(getattr(args, "pollux_rows", False))),
        ):
            if used:
                raise ValueError(
                    f"--servers runs one simulation per row; {option} replays on a "
                    "cluster of server counts (--training-servers, --inference-servers) "
                    "and does not take --servers yet"
                )
        return servers_of(given, types, config_of(args), console_of(args))
    return cluster_of(
        args.training_servers,
        args.inference_servers,
        jobs,
        args.utilisation,
        config_of(args),
        console_of(args),
    )


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
