"""Run aryl's decisions on a real cluster: the paper's prototype, on Ray.

``Controller`` is the one writer of an ``aryl.ClusterState`` whose ``on_loan`` flags
are the whitelist; it runs any policy ``aryl.sim.simulate`` runs (a name or a policy
object) on a clock, turning decisions into actions through a backend
(``RayBackend``: nodes labelled with their server ids, workers pinned by label, base
workers as one placement group; ``FakeBackend``: in-process, for tests). Jobs are
``TrainingJob`` objects (``resize``, ``step``, ``save``, ``load``) driven by their
``JobAgent``; a trace replays as ``EmulatedJob``s, which advance at the simulator's
rate. Every action is journaled in the simulator's history schema and a run returns
an ``aryl.sim.Result`` (``docs/live.md``).
"""

from ..defaults import MAX_COMPRESSION
from .backend import Backend, FakeBackend, Report
from .controller import RECLAIM_GRACE_S, WORKER_RESTARTS, Controller
from .jobs import EmulatedJob, JobAgent, TrainingJob, progress_rate
from .journal import Journal, JournalMismatch, JournalRepaired
from .record import Record, replay
from .timing import Clock, LoadSource, VirtualClock, calibrated

__all__ = [
    "Backend",
    "Clock",
    "Controller",
    "EmulatedJob",
    "FakeBackend",
    "JobAgent",
    "Journal",
    "JournalMismatch",
    "JournalRepaired",
    "LoadSource",
    "MAX_COMPRESSION",
    "RECLAIM_GRACE_S",
    "Record",
    "Report",
    "TrainingJob",
    "VirtualClock",
    "WORKER_RESTARTS",
    "calibrated",
    "progress_rate",
    "replay",
]
