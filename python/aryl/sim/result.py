"""Results of a simulation: per-job and timeline tables, the paper's summary, checks."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import pandas as pd

from . import storage
from .metrics import METRICS
from .provenance import Provenance


class InvariantError(AssertionError):
    """A simulated run broke one of the simulator's invariants (docs/model.md, section 5)."""


@dataclass
class Result:
    """One simulated run.

    ``jobs`` has one row per job (``id, submit_time, start_time, finish_time,
    queuing_time, jct, preemptions, scaling_ops, work_lost, gpu_types, user, vc``:
    times in seconds, NaN for what never happened; ``user`` and ``vc`` the jobs'
    ``Job.user`` and ``Job.vc``, None where the trace has none); ``timeline`` one row per scheduling
    interval (GPUs used by training jobs on training and on loaned servers,
    servers on loan, inference servers needed, queue length, running jobs).
    ``totals`` holds the run's integrals and counters; ``summary()`` the paper's
    metrics; ``check()`` verifies the invariants. ``provenance`` records what
    produced the run (``aryl.sim.Provenance``: inputs' fingerprints, cluster,
    policies, config, seed, aryl version); ``save(path)`` writes it all and
    ``aryl.sim.load(path)`` reads back an equal ``Result``. ``allocations`` holds every
    job's allocation intervals when the run recorded them (``simulate(...,
    history=True)``), else ``None``; ``history()`` returns them.
    """

    jobs: pd.DataFrame
    timeline: pd.DataFrame
    totals: Dict[str, Any]
    capacity: Dict[str, int]
    label: str = ""
    violations: List[str] = field(default_factory=list)
    provenance: Optional[Provenance] = None
    allocations: Optional[pd.DataFrame] = None

    def history(self) -> pd.DataFrame:
        """Every job's allocation intervals: one row per (job, interval, server).

        Columns ``job, interval, start, end, opened, closed, server, workers, gpus,
        gpu_type, on_loan`` (module ``aryl.sim.history`` has their meaning and the
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
        """The paper's metrics: times in seconds, ratios in [0, 1]."""
        queued = self.jobs["queuing_time"].dropna().to_numpy()
        jct = self.jobs["jct"].dropna().to_numpy()
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
        out = {}
        for name, values in (("queuing", queued), ("jct", jct)):
            for stat, q in (("mean", None), ("median", 50), ("p95", 95), ("p99", 99)):
                if len(values) == 0:
                    out[f"{name}_{stat}"] = float("nan")
                else:
                    out[f"{name}_{stat}"] = float(
                        values.mean() if q is None else np.percentile(values, q)
                    )
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
        if "rejected" in self.jobs:  # a policy of your own that rejects jobs
            out["jobs_rejected"] = int(self.jobs["rejected"].sum())
            out["jobs_unfinished"] -= out["jobs_rejected"]
        return out

    def check(self) -> Result:
        """Raise ``InvariantError`` if any invariant failed; returns ``self`` otherwise.

        Checked: the engine's own audit (if run with ``audit=True``: no server
        over-committed, running jobs within [min, max], nothing on a server not on
        loan); every job finished exactly once with submit <= start <= finish, or
        reported unfinished; work delivered = work completed + work lost; GPU use
        never above capacity in the timeline; and, when the run recorded its history,
        that every job's intervals tile its running time and add up to its preemption
        and scaling counts, within the run's GPU-seconds (``aryl.sim.history``).
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
        (``aryl.sim.storage`` has the rules).
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


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


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
    or was edited (``aryl.sim.storage`` has the rules).
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
