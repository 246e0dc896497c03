"""The GPU types of a run: the types it has, those ``gpu_speed`` gives no speed
(``unlisted_gpu_types``, which warns) and the types each job's workers ran on
(``job_gpu_types``)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import (
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

import numpy as np
import pandas as pd

from ..defaults import (
    DEFAULT_GPU_SPEED,
    PUBLISHED_GPU_SPEED,
    UNLISTED_GPU_SPEED,
    with_published_speeds,
)
from ..jobtable import JobTable
from ..model import Server
from .config import Config

#: The start of ``unlisted_gpu_types``' warning, as ``warnings.filterwarnings`` takes it.
UNLISTED_WARNING = r"GPU types? .* no speed in gpu_speed"
#: GPU types that run at their own speed when ``gpu_speed`` does not list them: the
#: reference, the V100 (1.0 by definition).
REFERENCE_GPUS = frozenset(
    t for t, v in DEFAULT_GPU_SPEED.items() if v == UNLISTED_GPU_SPEED
)


def gpu_types(servers: Sequence[Server], jobs: JobTable) -> List[str]:
    """The GPU types of a run: its servers' and those its jobs require."""
    required = pd.unique(pd.Series(jobs.column("gpu_type"), dtype=object).dropna())
    return sorted({s.gpu_type for s in servers} | {str(t) for t in required if t})


def published_speeds(config: Config, servers: Sequence[Server]) -> Config:
    """``config`` with the published speed of each of the servers' GPU types its
    ``gpu_speed`` does not list (``aryl.defaults.PUBLISHED_GPU_SPEED``), so that the
    run's saved config names every speed it ran at."""
    speeds = with_published_speeds(config.gpu_speed, (s.gpu_type for s in servers))
    if speeds == dict(config.gpu_speed):
        return config
    return dataclasses.replace(config, gpu_speed=speeds)


def unlisted_gpu_types(
    servers: Sequence[Server], gpu_speed: Mapping[str, float], stacklevel: int = 3
) -> Dict[str, int]:
    """The servers' GPU types that ``gpu_speed`` does not list, with their server
    counts (``{"P100": 10}``), in name order; a ``UserWarning`` names them once per
    message (Python shows a repeated warning once), since the engine runs them at
    ``UNLISTED_GPU_SPEED`` (1.0, the V100's speed): aryl gives no speed it has no
    source for (the paper's V100 and T4 and ``PUBLISHED_GPU_SPEED``, docs/model.md),
    so the user gives theirs (``--gpu-speed P100=0.5`` / ``Config(gpu_speed=...)``)."""
    counts: Dict[str, int] = {}
    gpus: Dict[str, int] = {}
    for s in servers:
        # the V100, the reference, is 1.0 listed or not
        # a published speed applies when gpu_speed does not list the type
        known = s.gpu_type in REFERENCE_GPUS or s.gpu_type in PUBLISHED_GPU_SPEED
        if s.gpu_type not in gpu_speed and not known:
            counts[s.gpu_type] = counts.get(s.gpu_type, 0) + 1
            gpus[s.gpu_type] = gpus.get(s.gpu_type, 0) + s.gpus
    if not counts:
        return {}
    counts = dict(sorted(counts.items()))
    named = ", ".join(
        f"{t} ({n:,} server{'s' * (n != 1)}, {gpus[t]:,} GPUs)"
        for t, n in counts.items()
    )
    example = ",".join(f"{t}=0.5" for t in counts)
    listed = ", ".join(f"{t}={v:g}" for t, v in gpu_speed.items()) or "none"
    many = len(counts) != 1
    warnings.warn(
        f"GPU type{'s' * many} {named} {'have' if many else 'has'} no speed in "
        f"gpu_speed ({listed}), so {'they run' if many else 'it runs'} at a V100's "
        f"speed ({UNLISTED_GPU_SPEED:.1f}); aryl has no published speed for "
        f"{'them' if many else 'it'}: give {'each' if many else 'it'} relative to "
        f"the V100, e.g. --gpu-speed {example} for half a V100's "
        "(Config(gpu_speed=...) in Python)",
        UserWarning,
        stacklevel=stacklevel,
    )
    return counts


def _mixed(servers: Sequence[Server]) -> bool:
    """Whether a pool of the servers has more than one GPU type: then which pool a
    job ran on does not say on which types (``job_gpu_types``)."""
    return any(
        len({s.gpu_type for s in servers if s.pool == pool}) > 1
        for pool in ("training", "inference")
    )


def job_gpu_types(
    servers: Sequence[Server],
    on_training: np.ndarray,
    on_inference: np.ndarray,
    history: Optional[Dict[str, np.ndarray]] = None,
) -> np.ndarray:
    """``Result.jobs``' ``gpu_types``: the GPU types each job's workers ran on,
    ``+``-joined, its training servers' types first, then its lent inference
    servers' (each in name order, none twice: ``V100+T4``); ``""`` for a job that
    never ran.

    The engine records per job only which pools it ran on, which says its types
    when each pool has one type. When a pool mixes types (``_mixed``) ``simulate``
    records the allocation history (``history``: the engine's ``job`` and
    ``server`` columns, one row per interval and server), and the types are read
    from it. An object column of shared ``str``, one per combination of types.
    """
    pools = [s.pool == "inference" for s in servers]
    # (pool, type): training (False) first, then by name
    order = sorted({(pool, s.gpu_type) for pool, s in zip(pools, servers)})
    if history is None or not _mixed(servers):
        names = {pool: [t for p, t in order if p == pool] for pool in (False, True)}
        # Four possible values: an object column of shared str, not one per job.
        table = np.array(
            [
                "",
                "+".join(names[False]),
                "+".join(names[True]),
                "+".join(dict.fromkeys(names[False] + names[True])),
            ],
            dtype=object,
        )
        out: np.ndarray = table[
            on_training.astype(np.intp) + 2 * on_inference.astype(np.intp)
        ]
        return out
    code = {pair: i for i, pair in enumerate(order)}
    server_code = np.array(
        [code[(pool, s.gpu_type)] for pool, s in zip(pools, servers)], dtype=np.int64
    )
    jobs = len(on_training)
    pairs = np.unique(
        np.asarray(history["job"], dtype=np.int64) * len(order)
        + server_code[np.asarray(history["server"], dtype=np.intp)]
    )
    job, which = np.divmod(pairs, len(order))
    ran: List[List[int]] = [[] for _ in range(jobs)]
    for j, c in zip(job.tolist(), which.tolist()):  # in code order per job
        ran[j].append(c)
    shared: Dict[Tuple[int, ...], str] = {}
    out = np.empty(jobs, dtype=object)
    for j, codes in enumerate(ran):
        key = tuple(codes)
        if key not in shared:
            shared[key] = "+".join(dict.fromkeys(order[c][1] for c in codes))
        out[j] = shared[key]
    return out
