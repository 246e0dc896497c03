"""``aryl live``: replay a trace on a Ray cluster and print it beside the simulator's run."""

from __future__ import annotations

import argparse
import copy
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from .console import Console
from .files import output_directory
from .live_out import LOCK, RUN, OutLock, _check_replaceable, _run_id
from .live_show import (
    LATENCY_SHARE,
    ROWS,
    LiveProgress,
    comparison_table,
    latency_warning,
    live_ledger_table,
    progress_line,
    sim_vs_live_line,
)
from .options import config_of, console_of, trace_files
from .output import LEDGER_NOTE

__all__ = [
    "LATENCY_SHARE",
    "LOCK",
    "MAX_LOCAL_SERVERS",
    "ROWS",
    "RUN",
    "LiveProgress",
    "OutLock",
    "add_parser",
    "comparison_table",
    "latency_warning",
    "live",
    "live_ledger_table",
    "parse_cluster",
    "progress_line",
    "sim_vs_live_line",
]

#: Servers (T + I) a ``--local-cluster`` may have: each is a Ray node on this machine
#: (a raylet, a dashboard agent and a runtime-env agent, about 200 MB and three
#: processes), and all of them must join within ``JOIN_TIMEOUT_S``; a larger cluster
#: spans machines (``--address``).
MAX_LOCAL_SERVERS = 32


def parse_cluster(text: str) -> Tuple[int, int]:
    """``"T+I"`` as (training, inference) server counts, both >= 0, T >= 1, and
    T + I <= ``MAX_LOCAL_SERVERS``."""
    parts = text.split("+")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"--local-cluster takes T+I (training+inference servers, e.g. 4+4), got {text!r}"
        )
    training, inference = (int(p) for p in parts)
    if training < 1:
        raise argparse.ArgumentTypeError("--local-cluster needs a training server")
    if training + inference > MAX_LOCAL_SERVERS:
        raise argparse.ArgumentTypeError(
            f"--local-cluster {text}: {training + inference:,} servers would start "
            f"as many Ray nodes on this machine (each a raylet and two agents, about "
            f"200 MB); a local cluster takes at most {MAX_LOCAL_SERVERS} servers "
            "(T+I). For a larger one, start labelled nodes across machines and give "
            "--address (docs/live.md)"
        )
    return training, inference


def live(args: argparse.Namespace) -> int:
    """Run the trace live, then the simulator on it; print both and the difference.

    Everything is checked before OUT changes: the trace, the policy, the options and
    the cluster; a run that did not end (resumable) is replaced only with
    ``--overwrite``, and one ``aryl live`` at a time writes to OUT (its lock)."""
    console = console_of(args)
    if args.start_on_loan:
        raise ValueError(
            "--start-on-loan moves running jobs to faster GPUs, which aryl live does not "
            "do yet: aryl simulate and aryl compare take it"
        )
    if args.resume and (args.local_cluster or args.servers):
        raise ValueError(
            "--resume continues a run on the cluster at --address; a --local-cluster "
            "ends with the command that started it (so does the local cluster of "
            "--servers), so nothing of it runs on"
        )
    if args.resume and args.overwrite:
        raise ValueError(
            "--resume continues OUT's run, --overwrite replaces it: give one"
        )
    out = output_directory(args.out)
    with OutLock(out / LOCK):
        journal = out / "journal.jsonl"
        if args.resume and not journal.is_file():
            raise ValueError(f"--resume: no journal to continue at {journal}")
        if not args.resume:
            _check_replaceable(journal, args.overwrite)
        jobs, load, policy, config, where = _inputs(args, console)
        local = _local_servers(args)  # None: the cluster at --address
        name = args.policy if isinstance(policy, str) else _policy_name(policy)
        console.say(
            f"Replaying {len(jobs)} jobs of {where} live at {args.compression:g}x on "
            + (
                f"a local Ray cluster of {_pools(local)}"
                if local is not None
                else f"the Ray cluster at {args.address}"
            )
            + f", policy {name}."
        )
        log = out / "ray.log"
        with _cluster(args, local or [], log) as provider:
            servers = local if local is not None else _servers(args)
            run = _run_id(out, args.resume)  # the cluster answered: OUT may change
            if local is not None:
                console.say(f"Ray's own output (its nodes' messages) goes to {log}.")
            result, backend, controller = _run_live(
                args, console, out, run, jobs, servers, policy, load, config, provider
            )
        # still OUT's writer: the results go beside the journal
        _report(args, console, out, jobs, (result, backend, controller), policy, load)
    return 0


def _local_servers(args: argparse.Namespace) -> Optional[List[Any]]:
    """The servers of the cluster started here: ``--local-cluster T+I``'s (8-GPU
    V100 and T4 servers), or ``--servers FILE``'s (``options.file_servers``: at most
    ``MAX_LOCAL_SERVERS``, a training server among them); None with ``--address``."""
    from .. import sim
    from .options import file_servers

    given = file_servers(args)
    if given is None:
        counts = args.local_cluster
        return None if counts is None else sim.Cluster(*counts).servers()
    if len(given) > MAX_LOCAL_SERVERS:
        raise ValueError(
            f"--servers {args.servers}: {len(given):,} servers would start as many "
            f"Ray nodes on this machine; a local cluster takes at most "
            f"{MAX_LOCAL_SERVERS} servers. For a larger one, start labelled nodes "
            "across machines and give --address (docs/live.md)"
        )
    if not any(s.pool == "training" for s in given):
        raise ValueError(
            f"--servers {args.servers}: a live run needs a training server"
        )
    return given


def _pools(servers: Sequence[Any]) -> str:
    """``"2 training (16 GPUs) + 2 inference (16 GPUs) servers"``."""
    return (
        " + ".join(
            f"{len(mine)} {pool} ({sum(s.gpus for s in mine)} GPUs)"
            for pool in ("training", "inference")
            for mine in [[s for s in servers if s.pool == pool]]
        )
        + " servers"
    )


def _report(
    args: argparse.Namespace,
    console: Console,
    out: Path,
    jobs: Any,
    ran: Tuple[Any, Any, Any],
    policy: Any,
    load: Any,
) -> None:
    """The simulated (and calibrated) runs beside the live one (``ran``: its result,
    backend and controller): saved and printed."""
    from .. import sim
    from ..live import calibrated as live_calibrated

    result, backend, controller = ran
    config = controller.config

    def simulated_with(config: Any) -> Any:
        return sim.simulate(
            jobs,
            controller.servers,
            policy,
            args.reclaim,
            load,
            config,
            seed=args.seed,
            history=True,
        )

    simulated = simulated_with(config)
    result.save(out / "live", overwrite=True)
    simulated.save(out / "simulated", overwrite=True)
    console.show(comparison_table(result, simulated))
    console.say(sim_vs_live_line(result, simulated))
    console.show(live_ledger_table(result, simulated))
    console.say(LEDGER_NOTE)
    overhead = backend.start_overhead()
    if overhead > 0.0:  # the simulator again, taught this cluster's start latency
        calibrated = simulated_with(live_calibrated(config, overhead))
        calibrated.save(out / "calibrated", overwrite=True)
        console.say(
            f"with the measured start latency ({overhead:,.0f} s a start) as "
            f"start_overhead, {sim_vs_live_line(result, calibrated)}"
        )
        warning = latency_warning(overhead, jobs, args.compression)
        if warning:
            print(f"aryl: warning: {warning}", file=sys.stderr)


def _inputs(
    args: argparse.Namespace, console: Console
) -> Tuple[Any, Any, Any, Any, str]:
    """(jobs, load, policy, Config, where): the trace read, the policy loaded and the
    model options, as ``aryl simulate`` takes them (``options``, ``inputs``)."""
    from .. import sim
    from ..engine.runs import trace_jobs
    from ..policy import load_policy
    from .inputs import trace_frames

    frame, load, where = trace_frames(trace_files(args), console)
    jobs = trace_jobs(
        frame,
        first_jobs=args.first_jobs,
        any_type_share=args.any_type_share,
        seed=args.seed,
    )
    policy: Any = load_policy(args.policy) if ":" in args.policy else args.policy
    fields = config_of(args)
    fields["restart_overhead"] = args.restart_overhead
    config = sim.Config(**fields)
    return jobs, load, policy, config, where


def _policy_name(policy: Any) -> str:
    from ..policy import policy_name

    return str(policy_name(policy))


def _run_live(
    args: argparse.Namespace,
    console: Console,
    out: Path,
    run: str,
    jobs: Any,
    servers: Any,
    policy: Any,
    load: Any,
    config: Any,
    provider: Any,
) -> Tuple[Any, Any, Any]:
    """The live run: (result, backend, controller)."""
    from ..live import Clock, Controller
    from ..live.ray_backend import RayBackend

    checkpoints = out / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    backend = RayBackend(str(checkpoints), args.compression, provider, run=run)
    try:
        controller = Controller(
            jobs,
            servers,
            backend,
            policy,
            args.reclaim,
            load,
            config,
            Clock(args.compression),
            out / "journal.jsonl",
            seed=args.seed,
            resume=args.resume,
        )
        with LiveProgress(controller, console.progress_wanted()):
            result = controller.run()
    finally:
        backend.shutdown()
    return result, backend, controller


class _cluster:
    """The local Ray cluster of ``--local-cluster`` (shut down on exit; its nodes'
    own output in ``log``), or a connection to ``--address``."""

    def __init__(
        self, args: argparse.Namespace, servers: Sequence[Any], log: Path
    ) -> None:
        self.args, self.servers, self.log = args, servers, log
        self.local: Any = None

    def __enter__(self) -> Any:
        from ..live.ray_backend import (
            LocalCluster,
            _ray,
            _restore_signal_handlers,
            _signal_handlers,
        )
        from ..loopback import is_loopback, on_loopback

        ray = _ray()

        if self.args.local_cluster or self.args.servers:
            self.local = LocalCluster(self.servers, log=str(self.log))
            return self.local
        # a cluster on this machine's loopback is joined there, as given
        kept = on_loopback() if is_loopback(self.args.address) else nullcontext()
        handlers = _signal_handlers()  # ray.init sets its own SIGTERM handler
        try:
            with kept:
                ray.init(
                    address=self.args.address, namespace="aryl", log_to_driver=False
                )
        finally:
            _restore_signal_handlers(handlers)
        return None

    def __exit__(self, *exc: Any) -> None:
        from ..live.ray_backend import _ray

        ray = _ray()
        if self.local is not None:
            self.local.shutdown()
        elif ray.is_initialized():
            ray.shutdown()


def _servers(args: argparse.Namespace) -> List[Any]:
    """An external cluster's servers, from its labelled nodes."""
    from ..live.ray_backend import POOL_LABEL, SERVER_LABEL, _ray
    from ..model import Server

    servers = []
    for node in _ray().nodes():
        labels = node.get("Labels") or {}
        if SERVER_LABEL in labels:
            servers.append(
                Server(
                    labels[SERVER_LABEL],
                    labels.get(POOL_LABEL, "training"),
                    int(node["Resources"].get("GPU", 0)),
                )
            )
    if not servers:
        raise ValueError(
            f"the Ray cluster at {args.address} has no node labelled {SERVER_LABEL}"
        )
    return sorted(servers, key=lambda s: (s.pool != "training", str(s.id)))


def add_parser(sub: Any, output_arguments: Any) -> None:
    """The ``live`` subcommand (``parser.py`` calls this)."""
    from ..defaults import (
        MAX_COMPRESSION,
        SCHEDULE_POLICIES,
        SIMULATION_RECLAIM_POLICIES,
    )
    from .arguments import _load_source as load_source
    from .arguments import _number as number
    from .arguments import _policy as policy_spec
    from .arguments import _readable_file as readable_file
    from .arguments import _writable_folder as writable_folder

    p = sub.add_parser(
        "live",
        help="replay a trace on a Ray cluster, beside the simulator's run",
        description="Run a trace's jobs live on a Ray cluster (emulated workers that "
        "hold their GPUs and advance at the simulator's rate, time compressed "
        "--compression-fold): the controller lends and reclaims inference servers "
        "(drain, checkpoint and stop, confirm, return) and schedules under --policy. "
        "Then simulate the same trace on the same servers, print both summaries and "
        "the differences, and write OUT/live, OUT/simulated (aryl.sim.load reads "
        "them), OUT/journal.jsonl and the jobs' checkpoints in OUT/checkpoints "
        "(docs/live.md).",
    )
    p.add_argument(
        "jobs",
        metavar="JOBS.csv",
        type=readable_file("JOBS.csv"),
        help="job trace in the common CSV format (job_id, submit_time_s, num_gpus, "
        "duration_s, gpu_type), or in --trace-format",
    )
    p.add_argument(
        "--load",
        metavar="LOAD.csv|embedded",
        type=load_source,
        help="inference load (time_s, load in [0, 1]), or embedded (the embedded "
        "Alibaba-2018 series); default none: nothing is lent",
    )
    # the model options as aryl simulate takes them (its very arguments: one parser)
    simulate = sub.choices["simulate"]
    for option in (
        "--trace-format",
        "--drop-invalid",
        "--gpu-speed",
        "--any-type-share",
        "--headroom",
        "--inference-types",
    ):
        p._add_action(copy.copy(simulate._option_string_actions[option]))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--local-cluster",
        type=parse_cluster,
        metavar="T+I",
        help="start a Ray cluster on this machine with T training (V100) and I "
        "inference (T4) 8-GPU servers, declared, not real GPUs; shut down at the end "
        f"(T+I at most {MAX_LOCAL_SERVERS}: a Ray node each, on this machine)",
    )
    where.add_argument(
        "--servers",
        type=readable_file("--servers"),
        metavar="FILE",
        help="start a Ray cluster on this machine with the servers of FILE, as aryl "
        "simulate --servers takes it (aryl's server CSV or the Alibaba GPU 2023 node "
        f"list; at most {MAX_LOCAL_SERVERS} servers), declared, not real GPUs",
    )
    where.add_argument(
        "--address",
        metavar="ADDR",
        help="an existing Ray cluster whose nodes are labelled aryl.server=<id>, "
        "aryl.pool=training|inference",
    )
    p.add_argument(
        "--policy",
        type=policy_spec(SCHEDULE_POLICIES),
        default="aryl",
        metavar="NAME|module:Class|path.py:Class",
        help=f"allocation policy: {', '.join(SCHEDULE_POLICIES)} (default aryl), or a "
        "policy of your own as aryl simulate takes it (docs/policies.md): "
        "module:Class or path.py:Class (imported, so its code runs, when the command "
        "starts); the simulated run beside it runs the same",
    )
    p.add_argument(
        "--reclaim",
        choices=SIMULATION_RECLAIM_POLICIES,
        default="aryl",
        help="which lent servers to return (default aryl)",
    )
    p.add_argument(
        "--compression",
        type=number(float, "--compression", 0.0, MAX_COMPRESSION, low_open=True),
        default=30.0,
        metavar="C",
        help="simulated seconds per wall second (default 30: an hour of trace in "
        f"two minutes; start latencies then count C-fold; at most {MAX_COMPRESSION:g}, "
        "where a second of start latency is hours of trace)",
    )
    p.add_argument(
        "--first-jobs",
        type=number(int, "--first-jobs", 1, 10**9),
        metavar="N",
        help="use only the trace's first N jobs",
    )
    p.add_argument(
        "--lend-hold",
        type=number(float, "--lend-hold", 0.0),
        default=0.0,
        metavar="SECONDS",
        help="lend a server only after the load has left it spare this long "
        "(default 0: a short trace has no hour to wait)",
    )
    p.add_argument(
        "--start-on-loan",
        action="store_true",
        help="refused: aryl live does not move running jobs yet (aryl simulate and "
        "aryl compare take it)",
    )
    p.add_argument(
        "--restart-overhead",
        type=number(float, "--restart-overhead", 0.0),
        default=0.0,
        metavar="SECONDS",
        help="simulated seconds a restored job makes no progress, in both runs "
        "(default 0: live, the real restart is the overhead)",
    )
    p.add_argument(
        "--seed", type=number(int, "--seed", 0, 2**32 - 1), default=0, help="seed"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run whose journal is OUT/journal.jsonl on the cluster at "
        "--address (after the command was stopped or its machine restarted): the "
        "jobs that run there are adopted, none starts twice (docs/live.md); give the "
        "same JOBS.csv and options. Without it, a new run replaces OUT's journal "
        "and checkpoints once the trace, policy and cluster are checked, and refuses "
        "a run that did not end unless --overwrite",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start a new run on OUT even though OUT holds a run that did not end "
        "(one --resume could continue): its journal and checkpoints are discarded",
    )
    p.add_argument(
        "--out",
        default="aryl-results/live",
        metavar="DIR",
        type=writable_folder("--out"),
        help="where results go (default aryl-results/live)",
    )
    output_arguments(p)
    p.set_defaults(run=live, arrival_scale=None)
