"""Alibaba GPU 2023 (ATC'23 "Beware of Fragmentation", ``alibaba/clusterdata``
``cluster-trace-gpu-v2023``): ``openb_pod_list_*.csv``."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import pandas as pd

from ..reading import MAX_JOB_GPUS, MAX_TIME_S, _numbers, _tables
from .common import (
    ANY,
    NEVER_STARTED,
    NO_GPUS,
    STILL_RUNNING,
    ZERO_RUN,
    Collector,
    empty_reasons,
    first_skip,
    gpu_types,
    whole,
)

#: The columns of ``openb_pod_list_*.csv`` the mapping reads (the release has also
#: ``cpu_milli``, ``memory_mib``, ``gpu_milli``, ``qos``).
OPENB_COLUMNS = (
    "name",
    "num_gpu",
    "gpu_spec",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)

#: The release's pod phases (``pod_phase``), as it spells them; read in any case and
#: spacing (``running``, `` RUNNING ``), kept as spelled here.
POD_PHASES = ("Running", "Succeeded", "Failed", "Pending")
_PHASES = {p.casefold(): p for p in POD_PHASES}
_EXPECTED_PHASE = f"expected {', '.join(POD_PHASES[:-1])} or {POD_PHASES[-1]}"


#: The time columns a pod list needs to be replayed.
_TIMES = {"creation_time", "deletion_time", "scheduled_time"}


def _refuse(header: List[str]) -> Optional[str]:
    """Why a file of the release with this header cannot be replayed (None: it can,
    or it is not one of the release's other files)."""
    if "sn" in header and "name" not in header:
        return (
            "a node list (openb_node_list_*.csv: the release's servers), not a pod "
            "list: give it as the cluster, --servers FILE (aryl.traces.read_nodes in "
            "Python), and a pod list (openb_pod_list_default.csv) as JOBS"
        )
    if "num_gpu" in header and not _TIMES & set(header):
        return (
            "a pod list without times (the release's openb_pod_list_multigpu*.csv are "
            "for static packing: no creation_time, scheduled_time or deletion_time), "
            "so it cannot be replayed; use openb_pod_list_default.csv or another list "
            "with times"
        )
    return None


def read_alibaba_2023(source: Any, *, drop_invalid: bool = False) -> pd.DataFrame:
    """Read an Alibaba GPU 2023 pod list (``openb_pod_list_default.csv`` or any
    ``openb_pod_list_*.csv``: one Kubernetes pod a row, with a header line).

    ``job_id`` is ``name``; ``submit_time_s`` is ``creation_time`` from the first kept
    pod's; ``num_gpus`` is ``num_gpu`` (a pod that asks for a share of one GPU,
    ``gpu_milli`` < 1000, gets the whole GPU: aryl allocates whole GPUs);
    ``duration_s`` is ``deletion_time - scheduled_time``; ``gpu_type`` is the type aryl
    has that every type ``gpu_spec`` allows is (``V100`` for ``V100M16|V100M32``,
    ``T4``), ``any`` for an empty ``gpu_spec`` (the release: any type will do; such a
    job may run on a loaned server, ``to_jobs``), else ``unknown`` (``P100``, ``G2``,
    ``G3``, mixes); ``vc`` is ``qos`` when the file has it (the QoS class, the
    release's one way to group its pods: ``--by vc`` answers per class).
    Pods of every ``pod_phase`` are kept; a phase is one of ``POD_PHASES`` in any case
    and spacing (``running`` is ``Running``, kept as the release spells it), and any
    other value is refused. Left out and counted: CPU pods (``num_gpu`` 0), pods
    never scheduled (no ``scheduled_time``: they were pending), pods still running
    when the trace ends, and pods that ran 0 s. **Censoring** goes by time, not by
    phase: the release's ``deletion_time`` is when a pod was deleted, and the
    trace's end is its last valid ``deletion_time``, in any row (the time it was
    collected: the pods still there then carry it), so a pod deleted then, or with no
    ``deletion_time``, had not finished and its run time is not known, whatever
    its ``pod_phase`` says; a pod deleted earlier ended then, whatever its phase
    (a ``Running`` pod deleted before the end was stopped while running: it ran
    from ``scheduled_time`` to ``deletion_time``). The other columns are kept
    (``gpu_spec`` as text).

    Parameters
    ----------
    source
        A path or a file object (text or binary); gzip is detected by its magic bytes.
    drop_invalid
        As in ``read_jobs``: skip rows with a problem (counted) instead of raising.

    Returns
    -------
    pandas.DataFrame
        The job frame of ``read_jobs``; ``.attrs`` adds ``format``, ``skipped`` and
        ``skip_reasons``.

    Raises
    ------
    TraceError
        Naming the file, the row (with its line) and the column: a missing column; an
        empty ``name``; a ``pod_phase`` that is not one of ``POD_PHASES`` (in any
        case); a non-integer or negative ``num_gpu``; an empty, non-numeric or
        negative ``creation_time``; a non-numeric or negative ``scheduled_time`` or
        ``deletion_time``, or a ``deletion_time`` before the ``scheduled_time``; values
        beyond the model's limits; a repeated ``name``; a row with the wrong number of
        fields. A file of the release that cannot be replayed (a node list, a
        ``multigpu`` pod list without times) is refused, saying why.
    """
    pods = Collector("", "name", drop_invalid)
    last = -np.inf  # the trace's end: its last deletion_time
    for chunk in _tables(source, OPENB_COLUMNS, refuse=_refuse):
        pods.name = chunk.name
        frame = chunk.frame
        specs = frame["gpu_spec"].str.split("|").explode()
        gpus, why_gpus = _numbers(frame["num_gpu"], integer=True, high=MAX_JOB_GPUS)
        created, why_created = _numbers(frame["creation_time"], high=MAX_TIME_S)
        unscheduled = (frame["scheduled_time"] == "").to_numpy()
        undeleted = (frame["deletion_time"] == "").to_numpy()
        start, why_start = _numbers(
            frame["scheduled_time"].where(~unscheduled, "0"), high=MAX_TIME_S
        )
        end, why_end = _numbers(
            frame["deletion_time"].where(~undeleted, "0"), high=MAX_TIME_S
        )
        phase = frame["pod_phase"].str.casefold().map(_PHASES)
        why_phase = np.where(
            phase.isna(),
            np.where(
                frame["pod_phase"] == "",
                f"empty value ({_EXPECTED_PHASE})",
                f"not a pod phase of the release ({_EXPECTED_PHASE}, in any case)",
            ),
            "",
        ).astype(object)
        ran = ~unscheduled & ~undeleted
        with np.errstate(invalid="ignore"):
            before = ran & (end < start)
            duration = np.where(ran, end - start, 0.0)
        good = pods.check(
            chunk,
            {
                "name": empty_reasons(frame["name"]),
                "pod_phase": why_phase,
                "num_gpu": why_gpus,
                "creation_time": why_created,
                "scheduled_time": why_start,
                "deletion_time": np.where(
                    before, "before scheduled_time", why_end
                ).astype(object),
            },
        )
        skip = first_skip(
            [
                (gpus == 0, NO_GPUS),
                (unscheduled, NEVER_STARTED),
                (undeleted, STILL_RUNNING),
                (duration == 0, ZERO_RUN),
            ],
        )
        out = frame.drop(columns=["num_gpu"]).assign(
            pod_phase=phase.to_numpy(),
            job_id=frame["name"],
            # the release's one way to group its pods: their QoS class
            **({"vc": frame["qos"]} if "qos" in frame else {}),
            submit_time_s=created,
            num_gpus=whole(gpus),
            duration_s=duration,
            # an empty gpu_spec: the release's "any type will do"
            gpu_type=np.where(
                frame["gpu_spec"].str.strip() == "",
                ANY,
                gpu_types(specs, specs.index).to_numpy(),
            ),
        )
        pods.keep(chunk, good, skip, out.drop(columns=["name"]))
        # the trace's end: its last deletion_time, in any row that has a valid one
        ended = (why_end == "") & ~undeleted
        last = max(last, end[ended].max(initial=-np.inf))

    def still_running(jobs: pd.DataFrame) -> np.ndarray:
        # by time, whatever the phase: deleted at the trace's end is not finished
        running: np.ndarray = pd.to_numeric(jobs["deletion_time"]).to_numpy() >= last
        return running

    return pods.frame("alibaba-2023", text=("gpu_spec",), still_running=still_running)
