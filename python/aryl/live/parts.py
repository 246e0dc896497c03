"""What the live controller's parts share: its state, and the methods one part calls
on another, declared once for the type checker.

``Controller`` (``controller.py``: the loop) is made of parts, one module each: its
``Epochs`` (``epochs.py``: what a policy decides, turned into workers), ``Loans``
(``loans.py``: lending and reclaiming), ``Faults`` (``faults.py``: dead nodes and
workers) and ``Journaling`` (``journaling.py``: every event journaled then applied,
the header, a resume). They share one object's state, set by ``Controller.__init__``;
this base only names it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ..engine.config import Config
from ..model import Job, Server, Worker
from ..state import ClusterState
from ..typing import SimulationReclaimPolicy
from .backend import Backend
from .jobs import TrainingJob
from .journal import Journal
from .record import Record
from .timing import Clock, LoadSource


class ControllerParts:
    """The controller's state (``Controller`` documents it) and the methods its parts
    call on one another; each part defines its own, so these never run."""

    config: Config
    jobs: List[Job]
    servers: List[Server]
    policy: Any
    reclaim_policy: SimulationReclaimPolicy
    backend: Backend
    clock: Clock
    grace: float
    worker_restarts: int
    seed: int
    name: str
    load: LoadSource
    load_note: Optional[str]
    gpu_speed: Dict[str, float]
    programs: Dict[Any, TrainingJob]
    state: ClusterState
    journal_path: Optional[Union[str, os.PathLike[str]]]
    record: Record
    restarts: Dict[Any, int]
    _trace: ClusterState  # the trace in trace order: the views are built from it
    _job_index: Dict[Any, int]
    _journal: Journal
    _resuming: bool
    _dirty: bool  # something changed since the last epoch
    _epochs: int
    _progress: Dict[Any, float]  # job -> fraction done, last reported
    _joining: List[Any]  # lent servers not yet joined, in lend order
    _rejoined: List[Any]  # of those, ready when a resume lent again
    _pending: List[Job]  # jobs not yet arrived, by submit time

    def _emit(self, event: Dict[str, Any]) -> None:
        """Journal ``event``, then apply it (``Journaling``)."""
        raise NotImplementedError

    def _workers(
        self,
        job: Any,
        workers: Sequence[Worker],
        why: str,
        t: float,
        done: float,
        act: bool = True,
    ) -> List[Worker]:
        """Journal a job's new workers and have the backend run them (``Epochs``)."""
        raise NotImplementedError

    def _done(self, job: Any) -> float:
        """The fraction of ``job`` done, as last reported (``Epochs``)."""
        raise NotImplementedError

    def _view(self, queued: bool) -> ClusterState:
        """The simulator's view of the run for the kernels (``Epochs``)."""
        raise NotImplementedError

    def _options(self, ids: Sequence[Any]) -> Dict[str, Any]:
        """``ClusterState.schedule``'s options for this run (``Epochs``)."""
        raise NotImplementedError

    def _stop_for_reclaim(self, drain: Mapping[str, Any]) -> None:
        """Drain a reclaim's servers and stop its jobs (``Loans``)."""
        raise NotImplementedError
