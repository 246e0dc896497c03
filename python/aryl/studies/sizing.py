"""Sizing a cluster to a trace: the training-server count at which the Baseline is as busy as
the paper's production cluster.

The paper replays its 15-day trace on its own production cluster, whose training GPUs were 72%
busy under the FIFO Baseline (Table 3, row 1) and whose inference cluster had 520 servers to the
training cluster's 443. A public trace comes without its cluster, so ``size_cluster`` finds the
training-server count at which that same Baseline reaches the same training GPU use, and gives
the inference cluster the paper's ratio — the paper's load, not the paper's size.

**The search.** ``use(n)`` is ``Result.summary()['gpu_usage_training']`` of the Baseline
(``scenario(jobs, "baseline")``, FIFO, no loaning) on ``n`` training servers. It falls as ``n``
grows (more capacity for the same work), though not strictly: the span of a run, and so the
share, can move by a little when a different packing order changes when the last job ends.
The search therefore never assumes more than a bracket:

1. ``n0`` = the smallest count on which every job fits (its workers on whole servers) and
   ``guess`` = ``ceil(GPU-time / (8 x span x utilisation))``, at least ``n0``, the span being the
   submissions' or the longest job's, whichever is longer.
2. Bracket: from ``guess``, double the step up while ``use(n) > utilisation`` or down (never
   below ``n0``) while ``use(n) <= utilisation``, until ``lo < hi`` with ``use(lo) >
   utilisation >= use(hi)`` (or ``lo = n0`` already at or below the target).
3. Bisect on the integers until ``hi - lo == 1``.
4. Return, among every count evaluated, the one whose use is closest to ``utilisation``
   (ties: fewer servers).

The result is thus within one server of the crossing for a monotone ``use`` and the evaluated
count nearest the target otherwise; the answer's ``gpu_usage_training`` says how close it came
(on the embedded ITP trace, within a percentage point). At most ``max_runs`` simulations
(default 40) run; beyond that a ``RuntimeError`` says the search did not settle.

**When it cannot.** The answer never misses its target silently. Its use is off by
more than ``tolerance`` (default 5 percentage points): a ``UserWarning`` gives the use
reached and the counts beside it. Even the floor ``n0`` (the fewest servers on which
every job's demand is placeable, never gone below) keeps the Baseline less busy than
the target minus ``tolerance``: no size reaches it, and a ``ValueError`` says so with
the use reached (a trace whose work is too little for its span, or whose span is
stretched by a few very long jobs). ``warn_if_too_small`` warns, after a run, when its
mean queue is longer than the trace spans: the cluster is then far too small.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import numpy as np

from ..defaults import (
    DEFAULT_GPU_SPEED,
    KNOWN_GPU_TYPES,
    PAPER_BASELINE_USE,
    PAPER_INFERENCE_SERVERS,
    PAPER_TRAINING_SERVERS,
)
from ..engine.config import Cluster, Config
from ..engine.gpu_types import gpu_types
from ..engine.result import Result
from ..engine.scenarios import _gpu_time, scenario
from ..engine.simulation import simulate
from ..jobtable import JobTable
from ..model import Records


@dataclass
class Sizing:
    """What ``size_cluster`` found.

    ``cluster``: the sized ``Cluster``; ``gpu_usage_training``: the Baseline's training GPU use
    on it; ``target``: the use asked for; ``evaluated``: every training-server count tried,
    mapped to its Baseline use (in the order tried).
    """

    cluster: Cluster
    gpu_usage_training: float
    target: float
    evaluated: Dict[int, float] = field(default_factory=dict)

    @property
    def training_servers(self) -> int:
        """Training servers of the sized cluster."""
        return self.cluster.training_servers

    @property
    def inference_servers(self) -> int:
        """Inference servers of the sized cluster."""
        return self.cluster.inference_servers


def inference_count(
    training_servers: int,
    ratio: float = PAPER_INFERENCE_SERVERS / PAPER_TRAINING_SERVERS,
) -> int:
    """Inference servers for ``training_servers`` at ``ratio`` (the paper's 520:443), half up."""
    return int(math.floor(training_servers * ratio + 0.5))


def _servers_needed(jobs: JobTable, gpus_per_server: int) -> int:
    """The most servers one job needs at its reference worker count."""
    d = jobs.column("gpus_per_worker")
    per_server = gpus_per_server // d
    if (per_server == 0).any():
        i = int(np.argmax(per_server == 0))
        raise ValueError(
            f"job {jobs.ids[i]!r}: a worker of {int(d[i])} GPUs does not fit a "
            f"{gpus_per_server}-GPU server"
        )
    return int((-(-jobs.column("reference_workers") // per_server)).max())


def size_cluster(
    jobs: Records,
    utilisation: float = PAPER_BASELINE_USE,
    inference_ratio: float = PAPER_INFERENCE_SERVERS / PAPER_TRAINING_SERVERS,
    inference_servers: Optional[int] = None,
    config: Union[Config, Mapping[str, Any], None] = None,
    gpus_per_server: int = 8,
    max_runs: int = 40,
    tolerance: float = 0.05,
) -> Sizing:
    """The cluster on which the FIFO Baseline keeps ``utilisation`` of the training GPUs busy.

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts or a DataFrame); the Baseline scenario is applied here.
    utilisation
        Target ``gpu_usage_training`` of the Baseline, in ``(0, 1)`` (the paper: 0.72).
    inference_ratio
        Inference servers per training server when ``inference_servers`` is not given
        (rounded half up; the paper's 520:443).
    inference_servers
        A fixed inference-server count instead of the ratio (``>= 0``).
    config
        Extra simulator settings of the Baseline runs (``Config`` or dict); loaning is off.
    gpus_per_server
        GPUs per server of both clusters (8).
    max_runs
        Bound on the Baseline simulations; the search needs about ``2 log2(n)`` of them.
    tolerance
        How far (absolute) the use reached may be from ``utilisation`` without a
        warning; when even the floor is further below, a ``ValueError`` (module
        docstring: "When it cannot").

    Returns
    -------
    Sizing
        The cluster, the Baseline's use on it and every count tried (module docstring: the
        search and its tolerance).
    """
    if not 0.0 < utilisation < 1.0:
        raise ValueError(f"utilisation must be in (0, 1), got {utilisation!r}")
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    if not (inference_ratio >= 0.0 and math.isfinite(inference_ratio)):
        raise ValueError(
            f"inference_ratio must be finite and >= 0, got {inference_ratio!r}"
        )
    if inference_servers is not None and inference_servers < 0:
        raise ValueError(f"inference_servers must be >= 0, got {inference_servers!r}")
    base = scenario(jobs, "baseline")
    if not len(base):
        raise ValueError("size_cluster needs at least one job")
    settings = dict(
        vars(Config())
        if config is None
        else vars(config)
        if isinstance(config, Config)
        else config
    )
    settings["loaning"] = False
    # Speeds of well-known GPU types these runs lack change nothing here; left out,
    # they do not warn once per run (the comparison's own runs say so).
    present = gpu_types(Cluster(1, 0, gpus_per_server).servers(), base)
    settings["gpu_speed"] = {
        k: v
        for k, v in dict(settings.get("gpu_speed", DEFAULT_GPU_SPEED)).items()
        if k in present or k not in KNOWN_GPU_TYPES
    }
    evaluated: Dict[int, float] = {}

    def use(n: int) -> float:
        if n not in evaluated:
            if len(evaluated) >= max_runs:
                raise RuntimeError(
                    f"size_cluster: no settled count after {max_runs} runs "
                    f"(tried {sorted(evaluated)})"
                )
            result = simulate(
                base, Cluster(n, 0, gpus_per_server), policy="fifo", config=settings
            )
            evaluated[n] = result.summary()["gpu_usage_training"]
        return evaluated[n]

    floor = _servers_needed(base, gpus_per_server)
    submit = base.column("submit_time")
    # A run lasts at least its longest job.
    span = max(float(submit.max() - submit.min()), float(base.column("duration").max()))
    work = float(np.cumsum(_gpu_time(base))[-1])  # summed in order
    guess = max(
        floor, math.ceil(work / (gpus_per_server * max(span, 1.0) * utilisation))
    )
    lo, hi = _bracket(use, guess, floor, utilisation)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if use(mid) > utilisation else (lo, mid)
    best = min(evaluated, key=lambda n: (abs(evaluated[n] - utilisation), n))
    _check_reached(evaluated, best, floor, utilisation, tolerance)
    n_inference = (
        inference_count(best, inference_ratio)
        if inference_servers is None
        else int(inference_servers)
    )
    return Sizing(
        Cluster(best, n_inference, gpus_per_server),
        evaluated[best],
        utilisation,
        evaluated,
    )


def _bracket(
    use: Callable[[int], float], guess: int, floor: int, target: float
) -> Tuple[int, int]:
    """(lo, hi) with use(lo) > target >= use(hi) and lo < hi, or (floor - 1, floor)."""
    step = max(1, guess // 16)
    if use(guess) > target:
        lo, hi = guess, guess + step
        while use(hi) > target:
            lo, hi, step = hi, hi + step, 2 * step
        return lo, hi
    hi, lo = guess, max(floor, guess - step)
    while lo > floor and use(lo) <= target:
        step *= 2
        hi, lo = lo, max(floor, lo - step)
    # Even the smallest cluster that fits every job is not that busy.
    if use(lo) <= target:
        return lo - 1, lo
    return lo, hi


def _check_reached(
    evaluated: Mapping[int, float],
    best: int,
    floor: int,
    target: float,
    tolerance: float,
) -> None:
    """Refuse when no count reaches ``target``; warn when ``best`` misses it by more
    than ``tolerance`` (module docstring: "When it cannot")."""
    reached = evaluated[best]
    if abs(reached - target) <= tolerance:
        return
    if best == floor and reached < target:
        servers = f"{floor} training server{'s' * (floor != 1)}"
        raise ValueError(
            f"size_cluster: no cluster size reaches {target:.0%} Baseline training GPU "
            f"use: even {servers} (the fewest on which every job fits) stay only "
            f"{reached:.1%} busy, as the trace's work is too little for its span (or a "
            "few very long jobs stretch it); choose the count yourself "
            "(--training-servers N) or aim lower (--utilisation)"
        )
    beside = ", ".join(
        f"{n}: {evaluated[n]:.1%}" for n in sorted(evaluated) if abs(n - best) == 1
    )
    warnings.warn(
        f"size_cluster: {best} training servers keep the Baseline {reached:.1%} busy, "
        f"{abs(reached - target):.1%} from the {target:.0%} target (the closest count; "
        f"{beside or 'no neighbour evaluated'})",
        UserWarning,
        stacklevel=3,
    )


def warn_if_too_small(result: Result) -> None:
    """Warn when ``result``'s mean queue is longer than its trace spans (first to last
    submission): the cluster is far too small for the trace, and speed-ups over such a
    run measure queues that never drain rather than the scheduler."""
    summary = result.summary()
    submit = result.jobs["submit_time"]
    span = float(submit.max() - submit.min()) if len(submit) else 0.0
    queue = float(summary["queuing_mean"])
    if span > 0 and queue > span:
        warnings.warn(
            f"{result.label or 'the run'}: the mean queue ({queue / 86400:,.1f} days) is "
            f"longer than the trace spans ({span / 86400:,.1f} days): the cluster is far "
            "too small for this trace, and its comparisons measure a queue that never "
            "drains",
            UserWarning,
            stacklevel=2,
        )
