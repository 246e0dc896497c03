"""One scheduling decision of the Pollux policy (``aryl.schedule(policy="pollux")``)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional

from . import _core, validation
from .decisions import Decision
from .model import Job, Records, Server, Worker, as_records
from .state import ClusterState


def schedule_pollux(
    jobs: Records,
    servers: Records,
    workers: Optional[Records],
    now: Any,
    agents: Optional[Mapping[Any, Any]],
    seed: int = 0,
    generations: int = 100,
    population: int = 100,
) -> Decision:
    """Replicas per server for every submitted job by the Pollux genetic search.

    Needs, per job, a ``aryl.agents.PolluxAgent`` in ``agents`` (its fitted
    goodput model gives the speedups; an agent that has observed nothing counts as
    unprofiled, its speedup its replicas) and ``gpus_per_worker == 1``; ``now``
    (the age of each job, for the restart penalty). A job gets either no replica
    or ``min_workers`` to ``min(max_workers, max(agent.max_replicas,
    min_workers))`` (adaptdl's minimum: it may be stopped, never run below it; a
    minimum of one binds nothing). Usable servers: training servers and on-loan
    inference servers. Raises ``ValueError`` naming the first bad input (e.g. a
    ``min_workers`` above the usable GPUs); nothing is decided then.
    """
    if now is None:
        raise ValueError(
            "policy 'pollux' needs now (each job's age sets its restart penalty)"
        )
    now = validation.real(now, "now")
    jobs = as_records(jobs, Job, "job")
    servers = as_records(servers, Server, "server")
    workers = as_records(workers if workers is not None else [], Worker, "worker")
    # Validates ids, references and capacities, as every other policy does.
    ClusterState.from_records(servers, jobs, workers)
    agents = _agents(jobs, agents)
    running = {w.job for w in workers}
    future = [j.id for j in jobs if j.id not in running and j.submit_time > now]
    active = [j for j in jobs if j.id not in future]
    nodes = [s for s in servers if s.pool == "training" or s.on_loan]
    node_index = {s.id: n for n, s in enumerate(nodes)}
    held: Dict[Any, Counter[int]] = {j.id: Counter() for j in active}
    for w in workers:
        if w.server not in node_index:
            raise ValueError(
                f"worker of job {w.job!r} is on server {w.server!r}, which is "
                "neither a training server nor on loan"
            )
        held[w.job][w.server] += 1
    models, caps, mins, current = [], [], [], []
    for j in active:
        agent = agents[j.id]
        models.append(agent.model() if agent._job.has_model else None)
        least = j.min_workers if j.min_workers > 1 else 0
        mins.append(least)
        caps.append(min(max(int(agent.max_replicas), least), j.max_workers))
        current.append([held[j.id][s.id] for s in nodes] if held[j.id] else [])
    out, _ = _core.pollux_optimize(
        models,
        caps,
        current,
        [0.0] * len(active),
        [j.submit_time for j in active],
        [max(now - j.submit_time, 0.0) for j in active],
        [0] * len(active),
        [s.gpus for s in nodes],
        population,
        generations,
        seed,
        mins,
    )
    start: List[Worker] = []
    stop: List[Worker] = []
    for j, row in zip(active, out):
        mine = [w for w in workers if w.job == j.id]
        for s, want in zip(nodes, row):
            there = [w for w in mine if w.server == s.id]
            stop += there[want:]
            start += [Worker(j.id, s.id, 1, False)] * max(want - len(there), 0)
    allocation = {j.id: int(sum(row)) for j, row in zip(active, out)}
    return Decision(
        policy="pollux",
        start=start,
        stop=stop,
        allocation={**allocation, **{f: 0 for f in future}},
        pending=[j.id for j in active if allocation[j.id] == 0] + future,
    )


def _agents(jobs: List[Job], agents: Optional[Mapping[Any, Any]]) -> Dict[Any, Any]:
    from .agents import PolluxAgent

    if not isinstance(agents, Mapping):
        raise ValueError(
            "policy 'pollux' needs agents: a mapping of job id to PolluxAgent"
        )
    for j in jobs:
        if j.gpus_per_worker != 1:
            raise ValueError(
                f"job {j.id!r}: policy 'pollux' runs one-GPU replicas "
                f"(gpus_per_worker 1), got {j.gpus_per_worker}"
            )
        if not isinstance(agents.get(j.id), PolluxAgent):
            raise ValueError(
                f"job {j.id!r}: policy 'pollux' needs a PolluxAgent in agents"
            )
    unknown = sorted(map(str, set(agents) - {j.id for j in jobs}))
    if unknown:
        raise ValueError(f"agents: unknown job(s) {unknown}")
    if any(math.isnan(j.submit_time) for j in jobs):
        raise ValueError("policy 'pollux' needs each job's submit_time")
    return dict(agents)
