"""The options several ``aryl`` commands share: the trace and its cluster, the
output, the plots, the elastic jobs, per-team groups and where runs execute."""

from __future__ import annotations

import argparse
from typing import Any, Optional, Tuple, get_args

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
)
from ..typing import ElasticSelection
from ..validation import MAX_INT, MAX_SEED, MAX_WINDOWS
from .arguments import (
    _cache_folder,
    _elastic_range,
    _gpu_speeds,
    _load_source,
    _number,
    _plot_formats,
    _readable_file,
    _servers_or_auto,
    _window,
    _writable_folder,
)

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
        "--start-on-loan",
        action="store_true",
        help="a job that would wait for its fastest GPU type starts on free slower "
        "(loaned) GPUs instead, and moves to its type once that has room, if that pays "
        "(restart overhead included; its progress kept); aryl.sim.Config.start_on_loan, "
        "default off",
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


def _window_arguments(p: argparse.ArgumentParser, windows: str) -> None:
    """``--windows K`` (what the command does with them: ``windows``) and ``--warmup``."""
    p.add_argument(
        "--windows",
        type=_number(int, "--windows", 1, MAX_WINDOWS),
        metavar="K",
        help=windows,
    )
    p.add_argument(
        "--warmup",
        type=_window,
        metavar="DURATION",
        help="with --windows: each window's run starts this long before it with the "
        "jobs submitted since, not counted (default 1d; e.g. 12h, 0)",
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
