"""A job's workers on Ray: actors pinned by label, its base workers as one gang.

A job's base workers start as one placement group, one ``{"GPU": g}`` bundle per
worker pinned by ``bundle_label_selector``: all or nothing; a flexible worker is a
single actor with ``label_selector``, so each can leave alone. Workers and gangs are
named and detached (``WORKER_NAME``, ``GANG_NAME``) in the connection's namespace, so
a restarted controller adopts them, and a new run clears what an earlier one left.
"""

from __future__ import annotations

import time
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from ..model import Worker
from .backend import _without
from .ray_nodes import SERVER_LABEL, _ray
from .ray_parts import RayParts

#: Wall seconds a gang may wait to be placed before the start is refused.
PLACEMENT_TIMEOUT_S = 60.0
#: Names of the workers and gangs (detached, namespaced).
WORKER_NAME, GANG_NAME = "aryl-worker-{}", "aryl-gang-{}"


def _worker_class() -> Any:
    ray = _ray()

    @ray.remote(num_cpus=0)
    class GpuWorker:
        """One worker: holds its GPUs on its server (a real job runs its shard here)."""

        def __init__(self, identity: Tuple[Any, Any, Optional[int], bool]) -> None:
            # plain values: unpickling an aryl.Worker would import aryl in every
            # worker process, seconds of start-up on a busy node
            self.worker = identity

        def identity(self) -> Tuple[Any, Any, Optional[int], bool]:
            """(job, server, gpus, flexible): a restarted controller adopts it by this."""
            return self.worker

        def where(self) -> Tuple[str, List[Any]]:
            context = ray.get_runtime_context()
            return context.get_node_id(), [str(g) for g in ray.get_gpu_ids()]

    return GpuWorker


class Gangs(RayParts):
    """Workers and gangs for ``RayBackend`` (see the module)."""

    def set_workers(self, job: Any, workers: Sequence[Worker]) -> None:
        """Start and stop actors so that ``job`` holds ``workers``."""
        self.set_workers_many({job: workers})

    def set_workers_many(self, changes: Mapping[Any, Sequence[Worker]]) -> None:
        """Start and stop actors so that each job holds its workers: every stop
        first, then the new actors of every job at once, so that one epoch's starts
        wait for Ray together rather than one job after another (each wait counts
        ``compression``-fold). A gang that cannot be placed holds nothing; the jobs
        whose gangs could not be placed are named in one ``RuntimeError`` after the
        others have started."""
        ray = _ray()
        began = time.time()  # the agent host, on this node, times the starts from it
        plans = {job: self._diff(job, workers) for job, workers in changes.items()}
        emptied = [job for job, workers in changes.items() if not workers]
        host = self._host()
        ray.get([host.resize.remote(j, [], self.servers) for j in emptied])
        for job, (_, leaving, _) in plans.items():  # leaving; the emptied save first
            for w, actor in leaving:
                ray.kill(actor)
                self._stopping.append((w, actor))
                self.log.append(("stop", job, w.server))
        for job in emptied:
            self.running.pop(job, None)
            self._remove_group(job)
        starting = {j: p for j, p in plans.items() if changes[j]}
        gangs = {j: self._reserve(j, p[2]) for j, p in starting.items() if not p[0]}
        unplaced = self._wait_placed(gangs)
        started = {
            job: (
                self._gang(joining, gangs[job]) if not keep else self._singles(joining)
            )
            for job, (keep, _, joining) in starting.items()
            if job not in unplaced
        }
        for job, new in started.items():
            self.log.append(
                (
                    "gang" if not starting[job][0] else "join",
                    job,
                    tuple(w.server for w, _ in new),
                )
            )
            self.running[job] = starting[job][0] + new
        # a job with new actors is resized by the host once they are up (a pinned
        # single waits for its GPUs), without the controller waiting; the others now
        ray.get(
            [
                host.start.remote(
                    j, self._placed(j), self.servers, [a for _, a in new], began
                )
                if new
                else host.resize.remote(j, self._placed(j), self.servers)
                for j, new in started.items()
            ]
        )
        if unplaced:
            raise RuntimeError(
                f"job(s) {sorted(map(str, unplaced))}: their gangs could not be placed"
            )

    def _placed(self, job: Any) -> List[Worker]:
        """The workers ``job`` holds (its actors' records)."""
        return [w for w, _ in self.running.get(job, [])]

    def _diff(
        self, job: Any, workers: Sequence[Worker]
    ) -> Tuple[List[Tuple[Worker, Any]], List[Tuple[Worker, Any]], List[Worker]]:
        """(kept actors, leaving actors, joining workers) for ``job`` to hold
        ``workers``."""
        placed = list(self.running.get(job, []))
        keep: List[Tuple[Worker, Any]] = []
        for w in workers:
            match = next(
                (
                    p
                    for p in placed
                    if p[0].server == w.server and p[0].flexible == w.flexible
                ),
                None,
            )
            if match is not None:
                placed.remove(match)
                keep.append(match)
        return keep, placed, _without(list(workers), [k[0] for k in keep])

    def _reserve(self, job: Any, workers: List[Worker]) -> Any:
        """The job's gang reserved as one placement group (not waited for)."""
        groups = _ray("util.placement_group")
        self._remove_group(job)
        self.groups[job] = groups.placement_group(
            [{"GPU": w.gpus} for w in workers],
            bundle_label_selector=[{SERVER_LABEL: str(w.server)} for w in workers],
            name=GANG_NAME.format(job),
            lifetime="detached",
        )
        return self.groups[job]

    def _wait_placed(self, gangs: Mapping[Any, Any]) -> List[Any]:
        """Wait until every gang is placed or the timeout; the jobs whose gangs were
        not (their groups removed: all or nothing)."""
        if not gangs:
            return []
        ray = _ray()
        waits = {group.ready(): job for job, group in gangs.items()}
        ready, _ = ray.wait(
            list(waits), num_returns=len(waits), timeout=self.placement_timeout
        )
        placed = {waits[r] for r in ready}
        unplaced = [job for job in gangs if job not in placed]
        for job in unplaced:
            self._remove_group(job)
        return unplaced

    def _remove_group(self, job: Any) -> None:
        group = self.groups.pop(job, None)
        if group is not None:
            _ray("util.placement_group").remove_placement_group(group)

    def _gang(self, workers: List[Worker], group: Any) -> List[Tuple[Worker, Any]]:
        """The actors of a placed gang, one per bundle."""
        strategies = _ray("util.scheduling_strategies")
        return [
            (
                w,
                self._worker.options(
                    **self._worker_options(w),
                    scheduling_strategy=strategies.PlacementGroupSchedulingStrategy(
                        group, k
                    ),
                ).remote(_identity(w)),
            )
            for k, w in enumerate(workers)
        ]

    def _singles(self, workers: List[Worker]) -> List[Tuple[Worker, Any]]:
        """Workers joining a running job, one actor each, pinned by label."""
        return [
            (
                w,
                self._worker.options(
                    **self._worker_options(w),
                    label_selector={SERVER_LABEL: str(w.server)},
                ).remote(_identity(w)),
            )
            for w in workers
        ]

    def _worker_options(self, worker: Worker) -> Dict[str, Any]:
        """A new worker actor's name, lifetime and GPUs."""
        self._started += 1
        return {
            "name": WORKER_NAME.format(self._started - 1),
            "lifetime": "detached",
            "num_gpus": worker.gpus,
        }

    def where(self, job: Any) -> List[Tuple[Any, List[str]]]:
        """``(node id, GPU ids)`` of each of the job's workers (tests)."""
        ray = _ray()
        where: List[Tuple[Any, List[str]]] = ray.get(
            [a.where.remote() for _, a in self.running.get(job, [])]
        )
        return where

    def _drop(self, job: Any) -> None:
        ray = _ray()
        for _, actor in self.running.pop(job, []):
            ray.kill(actor)
        self._remove_group(job)


def _identity(worker: Worker) -> Tuple[Any, Any, Optional[int], bool]:
    """A worker as the plain values its actor keeps."""
    return (worker.job, worker.server, worker.gpus, worker.flexible)


def _named(prefix: str) -> List[Tuple[str, Any]]:
    """(name, handle) of the live named actors of the namespace whose name starts
    with ``prefix``."""
    names = [n for n in _ray("util").list_named_actors() if n.startswith(prefix)]
    found = [(n, _actor(n)) for n in sorted(names)]
    return [(n, a) for n, a in found if a is not None]


def _actor(name: str) -> Any:
    """The named actor of the namespace, or None."""
    try:
        return _ray().get_actor(name)
    except ValueError:
        return None


def _placement_group(name: str) -> Any:
    """The named placement group of the namespace, or None."""
    try:
        return _ray("util").get_placement_group(name)
    except ValueError:
        return None


def _remove_gangs(keep: set[str]) -> None:
    """Remove the namespace's live gangs (named placement groups) not in ``keep``."""
    for info in _ray("util").placement_group_table().values():
        name = info.get("name") or ""
        if (
            name.startswith(GANG_NAME.format(""))
            and name not in keep
            and info.get("state") != "REMOVED"
        ):
            group = _placement_group(name)
            if group is not None:
                _ray("util.placement_group").remove_placement_group(group)
