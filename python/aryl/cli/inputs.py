"""The run's inputs from the options: jobs and load from a trace, the cluster
(sized with ``auto``), the simulator config."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Tuple,
)

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from ..jobtable import JobTable

from ..defaults import DEFAULT_GPU_SPEED
from .output import _say


def _inputs(args: argparse.Namespace) -> Tuple[JobTable, Any, str]:
    """(jobs, load frame or None, description) from the arguments or the embedded trace."""
    from ..sim.runs import trace_jobs

    job_frame, load, where = _trace_frames(args)
    jobs = trace_jobs(job_frame, any_type_share=args.any_type_share, seed=args.seed)
    # A load shorter than the trace is extended inside sim.simulate, as through the API.
    return jobs, load, where


def _trace_frames(args: argparse.Namespace) -> Tuple[Any, Any, str]:
    """(job frame, load frame or None, description): the trace before ``to_jobs``."""
    from .. import traces

    load: Any
    if args.jobs is None:
        job_frame, load = traces.load_default()
        where = (
            "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)"
        )
        if args.load is not None:
            load = traces.read_load(args.load)
    else:
        job_frame = _read_jobs(args)
        load = traces.read_load(args.load) if args.load is not None else None
        where = str(args.jobs) + (
            f" with load {args.load}" if args.load else " (no --load: no loaning)"
        )
    return job_frame, load, where


def _read_jobs(args: argparse.Namespace) -> Any:
    """``traces.read`` of JOBS in ``--trace-format``; rows skipped by ``--drop-invalid``
    and records an importer leaves out are each reported in one line on stderr (not as
    a Python warning), unless ``--quiet``."""
    from .. import traces

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the count is in the frame's attrs, said below
        frame = traces.read(
            args.jobs, format=args.trace_format, drop_invalid=args.drop_invalid
        )
    skipped = int(frame.attrs.get("skipped", 0) or 0)
    if skipped and not args.quiet:
        reasons = ", ".join(
            f"{k}: {v:,}" for k, v in frame.attrs["skip_reasons"].items()
        )
        print(
            f"aryl: left out {skipped:,} record{'s' * (skipped != 1)} of {args.jobs}, "
            f"not GPU jobs aryl can replay ({reasons})",
            file=sys.stderr,
        )
    dropped = int(frame.attrs.get("dropped", 0) or 0)
    if dropped and not args.quiet:
        reasons = ", ".join(
            f"{k}: {v}" for k, v in frame.attrs.get("drop_reasons", {}).items()
        )
        total = len(frame) + dropped + skipped
        print(
            f"aryl: skipped {dropped:,} invalid row{'s' * (dropped != 1)} "
            f"of {total:,} in "
            f"{args.jobs} ({reasons})",
            file=sys.stderr,
        )
    return frame


def _cluster(args: argparse.Namespace, jobs: Any) -> Any:
    """The cluster of the arguments, sizing ``auto`` counts with ``aryl.sim.size_cluster``."""
    from .. import sim

    training, inference = args.training_servers, args.inference_servers
    if training != "auto":
        if inference == "auto":
            inference = sim.sizing.inference_count(training)
        _say(
            args, f"Cluster: {training} training + {inference} inference 8-GPU servers."
        )
        return sim.Cluster(training, inference)
    sizing = sim.size_cluster(
        jobs,
        utilisation=args.utilisation,
        inference_servers=None if inference == "auto" else inference,
        config=_config(args),
    )
    ratio = "at the paper's 520:443 ratio" if inference == "auto" else "as given"
    _say(
        args,
        f"Cluster: {sizing.training_servers} training + "
        f"{sizing.inference_servers} inference 8-GPU "
        f"servers (inference {ratio}): sized so that the FIFO Baseline keeps "
        f"{sizing.gpu_usage_training:.1%} of the training GPUs busy "
        f"(target {sizing.target:.0%}, "
        f"the paper's Baseline; {len(sizing.evaluated)} Baseline runs).",
    )
    return sizing.cluster


def _config(args: argparse.Namespace) -> Dict[str, Any]:
    """The ``Config`` fields the options set."""
    config: Dict[str, Any] = {"headroom": args.headroom}
    if args.lend_hold is not None:  # else Config's default applies
        config["lend_hold"] = args.lend_hold
    if args.gpu_speed:
        config["gpu_speed"] = _gpu_speed(args)
    return config


def _gpu_speed(args: argparse.Namespace) -> Dict[str, float]:
    """The paper's GPU speeds, overridden by each ``--gpu-speed`` (the last wins)."""
    speeds = dict(DEFAULT_GPU_SPEED)
    for given in args.gpu_speed or []:
        speeds.update(given)
    return speeds


def _sweep_trace(args: argparse.Namespace) -> Tuple[Dict[str, Any], str]:
    """({name: (job frame, load frame or None)} or {} for the embedded trace, description).

    Frames, not jobs: each run converts them with its own ``any_type_share`` and ``seed``.
    """
    from .. import traces

    if args.jobs is None and args.load is None:
        return (
            {},
            "the embedded ITP cluster04 trace (MIT) and Alibaba-2018 load (CC-BY-4.0)",
        )
    if args.jobs is None:
        frame, name, where = (
            traces.load_default()[0],
            "embedded",
            "the embedded ITP cluster04 jobs",
        )
    else:
        frame = _read_jobs(args)
        name, where = Path(args.jobs).name, str(args.jobs)
    load = traces.read_load(args.load) if args.load is not None else None
    where += f" with load {args.load}" if args.load else " (no --load: no loaning)"
    return {
        name + (f"+{Path(args.load).name}" if args.load else ""): (frame, load)
    }, where


def _size_auto(
    args: argparse.Namespace,
    base: Dict[str, Any],
    grid: Dict[str, Any],
    given: Dict[str, Any],
) -> None:
    """Replace ``auto`` server counts in ``base`` (not varied by the grid) once, before the runs:
    training by ``aryl.sim.size_cluster``, inference at the paper's ratio to training."""
    from .. import sim, traces
    from ..sim.runs import trace_jobs

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
            any_type_share=args.any_type_share,
            seed=args.seed,
        )
        fixed = (
            None if base["inference_servers"] == "auto" else base["inference_servers"]
        )
        sizing = sim.size_cluster(
            jobs,
            utilisation=args.utilisation,
            inference_servers=fixed,
            config=_config(args),
        )
        base["training_servers"] = sizing.cluster.training_servers
        if inference:
            base["inference_servers"] = sizing.cluster.inference_servers
        _say(
            args,
            f"Cluster: {base['training_servers']} training servers, sized so the FIFO "
            f"Baseline keeps {sizing.gpu_usage_training:.0%} of the training GPUs "
            "busy.",
        )
    elif inference:
        base["inference_servers"] = sim.sizing.inference_count(base["training_servers"])
