"""``aryl live``: replay a trace on a Ray cluster and print it beside the simulator's run."""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
from contextlib import nullcontext
from typing import Any, Dict, List, Sequence, Tuple

from .._display import Table
from .files import output_directory
from .options import console_of

#: The rows of the sim-vs-live table: summary key, label, how the difference reads.
ROWS: Tuple[Tuple[str, str, str], ...] = (
    ("jct_mean", "mean JCT (s)", "%"),
    ("jct_p95", "p95 JCT (s)", "%"),
    ("queuing_mean", "mean queuing (s)", "%"),
    ("preemptions", "preemptions", "count"),
    ("jobs_finished", "jobs finished", "count"),
)


def parse_cluster(text: str) -> Tuple[int, int]:
    """``"T+I"`` as (training, inference) server counts, both >= 0, T >= 1."""
    parts = text.split("+")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"--local-cluster takes T+I (training+inference servers, e.g. 4+4), got {text!r}"
        )
    training, inference = (int(p) for p in parts)
    if training < 1:
        raise argparse.ArgumentTypeError("--local-cluster needs a training server")
    return training, inference


def live(args: argparse.Namespace) -> int:
    """Run the trace live, then the simulator on it; print both and the difference."""
    from .. import sim, traces
    from ..live import Clock, Controller
    from ..live.ray_backend import RayBackend
    from ..sim.runs import trace_jobs

    console = console_of(args)
    if args.resume and args.local_cluster:
        raise ValueError(
            "--resume continues a run on the cluster at --address; a --local-cluster "
            "ends with the command that started it, so nothing of it runs on"
        )
    out = output_directory(args.out)
    journal, checkpoints = out / "journal.jsonl", out / "checkpoints"
    if args.resume and not journal.is_file():
        raise ValueError(f"--resume: no journal to continue at {journal}")
    if not args.resume:  # a new run: aryl's own files of an earlier one go
        journal.unlink(missing_ok=True)
        shutil.rmtree(checkpoints, ignore_errors=True)
    checkpoints.mkdir(exist_ok=True)
    frame = traces.read_jobs(args.jobs)
    jobs = trace_jobs(frame, first_jobs=args.first_jobs, seed=args.seed)
    load = traces.read_load(args.load) if args.load is not None else None
    training, inference = args.local_cluster or (0, 0)
    cluster = sim.Cluster(training, inference)
    config = sim.Config(
        lend_hold=args.lend_hold, restart_overhead=args.restart_overhead
    )
    console.say(
        f"Replaying {len(jobs)} jobs live at {args.compression:g}x on "
        + (
            f"a local Ray cluster of {training}+{inference} 8-GPU servers"
            if args.local_cluster
            else f"the Ray cluster at {args.address}"
        )
        + f", policy {args.policy}."
    )
    with _cluster(args, cluster.servers()) as provider:
        backend = RayBackend(str(checkpoints), args.compression, provider)
        try:
            controller = Controller(
                jobs,
                cluster if args.local_cluster else _servers(args),
                backend,
                args.policy,
                args.reclaim,
                load,
                config,
                Clock(args.compression),
                journal,
                seed=args.seed,
                resume=args.resume,
            )
            result = controller.run()
        finally:
            backend.shutdown()

    def simulated_with(config: Any) -> Any:
        return sim.simulate(
            jobs,
            controller.servers,
            args.policy,
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
    overhead = backend.start_overhead()
    if overhead > 0.0:  # the simulator again, taught this cluster's start latency
        calibrated = simulated_with(
            dataclasses.replace(config, start_overhead=overhead)
        )
        calibrated.save(out / "calibrated", overwrite=True)
        console.say(
            f"with the measured start latency ({overhead:,.0f} s a start) as "
            f"start_overhead, {sim_vs_live_line(result, calibrated)}"
        )
    return 0


def comparison_table(result: Any, simulated: Any) -> Table:
    """Live, simulated and the difference, one row per metric of ``ROWS``."""
    rows: List[List[Any]] = []
    shown: List[List[str]] = []
    a, b = _metrics(result), _metrics(simulated)
    for key, label, kind in ROWS:
        diff = _difference(a[key], b[key], kind)
        rows.append([label, a[key], b[key], diff])
        shown.append([label, _number(a[key]), _number(b[key]), _diff_text(diff, kind)])
    return Table(["metric", "live", "simulated", "difference"], rows, shown)


def sim_vs_live_line(result: Any, simulated: Any) -> str:
    """One line: the difference in mean and p95 JCT, queuing and preemptions."""
    a, b = _metrics(result), _metrics(simulated)
    parts = [
        f"{label.split(' (')[0]} {_diff_text(_difference(a[k], b[k], kind), kind)}"
        for k, label, kind in ROWS[:4]
    ]
    return "live vs simulated: " + ", ".join(parts)


def _metrics(result: Any) -> Dict[str, float]:
    out = dict(result.summary())
    out["preemptions"] = float(result.jobs["preemptions"].sum())
    return out


def _difference(live: float, simulated: float, kind: str) -> float:
    if kind == "count":
        return live - simulated
    if not simulated or math.isnan(simulated) or math.isnan(live):
        return math.nan
    return 100.0 * (live - simulated) / simulated


def _number(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.0f}"


def _diff_text(diff: float, kind: str) -> str:
    if math.isnan(diff):
        return "—"
    return f"{diff:+.0f}" if kind == "count" else f"{diff:+.1f}%"


class _cluster:
    """The local Ray cluster of ``--local-cluster`` (shut down on exit), or a
    connection to ``--address``."""

    def __init__(self, args: argparse.Namespace, servers: Sequence[Any]) -> None:
        self.args, self.servers = args, servers
        self.local: Any = None

    def __enter__(self) -> Any:
        from ..live.ray_backend import LocalCluster, _ray
        from ..sim.sweep_engines import is_loopback, on_loopback

        ray = _ray()

        if self.args.local_cluster:
            self.local = LocalCluster(self.servers)
            return self.local
        # a cluster on this machine's loopback is joined there, as given
        kept = on_loopback() if is_loopback(self.args.address) else nullcontext()
        with kept:
            ray.init(address=self.args.address, namespace="aryl", log_to_driver=False)
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
    from ..defaults import SCHEDULE_POLICIES, SIMULATION_RECLAIM_POLICIES
    from .arguments import _number as number
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
        "duration_s, gpu_type)",
    )
    p.add_argument(
        "--load",
        metavar="LOAD.csv",
        type=readable_file("--load"),
        help="inference load (time_s, load in [0, 1]); default none: nothing is lent",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--local-cluster",
        type=parse_cluster,
        metavar="T+I",
        help="start a Ray cluster on this machine with T training (V100) and I "
        "inference (T4) 8-GPU servers, declared, not real GPUs; shut down at the end",
    )
    where.add_argument(
        "--address",
        metavar="ADDR",
        help="an existing Ray cluster whose nodes are labelled aryl.server=<id>, "
        "aryl.pool=training|inference",
    )
    p.add_argument(
        "--policy",
        choices=SCHEDULE_POLICIES,
        default="aryl",
        help="allocation policy (default aryl)",
    )
    p.add_argument(
        "--reclaim",
        choices=SIMULATION_RECLAIM_POLICIES,
        default="aryl",
        help="which lent servers to return (default aryl)",
    )
    p.add_argument(
        "--compression",
        type=number(float, "--compression", 0.0, low_open=True),
        default=30.0,
        metavar="C",
        help="simulated seconds per wall second (default 30: an hour of trace in "
        "two minutes; start latencies then count C-fold)",
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
        "same JOBS.csv and options. Without it, a new run replaces OUT's journal",
    )
    p.add_argument(
        "--out",
        default="aryl-results/live",
        metavar="DIR",
        type=writable_folder("--out"),
        help="where results go (default aryl-results/live)",
    )
    output_arguments(p)
    p.set_defaults(run=live)
