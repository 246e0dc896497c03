"""A reusable, validated cluster state for live schedulers (README, "live scheduler").

``aryl.schedule`` and ``aryl.reclaim`` take the whole cluster as records and
convert it on every call. A scheduler that decides again and again on a cluster
that changes a little at a time builds a ``ClusterState`` once instead, updates it
as jobs arrive and finish, servers come and go and decisions are applied, and
calls ``state.schedule(...)`` / ``state.reclaim(n)`` on it, which run the kernels
without converting anything.

The state is held as NumPy columns (servers, jobs, and workers by row index) plus
the compiled core's copy of them. Every construction and every update is
validated with the same rules and messages as the record API (``ValueError``
naming the record) and is atomic: when it fails, the state is unchanged.

The package's parts: ``cluster_state`` (``ClusterState``: construction, the
simulator's view, the kernels and time), ``stored`` (its tables and their one
commit), ``views`` (its records, columns and frames), ``updates`` (its changes in
place), ``tables`` (records and columns into validated tables), ``schedule`` and
``reclaim`` (the kernels on a state), ``schedule_result`` (what ``schedule``
decided), ``columns`` (``StateColumns``, what a policy reads).
"""

from __future__ import annotations

from .cluster_state import ClusterState
from .reclaim import ReclaimResult
from .schedule_result import ScheduleResult

__all__ = ["ClusterState", "ReclaimResult", "ScheduleResult"]
