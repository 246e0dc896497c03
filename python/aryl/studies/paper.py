"""The rows of the paper's comparison (Table 3), plus controls and ablations, as data.

``paper_runs(jobs, load)`` returns, in display order, each row's name mapped to the keyword
arguments of ``simulate`` (``jobs``, ``policy``, ``reclaim``, ``inference_load``, ``config``);
``simulate(cluster=cluster, **kwargs)`` runs one, ``compare(jobs, cluster, runs)`` all of them.
Rows, with the paper's row numbers (every row uses the same seed):

====================================  ======  ===========================================
row                                   paper   jobs / policy / loaning
====================================  ======  ===========================================
``Baseline (FIFO)``                   1       baseline jobs, strict FIFO, no loaning
``Aryl Basic``                        2       basic jobs, aryl, loaning + aryl reclaim
``Aryl Advanced``                     3       advanced jobs (hetero at 70%), as row 2
``Aryl Ideal``                        4       ideal jobs (all elastic + hetero at 100%)
``Loaning only, random reclaim``      5       baseline jobs, aryl, loaning + random reclaim
``Loaning only, SCF reclaim``         6       ... + SCF reclaim
``Loaning only, aryl reclaim``        7       ... + aryl reclaim
``Elastic only, Gandiva``             8       basic jobs, gandiva, no loaning
``Elastic only, AFS``                 9       basic jobs, afs, no loaning
``Elastic only, aryl``                11      basic jobs, aryl, no loaning
``Control: SJF, no loaning``          —       baseline jobs, sjf, no loaning
``Control: FIFO + backfill``          —       baseline jobs, fifo with backfill, no loaning
``Ablation: Basic, imperfect``        §7.2    row 2 with imperfect scaling
``Ablation: Basic, plain BFD``        Tab. 6  row 2 with plain best-fit placement
``Pollux``                            10      basic jobs as Pollux applications, Pollux's
                                              genetic search, no loaning
``Aryl+TunedJobs``                    12      the same jobs, aryl with each job's Pollux
                                              agent, no loaning
====================================  ======  ===========================================

The two **controls** are not in the paper. The aryl policy's first phase admits queued jobs
shortest first and skips, rather than blocks on, jobs that do not fit; the Baseline is strict
FIFO. Part of any gain over the Baseline is therefore reordering alone, which SJF and FIFO
with backfill show without loaning or elasticity.

The **Pollux rows** (``pollux_rows=True``; ``aryl compare --pollux-rows``) run the Basic jobs
as goodput-driven jobs: ``aryl.traces.pollux_profiles`` gives each an application of the
Pollux artifact by GPU-time (seeded) and scales its work so that it keeps its trace
duration. They are an option because they are slower (60-s rounds, a goodput model per
job, and for Pollux a genetic search per round). They run on ``pollux_nodes(cluster)``: the
same GPUs as 4-GPU nodes, the most the applications' profiles cover per node.

Without a load series (``load=None``) the rows that lend servers (2–7 and the ablations) are
left out: with nothing to lend they would repeat the no-loaning rows.

The orderings the paper implies between the rows are in ``paper_orderings``
(``ORDERINGS``, ``ORDERING_MECHANISMS``). The paper's own figures are here once:
``PAPER_TABLE3`` (Table 3, by row name) and
``PAPER_POLLUX_SCALING``; ``pollux_beside_paper`` sets the Pollux comparison's runs
beside them. Three ratios in the paper's text do not follow from Table 3's rows 10 and
12: the median JCT's 1.32x (the table gives 721 / 564 = 1.28x; the text cites a
figure), and the queuing ratios 1.23x (median) and 1.69x (p95), which are Pollux over
row 11 (58 / 47 and 5,883 / 3,475), not over row 12. The table also reads as Pollux
at 250 generations (§7.4: "we set the number of iteration to 250 and [Aryl] still has
1.20x and 1.25x improvements in median and 95%ile JCT": 721 / 602 and 72,123 /
57,597, row 10 over row 11), not at the artifact's 100.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import pandas as pd

from ..defaults import (
    ELASTIC_GPU_SHARE,
    ELASTIC_JOB_SHARE,
    ELASTIC_RANGE,
    ELASTIC_SELECTION,
    HETERO_SHARE,
)
from ..engine.scenarios import SCENARIOS, scenario, scenario_config
from ..model import Records
from ..policy import check_policy
from ..traces.pollux_mapping import pollux_profiles
from ..typing import (
    AllocationPolicy,
    ElasticSelection,
    ScenarioName,
    SimulationReclaimPolicy,
)

# The orderings live beside the rows they order; imported from here by the faces and
# studies.replications.

#: Name of the first row, the Baseline every speed-up is measured against.
BASELINE = "Baseline (FIFO)"

#: Row names that need an inference-load series (they lend servers).
LOANING_ROWS = (
    "Aryl Basic",
    "Aryl Advanced",
    "Aryl Ideal",
    "Loaning only, random reclaim",
    "Loaning only, SCF reclaim",
    "Loaning only, aryl reclaim",
    "Ablation: Basic, imperfect",
    "Ablation: Basic, plain BFD",
)

#: Rows of goodput-driven jobs (``paper_runs(..., pollux_rows=True)``), in display order.
POLLUX_ROWS = ("Pollux", "Aryl+TunedJobs")

#: The columns of the paper's Table 3, as ``Result.summary()`` keys.
TABLE3_KEYS = (
    "queuing_mean",
    "queuing_median",
    "queuing_p95",
    "jct_mean",
    "jct_median",
    "jct_p95",
    "gpu_usage_training",
    "gpu_usage_overall",
    "preemption_ratio",
)

_NA = None  # the paper's "NA"
_TABLE3_ROWS: Tuple[Tuple[str, Tuple[Optional[float], ...]], ...] = (
    (BASELINE, (3072, 55, 8357, 16610, 791, 82933, 0.72, 0.52, 0.0)),
    ("Aryl Basic", (2008, 25, 3356, 11089, 567, 56477, 0.86, 0.66, 0.1020)),
    ("Aryl Advanced", (1833, 23, 3238, 10402, 523, 56553, 0.87, 0.69, 0.0705)),
    ("Aryl Ideal", (1157, 22, 3197, 8874, 417, 41146, 0.92, 0.72, 0.0557)),
    (
        "Loaning only, random reclaim",
        (2843, 23, 5471, 14657, 703, 62912, 0.76, 0.64, 0.2089),
    ),
    (
        "Loaning only, SCF reclaim",
        (2791, 24, 4991, 14965, 692, 62451, 0.76, 0.66, 0.1874),
    ),
    (
        "Loaning only, aryl reclaim",
        (2204, 23, 3418, 12414, 655, 57982, 0.76, 0.66, 0.1234),
    ),
    ("Elastic only, Gandiva", (3035, 49, 6632, 15912, 755, 80567, 0.79, _NA, _NA)),
    ("Elastic only, AFS", (2284, 47, 3488, 15045, 686, 60883, 0.95, _NA, _NA)),
    ("Pollux", (2791, 58, 5883, 14534, 721, 72123, 0.93, _NA, _NA)),
    ("Elastic only, aryl", (2275, 47, 3475, 12048, 602, 57597, 0.92, _NA, _NA)),
    ("Aryl+TunedJobs", (2054, 43, 2749, 10229, 564, 52458, 0.91, _NA, _NA)),
)

#: The paper's Table 3 (the ITP trace), rows 1-12 as printed: row name (as
#: ``paper_runs`` names it) -> ``TABLE3_KEYS`` -> value (times in s, use and
#: preemptions as fractions); ``None`` where the paper prints NA.
PAPER_TABLE3: Dict[str, Dict[str, Optional[float]]] = {
    name: dict(zip(TABLE3_KEYS, values)) for name, values in _TABLE3_ROWS
}

#: The row whose mean running time shows what elasticity alone buys (Table 3, row 11).
ELASTIC_ROW = "Elastic only, aryl"


def running_time_cut(
    summaries: Mapping[str, Mapping[str, Any]],
    row: str = ELASTIC_ROW,
    baseline: str = BASELINE,
) -> float:
    """How much shorter ``row``'s mean running time is than ``baseline``'s, as a share.

    The mean running time of a row is its mean JCT minus its mean queuing time; the cut
    is ``1 - row's / baseline's``. On the paper's Table 3 (``PAPER_ELASTIC_CUT``) row 11
    runs 9,773 s on average against the Baseline's 13,538 s: a 27.8% cut.
    ``aryl.sim.elastic_bound`` says how much a scenario could cut at most.
    """
    for name in (row, baseline):
        if name not in summaries:
            raise ValueError(f"running_time_cut needs a row named {name!r}")

    def running(name: str) -> float:
        values = summaries[name]
        return float(values["jct_mean"]) - float(values["queuing_mean"])

    return 1.0 - running(row) / running(baseline)


#: The paper's mean running-time cut of elasticity alone (row 11 over row 1): 27.8%.
PAPER_ELASTIC_CUT = running_time_cut(PAPER_TABLE3)


def _no_queue_bound(row: Mapping[str, Optional[float]]) -> float:
    """The most a row could gain by removing all its queuing, its jobs' running time
    unchanged: mean JCT over mean JCT less mean queuing."""
    jct, queue = float(row["jct_mean"] or 0.0), float(row["queuing_mean"] or 0.0)
    return jct / (jct - queue)


#: The largest JCT gain loaning alone can give over the paper's Baseline if it removes
#: every second of queuing and leaves running times as they are (§7.2: loaning "does
#: not affect job running time"): 16,610 / 13,538 = 1.227x, below row 7's 1.34x.
PAPER_LOANING_BOUND = _no_queue_bound(PAPER_TABLE3[BASELINE])

#: §7.4: "the total scaling times of Pollux is 1.76x that of Aryl+TunedJobs in the
#: Ideal scenario" (the paper gives no counts, and none for the Basic scenario).
PAPER_POLLUX_SCALING = 1.76

#: The runs of the Pollux comparison (Table 3 rows 10, 12 and 11) and its metrics.
POLLUX_COMPARISON = ("Pollux", "Aryl+TunedJobs", "Elastic only, aryl")
POLLUX_METRICS = TABLE3_KEYS[:6] + ("scaling_ops",)


def paper_runs(
    jobs: Records,
    load: Any = None,
    seed: int = 0,
    config: Optional[Dict[str, Any]] = None,
    elastic_gpu_share: float = ELASTIC_GPU_SHARE,
    hetero_share: float = HETERO_SHARE,
    checkpoint: bool = True,
    pollux_rows: bool = False,
    node_gpus: int = 4,
    policies: Optional[Mapping[str, Any]] = None,
    rows: Optional[Sequence[str]] = None,
    *,
    elastic_selection: ElasticSelection = ELASTIC_SELECTION,
    elastic_job_share: float = ELASTIC_JOB_SHARE,
    elastic_range: float = ELASTIC_RANGE,
    elastic_max_gpus: Optional[int] = None,
) -> Dict[str, Dict[str, Any]]:
    """The comparison's rows: name -> ``simulate`` keyword arguments, in display order.

    Parameters
    ----------
    jobs
        The trace's jobs (``Job``, dicts or a DataFrame); each row applies its scenario.
    load
        The inference-load series (``simulate``'s ``inference_load``); ``None`` drops the rows
        that lend servers (``LOANING_ROWS``).
    seed
        Seeds every scenario draw and the simulations (random reclaim).
    config
        ``Config`` fields given to every row (e.g. ``{"lend_hold": 0, "headroom": 0.1}``); a
        row's own settings (no loaning, scaling, placement, backfill, hetero efficiency) win.
    elastic_gpu_share, hetero_share, checkpoint
        Passed to ``scenario`` (module ``scenarios``: the exact rules).
    pollux_rows
        Add ``POLLUX_ROWS`` (the Basic jobs as goodput-driven Pollux applications).
    node_gpus
        GPUs per node of the cluster the Pollux rows run on (the mapping's compact
        placement): 4, as ``pollux_nodes`` splits a cluster.
    policies
        Rows of your own: row name -> a policy object (``aryl.Policy``). Each runs
        as ``OWN_POLICY_BASE`` ("Aryl Basic": the Basic jobs, loaning, aryl reclaim
        unless the policy has its own) with only the allocation policy changed
        (``own_policy_features`` names that one difference), after the paper's
        rows; without a load series, as "Elastic only, aryl".
    rows
        Keep only these rows (names, in this order; a policy row by its name);
        speed-ups are over the Baseline, or the first row without it.
    elastic_selection, elastic_job_share, elastic_range, elastic_max_gpus
        Passed to ``scenario``: which jobs are elastic and how far they scale.

    Returns
    -------
    dict
        Row name -> ``dict(jobs=..., policy=..., reclaim=..., inference_load=..., config=...,
        seed=...)``; the first row is the Baseline every speed-up is measured against.
    """
    sets = {
        name: scenario(
            jobs,
            name,
            seed,
            elastic_gpu_share,
            hetero_share,
            checkpoint,
            elastic_selection=elastic_selection,
            elastic_job_share=elastic_job_share,
            elastic_range=elastic_range,
            elastic_max_gpus=elastic_max_gpus,
        )
        for name in SCENARIOS
    }
    common = dict(config or {})

    def row(
        jobs_of: ScenarioName,
        policy: AllocationPolicy,
        reclaim: SimulationReclaimPolicy = "aryl",
        **overrides: Any,
    ) -> Dict[str, Any]:
        settings = {**common, **overrides}
        return dict(
            jobs=sets[jobs_of],
            policy=policy,
            reclaim=reclaim,
            inference_load=load,
            config=settings,
            seed=seed,
        )

    def aryl(name: ScenarioName, **overrides: Any) -> Dict[str, Any]:
        preset = scenario_config(name)
        preset.pop("policy")
        return row(name, "aryl", **{**preset, **overrides})

    no_loan: Dict[str, Any] = {"loaning": False}
    runs = {
        BASELINE: row("baseline", "fifo", **no_loan),
        "Aryl Basic": aryl("basic"),
        "Aryl Advanced": aryl("advanced"),
        "Aryl Ideal": aryl("ideal"),
        "Loaning only, random reclaim": row("baseline", "aryl", "random"),
        "Loaning only, SCF reclaim": row("baseline", "aryl", "scf"),
        "Loaning only, aryl reclaim": row("baseline", "aryl", "aryl"),
        "Elastic only, Gandiva": row("basic", "gandiva", **no_loan),
        "Elastic only, AFS": row("basic", "afs", **no_loan),
        "Elastic only, aryl": row("basic", "aryl", **no_loan),
        "Control: SJF, no loaning": row("baseline", "sjf", **no_loan),
        "Control: FIFO + backfill": row("baseline", "fifo", backfill=True, **no_loan),
        "Ablation: Basic, imperfect": aryl("basic", scaling="imperfect"),
        "Ablation: Basic, plain BFD": aryl("basic", placement="bfd"),
    }
    if load is None:
        runs = {k: v for k, v in runs.items() if k not in LOANING_ROWS}
    base = runs[OWN_POLICY_BASE if load is not None else "Elastic only, aryl"]
    for name, policy in (policies or {}).items():
        check_policy(policy)
        if name in runs or name in POLLUX_ROWS:
            raise ValueError(f"policies: row {name!r} is already a row of the paper's")
        runs[name] = {**base, "policy": policy}
    if pollux_rows:
        mapped = pollux_profiles(sets["basic"], seed=seed, node_gpus=node_gpus)
        goodput = dict(jobs=mapped, reclaim="aryl", inference_load=None, seed=seed)
        runs["Pollux"] = dict(goodput, policy="pollux", config={**common, **no_loan})
        runs["Aryl+TunedJobs"] = dict(
            goodput, policy="aryl", config={**common, **no_loan, "agent": "pollux"}
        )
    return runs if rows is None else chosen_rows(runs, rows)


def chosen_rows(
    runs: Mapping[str, Dict[str, Any]], rows: Sequence[str]
) -> Dict[str, Dict[str, Any]]:
    """``runs`` restricted to ``rows``, in that order; an unknown name is an error."""
    if isinstance(rows, str) or not rows:
        raise ValueError(f"rows must be a non-empty list of row names, got {rows!r}")
    unknown = [r for r in rows if r not in runs]
    if unknown:
        raise ValueError(
            f"unknown row(s) {unknown}; the rows here are: {', '.join(runs)}"
        )
    return {r: runs[r] for r in rows}


#: The paper's row a policy of your own replaces the allocation policy of
#: (``paper_runs(policies=...)``).
OWN_POLICY_BASE = "Aryl Basic"


def own_policy_features(names: Sequence[str]) -> Tuple[Tuple[str, str, str], ...]:
    """``contributions``' features of the policy rows ``names``: each against
    ``OWN_POLICY_BASE``, which differs from it in the allocation policy alone."""
    return tuple(
        (f"{name} (vs aryl's allocation)", name, OWN_POLICY_BASE) for name in names
    )


def pollux_nodes(cluster: Any, node_gpus: int = 4) -> Any:
    """The cluster the Pollux rows run on: each training server of a ``Cluster`` split
    into nodes of ``node_gpus`` GPUs (the same GPUs: the Pollux applications were
    profiled on nodes of at most 4 GPUs), no inference servers (the rows do not lend).
    """
    from ..engine.config import Cluster

    if not isinstance(cluster, Cluster):
        raise ValueError(f"pollux_nodes needs a Cluster, got {type(cluster).__name__}")
    if cluster.gpus_per_server % node_gpus:
        raise ValueError(
            f"{cluster.gpus_per_server}-GPU servers do not split into "
            f"{node_gpus}-GPU nodes"
        )
    per = cluster.gpus_per_server // node_gpus
    return Cluster(
        cluster.training_servers * per,
        0,
        gpus_per_server=node_gpus,
        training_gpu=cluster.training_gpu,
    )


def speedups(
    summaries: Mapping[str, Mapping[str, float]], baseline: str = BASELINE
) -> pd.DataFrame:
    """A table of summaries (one row per run, in the given order) with speed-ups over a row.

    ``summaries`` maps a row name to ``Result.summary()``. Adds ``speed-up JCT`` and
    ``speed-up queue``: the ``baseline`` row's mean JCT / queuing time divided by each row's
    (NaN where a row's mean is 0). ``baseline`` defaults to ``BASELINE``, or the first row if
    there is no such row.
    """
    if not summaries:
        raise ValueError("speedups needs at least one row (summaries is empty)")
    table = pd.DataFrame({name: dict(s) for name, s in summaries.items()}).T
    base = baseline if baseline in table.index else table.index[0]
    for column, key in (
        ("speed-up JCT", "jct_mean"),
        ("speed-up queue", "queuing_mean"),
    ):
        mean = table[key].astype(float)
        table[column] = float(mean[base]) / mean.where(mean > 0)
    return table


def pollux_beside_paper(summaries: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The Pollux comparison beside the paper: one row per ``POLLUX_METRICS`` key.

    Parameters
    ----------
    summaries
        Run name -> ``Result.summary()``; the runs of ``POLLUX_COMPARISON`` among them
        are shown, in that order (others are ignored).

    Returns
    -------
    pandas.DataFrame
        Indexed by metric key. Per run shown, a column of its values and one of the
        paper's (``"<run>, paper"``: ``PAPER_TABLE3``; NaN where the paper gives
        none, as for scaling counts); with both Pollux and Aryl+TunedJobs, the ratio
        ``"Pollux / Aryl+TunedJobs"`` and the paper's (``PAPER_POLLUX_SCALING`` for
        scaling operations; NaN where a value is 0).
    """
    shown = [name for name in POLLUX_COMPARISON if name in summaries]
    if not shown:
        raise ValueError(
            f"pollux_beside_paper needs a run named one of {POLLUX_COMPARISON}, "
            f"got {sorted(summaries)}"
        )
    for name in shown:
        missing = [k for k in POLLUX_METRICS if k not in summaries[name]]
        if missing:
            raise ValueError(
                f"pollux_beside_paper: run {name!r} has no {missing} "
                "(pass Result.summary())"
            )
    columns: Dict[str, Dict[str, float]] = {}
    for name in shown:
        columns[name] = {k: float(summaries[name][k]) for k in POLLUX_METRICS}
        columns[f"{name}, paper"] = {
            k: _number(PAPER_TABLE3[name].get(k)) for k in POLLUX_METRICS
        }
    if {"Pollux", "Aryl+TunedJobs"} <= set(shown):
        ratio = "Pollux / Aryl+TunedJobs"
        columns[ratio] = _ratios(columns["Pollux"], columns["Aryl+TunedJobs"])
        columns[f"{ratio}, paper"] = _ratios(
            columns["Pollux, paper"], columns["Aryl+TunedJobs, paper"]
        )
        columns[f"{ratio}, paper"]["scaling_ops"] = PAPER_POLLUX_SCALING
    return pd.DataFrame(columns, index=list(POLLUX_METRICS))


def _number(value: Optional[float]) -> float:
    """A figure of the paper's, NaN where it gives none."""
    return math.nan if value is None else float(value)


def _ratios(top: Mapping[str, float], bottom: Mapping[str, float]) -> Dict[str, float]:
    """``top / bottom`` per key; NaN where ``bottom`` is 0 or NaN."""
    return {k: top[k] / bottom[k] if bottom[k] > 0 else math.nan for k in top}
