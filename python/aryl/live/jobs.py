"""Training jobs as the live runtime runs them: the ``TrainingJob`` protocol, the
``EmulatedJob`` that replays a trace job, and the ``JobAgent`` embedded in each job.

A job is any object with ``resize``, ``step``, ``save`` and ``load`` (``TrainingJob``).
Its agent (the paper's "embedded controller") owns it: it tells it which workers it
now has (a join or a departure), lets it step, saves it before it stops, loads it when
it starts again, and checkpoints it every ``checkpoint_every`` simulated seconds.
Checkpoints are written aside and renamed into place (``os.replace``), so a crash in
the middle of a save leaves the last whole checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import uuid
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Protocol, Sequence, runtime_checkable

from ..defaults import HETERO_EFFICIENCY, UNLISTED_GPU_SPEED
from ..model import Job, Server, Worker

#: Progress at or above this counts as the whole job (float rounding of the last step).
DONE = 1.0 - 1e-9


@runtime_checkable
class TrainingJob(Protocol):
    """What the live runtime needs of a training job.

    ``resize(workers, servers)``
        The job's workers changed (it started, or workers joined or left):
        ``workers`` are its ``aryl.Worker`` records now, ``servers`` maps each of their
        server ids to its ``aryl.Server``. Called before the first ``step`` and after
        every change; never with no workers (the job is saved and stopped instead).
    ``step(seconds)``
        Train for about ``seconds`` of (simulated) time on the current workers and
        return the fraction of the whole job done so far, in [0, 1]; 1 means finished.
    ``save(path)`` / ``load(path)``
        Write the job's state to the file ``path`` / read it back. The agent calls
        ``save`` on a temporary path and renames it into place.
    """

    def resize(self, workers: Sequence[Worker], servers: Mapping[Any, Server]) -> None:
        """The job's workers are now ``workers``."""

    def step(self, seconds: float) -> float:
        """Train for ``seconds``; the fraction of the job done so far."""

    def save(self, path: str) -> None:
        """Write the job's state to ``path``."""

    def load(self, path: str) -> None:
        """Read the job's state from ``path``."""


def throughput(job: Job, workers: int, scaling: str = "linear") -> float:
    """The simulator's throughput of ``job`` with ``workers`` workers (``docs/model.md``,
    section 2): linear, or ``"imperfect"`` (10% less of ideal per worker beyond the
    middle of ``[min_workers, max_workers]``)."""
    if workers <= 0:
        return 0.0
    mid = 0.5 * (job.min_workers + job.max_workers)
    beyond = max(0.0, workers - mid) if scaling == "imperfect" else 0.0
    return workers * max(0.1, 1.0 - 0.1 * beyond)


def progress_rate(
    job: Job,
    workers: Sequence[Worker],
    servers: Mapping[Any, Server],
    gpu_speed: Mapping[str, float],
    hetero_efficiency: float = HETERO_EFFICIENCY,
    scaling: str = "linear",
) -> float:
    """Fraction of ``job`` done per simulated second on ``workers``: the simulator's
    rule (throughput x mean GPU speed, x ``hetero_efficiency`` when the workers span
    GPU types) over the job's work, ``duration`` x throughput at ``reference_workers``."""
    if not workers:
        return 0.0
    types = [servers[w.server].gpu_type for w in workers]
    speed = sum(gpu_speed.get(t, UNLISTED_GPU_SPEED) for t in types) / len(types)
    if len(set(types)) > 1:
        speed *= hetero_efficiency
    work = job.duration * throughput(job, job.reference_workers, scaling)
    return throughput(job, len(workers), scaling) * speed / work


class EmulatedJob:
    """A trace job replayed live: it advances at the simulator's rate for its workers
    and their GPU types, and after a restore makes no progress for
    ``restart_overhead`` simulated seconds, as the simulator charges a restarted job.

    Its checkpoint is the fraction done, as JSON.
    """

    def __init__(
        self,
        job: Job,
        gpu_speed: Mapping[str, float],
        hetero_efficiency: float = HETERO_EFFICIENCY,
        scaling: str = "linear",
        restart_overhead: float = 0.0,
    ) -> None:
        """``job``: the trace's record; the rest as in ``aryl.sim.Config``."""
        self.job = job
        self.done = 0.0
        self.rate = 0.0
        self._speed = dict(gpu_speed)
        self._hetero = hetero_efficiency
        self._scaling = scaling
        self._restart_overhead = restart_overhead
        self._paused = 0.0

    def resize(self, workers: Sequence[Worker], servers: Mapping[Any, Server]) -> None:
        """Its rate on ``workers``."""
        self.rate = progress_rate(
            self.job, workers, servers, self._speed, self._hetero, self._scaling
        )

    def step(self, seconds: float) -> float:
        """Advance by ``seconds`` at the current rate (after any restart pause)."""
        paused = min(self._paused, seconds)
        self._paused -= paused
        self.done = min(1.0, self.done + self.rate * (seconds - paused))
        return self.done

    def seconds_left(self) -> float:
        """Simulated seconds until it finishes at the current rate (inf when stopped)."""
        if self.rate <= 0.0:
            return math.inf
        return self._paused + max(0.0, 1.0 - self.done) / self.rate

    def save(self, path: str) -> None:
        """Write the fraction done."""
        Path(path).write_text(json.dumps({"done": self.done}))

    def load(self, path: str) -> None:
        """Read the fraction done; a checkpointed job's restart pause starts."""
        self.done = float(json.loads(Path(path).read_text())["done"])
        self._paused = self._restart_overhead if self.job.checkpoint else 0.0


class JobAgent:
    """The controller embedded in one job: join/departure, checkpoints, progress.

    ``checkpoints``: the folder of the job's checkpoint,
    ``<checkpoint_name(job id)>.<run>.ckpt``. ``run``: the run the checkpoint belongs
    to (default: one of this agent's own); an agent restores only a checkpoint of its
    run, so a new run never starts from the progress an earlier one left in the folder.
    ``checkpoint_every``: simulated seconds between periodic checkpoints (``inf``:
    only on a stop), which bound the work a failure loses.
    """

    def __init__(
        self,
        job_id: Any,
        program: TrainingJob,
        checkpoints: str,
        checkpoint_every: float = math.inf,
        keep_progress: bool = True,
        run: Optional[str] = None,
    ) -> None:
        """The agent of job ``job_id`` running ``program``; ``keep_progress=False``
        (a job without ``checkpoint``) saves only its initial state, so it starts
        over after every stop, as the simulator restarts such a job."""
        if not isinstance(program, TrainingJob):
            raise TypeError(
                f"job {job_id!r}: a job needs resize, step, save and load methods, "
                f"got {type(program).__name__}"
            )
        self.job_id = job_id
        self.program = program
        self.run = run_id(run)
        self.path = Path(checkpoints) / f"{checkpoint_name(job_id)}.{self.run}.ckpt"
        self.checkpoint_every = checkpoint_every
        self.keep_progress = keep_progress
        self.done = 0.0  # fraction done, as the job last said
        self.saved = 0.0  # fraction in the last checkpoint
        self.workers: list[Worker] = []
        self._since_save = 0.0

    def resize(self, workers: Sequence[Worker], servers: Mapping[Any, Server]) -> None:
        """Start (restoring the last checkpoint), change workers, or save and stop.

        The first start saves the initial state, so that a job killed before any
        other checkpoint starts over from it.
        """
        if not workers:
            if self.workers and self.keep_progress:
                self.save()
            self.workers = []
            return
        if not self.workers:
            if self.path.exists():
                self.program.load(str(self.path))
                self.done = self.saved
            else:
                self.save()
        self.workers = list(workers)
        self.program.resize(self.workers, servers)

    def step(self, seconds: float) -> float:
        """Let the job train ``seconds``; checkpoints when one is due."""
        if not self.workers or seconds <= 0.0:
            return self.done
        if not self.keep_progress or math.isinf(self.checkpoint_every):
            self.done = float(self.program.step(seconds))
            self._since_save += seconds
            return self.done
        # up to each checkpoint that falls due, saved there: where the checkpoints
        # fall does not depend on how the steps are cut (when the controller polls)
        while seconds > 0.0 and self.done < DONE:
            chunk = min(seconds, max(0.0, self.checkpoint_every - self._since_save))
            self.done = float(self.program.step(chunk))
            self._since_save += chunk
            seconds -= chunk
            if self._since_save >= self.checkpoint_every and self.done < DONE:
                self.save()
        return self.done

    def save(self) -> None:
        """Checkpoint: written aside, then renamed into place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        aside = self.path.with_suffix(".ckpt.tmp")
        self.program.save(str(aside))
        os.replace(aside, self.path)
        self.saved = self.done
        self._since_save = 0.0

    def lose(self) -> float:
        """The job's workers were killed without a save: the next start restores the
        last checkpoint. Returns the fraction of the job lost."""
        lost = max(0.0, self.done - self.saved)
        self.done = self.saved
        self.workers = []
        self._since_save = 0.0
        return lost

    def report(self) -> Dict[str, Any]:
        """``{"done", "saved", "workers"}``: what the controller reads each tick."""
        return {"done": self.done, "saved": self.saved, "workers": len(self.workers)}


#: Characters of a job id kept in its checkpoint's name (the rest is a hash).
NAME_PREFIX = 40


def checkpoint_name(job_id: Any) -> str:
    """A file name for a job id, one to one and bounded: up to ``NAME_PREFIX`` of its
    letters, digits, ``-`` and ``_`` (for people), then a hash of the whole id (``a/b``
    and ``a_b``, ``A`` and ``a``, ``1`` and ``"1"`` differ; a 300-character id fits)."""
    text = repr(job_id)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    prefix = "".join(
        c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in str(job_id)
    )
    return f"{prefix[:NAME_PREFIX]}-{digest}"


def run_id(run: Optional[str] = None) -> str:
    """``run`` checked (letters, digits, ``-`` and ``_``; it goes into file names), or a
    new random run id."""
    if run is None:
        return uuid.uuid4().hex[:12]
    if (
        not run
        or len(run) > 64
        or not all(c.isascii() and (c.isalnum() or c in "-_") for c in run)
    ):
        raise ValueError(
            f"a run id is 1 to 64 letters, digits, '-' or '_', got {run!r}"
        )
    return run


def emulated_programs(
    jobs: Sequence[Job],
    gpu_speed: Optional[Mapping[str, float]] = None,
    hetero_efficiency: float = HETERO_EFFICIENCY,
    scaling: str = "linear",
    restart_overhead: float = 0.0,
) -> Dict[Any, EmulatedJob]:
    """One ``EmulatedJob`` per trace job, by id."""
    speed = dict(gpu_speed or {})
    return {
        j.id: EmulatedJob(j, speed, hetero_efficiency, scaling, restart_overhead)
        for j in jobs
    }
