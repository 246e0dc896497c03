"""The metric catalogue, written once: each summary key's label, header and kind.

``Result.summary()`` has one entry per ``METRICS`` key, in this order
(``SUMMARY_KEYS``). A metric's ``label`` is its readable name (notebooks), ``header``
its short column header (the command line's tables) and ``kind`` how it reads: a
``"time"`` in seconds, a ``"ratio"`` in [0, 1] shown as a percentage, a ``"count"``,
``"hours"`` (GPU-hours or server-hours, the label says which) or a ``"factor"`` (a ratio of two times, shown as ``2.5x``).

The **loaning ledger** (``lent_gpu_hours`` to ``inference_short_server_hours``) says
what loaning cost and gave: GPU-hours of inference servers on loan, the GPU-hours
training jobs used on them, the reclaims and the preemptions they caused, the work
those preemptions lost and the server-hours the inference side waited for a lent server
(reclaims happen at loan decisions only, every ``loan_interval``).
``user_slowdown_spread`` is a fairness figure, in the summary of runs whose trace has a
``user`` column (``Result.groups``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Literal, Mapping, Tuple

MetricKind = Literal["time", "ratio", "count", "hours", "factor"]


@dataclass(frozen=True)
class Metric:
    """One summary metric: how it is named and read.

    Attributes
    ----------
    label
        Its readable name (``"queuing time, mean"``).
    header
        Its short column header (``"queue mean"``).
    kind
        ``"time"`` (seconds), ``"ratio"`` (in [0, 1]), ``"count"``, ``"hours"``
        or ``"factor"``.
    """

    label: str
    header: str
    kind: MetricKind


#: Summary key -> ``Metric``, in the order of ``Result.summary()``.
METRICS: Dict[str, Metric] = {
    "queuing_mean": Metric("queuing time, mean", "queue mean", "time"),
    "queuing_median": Metric("queuing time, median", "queue median", "time"),
    "queuing_p95": Metric("queuing time, p95", "queue p95", "time"),
    "queuing_p99": Metric("queuing time, p99", "queue p99", "time"),
    "jct_mean": Metric("job completion time, mean", "JCT mean", "time"),
    "jct_median": Metric("job completion time, median", "JCT median", "time"),
    "jct_p95": Metric("job completion time, p95", "JCT p95", "time"),
    "jct_p99": Metric("job completion time, p99", "JCT p99", "time"),
    "gpu_usage_training": Metric("GPU use, training cluster", "GPU use train", "ratio"),
    "gpu_usage_overall": Metric("GPU use, both clusters", "GPU use all", "ratio"),
    "preemption_ratio": Metric("preemption ratio (per job)", "preempt ratio", "ratio"),
    "collateral_damage": Metric("collateral damage", "collateral", "ratio"),
    "flexible_reclaim_share": Metric(
        "reclaims met without preemption", "flexible reclaims", "ratio"
    ),
    "scaling_ops": Metric("scaling operations", "scaling ops", "count"),
    "jobs_finished": Metric("jobs finished", "finished", "count"),
    "jobs_unfinished": Metric("jobs unfinished", "unfinished", "count"),
    # the loaning ledger
    "lent_gpu_hours": Metric("GPU-hours lent to training", "lent GPU-h", "hours"),
    "lent_used_gpu_hours": Metric(
        "lent GPU-hours used by training", "used of lent GPU-h", "hours"
    ),
    "lent_used_share": Metric("share of lent GPU-hours used", "lent used", "ratio"),
    "reclaims": Metric("reclaim decisions", "reclaims", "count"),
    "servers_reclaimed": Metric("servers reclaimed", "servers back", "count"),
    "preemptions": Metric("preemptions", "preemptions", "count"),
    "work_lost_gpu_hours": Metric(
        "progress lost to preemptions (reference GPU-hours)", "lost GPU-h", "hours"
    ),
    "restart_gpu_hours": Metric(
        "GPU-hours held restarting after preemptions", "restart GPU-h", "hours"
    ),
    "inference_short_server_hours": Metric(
        "inference server-hours reclaimed late", "late server-h", "hours"
    ),
    # fairness: only where the trace names users (NaN with fewer than two users
    # with a finished job)
    "user_slowdown_spread": Metric(
        "per-user mean slowdown, worst / best user", "user slowdown spread", "factor"
    ),
    # only in runs of a policy of your own (aryl.engine.hooks), after the others
    "jobs_rejected": Metric("jobs rejected", "rejected", "count"),
}

#: Keys only some summaries have: ``user_slowdown_spread`` (a trace with users) and
#: ``jobs_rejected`` (a policy of your own).
OPTIONAL_KEYS = ("user_slowdown_spread", "jobs_rejected")
#: The keys of every ``Result.summary()``, in order (``OPTIONAL_KEYS`` follow them
#: where they apply).
SUMMARY_KEYS: Tuple[str, ...] = tuple(k for k in METRICS if k not in OPTIONAL_KEYS)

#: The loaning ledger's keys, in order (``aryl compare`` prints them as a table).
LEDGER_KEYS: Tuple[str, ...] = (
    "lent_gpu_hours",
    "lent_used_gpu_hours",
    "lent_used_share",
    "reclaims",
    "servers_reclaimed",
    "preemptions",
    "work_lost_gpu_hours",
    "restart_gpu_hours",
    "inference_short_server_hours",
)

#: The shares that are 0 / 0 in a run without what they are a share of: share key ->
#: the summary counts that are all 0 there (no reclaim: no collateral damage to
#: measure; nothing lent: no share of it used; nothing reclaimed and nothing
#: preempted, as in the Baseline: no preemption to measure, where a reclaim or a
#: preemptive policy's round makes even none a measured 0). ``Result.summary()``
#: gives 0.0 there, so that summaries compare equal; undefined is not 0, so a
#: replicated comparison's mean and interval leave those runs out (NaN when no run
#: has one) and tables show "—".
SHARE_OF: Dict[str, Tuple[str, ...]] = {
    "collateral_damage": ("reclaims",),
    "flexible_reclaim_share": ("servers_reclaimed",),
    "lent_used_share": ("lent_gpu_hours",),
    "preemption_ratio": ("reclaims", "preemptions"),
}


def undefined_share(key: str, row: Mapping[str, Any]) -> bool:
    """Whether ``row``'s (a summary's, or a table row's) share ``key`` is 0 / 0:
    each of ``SHARE_OF[key]`` it has is 0 (or NaN) in it."""
    of = [k for k in SHARE_OF.get(key, ()) if k in row]
    return bool(of) and not any(float(row[k]) > 0 for k in of)


def defined_runs(key: str, runs: Any) -> Any:
    """The runs (a DataFrame of summaries, one row each) where ``key`` is defined:
    all of them but those where it is a share of nothing (``undefined_share``)."""
    of = [k for k in SHARE_OF.get(key, ()) if k in runs.columns]
    if not of:
        return runs
    return runs[(runs[of].to_numpy(dtype=float) > 0).any(axis=1)]


#: Suffixes of keys derived from a metric (``aryl.sim.compare``'s interval bounds).
_DERIVED = ("_low", "_high")


def kind(key: str) -> MetricKind:
    """The kind of a summary key, or of a key derived from one (``jct_mean_low``).

    Any other key (a parameter, a speed-up) is a ``"count"``: shown as it is.
    """
    for suffix in _DERIVED:
        if key.endswith(suffix) and key[: -len(suffix)] in METRICS:
            key = key[: -len(suffix)]
    return METRICS[key].kind if key in METRICS else "count"
