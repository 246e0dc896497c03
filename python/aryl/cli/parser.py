"""The ``aryl`` parser: its commands, their options and ``--help`` texts."""

from __future__ import annotations

import argparse
import re
from typing import Any, List, NoReturn, Optional, Sequence, Tuple, get_args

from .._display import FORMATS
from ..defaults import (
    ANY_TYPE_SHARE,
    DEFAULT_GPU_SPEED,
    ELASTIC_GPU_SHARE,
    ELASTIC_JOB_SHARE,
    ELASTIC_RANGE,
    ELASTIC_SELECTION,
    LEND_HOLD_S,
    MAX_ARRIVAL_SCALE,
    MIN_ARRIVAL_SCALE,
    PAPER_BASELINE_USE,
    SIMULATION_RECLAIM_POLICIES,
)
from ..typing import ElasticSelection
from ..validation import MAX_INT, MAX_SEED, MAX_SEEDS, MAX_WINDOWS, did_you_mean
from .arguments import (
    _cache_folder,
    _elastic_range,
    _gpu_speeds,
    _load_source,
    _number,
    _plot_formats,
    _policy,
    _pollux_cluster,
    _pollux_workload,
    _readable_file,
    _servers_or_auto,
    _window,
    _writable_folder,
)
from .commands import SWEEP_PARAMETERS, compare, demo, export_traces, simulate, sweep

EXIT_USAGE = 2


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every error is one line on stderr and exit status 2.

    Options are spelt in full (no abbreviations: ``--seed`` is not ``--seeds``), and an
    unknown option is refused by name with the closest one, before any value is read
    (else ``--trainig-servers 10`` would report "10: no such file" for JOBS)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Any = None
    ) -> Tuple[argparse.Namespace, List[str]]:
        if self._subparsers is None:  # a command's own options: all known here
            self._check_options(list(args or []))
        return super().parse_known_args(args, namespace)

    def _check_options(self, args: List[str]) -> None:
        for arg in args:
            if arg == "--":  # what follows is positional
                return
            name = arg.split("=", 1)[0]
            if name.startswith("--") and name not in self._option_string_actions:
                known = [o for o in self._option_string_actions if o.startswith("--")]
                self.error(f"unknown option {name}{did_you_mean(name, known)}")

    def error(self, message: str) -> NoReturn:
        # "aryl: error: ..." like every other error; a subcommand's name leads the message
        command = self.prog.split(maxsplit=1)[1:]
        self.exit(
            EXIT_USAGE,
            f"aryl: error: {' '.join(command + [message])}{_suggestion(message)}\n",
        )


def _suggestion(message: str) -> str:
    """ "; did you mean 'simulate'?" for a mistyped choice (a command, a policy, ...;
    ``scf`` for ``SCF``)."""
    match = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not match:
        return ""
    choices = re.findall(r"'([^']*)'", match.group(2)) or match.group(2).split(", ")
    return did_you_mean(match.group(1), choices)


#: The default GPU speeds as the help text shows them ("V100=1,T4=0.25").
_SPEEDS = ",".join(f"{k}={v:g}" for k, v in DEFAULT_GPU_SPEED.items())


#: ``--training-servers`` / ``--inference-servers`` not given (``_ClusterAction``):
#: compares equal to ``auto``, which argparse then parses as given.
class _Auto(str):
    pass


_AUTO = _Auto("auto")
_COUNTS = ("--training-servers", "--inference-servers")


class _ClusterAction(argparse.Action):
    """Stores an option of the cluster, refusing ``--servers`` with a server count:
    one says the cluster, the other sizes it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: Optional[str] = None,
    ) -> None:
        if option_string == "--servers":
            counts = [
                o
                for o in _COUNTS
                if getattr(namespace, o[2:].replace("-", "_"), _AUTO) is not _AUTO
            ]
        else:
            counts = [option_string or ""] if namespace.servers is not None else []
        if counts:
            parser.error(
                f"--servers and {' and '.join(counts)}: --servers FILE gives the whole "
                "cluster (its servers, their pools and GPU types); drop "
                f"{' and '.join(counts)}, or --servers to size a cluster of 8-GPU V100 "
                "and T4 servers"
            )
        setattr(namespace, self.dest, values)


def _trace_arguments(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument(
        "jobs",
        nargs="?",
        metavar="JOBS.csv",
        type=_readable_file("JOBS.csv"),
        help="job trace in the common CSV format (job_id, submit_time_s, num_gpus, "
        "duration_s, gpu_type; gzip allowed), or in --trace-format; default: the "
        "embedded ITP trace",
    )
    p.add_argument(
        "--trace-format",
        choices=["aryl", "philly", "alibaba-pai", "alibaba-2023", "helios"],
        default="aryl",
        help="the format of JOBS: aryl (default, the common CSV), or a public trace "
        "as released: philly (cluster_job_log), alibaba-pai (pai_job_table.csv, "
        "pai_task_table.csv beside it), alibaba-2023 (openb_pod_list_*.csv), helios "
        "(cluster_log.csv); docs/traces.md gives each mapping",
    )
    p.add_argument(
        "--load",
        metavar="LOAD.csv|embedded|pods[:QOS,...]",
        type=_load_source,
        help="inference load (time_s, load in [0, 1]), or embedded: the embedded "
        "Alibaba-2018 series (8 days, repeated to cover the trace, as with the embedded "
        "jobs), or pods: an Alibaba GPU 2023 pod list's own inference pods (qos LS, or "
        "the classes given, e.g. pods:LS,Burstable) as the load (the GPUs they hold over "
        "their peak), taken out of the jobs; default with the embedded trace: embedded; "
        "with your own trace: none (no loaning)",
    )
    p.add_argument(
        "--arrival-scale",
        type=_number(float, "--arrival-scale", MIN_ARRIVAL_SCALE, MAX_ARRIVAL_SCALE),
        default=None,
        metavar="F",
        help="multiply the arrival rate by F: every inter-arrival time is divided by "
        "F (2: twice the offered load, 0.5: half), for a JCT-against-load curve; "
        "--training-servers auto sizes the cluster on the trace as recorded (F = 1), "
        "so F is the offered load relative to the paper's (default 1)",
    )
    p.add_argument(
        "--training-servers",
        type=_servers_or_auto("--training-servers", 1),
        default=_AUTO,
        metavar="N|auto",
        help="8-GPU V100 training servers; auto (default) sizes the cluster so that the FIFO "
        "Baseline keeps --utilisation of them busy (aryl.sim.size_cluster)",
        action=_ClusterAction,
    )
    p.add_argument(
        "--inference-servers",
        type=_servers_or_auto("--inference-servers", 0),
        default=_AUTO,
        metavar="N|auto",
        help="8-GPU T4 inference servers that can be lent; auto (default): the paper's 520 "
        "per 443 training servers",
        action=_ClusterAction,
    )
    p.add_argument(
        "--servers",
        action=_ClusterAction,
        type=_readable_file("--servers"),
        metavar="FILE",
        help="the cluster as a file, instead of --training-servers and "
        "--inference-servers: aryl's server CSV (id, pool, gpus, gpu_type) or the "
        "Alibaba GPU 2023 node list (openb_node_list_gpu_node.csv: T4 servers the "
        "inference pool, the rest training; docs/traces.md). Give the speed of each "
        "GPU type the paper lacks with --gpu-speed",
    )
    p.add_argument(
        "--inference-types",
        type=_type_names,
        metavar="TYPE,...",
        help="with a node list as --servers: the GPU types whose servers are the "
        "inference pool, lent to training (default T4; none: no inference pool)",
    )
    p.add_argument(
        "--utilisation",
        type=_number(float, "--utilisation", 0.0, 1.0, low_open=True),
        default=PAPER_BASELINE_USE,
        metavar="F",
        help="Baseline training GPU use that --training-servers auto aims at (default "
        f"{PAPER_BASELINE_USE:g}, the paper's Table 3)",
    )
    p.add_argument(
        "--lend-hold",
        type=_number(float, "--lend-hold", 0.0),
        default=None,
        metavar="SECONDS",
        help="lend an inference server only after the load has left it spare this long "
        f"(default {LEND_HOLD_S:g}, aryl.sim.Config's; reclaiming is immediate)",
    )
    p.add_argument(
        "--headroom",
        type=_number(float, "--headroom", 0.0),
        default=0.0,
        metavar="F",
        help="the inference cluster keeps ceil(load x (1 + F) x N) servers (default 0)",
    )
    p.add_argument(
        "--any-type-share",
        type=_number(float, "--any-type-share", 0.0, 1.0),
        default=ANY_TYPE_SHARE,
        metavar="F",
        help="share of jobs without a GPU type that may run on any type, incl. loaned "
        f"inference servers (default {ANY_TYPE_SHARE:g}, the paper's Appendix E)",
    )
    p.add_argument(
        "--gpu-speed",
        type=_gpu_speeds,
        action="append",
        metavar="TYPE=SPEED,...",
        help="relative speed of a GPU type, the V100 being 1 (default "
        f"{_SPEEDS}, the paper's Appendix A); e.g. --gpu-speed T4=1 for loaned GPUs as fast "
        "as training ones; repeat or separate with commas",
    )
    p.add_argument(
        "--drop-invalid",
        action="store_true",
        help="skip invalid trace rows (one line on stderr says how many) instead of "
        "stopping",
    )
    p.add_argument(
        "--seed",
        type=_number(int, "--seed", 0, MAX_SEED),
        default=0,
        help="seed of every random choice (default 0)",
    )
    p.add_argument(
        "--out",
        default=out,
        metavar="DIR",
        type=_writable_folder("--out"),
        help=f"where results go (default {out})",
    )
    _output_arguments(p)


def _type_names(text: str) -> Tuple[str, ...]:
    """``--inference-types``: GPU type names, comma-separated; ``none``: no type."""
    if text.strip().lower() == "none":
        return ()
    names = tuple(t.strip() for t in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"--inference-types takes GPU types separated by commas (e.g. T4,A10) or "
            f"none, got {text!r}"
        )
    return names


def _output_arguments(p: argparse.ArgumentParser) -> None:
    """--format and --quiet, which every subcommand has."""
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="how the result table prints: table (default; fits the terminal), csv, "
        "markdown or json (then the other messages go to stderr)",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only the result table and errors: no progress bar, no messages",
    )


def _plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plot-window",
        type=_window,
        default=3600.0,
        metavar="DURATION",
        help="usage plots average over windows this long (default 1h; e.g. 30min, "
        "1d, 600 for seconds; raw: every scheduling step). Runs shorter than 12 "
        "windows are drawn raw",
    )
    p.add_argument(
        "--plot-format",
        type=_plot_formats,
        default=("png", "svg"),
        metavar="png,svg,pdf",
        help="figure file formats, comma-separated (default png,svg)",
    )


def _elastic_arguments(p: argparse.ArgumentParser) -> None:
    """Which jobs the Basic and Advanced scenarios make elastic, and how far they scale
    (``aryl.sim.scenario``; docs/model.md, "Which jobs are elastic")."""
    p.add_argument(
        "--elastic-selection",
        choices=list(get_args(ElasticSelection)),
        default=ELASTIC_SELECTION,
        help="how Basic and Advanced pick their elastic jobs: gpu_time (default: a "
        f"seeded draw of the large jobs until they hold {ELASTIC_GPU_SHARE * 100:.0f}%% of "
        "the GPU-time, the paper's Sec. 3) or jobs (the "
        f"{ELASTIC_JOB_SHARE * 100:.0f}%% of all jobs with the most GPU-time, the paper's "
        "'~5%% of all jobs', Sec. 7.1)",
    )
    p.add_argument(
        "--elastic-range",
        type=_elastic_range,
        default=ELASTIC_RANGE,
        metavar="F|cluster",
        help="an elastic job that ran w workers in the trace scales up to floor(F * w) "
        f"(default {ELASTIC_RANGE:g}); cluster: up to the training servers' GPUs",
    )


def _group_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--by",
        choices=["vc", "user"],
        metavar="vc|user",
        help=f"also {what} per team (vc: the trace's virtual cluster, team or QoS "
        "class) or per user, from the trace's own column; largest groups first",
    )


def _engine_arguments(p: argparse.ArgumentParser, engine: str, why: str) -> None:
    """Where a command's runs execute and are cached (through ``aryl.studies.sweep``)."""
    p.add_argument(
        "--engine",
        choices=["auto", "ray", "processes", "threads", "serial"],
        default=engine,
        help=f"where runs execute (default {why})",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="an existing Ray cluster (e.g. ray://host:10001 "
        "or auto); default: start a local Ray",
    )
    p.add_argument(
        "--workers",
        type=_number(int, "--workers", 1, MAX_INT),
        metavar="N",
        help="runs at once locally (default: CPUs)",
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        type=_cache_folder,
        help="cache folder (default OUT/cache); a read-only one is read, and "
        "refused only when a run is not in it",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache"
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aryl",
        description="aryl: capacity loaning and elastic scaling for deep-learning clusters. "
        "Run `aryl compare` for the paper's comparison on a real trace.",
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"aryl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "compare",
        help="the paper's comparison (Table 3) on one trace",
        description="Simulate the paper's Table 3 rows on one trace: Baseline (FIFO, no "
        "loaning, no elasticity); aryl with loaning and elasticity in the Basic, Advanced and "
        "Ideal scenarios; loaning alone with random, SCF and aryl reclaiming; elasticity alone "
        "(Basic) under Gandiva, AFS and aryl; two controls (SJF and FIFO with backfill, no "
        "loaning) and two ablations (imperfect scaling, plain best-fit placement). Prints one "
        "table with each row's speed-up over Baseline and writes compare.csv and plots. By "
        "default the cluster is sized to the paper's Baseline load (72% training GPU use).",
    )
    _trace_arguments(p, "aryl-results/compare")
    _plot_arguments(p)
    _elastic_arguments(p)
    _group_argument(
        p,
        "print what each feature buys (with --seeds or --windows: paired gains with "
        "intervals; groups.csv)",
    )
    p.add_argument(
        "--pollux-rows",
        action="store_true",
        help="add the goodput-driven rows: Pollux (its genetic search) and "
        "Aryl+TunedJobs (aryl with each job's Pollux agent), on the Basic jobs mapped "
        "onto Pollux applications, no loaning, the training GPUs as 4-GPU nodes "
        "(much slower than the other rows); then a table of them and Elastic only, "
        "aryl beside the paper's Table 3 (queuing and JCT mean, median and p95, "
        "scaling operations, the Pollux / Aryl+TunedJobs ratios; printed with "
        "--format table, always written to pollux_paper.csv). With --windows K "
        "(and --seeds) every (row, seed, window) is its own cached run: an "
        "interrupted run continues from the cache (benchmarks/README.md, "
        "'The Pollux comparison, windowed')",
    )
    p.add_argument(
        "--add-row",
        action="append",
        default=[],
        type=_policy([]),
        metavar="module:Class|path.py:Class",
        help="add a row of your own: the policy (docs/policies.md) in place of "
        "aryl's allocation in the Aryl Basic row (same jobs, loaning and reclaim), "
        "named by its name attribute or class; with --seeds, also what it gains "
        "over Aryl Basic (repeat for more rows); a spec runs that file's or module's "
        "code, once per process (docs/policies.md)",
    )
    p.add_argument(
        "--rows",
        action="append",
        metavar="NAME",
        help="run only this row (repeat for more, in the order given; names as the "
        "table shows them, quoted, e.g. --rows 'Baseline (FIFO)' --rows 'Aryl "
        "Basic'; a row of your own by its name); every file is written whatever the "
        "rows; speed-ups are over --reference, or the first row given",
    )
    p.add_argument(
        "--reference",
        metavar="NAME",
        help="the row speed-ups are taken over (default: the Baseline, or the first "
        "of --rows); aryl says first when the reference is stalled, saturated or "
        "idle, e.g. --reference 'Control: SJF, no loaning' for the SJF control",
    )
    p.add_argument(
        "--pollux-generations",
        type=_number(int, "--pollux-generations", 1, 1_000_000),
        default=100,
        metavar="N",
        help="generations of the Pollux row's genetic search per 60-s round (default "
        "100, the Pollux artifact's; the paper says 250; fewer run faster)",
    )
    p.add_argument(
        "--no-break-even",
        action="store_true",
        help="with --seeds or --windows, when loaning buys nothing aryl says why and "
        "runs Aryl Basic again with the loaned GPU at 0.5, 0.75, 0.9 and 1.0 of a "
        "training GPU (4 x the replications, cached) for the paper's reading and the "
        "speed from which loaning pays 1%%; this skips those runs",
    )
    p.add_argument(
        "--seeds",
        type=_number(int, "--seeds", 1, MAX_SEEDS),
        metavar="N",
        help="run every row with N seeds (--seed, --seed + 1, ...), the same seed for "
        "all rows of a replication, and print every mean speed-up with its 95%% "
        "interval (paired ratios; ~ marks one that includes 1.0x), what each feature "
        "buys, and each of the paper's orderings as holding, reversed or not resolved",
    )
    p.add_argument(
        "--windows",
        type=_number(int, "--windows", 1, MAX_WINDOWS),
        metavar="K",
        help="run every row on K disjoint time slices of the trace, each after a "
        "--warmup, as batches (batch means); combines with --seeds",
    )
    p.add_argument(
        "--warmup",
        type=_window,
        metavar="DURATION",
        help="with --windows: each window's run starts this long before it with the "
        "jobs submitted since, not counted (default 1d; e.g. 12h, 0)",
    )
    _engine_arguments(
        p,
        "threads",
        "threads; with --seeds or --windows, runs cached per seed and window",
    )
    p.set_defaults(run=compare)

    p = sub.add_parser(
        "simulate",
        help="simulate one configuration on a trace",
        description="Simulate one scheduling policy, reclaim policy and scenario on a "
        "trace; print the summary; write jobs.csv, timeline.csv, summary.json and plots.",
    )
    _trace_arguments(p, "aryl-results/simulate")
    _plot_arguments(p)
    _group_argument(p, "print queuing, JCT and slowdown")
    p.add_argument(
        "--policy",
        type=_policy(["aryl", "fifo", "sjf", "gandiva", "afs", "tiresias", "pollux"]),
        metavar="NAME|module:Class|path.py:Class",
        help="allocation policy: aryl, fifo, sjf, gandiva, afs (default: the "
        "scenario's, aryl; fifo for baseline), tiresias (least attained service on "
        "any trace, on the training servers, nothing lent; with --pollux-workload "
        "tiresias or pollux, default tiresias), or a policy of your own "
        "(docs/policies.md): module:Class or path.py:Class names a class (built "
        "without arguments) or an object with an allocate(state, epoch) method; the "
        "spec runs that file's or module's code",
    )
    p.add_argument(
        "--reclaim",
        choices=SIMULATION_RECLAIM_POLICIES,
        default="aryl",
        help="which loaned servers to return (default aryl; least-work: the least "
        "unsaved progress and restart overhead thrown away)",
    )
    p.add_argument(
        "--scenario",
        choices=["baseline", "basic", "advanced", "ideal"],
        default="basic",
        help="which jobs are elastic/hetero (default basic: elastic jobs hold 36%% of the "
        "GPU-time); baseline also turns loaning off",
    )
    _elastic_arguments(p)
    p.add_argument(
        "--pollux-workload",
        metavar="FILE|N",
        type=_pollux_workload,
        help="run a Pollux artifact workload (name,time,application,num_replicas,"
        "batch_size) instead of JOBS.csv; N in 1..8 picks an embedded one",
    )
    p.add_argument(
        "--pollux-cluster",
        default=(16, 4),
        metavar="NODESxGPUS",
        type=_pollux_cluster,
        help="the node cluster of --pollux-workload (default 16x4, the artifact's)",
    )
    p.set_defaults(run=simulate)

    p = sub.add_parser(
        "sweep",
        help="simulate every combination of a parameter grid, on Ray",
        description="Run one simulation per combination of the --grid values (on top "
        "of the trace options and --set values) on a local Ray, or an existing Ray "
        "cluster with --address; print one table (a row per run, with its jobs left "
        "unfinished and the GPU-hours lent and used on loan) and write sweep.parquet "
        "and sweep.csv (the same rows). With a seed axis (--grid seed=0,1,2) it also "
        "prints each point's mean over its seeds with a 95% Student-t interval "
        "(or, where there is none, why: one seed, or no spread) and writes them to "
        "sweep_points.csv. Finished runs are cached by a fingerprint of trace, "
        "parameters and "
        "aryl version: a repeated sweep reads them back, an interrupted one resumes. "
        "Parameters: " + SWEEP_PARAMETERS + " and any aryl.sim.Config "
        "field (headroom, lend_hold, loaning, ...); see aryl.sim.PARAMETERS. A "
        "policy of your own runs beside the built-ins as module:Class or "
        "path.py:Class, e.g. --grid policy=aryl,mine.py:Las (each worker imports "
        "it; its code and settings are part of the cache key).",
    )
    _trace_arguments(p, "aryl-results/sweep")
    p.add_argument(
        "--grid",
        "-g",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a parameter and its values (repeat for more; every combination runs), "
        "e.g. --grid inference_servers=0,16,32,64 --grid headroom=0,0.2 --grid "
        "seed=0,1,2; GPU speeds as --gpu-speed takes them, one run's types joined "
        "by ';': --grid 'gpu_speed=T4=0.25,T4=1;P100=0.5' (or JSON: "
        '--grid \'gpu_speed={"T4":0.25},{"T4":1}\')',
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter fixed for every run, e.g. --set scenario=baseline",
    )
    p.add_argument(
        "--first-jobs",
        type=_number(int, "--first-jobs", 1, MAX_INT),
        metavar="N",
        help="use only the trace's first N jobs",
    )
    _engine_arguments(p, "auto", "auto: Ray if installed, else local threads")
    p.set_defaults(run=sweep)

    p = sub.add_parser(
        "demo",
        help="reclaim loaned servers on a packed cluster under every policy",
        description="Build a seeded cluster whose job sizes follow the ITP trace, then "
        "reclaim on-loan servers under the aryl, scf, random, exact, least-work and "
        "exact-work policies and print how many jobs each preempts.",
    )
    p.add_argument(
        "--training-servers",
        type=_number(int, "--training-servers", 0, MAX_INT),
        default=32,
        metavar="N",
        help="training servers (8 GPUs each; default 32)",
    )
    p.add_argument(
        "--loaned-servers",
        type=_number(int, "--loaned-servers", 0, MAX_INT),
        default=48,
        metavar="N",
        help="inference servers on loan (8 GPUs each; default 48)",
    )
    p.add_argument(
        "--reclaim",
        type=_number(int, "--reclaim", 0, MAX_INT),
        nargs="+",
        default=[4, 12, 24],
        metavar="N",
        help="how many servers to reclaim, one run each (default 4 12 24)",
    )
    p.add_argument(
        "--seed",
        type=_number(int, "--seed", 0, MAX_SEED),
        default=0,
        help="seed of the cluster and of 'random'",
    )
    _output_arguments(p)
    p.set_defaults(run=demo)

    p = sub.add_parser(
        "traces",
        help="write the embedded traces as example files",
        description="aryl traces export [FOLDER]: write the embedded ITP cluster04 jobs "
        "(jobs.csv, the common CSV format) and Alibaba-2018 inference load (load.csv) to "
        "FOLDER, as examples of the files `aryl compare JOBS.csv --load LOAD.csv` takes.",
    )
    p.add_argument("action", choices=["export"], help="what to do: export")
    p.add_argument(
        "folder",
        nargs="?",
        default="aryl-results/traces",
        metavar="FOLDER",
        type=_writable_folder("FOLDER"),
        help="where the files go (default aryl-results/traces)",
    )
    _output_arguments(p)
    p.set_defaults(run=export_traces)

    from .live import add_parser as add_live  # aryl live (issue 34)

    add_live(sub, _output_arguments)
    return parser
