"""The run recipe, written once: a trace and a run's parameters -> ``simulate``'s arguments.

A run is built the same way by ``aryl simulate``, ``aryl sweep`` (``sweep.run_point``)
and the CLI's cluster sizing:

1. ``trace_jobs``: the trace's job frame (its first ``first_jobs`` rows) becomes jobs with
   ``aryl.traces.to_jobs(any_type_share, seed)`` (a list of jobs is taken as is);
2. ``scenario_settings``: the policy (the scenario's when none is given) and the
   ``Config`` fields (the scenario's preset, then the fields given);
3. ``run_arguments``: ``aryl.sim.scenario(scenario, seed, elastic_gpu_share,
   hetero_share)`` makes some of the jobs elastic or hetero, and the result is
   ``simulate``'s keyword arguments (all but the cluster, which may be sized from the
   jobs of step 1).

So a sweep's row equals ``aryl simulate`` with the same options (tests/py/test_runs.py).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import pandas as pd

from ..defaults import (
    ANY_TYPE_SHARE,
    ELASTIC_GPU_SHARE,
    ELASTIC_JOB_SHARE,
    ELASTIC_RANGE,
    ELASTIC_SELECTION,
    HETERO_SHARE,
)
from ..jobtable import JobTable
from ..traces import to_jobs
from ..typing import ElasticSelection, ScenarioName
from .scenarios import scenario, scenario_config


def trace_jobs(
    jobs: Any,
    first_jobs: Optional[int] = None,
    any_type_share: float = ANY_TYPE_SHARE,
    seed: int = 0,
) -> JobTable:
    """A trace's jobs before any scenario: the first ``first_jobs`` of them (None: all).

    Parameters
    ----------
    jobs
        A job frame (``aryl.traces.read_jobs``), converted with ``to_jobs``; or jobs
        (``Job``, dicts, a ``JobTable``), taken as they are.
    first_jobs
        Keep only the first N rows or jobs.
    any_type_share, seed
        ``to_jobs``' share of unknown-type jobs that may run on any GPU type, and its seed.

    Returns
    -------
    JobTable
    """
    if isinstance(jobs, pd.DataFrame):
        frame = jobs if first_jobs is None else jobs.iloc[:first_jobs]
        return to_jobs(frame, any_type_share=any_type_share, seed=seed)
    return JobTable.of(jobs)[:first_jobs]


def scenario_settings(
    name: ScenarioName,
    policy: Any = None,
    config: Optional[Mapping[str, Any]] = None,
) -> Tuple[Any, Dict[str, Any]]:
    """(policy, ``Config`` fields) of a run of scenario ``name``.

    The policy is ``policy`` (a name or a policy object), else the scenario's
    (``scenario_config``); the fields are
    the scenario's preset overridden by ``config``.
    """
    preset = scenario_config(name)
    chosen = preset["policy"] if policy is None or policy == "" else policy
    preset.pop("policy", None)
    return chosen, {**preset, **dict(config or {})}


def run_arguments(
    jobs: JobTable,
    load: Any,
    *,
    scenario_name: ScenarioName,
    seed: int = 0,
    policy: Any = None,
    reclaim: str = "aryl",
    config: Optional[Mapping[str, Any]] = None,
    elastic_gpu_share: float = ELASTIC_GPU_SHARE,
    hetero_share: float = HETERO_SHARE,
    elastic_selection: ElasticSelection = ELASTIC_SELECTION,
    elastic_job_share: float = ELASTIC_JOB_SHARE,
    elastic_range: float = ELASTIC_RANGE,
    elastic_max_gpus: Optional[int] = None,
) -> Dict[str, Any]:
    """``simulate``'s keyword arguments (all but ``cluster``) for one run.

    Parameters
    ----------
    jobs
        The trace's jobs (``trace_jobs``); the scenario is applied here.
    load
        The inference-load series (``simulate``'s ``inference_load``) or None.
    scenario_name, elastic_gpu_share, hetero_share
        Passed to ``aryl.sim.scenario``, with ``seed``.
    elastic_selection, elastic_job_share, elastic_range, elastic_max_gpus
        Passed to ``aryl.sim.scenario`` too: which jobs are elastic and how far they scale.
    seed
        Seeds the scenario's draws and the simulation (random reclaim).
    policy, config
        As ``scenario_settings`` resolves them.
    reclaim
        The reclaim policy.

    Returns
    -------
    dict
        ``jobs``, ``policy``, ``reclaim``, ``inference_load``, ``config`` and ``seed``.
    """
    chosen, settings = scenario_settings(scenario_name, policy, config)
    return dict(
        jobs=scenario(
            jobs,
            scenario_name,
            seed=seed,
            elastic_gpu_share=elastic_gpu_share,
            hetero_share=hetero_share,
            elastic_selection=elastic_selection,
            elastic_job_share=elastic_job_share,
            elastic_range=elastic_range,
            elastic_max_gpus=elastic_max_gpus,
        ),
        policy=chosen,
        reclaim=reclaim,
        inference_load=load,
        config=settings,
        seed=seed,
    )
