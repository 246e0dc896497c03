"""``aryl live``: replay a trace on a Ray cluster and print it beside the simulator's run."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import shutil
import socket
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._display import Table
from .files import output_directory
from .options import config_of, console_of, trace_files
from .output import LEDGER_NOTE, Console, ledger_table

#: The rows of the sim-vs-live table: summary key, label, how the difference reads.
ROWS: Tuple[Tuple[str, str, str], ...] = (
    ("jct_mean", "mean JCT (s)", "%"),
    ("jct_p95", "p95 JCT (s)", "%"),
    ("queuing_mean", "mean queuing (s)", "%"),
    ("preemptions", "preemptions", "count"),
    ("jobs_finished", "jobs finished", "count"),
)

#: Servers (T + I) a ``--local-cluster`` may have: each is a Ray node on this machine
#: (a raylet, a dashboard agent and a runtime-env agent, about 200 MB and three
#: processes), and all of them must join within ``JOIN_TIMEOUT_S``; a larger cluster
#: spans machines (``--address``).
MAX_LOCAL_SERVERS = 32
#: ``OUT``'s lock (the PID of the ``aryl live`` writing there) and run record (its run
#: id: the jobs' checkpoints end in ``.<run>.ckpt``).
LOCK, RUN = ".aryl-live.lock", "run-id"
#: Above this share of the mean job's duration, the start latency times the
#: compression (``RayBackend.start_overhead``) dominates what live measures: a warning.
LATENCY_SHARE = 0.1


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
        calibrated = simulated_with(
            dataclasses.replace(config, start_overhead=overhead)
        )
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


def _check_replaceable(journal: Path, overwrite: bool) -> None:
    """A new run on OUT: refused when OUT's journal holds a run that did not end (one
    ``--resume`` can continue), unless ``overwrite``."""
    if overwrite or not journal.is_file() or journal.stat().st_size == 0:
        return
    if _ended(journal):
        return
    raise ValueError(
        f"{journal}: holds a run that did not end, which --resume (with --address) "
        "can continue; to start a new run there instead, discarding it (its journal "
        "and checkpoints), add --overwrite, or give another --out"
    )


def _ended(journal: Path) -> bool:
    """Whether the journal's last whole line is the ``end`` event."""
    with open(journal, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65536))
        lines = [line for line in f.read().splitlines() if line.strip()]
    try:
        return bool(lines) and json.loads(lines[-1]).get("event") == "end"
    except (ValueError, AttributeError):
        return False


def _run_id(out: Path, resume: bool) -> str:
    """The run's id: OUT's (``RUN``) when resuming, else a new one, after the earlier
    run's journal and checkpoints are removed (they are checked replaceable)."""
    from ..live.jobs import run_id

    record = out / RUN
    if resume:
        try:
            return run_id(record.read_text().strip())
        except (OSError, ValueError):
            return run_id()  # adopted agents keep their own run
    journal, checkpoints = out / "journal.jsonl", out / "checkpoints"
    if journal.exists() or checkpoints.exists():
        journal.unlink(missing_ok=True)
        shutil.rmtree(checkpoints, ignore_errors=False)
        print(
            f"aryl: replaced the earlier run's journal and checkpoints in {out}",
            file=sys.stderr,
        )
    run = run_id()
    record.write_text(run + "\n")
    return run


class OutLock:
    """One ``aryl live`` per OUT: a file holding the PID and host of the command
    writing there. A lock whose process is gone (on this host) is stale and taken
    over; a live one is refused, naming its PID."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False

    def __enter__(self) -> OutLock:
        mine = f"{os.getpid()} {socket.gethostname()}\n"
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None:
                    pid, host = holder
                    raise ValueError(
                        f"{self.path.parent}: another aryl live (PID {pid} on {host}) "
                        f"is writing there; wait for it, or give another --out (if no "
                        f"such run is going on, delete {self.path})"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(mine)
            self.held = True
            return self
        raise ValueError(f"{self.path}: could not take the lock")

    def _holder(self) -> Optional[Tuple[int, str]]:
        """(PID, host) of a live holder, or None when the lock is stale."""
        try:
            pid_text, host = (self.path.read_text().split() + ["", ""])[:2]
            pid = int(pid_text)
        except (OSError, ValueError):
            # unreadable or half-written: stale only if old (a writer takes ~ms)
            try:
                young = time.time() - self.path.stat().st_mtime < 5.0
            except OSError:
                return None
            return (0, "?") if young else None
        if host != socket.gethostname():
            return pid, host  # another machine's: cannot tell, so it holds
        if pid == os.getpid():
            return pid, host
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, another user's
            return pid, host
        return pid, host

    def __exit__(self, *exc: Any) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


class LiveProgress:
    """Progress of a live run on stderr (rich, as ``simulate`` shows it), for a
    person watching: jobs submitted, running and finished, servers on loan, simulated
    and wall time. A thread reads the controller's record twice a second."""

    def __init__(self, controller: Any, enabled: bool, stream: Any = None) -> None:
        self.controller, self.enabled, self.stream = controller, enabled, stream
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._bar: Any = None

    def line(self) -> str:
        """What the bar says now."""
        return progress_line(self.controller)

    def __enter__(self) -> LiveProgress:
        if not self.enabled:
            return self
        from rich.console import Console as RichConsole
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        console = RichConsole(
            file=self.stream or sys.stderr, force_terminal=True if self.stream else None
        )
        self._bar = RichProgress(
            TextColumn("live"),
            BarColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._task = self._bar.add_task("", total=max(1, len(self.controller.jobs)))
        self._bar.start()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def _draw(self) -> None:
        try:
            finished = len(self.controller.record.finished)
            self._bar.update(self._task, completed=finished, description=self.line())
        except Exception:  # the record changed while read: the next draw shows it
            pass

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._draw()
            self._bar.stop()


def progress_line(controller: Any) -> str:
    """Jobs submitted, running and finished, servers on loan, simulated time."""
    record = controller.record
    submitted = len(record.arrived)
    finished = len(record.finished)
    running = sum(1 for workers in list(record.workers.values()) if workers)
    now = controller.clock.now() if controller.clock is not None else 0.0
    return (
        f"{submitted}/{len(controller.jobs)} submitted, {running} running, "
        f"{finished} finished; {len(record.on_loan)} on loan; "
        f"simulated {_hours(now)}"
    )


def _hours(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"


def latency_warning(overhead: float, jobs: Any, compression: float) -> str:
    """A warning when the start latency measured (simulated seconds a start, the wall
    latency times the compression) is a large share (``LATENCY_SHARE``) of the mean
    job's duration: live then measures Ray's start more than the schedule."""
    durations = [float(j.duration) for j in jobs]
    mean = sum(durations) / len(durations) if durations else 0.0
    if mean <= 0.0 or overhead < LATENCY_SHARE * mean:
        return ""
    return (
        f"each start waited {overhead:,.0f} simulated s for Ray ({overhead / compression:.1f} "
        f"wall s x --compression {compression:g}), {overhead / mean:.0%} of the mean "
        f"job's {mean:,.0f} s: at this compression, live measures Ray's start latency "
        "more than the schedule (queuing above all); lower --compression for a "
        "comparison"
    )


def live_ledger_table(result: Any, simulated: Any) -> Table:
    """The loaning ledger (``output.ledger_table``) of the live and the simulated run."""
    import pandas as pd

    rows = {"live": result.summary(), "simulated": simulated.summary()}
    return ledger_table(pd.DataFrame.from_dict(rows, orient="index"))


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
