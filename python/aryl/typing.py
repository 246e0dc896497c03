"""Names of the choices aryl's functions take, as ``Literal`` types.

A type checker (mypy, pyright) then rejects a misspelt or unknown name, e.g.
``aryl.schedule(jobs, servers, policy="FIFO")``, before anything runs; the
functions still check their arguments at run time (``ValueError``). The tuples
of valid names the package validates against (``aryl.scheduling.POLICIES`` ...)
are derived from these types, so the two cannot drift apart.

Use them to annotate your own code::

    from aryl.typing import AllocationPolicy

    def run(policy: AllocationPolicy = "aryl") -> None: ...
"""

from __future__ import annotations

from typing import Hashable, Literal, Union

#: A server or job id: an int or a str (any hashable; ``7`` and ``"7"`` collide).
Id = Hashable

#: Allocation policies of ``aryl.schedule`` and ``aryl.sim.simulate``.
AllocationPolicy = Literal["aryl", "fifo", "sjf", "gandiva", "afs"]
#: Policies of ``aryl.schedule``: the kernel's, or Pollux's genetic search.
SchedulePolicy = Union[AllocationPolicy, Literal["pollux"]]
#: Allocation policies of goodput-driven (Pollux workload) simulations (policy
#: ``"aryl"`` runs them too; ``"tiresias"`` runs fixed-duration jobs as well).
GoodputPolicy = Literal["tiresias", "pollux"]
#: A goodput-driven job's agent under policy ``"aryl"`` (``aryl.sim.Config.agent``).
JobAgent = Literal["pollux"]
#: Any allocation policy ``aryl.sim.simulate`` accepts.
SimulationPolicy = Union[AllocationPolicy, GoodputPolicy]
#: Worker placement: aryl's loan-aware best fit, or plain best fit (``"bfd"``).
Placement = Literal["aryl", "bfd"]
#: Reclaim policies of ``aryl.reclaim``.
ReclaimPolicy = Literal["aryl", "scf", "random", "exact", "least-work", "exact-work"]
#: Reclaim policies the simulator runs (``"exact"`` and ``"exact-work"`` are too slow
#: for a whole trace).
SimulationReclaimPolicy = Literal["aryl", "scf", "random", "least-work"]
#: Throughput scaling of jobs without their own curve (``aryl.sim.Config.scaling``).
Scaling = Literal["linear", "imperfect"]
#: Scenario presets of ``aryl.sim.scenario``.
ScenarioName = Literal["baseline", "basic", "advanced", "ideal"]
#: How a scenario picks its elastic jobs (``aryl.sim.scenario``).
ElasticSelection = Literal["gpu_time", "jobs"]
#: Server pools.
Pool = Literal["training", "inference"]
#: Where ``aryl.studies.sweep`` runs its points.
SweepEngine = Literal["auto", "ray", "processes", "threads", "serial"]

__all__ = [
    "AllocationPolicy",
    "ElasticSelection",
    "GoodputPolicy",
    "Id",
    "JobAgent",
    "Placement",
    "Pool",
    "ReclaimPolicy",
    "Scaling",
    "ScenarioName",
    "SchedulePolicy",
    "SimulationPolicy",
    "SimulationReclaimPolicy",
    "SweepEngine",
]
