"""Results of a simulation: per-job and timeline tables, the paper's summary, checks."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from . import storage
from .metrics import METRICS
from .provenance import Provenance

#: ``Result.timeline``'s columns, in order.
TIMELINE_COLUMNS = (
    "t",
    "training_gpus_used",
    "loaned_gpus_used",
    "on_loan",
    "inference_needed",
    "queue_length",
    "running_jobs",
)


class InvariantError(AssertionError):
    """A simulated run broke one of the simulator's invariants (docs/model.md, section 5)."""


def job_times(jobs: pd.DataFrame) -> Dict[str, float]:
    """Queuing time and JCT of ``jobs`` (a ``Result.jobs`` frame, or several stacked):
    mean, median, p95 and p99 as ``Result.summary()`` keys, NaN without finished jobs."""
    out: Dict[str, float] = {}
    for name, column in (("queuing", "queuing_time"), ("jct", "jct")):
        values = jobs[column].dropna().to_numpy(dtype=float)
        for stat, q in (("mean", None), ("median", 50), ("p95", 95), ("p99", 99)):
            if len(values) == 0:
                out[f"{name}_{stat}"] = float("nan")
            else:
                out[f"{name}_{stat}"] = float(
                    values.mean() if q is None else np.percentile(values, q)
                )
    return out


@dataclass
class Result:
    """One simulated run.

    ``jobs`` has one row per job (``id, submit_time, start_time, finish_time,
    queuing_time, jct, preemptions, scaling_ops, work_lost, gpu_types, user, vc``:
    times in seconds, NaN for what never happened; ``gpu_types`` the GPU types the
    job's workers ran on, ``+``-joined, training servers' first, then lent ones'
    (``V100+T4``; ``""``: never ran); ``user`` and ``vc`` the jobs'
    ``Job.user`` and ``Job.vc``, None where the trace has none); ``timeline`` one row per scheduling
    interval (GPUs used by training jobs on training and on loaned servers,
    servers on loan, inference servers needed, queue length, running jobs).
    ``totals`` holds the run's integrals and counters; ``summary()`` the paper's
    metrics and the loaning ledger (``aryl.engine.metrics``); ``groups(by)`` JCT and
    queuing per user or virtual cluster when the jobs carry a ``user`` / ``vc``
    column; ``check()`` verifies the invariants. ``provenance`` records what
    produced the run (``aryl.sim.Provenance``: inputs' fingerprints, cluster,
    policies, config, seed, aryl version); ``save(path)`` writes it all and
    ``aryl.sim.load(path)`` reads back an equal ``Result``. ``allocations`` holds every
    job's allocation intervals when the run recorded them (``simulate(...,
    history=True)``), else ``None``; ``history()`` returns them. ``engine_counters``
    says what the compiled engine's scheduling epochs cost (``epochs`` handled,
    ``epochs_quiet`` that touched no job, ``jobs_touched`` by the others: handed
    to the kernel, the running jobs it could change and the queued jobs it pulled;
    ``jobs_pulled`` from the queue by the kernel, ``most_touched`` by one epoch); empty
    for a run read back or not simulated by the engine.
    """

    jobs: pd.DataFrame
    timeline: pd.DataFrame
    totals: Dict[str, Any]
    capacity: Dict[str, int]
    label: str = ""
    violations: List[str] = field(default_factory=list)
    provenance: Optional[Provenance] = None
    allocations: Optional[pd.DataFrame] = None
    # What the engine's epochs cost (epochs, quiet ones, jobs touched, queued jobs
    # pulled): a measurement, not a result, so neither saved nor compared.
    engine_counters: Dict[str, int] = field(default_factory=dict, compare=False)

    def history(self) -> pd.DataFrame:
        """Every job's allocation intervals: one row per (job, interval, server).

        Columns ``job, interval, start, end, opened, closed, server, workers, gpus,
        gpu_type, on_loan`` (module ``aryl.engine.history`` has their meaning and the
        reasons ``opened`` / ``closed`` take). Raises ``ValueError`` when the run was
        simulated without ``history=True``.
        """
        if self.allocations is None:
            raise ValueError(
                f"{self.label or 'this run'} has no allocation history: "
                "simulate it with history=True"
            )
        return self.allocations

    def summary(self) -> Dict[str, float]:
        """The paper's metrics, the loaning ledger and a fairness figure, keyed as
        ``aryl.engine.metrics.METRICS`` (labels and kinds there): times in seconds, ratios
        in [0, 1], GPU-hours and server-hours, counts."""
        t = self.totals
        span = t["end_time"]
        training = self.capacity["training_gpus"] * span
        overall = (
            self.capacity["training_gpus"] + self.capacity["inference_gpus"]
        ) * span
        used = (
            t["training_gpu_seconds"]
            + t["loaned_gpu_seconds"]
            + t["inference_gpu_seconds"]
        )
        out = job_times(self.jobs)
        out["gpu_usage_training"] = _ratio(t["training_gpu_seconds"], training)
        out["gpu_usage_overall"] = _ratio(used, overall)
        out["preemption_ratio"] = _ratio(self.jobs["preemptions"].sum(), len(self.jobs))
        out["collateral_damage"] = _ratio(
            t["collateral_gpus"], t["reclaim_demand_gpus"]
        )
        out["flexible_reclaim_share"] = _ratio(
            t["servers_reclaimed_free"], t["servers_reclaimed"]
        )
        out["scaling_ops"] = int(self.jobs["scaling_ops"].sum())
        out["jobs_finished"] = int(self.jobs["finish_time"].notna().sum())
        out["jobs_unfinished"] = len(self.jobs) - out["jobs_finished"]
        out.update(self._ledger())
        if "user" in self.jobs and self.jobs["user"].notna().any():
            out["user_slowdown_spread"] = self._slowdown_spread()
        if "rejected" in self.jobs:  # a policy of your own that rejects jobs
            out["jobs_rejected"] = int(self.jobs["rejected"].sum())
            out["jobs_unfinished"] -= out["jobs_rejected"]
        return out

    def _ledger(self) -> Dict[str, float]:
        """The loaning ledger (``aryl.engine.metrics``): what was lent, used, reclaimed
        and lost, from the engine's counters."""
        t = self.totals
        lent, used = t["loaned_capacity_seconds"] / HOUR, t["loaned_gpu_seconds"] / HOUR
        return {
            "lent_gpu_hours": lent,
            "lent_used_gpu_hours": used,
            "lent_used_share": _ratio(used, lent),
            "reclaims": int(t["reclaims"]),
            "servers_reclaimed": int(t["servers_reclaimed"]),
            "preemptions": int(self.jobs["preemptions"].sum()),
            "work_lost_gpu_hours": t["work_lost_gpu_seconds"] / HOUR,
            "restart_gpu_hours": t["restart_gpu_seconds"] / HOUR,
            "inference_short_server_hours": t["inference_short_server_seconds"] / HOUR,
        }

    def groups(self, by: str = "user") -> pd.DataFrame:
        """JCT, queuing and slowdown per group of jobs: one row per value of the jobs'
        column ``by`` (``"user"`` or ``"vc"``, kept from the trace), largest group first.

        Columns: ``jobs``, ``finished``, ``queuing_mean``, ``queuing_median``,
        ``jct_mean``, ``jct_median``, ``jct_p95`` (s, over finished jobs) and
        ``slowdown_mean``: the mean over the group's finished jobs of JCT divided by
        the time from first start to finish (1 for a job that never waited; a job
        preempted and queued again counts that wait in its running time). Jobs whose
        ``by`` is missing (None or NaN) are left out. Raises ``ValueError`` when the
        jobs have no such column or it is empty (the trace did not name them).
        """
        if by not in self.jobs or self.jobs[by].isna().all():
            raise ValueError(
                f"groups(by={by!r}): the jobs have no {by!r} values (the trace's "
                f"importer keeps 'user' and 'vc' when the trace has them); columns: "
                f"{list(self.jobs.columns)}"
            )
        jobs = self.jobs[self.jobs[by].notna()].assign(slowdown=_slowdowns(self.jobs))
        done = jobs[jobs["finish_time"].notna()].groupby(by, sort=False)
        out = pd.DataFrame(
            {
                "jobs": jobs.groupby(by, sort=False).size(),
                "finished": done.size(),
                "queuing_mean": done["queuing_time"].mean(),
                "queuing_median": done["queuing_time"].median(),
                "jct_mean": done["jct"].mean(),
                "jct_median": done["jct"].median(),
                "jct_p95": done["jct"].quantile(0.95),
                "slowdown_mean": done["slowdown"].mean(),
            }
        )
        out["finished"] = out["finished"].fillna(0).astype("int64")
        return out.sort_values("jobs", ascending=False, kind="stable")

    def _slowdown_spread(self) -> float:
        """The worst user's mean slowdown over the best's (NaN without two users with a
        finished job)."""
        means = self.groups("user")["slowdown_mean"].dropna()
        if len(means) < 2:
            return math.nan
        return float(means.max() / means.min())

    def check(self) -> Result:
        """Raise ``InvariantError`` if any invariant failed; returns ``self`` otherwise.

        Checked: the engine's own audit (if run with ``audit=True``: no server
        over-committed, running jobs within [min, max], nothing on a server not on
        loan); every job finished exactly once with submit <= start <= finish, or
        reported unfinished; work delivered = work completed + work lost; GPU use
        never above capacity in the timeline; and, when the run recorded its history,
        that every job's intervals tile its running time and add up to its preemption
        and scaling counts, within the run's GPU-seconds (``aryl.engine.history``).
        """
        problems = list(self.violations)
        j = self.jobs
        done = j["finish_time"].notna()
        if (j.loc[done, "start_time"] < j.loc[done, "submit_time"] - 1e-9).any():
            problems.append("a job started before it was submitted")
        if (j.loc[done, "finish_time"] < j.loc[done, "start_time"] - 1e-9).any():
            problems.append("a job finished before it started")
        if j["id"].duplicated().any():
            problems.append("a job appears twice")
        if "rejected" in j and j.loc[j["rejected"], "start_time"].notna().any():
            problems.append("a rejected job ran")
        t = self.totals
        if abs(
            t["work_delivered"] - t["work_completed"] - t["work_lost_total"]
        ) > 1e-6 * max(1.0, t["work_delivered"]):
            problems.append("work delivered != work completed + work lost")
        tl = self.timeline
        if (tl["training_gpus_used"] > self.capacity["training_gpus"]).any():
            problems.append("training GPUs over capacity")
        if (
            tl["loaned_gpus_used"]
            > tl["on_loan"] * self.capacity["max_inference_server_gpus"]
        ).any():
            problems.append("loaned GPUs used beyond the servers on loan")
        if self.allocations is not None:
            from .history import history_problems

            problems += history_problems(self.allocations, j, t)
        if problems:
            raise InvariantError("; ".join(problems))
        return self

    def save(
        self, path: Union[str, os.PathLike[str]], *, overwrite: bool = False
    ) -> Path:
        """Write this run to the folder ``path`` (Parquet tables + JSON); returns the path.

        ``aryl.sim.load(path)`` reads it back equal. An aryl result already at ``path``
        is replaced whole, at once; any other existing file or folder raises
        ``ValueError`` and is left as it was, unless ``overwrite=True``
        (``aryl.engine.storage`` has the rules).
        """
        return storage.save(self, path, overwrite=overwrite)

    def __eq__(self, other: object) -> bool:
        """Same tables (columns, dtypes, values, NaN where NaN), totals, label and provenance."""
        if not isinstance(other, Result):
            return NotImplemented
        return (
            self.label == other.label
            and self.capacity == other.capacity
            and self.violations == other.violations
            and self.provenance == other.provenance
            and _same_dict(self.totals, other.totals)
            and _same_table(self.jobs, other.jobs)
            and _same_table(self.timeline, other.timeline)
            and _same_table(self.allocations, other.allocations)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable tables

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"Result({self.label or 'simulation'}: {s['jobs_finished']} jobs finished, "
            f"{s['jobs_unfinished']} unfinished; mean JCT {s['jct_mean']:.0f} s, "
            f"mean queuing {s['queuing_mean']:.0f} s, preemption ratio {s['preemption_ratio']:.2%})"
        )

    def _repr_html_(self) -> str:
        from .._display import html_table, metric

        rows: List[Tuple[str, Any]] = [
            (METRICS[k].label, metric(v, METRICS[k].kind))
            for k, v in self.summary().items()
        ]
        p = self.provenance
        if p is not None:
            rows += [
                ("jobs", f"{p.jobs:,}"),
                ("policy / reclaim", f"{p.policy} / {p.reclaim}"),
                (
                    "cluster",
                    f"{p.cluster.get('training_servers')} training + "
                    f"{p.cluster.get('inference_servers')} inference servers",
                ),
                ("seed", p.seed),
                ("aryl", p.aryl_version),
            ]
            if p.load_extended:
                rows.append(("note", p.load_extended))
        return html_table(rows, self.label or "Result")


#: Seconds in an hour (the ledger is in GPU-hours).
HOUR = 3600.0


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


def _slowdowns(jobs: pd.DataFrame) -> pd.Series:
    """Each job's JCT over its time from first start to finish (NaN if unfinished; 1
    for a job that finished the instant it started)."""
    ran = jobs["finish_time"] - jobs["start_time"]
    return (jobs["jct"] / ran).where(ran > 0, 1.0).where(jobs["finish_time"].notna())


def _same_table(a: Optional[pd.DataFrame], b: Optional[pd.DataFrame]) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a.equals(b)) and list(a.columns) == list(b.columns)


def _same_dict(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(storage.same_value(a[k], b[k]) for k in a)


def load(path: Union[str, os.PathLike[str]]) -> Result:
    """The ``Result`` saved in the folder ``path`` by ``Result.save``.

    Raises ``FileNotFoundError`` when there is no saved result at ``path`` and
    ``aryl.sim.ResultFileError`` (a ``ValueError``) naming the file when it is damaged
    or was edited (``aryl.engine.storage`` has the rules).
    """
    return storage.read(path, _from_saved)


def _from_saved(
    jobs: pd.DataFrame,
    timeline: pd.DataFrame,
    meta: Dict[str, Any],
    history: Optional[pd.DataFrame],
) -> Result:
    provenance = meta["provenance"]
    return Result(
        jobs,
        timeline,
        meta["totals"],
        meta["capacity"],
        meta["label"],
        list(meta["violations"]),
        None if provenance is None else Provenance.from_dict(provenance),
        history,
    )
