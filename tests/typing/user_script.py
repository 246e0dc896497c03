"""A user's script over aryl's whole public API, for the type checker.

``mypy`` (configured in pyproject.toml: strict, ``warn_unused_ignores``) must
accept it as is. ``_must_not_type_check`` holds calls a type checker must
refuse: each carries a ``# type: ignore[code]``, so if one ever type-checks,
the ignore becomes unused and mypy fails. ``tests/py/test_typing.py`` runs
mypy on it and also runs ``main`` on a small input, so it stays real code.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pandas as pd

import aryl
import aryl.sim as sim
import aryl.traces as traces
from aryl.agents import BatchChoice, JobAgent, PolluxAgent
from aryl.typing import AllocationPolicy, ReclaimPolicy, ScenarioName


def one_epoch() -> aryl.Decision:
    """Schedule once on hand-made records, then return two servers."""
    servers = [aryl.Server("t0"), aryl.Server("i0", "inference", on_loan=True)]
    jobs = [
        aryl.Job("a", 2, 1, 3, 3600.0),
        aryl.Job(7, 8, 1, 1, 600.0, submit_time=5.0),
    ]
    policy: AllocationPolicy = "sjf"
    decision = aryl.schedule(jobs, servers, policy=policy, placement="bfd", now=10.0)
    workers: List[aryl.Worker] = decision.apply([])
    for reclaim_policy in ("aryl", "scf", "random", "exact"):
        plan: aryl.ReclaimPlan = aryl.reclaim(servers, jobs, workers, 1, reclaim_policy)
        assert plan.collateral_damage >= 0.0
    chosen: List[int] = aryl.knapsack([[(1, 2.0), (2, 3.0)]], capacity=2)
    assert len(chosen) == 1
    return decision


def simulate_trace(folder: Path) -> sim.Comparison:
    """A small synthetic trace through the simulator, saved and loaded back."""
    frame, load = traces.synthetic(days=1, jobs=40, seed=1)
    jobs: aryl.JobTable = traces.to_jobs(frame)
    first: aryl.Job = jobs[0]
    assert first.duration > 0
    name: ScenarioName = "basic"
    elastic = sim.scenario(jobs, name, seed=2)
    overrides: Dict[str, object] = sim.scenario_config(name)
    share = sim.describe(elastic)["elastic_share"]
    print(f"{len(elastic)} jobs, {share:.0%} elastic, {overrides}")
    cluster = sim.Cluster(training_servers=4, inference_servers=4)
    config = sim.Config(placement="aryl", scaling="imperfect", lend_hold=0.0)
    result = sim.simulate(
        elastic,
        cluster,
        policy="aryl",
        reclaim="scf",
        inference_load=load,
        config=config,
        seed=3,
        label="aryl",
    )
    summary: Dict[str, float] = result.check().summary()
    assert summary["jct_mean"] > 0
    saved: Path = result.save(folder / "run")
    assert sim.load(saved) == result
    runs: Dict[str, Dict[str, Any]] = {
        "fifo": {"policy": "fifo"},
        "aryl": {"policy": "aryl", "config": {"headroom": 0.1}},
    }
    comparison = sim.compare(elastic, cluster, runs, inference_load=load)
    table: pd.DataFrame = comparison.table
    assert list(table.index) == ["fifo", "aryl"]
    return comparison


def agent_curve() -> List[float]:
    """A Pollux agent's throughput curve, through the JobAgent interface."""
    agent: JobAgent = PolluxAgent.for_application("cifar10")
    agent.observe(1, 1, 128, step_time=0.05, sync_time=0.0, grad_sqr=1.0, grad_var=50.0)
    choice: BatchChoice = agent.goodput(1, 2)
    assert choice.goodput >= 0
    return agent.throughput_curve(4)


def main(folder: Path) -> None:
    """Run every part on small inputs."""
    decision = one_epoch()
    comparison = simulate_trace(folder)
    curve = agent_curve()
    small = traces.to_jobs(traces.synthetic(days=1, jobs=30)[0])
    # 30 jobs in a day keep even the fewest servers that fit them ~56% busy: no size
    # reaches the paper's 72% (size_cluster would say so), so aim at 50%.
    sizing = sim.size_cluster(small, utilisation=0.5, max_runs=12)
    print(decision.allocation, comparison.shape, len(curve), sizing.training_servers)


def _must_not_type_check() -> None:
    """Mistakes a type checker catches before anything runs (never called)."""
    servers = [aryl.Server("t0")]
    jobs = [aryl.Job("a", 1, 1, 1, 60.0)]
    aryl.schedule(jobs, servers, policy="FIFO")  # type: ignore[arg-type]
    aryl.schedule(jobs, servers, placement="best-fit")  # type: ignore[arg-type]
    aryl.reclaim(servers, jobs, [], 1, policy="greedy")  # type: ignore[arg-type]
    sim.simulate(jobs, sim.Cluster(), policy="Pollux")  # type: ignore[arg-type]
    sim.simulate(jobs, sim.Cluster(), reclaim="exact")  # type: ignore[arg-type]
    sim.scenario(jobs, "advanced-ish")  # type: ignore[arg-type]
    sim.Config(scaling="superlinear")  # type: ignore[arg-type]
    aryl.Server("t1", pool="storage")  # type: ignore[arg-type]
    policy: ReclaimPolicy = "aryl"
    aryl.schedule(jobs, servers, policy=policy)  # type: ignore[arg-type]
    aryl.Job("b", 1, 1, 1, "an hour")  # type: ignore[arg-type]
    sim.simulate(jobs, sim.Cluster(), seed="0")  # type: ignore[arg-type]
    sim.load(42)  # type: ignore[arg-type]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp))
