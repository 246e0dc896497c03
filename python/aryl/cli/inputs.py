"""The run's inputs from the options' values: the trace's frames, the cluster (sized
with ``auto``), the simulator config."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Tuple,
    Union,
)

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from ..jobtable import JobTable

from ..defaults import DEFAULT_GPU_SPEED
from .console import Console

#: How the embedded trace is named in messages and provenance.
EMBEDDED = "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)"


@dataclass(frozen=True)
class TraceFiles:
    """The trace the options name: JOBS and ``--load`` (None: the embedded ones),
    ``--trace-format`` and ``--drop-invalid``."""

    jobs: Optional[str] = None
    load: Optional[str] = None
    format: str = "aryl"
    drop_invalid: bool = False


def trace_frames(files: TraceFiles, console: Console) -> Tuple[Any, Any, str]:
    """(job frame, load frame or None, description): the trace before ``to_jobs``."""
    from .. import traces

    load: Any
    if files.jobs is None:
        job_frame, load = traces.load_default()
        where = EMBEDDED
        if files.load not in (None, "embedded"):
            load = traces.read_load(files.load)
    else:
        job_frame = read_jobs(files, console)
        if is_pods(files.load):
            job_frame, load = inference_pods(files, job_frame, console)
        else:
            load = read_load(files.load)
        where = str(files.jobs) + _with_load(files.load)
    return job_frame, load, where


def is_pods(load: Optional[str]) -> bool:
    """Whether ``--load`` names the pod list's own inference pods (``pods:LS``)."""
    return bool(load) and str(load).startswith("pods:")


def inference_pods(files: TraceFiles, frame: Any, console: Console) -> Tuple[Any, Any]:
    """``--load pods:QOS``: the job frame without those pods and their GPU occupancy as
    the load (``traces.pods.split_inference_pods``), said in one line."""
    from ..traces.pods import split_inference_pods

    assert files.load is not None
    if files.format != "alibaba-2023":
        raise ValueError(
            f"--load {files.load}: a pod list's inference pods are the load only for "
            "an Alibaba GPU 2023 pod list (--trace-format alibaba-2023)"
        )
    qos = files.load.split(":", 1)[1].split(",")
    jobs, load = split_inference_pods(files.jobs, frame, qos)
    console.say(
        f"The {len(frame) - len(jobs):,} pods of qos {', '.join(qos)} are the inference "
        f"load (the GPUs they hold over their peak, mean {load['load'].mean():.2f}), not "
        f"jobs: {len(jobs):,} jobs left."
    )
    return jobs, load


def read_load(load: Optional[str]) -> Any:
    """The load frame ``--load`` names: a file, ``embedded`` (the embedded Alibaba-2018
    series; ``simulate`` repeats it to cover the trace) or None (no loaning)."""
    from .. import traces

    if load is None:
        return None
    if is_pods(load):
        raise ValueError(
            f"--load {load} takes the pod list's own inference pods: aryl compare and "
            "aryl simulate take it; give a load file here"
        )
    return traces.embedded_load() if load == "embedded" else traces.read_load(load)


def _with_load(load: Optional[str]) -> str:
    """How the inputs name the load: " with load F", or that there is none."""
    if load == "embedded":
        return " with the embedded Alibaba-2018 load (CC-BY-4.0)"
    if load is not None and is_pods(load):
        return f" with its {load.split(':', 1)[1]} pods as the inference load"
    return f" with load {load}" if load else " (no --load: no loaning)"


def read_jobs(files: TraceFiles, console: Console) -> Any:
    """``traces.read`` of the JOBS file in its format; rows skipped by
    ``drop_invalid`` and records an importer leaves out are each reported in one line on
    stderr (not as a Python warning), unless quiet; a file that may have been cut
    short (``traces.CutShortWarning``) stays a warning."""
    from .. import traces

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the counts are in the frame's attrs, below
        frame = traces.read(
            files.jobs, format=files.format, drop_invalid=files.drop_invalid
        )
    for each in caught:  # not a count: a file that may have been cut short
        if issubclass(each.category, traces.CutShortWarning):
            warnings.warn(each.message, stacklevel=2)
    skipped = int(frame.attrs.get("skipped", 0) or 0)
    if skipped and not console.quiet:
        reasons = ", ".join(
            f"{k}: {v:,}" for k, v in frame.attrs["skip_reasons"].items()
        )
        print(
            f"aryl: left out {skipped:,} record{'s' * (skipped != 1)} of {files.jobs}, "
            f"not GPU jobs aryl can replay ({reasons})",
            file=sys.stderr,
        )
    dropped = int(frame.attrs.get("dropped", 0) or 0)
    if dropped and not console.quiet:
        reasons = ", ".join(
            f"{k}: {v}" for k, v in frame.attrs.get("drop_reasons", {}).items()
        )
        total = len(frame) + dropped + skipped
        print(
            f"aryl: skipped {dropped:,} invalid row{'s' * (dropped != 1)} "
            f"of {total:,} in "
            f"{files.jobs} ({reasons})",
            file=sys.stderr,
        )
    return frame


Count = Union[int, str]  # a server count or "auto"


def cluster_of(
    training: Count,
    inference: Count,
    jobs: JobTable,
    utilisation: float,
    config: Mapping[str, Any],
    console: Console,
) -> Any:
    """The cluster of the server counts, sizing ``auto`` with ``aryl.sim.size_cluster``
    (the FIFO Baseline at ``utilisation`` under ``config``)."""
    from .. import sim
    from ..studies.sizing import inference_count

    if training != "auto":
        servers = int(training)
        loanable = inference_count(servers) if inference == "auto" else int(inference)
        chosen = sim.Cluster(servers, loanable)  # a size beyond the limits stops here
        console.say(
            f"Cluster: {servers} training + {loanable} inference 8-GPU servers."
        )
        return chosen
    sizing = sim.size_cluster(
        jobs,
        utilisation=utilisation,
        inference_servers=None if inference == "auto" else int(inference),
        config=sizing_config(config),
    )
    ratio = "at the paper's 520:443 ratio" if inference == "auto" else "as given"
    console.say(
        f"Cluster: {sizing.training_servers} training + "
        f"{sizing.inference_servers} inference 8-GPU "
        f"servers (inference {ratio}): sized so that the FIFO Baseline keeps "
        f"{sizing.gpu_usage_training:.1%} of the training GPUs busy "
        f"(target {sizing.target:.0%}, "
        f"the paper's Baseline; {len(sizing.evaluated)} Baseline runs).",
    )
    return sizing.cluster


def servers_of(
    path: str,
    inference: Optional[Iterable[str]],
    config: Mapping[str, Any],
    console: Console,
) -> List[Any]:
    """The servers of ``--servers`` (``aryl.traces.read_servers``: aryl's server CSV
    or the release's node list, whose pools ``--inference-types`` chooses), said in
    one line: each pool's servers and GPUs by type.

    GPU types that ``config``'s speeds do not list are named here, in one warning
    (``aryl.engine.gpu_types.unlisted_gpu_types``); each run of the command finds
    them again (and records them in its provenance), silenced for the rest of the
    command (``main`` restores the warning filters)."""
    from .. import traces
    from ..engine.gpu_types import UNLISTED_WARNING, unlisted_gpu_types

    servers = traces.read_servers(
        path, inference=None if inference is None else tuple(inference)
    )
    pools = []
    for pool in ("training", "inference"):
        mine = [s for s in servers if s.pool == pool]
        by_type: Dict[str, int] = {}
        for s in mine:
            by_type[s.gpu_type] = by_type.get(s.gpu_type, 0) + s.gpus
        kinds = ", ".join(f"{n:,} {t}" for t, n in sorted(by_type.items()))
        pools.append(
            f"{len(mine):,} {pool} server{'s' * (len(mine) != 1)}"
            + (f" ({kinds} GPUs)" if mine else "")
        )
    console.say(f"Cluster: {path}: {' + '.join(pools)}.")
    speeds = config.get("gpu_speed", DEFAULT_GPU_SPEED)
    if unlisted_gpu_types(servers, speeds, stacklevel=2):
        warnings.filterwarnings("ignore", UNLISTED_WARNING, UserWarning)
    return servers


def config_fields(
    headroom: float,
    lend_hold: Optional[float] = None,
    gpu_speed: Optional[Iterable[Mapping[str, float]]] = None,
    arrival_scale: Optional[float] = None,
    start_on_loan: bool = False,
) -> Dict[str, Any]:
    """The ``Config`` fields the options set: ``lend_hold`` and ``arrival_scale`` only
    when given (else ``Config``'s default applies), GPU speeds only when some
    ``--gpu-speed`` is given, ``start_on_loan`` only when on (so that runs without it
    keep their cache keys)."""
    config: Dict[str, Any] = {"headroom": headroom}
    if lend_hold is not None:
        config["lend_hold"] = lend_hold
    if gpu_speed:
        config["gpu_speed"] = gpu_speeds(gpu_speed)
    if arrival_scale is not None:
        config["arrival_scale"] = arrival_scale
    if start_on_loan:
        config["start_on_loan"] = True
    return config


def sizing_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """``config`` for sizing with ``auto``: arrivals as recorded, so that
    ``--arrival-scale`` scales the offered load on the cluster sized for the trace
    (rather than a cluster sized anew for each load)."""
    return {k: v for k, v in config.items() if k != "arrival_scale"}


def gpu_speeds(given: Iterable[Mapping[str, float]]) -> Dict[str, float]:
    """The paper's GPU speeds, overridden by each ``--gpu-speed`` (the last wins)."""
    speeds = dict(DEFAULT_GPU_SPEED)
    for each in given:
        speeds.update(each)
    return speeds


def sweep_trace(files: TraceFiles, console: Console) -> Tuple[Dict[str, Any], str]:
    """({name: (job frame, load frame or None)} or {} for the embedded trace, description).

    Frames, not jobs: each run converts them with its own ``any_type_share`` and ``seed``.
    """
    from .. import traces

    if files.jobs is None and files.load in (None, "embedded"):
        return {}, EMBEDDED
    if files.jobs is None:
        frame, name, where = (
            traces.load_default()[0],
            "embedded",
            "the embedded ITP cluster04 jobs",
        )
    else:
        frame = read_jobs(files, console)
        name, where = Path(files.jobs).name, str(files.jobs)
    where += _with_load(files.load)
    return {
        name + (f"+{Path(files.load).name}" if files.load else ""): (
            frame,
            read_load(files.load),
        )
    }, where


def size_auto(
    base: Dict[str, Any],
    grid: Mapping[str, Any],
    given: Mapping[str, Any],
    *,
    any_type_share: float,
    seed: int,
    utilisation: float,
    config: Mapping[str, Any],
    console: Console,
) -> None:
    """Replace ``auto`` server counts in ``base`` (not varied by the grid) once, before the runs:
    training by ``aryl.sim.size_cluster``, inference at the paper's ratio to training
    (nothing when ``base`` has a server list, ``servers``).

    ``given`` is ``sweep_trace``'s; the sizing run's jobs are built from its frame with
    ``any_type_share`` and ``seed``, the Baseline at ``utilisation`` under ``config``.
    """
    from .. import sim, traces
    from ..engine.runs import trace_jobs
    from ..studies.sizing import inference_count

    if "servers" in base:  # a server list: nothing to size
        return
    training = base["training_servers"] == "auto" and "training_servers" not in grid
    inference = base["inference_servers"] == "auto" and "inference_servers" not in grid
    if inference and not training and "training_servers" in grid:
        raise ValueError(
            "--grid over training_servers needs --inference-servers (or a grid over it)"
        )
    if training:
        frame = next(iter(given.values()))[0] if given else traces.load_default()[0]
        first = base.get("first_jobs")
        jobs = trace_jobs(
            frame,
            None if first is None else int(first),
            any_type_share=any_type_share,
            seed=seed,
        )
        fixed = (
            None if base["inference_servers"] == "auto" else base["inference_servers"]
        )
        sizing = sim.size_cluster(
            jobs,
            utilisation=utilisation,
            inference_servers=fixed,
            config=sizing_config(config),
        )
        base["training_servers"] = sizing.cluster.training_servers
        if inference:
            base["inference_servers"] = sizing.cluster.inference_servers
        console.say(
            f"Cluster: {base['training_servers']} training servers, sized so the FIFO "
            f"Baseline keeps {sizing.gpu_usage_training:.0%} of the training GPUs "
            "busy.",
        )
    elif inference:
        base["inference_servers"] = inference_count(base["training_servers"])
