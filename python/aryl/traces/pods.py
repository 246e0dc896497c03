"""A pod list's inference pods as the inference load, the rest as training jobs.

The Alibaba GPU 2023 release (``read_alibaba_2023``) mixes training-like pods with
latency-sensitive services (``qos`` ``LS``: inference, 69% of its GPU-time). For the
loaning question those services are the inference cluster's demand, not jobs to
schedule: ``split_inference_pods`` takes the pods of the given ``qos`` classes out of
the job frame and turns the GPUs they hold into a load series: at every ``step``
seconds, the GPUs held by those pods over the most they ever held (1.0 at their peak,
when nothing could be lent). Pods still running when the trace ends hold their GPUs to
its end (the importer leaves them out of the jobs, but a service that never stopped is
the load's largest part). Times share the job frame's origin: its first kept pod's
``creation_time``.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np
import pandas as pd

#: The release's latency-sensitive class: its inference services.
INFERENCE_QOS = ("LS",)

#: Seconds between the load series' points (the embedded load's step).
LOAD_STEP = 300.0


def split_inference_pods(
    source: Any,
    frame: pd.DataFrame,
    qos: Sequence[str] = INFERENCE_QOS,
    step: float = LOAD_STEP,
) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """``(jobs, load)``: ``frame`` (``read(source, format="alibaba-2023")``) without
    the pods whose ``qos`` is in ``qos``, and those pods' GPU occupancy as a load frame
    (``time_s``, ``load`` in [0, 1]) read from ``source``, the pod list itself (every
    pod of those classes, those still running included).

    Raises ``ValueError`` when ``frame`` has no ``qos`` column, when ``qos`` names a
    class the pod list lacks (listing those it has), or when those pods hold no GPU.
    """
    wanted = [str(q).strip() for q in qos]
    if "qos" not in frame.columns:
        raise ValueError(
            "inference pods need the pod list's qos column (an Alibaba GPU 2023 pod "
            "list, --trace-format alibaba-2023)"
        )
    pods = pd.read_csv(source, dtype={"qos": str}, keep_default_na=False)
    have = sorted(set(pods["qos"].str.strip()) - {""})
    missing = [q for q in wanted if q not in have]
    if missing:
        raise ValueError(
            f"no pod of qos {', '.join(missing)} in {source}; its classes: "
            f"{', '.join(have)}"
        )
    origin = float(pd.to_numeric(frame["creation_time"]).min())
    load = _occupancy(pods[pods["qos"].str.strip().isin(wanted)], origin, step)
    jobs = frame[~frame["qos"].astype(str).str.strip().isin(wanted)]
    jobs = jobs.reset_index(drop=True)
    jobs.attrs = dict(frame.attrs)
    return jobs, load


def _occupancy(pods: pd.DataFrame, origin: float, step: float) -> pd.DataFrame:
    """GPUs held by ``pods`` every ``step`` seconds from ``origin``, over their peak."""
    gpus = pd.to_numeric(pods["num_gpu"], errors="coerce").fillna(0).to_numpy()
    start = pd.to_numeric(pods["scheduled_time"], errors="coerce").to_numpy()
    end = pd.to_numeric(pods["deletion_time"], errors="coerce").to_numpy()
    held = (gpus > 0) & np.isfinite(start)  # a pod never scheduled held nothing
    last = float(np.nanmax(np.r_[end[np.isfinite(end)], start[held]]))
    running = pods["pod_phase"].str.strip().str.casefold().eq("running").to_numpy()
    end = np.where(~np.isfinite(end) | (running & (end >= last)), np.inf, end)
    times = np.arange(0.0, max(last - origin, 0.0) + step, step)
    at = times + origin
    # held over [start, end): +gpus from the first point at or after the start, -gpus
    # from the first at or after the end, summed along the series
    change = np.zeros(len(times) + 1)
    np.add.at(change, np.searchsorted(at, start[held], "left"), gpus[held])
    np.add.at(change, np.searchsorted(at, end[held], "left"), -gpus[held])
    count = np.cumsum(change)[:-1]
    peak = float(count.max(initial=0.0))
    if peak <= 0:
        raise ValueError("the inference pods hold no GPU at any time of the trace")
    return pd.DataFrame({"time_s": times, "load": count / peak})
