"""aryl: elastic cluster scheduling for deep learning.

Capacity loaning (lend idle inference servers to training, reclaim them with few
preemptions) and elastic scaling, after *Aryl: An Elastic Cluster Scheduler for
Deep Learning*. The algorithms run in a compiled C++ core (``aryl._core``).
"""

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "aryl's compiled core (aryl._core) could not be imported. Was the package "
        "built? Install it with `pip install .` (see README: `bash scripts/setup`)."
    ) from exc

from .packing import knapsack
from .model import Job, Server, Worker
from .reclaiming import ReclaimPlan, reclaim
from .scheduling import Decision, schedule
from . import traces

from ._version import __version__
__all__ = [
    "Decision", "Job", "ReclaimPlan", "Server", "Worker",
    "knapsack", "reclaim", "schedule", "traces", "__version__",
]
