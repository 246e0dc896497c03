"""Job agents: per-job models that tell a scheduler what an allocation is worth.

``JobAgent`` is the hook interface (``observe``, ``goodput``, ``speedup``,
``throughput_curve``); ``PolluxAgent`` implements it with Pollux's goodput model
(Qiao et al., OSDI'21), fitted and optimised in C++.

Examples
--------
>>> from aryl.agents import PolluxAgent
>>> agent = PolluxAgent.for_application("cifar10")
>>> agent.observe(1, 1, 128, step_time=0.05, sync_time=0.0, grad_sqr=1.0, grad_var=50.0)
True
>>> curve = agent.throughput_curve(4)   # for aryl.sim.simulate(..., throughput={id: curve})
"""

from .base import BatchChoice, JobAgent, packed_nodes
from .pollux import PERF_PARAM_NAMES, PolluxAgent

__all__ = ["BatchChoice", "JobAgent", "PERF_PARAM_NAMES", "PolluxAgent", "packed_nodes"]
