"""aryl: elastic cluster scheduling for deep learning.

Capacity loaning (lend idle inference servers to training, reclaim them with few
preemptions) and elastic scaling, after *Aryl: An Elastic Cluster Scheduler for
Deep Learning*. The algorithms run in a compiled C++ core (``aryl._core``).
"""

from types import ModuleType
from typing import TYPE_CHECKING, List

try:
    from . import _core  # noqa: F401 - imported to fail early, with a hint
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "aryl's compiled core (aryl._core) could not be imported. Was the package "
        "built? Install it with `pip install .` (see README: `bash scripts/setup`)."
    ) from exc

from ._version import __version__
from .decisions import Decision, ReclaimPlan
from .jobtable import JobTable
from .model import Job, Server, Worker
from .packing import knapsack
from .policy import Epoch, Policy
from .reclaiming import reclaim
from .scheduling import schedule
from .state import ClusterState

if TYPE_CHECKING:  # type checkers see the lazy subpackages as plain imports
    from . import plot, sim, traces

__all__ = [
    "ClusterState",
    "Decision",
    "Epoch",
    "Job",
    "JobTable",
    "Policy",
    "ReclaimPlan",
    "Server",
    "Worker",
    "knapsack",
    "plot",
    "reclaim",
    "schedule",
    "sim",
    "traces",
    "__version__",
]

#: Subpackages imported on first use (PEP 562), so ``import aryl`` stays light.
_LAZY = ("plot", "sim", "traces")


def __getattr__(name: str) -> ModuleType:
    """``aryl.sim``, ``aryl.plot`` and ``aryl.traces`` after a bare ``import aryl``."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    """The module's names, the lazy subpackages included."""
    return sorted(set(globals()) | set(_LAZY))
