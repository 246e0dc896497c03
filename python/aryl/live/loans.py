"""The live controller's loans: lending inference servers and reclaiming them.

Every ``loan_interval`` the load decides as in the simulator. A lend does not wait: a
lent server joins the whitelist when the backend reports its node joined. A reclaim,
as the paper does it: the policy's reclaim chooses the servers; each is drained (no
new worker starts there); the jobs hit save and stop (preempted) or lose their
workers there (scaled in); the controller waits until the backend confirms no aryl
worker runs there, killing what is left at ``grace`` seconds (the work since the last
checkpoint is journaled as lost); only then do the servers leave the whitelist and
go back to the inference side. The ``drain`` event journals the reclaim's plan first,
so that a resumed controller finishes it.
"""

from __future__ import annotations

from typing import (
    Any,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from ..decisions import Decision
from ..engine.hooks import (
    Epoch,
    has_hook,
    reclaim_rows,
)
from ..model import Job, Worker
from ..state import ClusterState
from .parts import ControllerParts
from .record import (
    Record,
)


class Loans(ControllerParts):
    """Lending and reclaiming for ``Controller`` (see the module)."""

    def _loan(self, now: float) -> None:
        lent = len(self.record.on_loan) + len(self._joining)
        spare = self.load.spare(now)
        lendable = min(spare, self.load.lendable(now))
        if lent > spare:
            # servers still joining hold no worker: they go back first, unreclaimed
            keep = max(0, len(self._joining) - (lent - spare))
            back, self._joining = self._joining[keep:], self._joining[:keep]
            if back:
                self._emit({"event": "unlend", "t": now, "servers": back})
                self.backend.release(back)
            if lent - len(back) > spare:
                self._reclaim(now, lent - len(back) - spare)
        elif lent < lendable:
            taken = set(self.record.on_loan) | set(self._joining)
            idle = [
                s.id
                for s in self.servers
                if s.pool == "inference" and s.id not in taken
            ][: lendable - lent]
            if not idle:
                return
            self._emit({"event": "lend", "t": now, "servers": idle})
            self._joining += idle
            ready = self.backend.lend(idle)  # the rest join later (poll)
            self._joined(now, idle if ready is None else ready)  # None: it waited

    def _joined(self, now: float, servers: Sequence[Any]) -> None:
        """Lent servers that have joined go on the whitelist now."""
        ready = set(servers)
        joined = [s for s in self._joining if s in ready]
        if not joined:
            return
        self._joining = [s for s in self._joining if s not in ready]
        self._emit({"event": "loan", "t": now, "servers": joined, "on_loan": True})
        self.state.set_on_loan(joined, True)
        self._dirty = True

    def _reclaim(self, now: float, n: int) -> None:
        """Take ``n`` lent servers back: choose, drain, stop, confirm, whitelist."""
        own = has_hook(self.policy, "reclaim")
        view = self._view(own)
        if own:
            epoch = Epoch(self._epochs, now, self._options(view.job_ids))
            rows = reclaim_rows(self.policy.reclaim(view, n, epoch), view, epoch)
            chosen = [view.server_ids[r] for r in rows]
        else:
            seed = self.seed + int(self.record.totals["reclaims"])
            result = view.reclaim(
                n,
                self.reclaim_policy,
                seed,
                unsaved=self._unsaved(view),
                restart_overhead=self.config.restart_overhead,
            )
            chosen = list(result.plan.servers)
        self._take_back(now, chosen, view)

    def _unsaved(self, view: ClusterState) -> Dict[Any, float]:
        """GPU-seconds a preemption of each running job would throw away, as the
        record books a loss: a job without checkpoint its progress, one with a
        checkpoint nothing (it saves as it stops; least-work adds its restart)."""
        unsaved: Dict[Any, float] = {}
        for j in view.job_ids:
            row = self._job_index[j]
            job = self.jobs[row]
            if not job.checkpoint:
                work = float(self.record.work[row]) * job.gpus_per_worker
                unsaved[j] = self._done(j) * work
        return unsaved

    def _take_back(self, now: float, servers: List[Any], view: ClusterState) -> None:
        """Journal the reclaim's plan with its drain (a resumed controller finishes
        it from there), then carry it out."""
        drain = _drain_event(
            now, servers, self.record, self.jobs, self._job_index, view.workers()
        )
        # the jobs' progress now, which their stops journal (a resume has no poll)
        drain["done"] = [
            [j, self._done(j)] for j in drain["preempted"] + drain["scaled"]
        ]
        self._emit(drain)
        self._stop_for_reclaim(drain)
        self._release_reclaimed(drain)

    def _stop_for_reclaim(self, drain: Mapping[str, Any]) -> None:
        """Drain the servers, then save and stop (or scale in) the jobs there: those
        the journal does not yet show stopped (all of them, but after a crash)."""
        now, servers = float(drain["t"]), list(drain["servers"])
        done = {j: float(d) for j, d in drain.get("done", [])}
        self.backend.drain(servers)
        for j in drain["preempted"]:
            if j in self.record.workers:
                fraction = done.get(j, self._done(j))
                self._workers(j, [], "reclaim_preemption", now, fraction)
        for j in drain["scaled"]:
            placed = self.record.workers.get(j, [])
            left = [Worker(j, s, None, f) for s, f in placed if s not in servers]
            if len(left) < len(placed):
                fraction = done.get(j, self._done(j))
                self._workers(j, left, "reclaim_scale_in", now, fraction)

    def _release_reclaimed(self, drain: Mapping[str, Any]) -> None:
        """Confirm the drained servers are empty (killing what is left past the
        grace), take them off the whitelist and give them back."""
        now, servers = float(drain["t"]), list(drain["servers"])
        preempted = set(drain["preempted"])
        self._confirm(now, servers)
        confirmed = max(now, self.clock.now())
        stops = [
            w for w in self.state.workers() if w.server in servers or w.job in preempted
        ]
        Decision(self.name, [], stops).apply(self.state)
        if any(s in self.record.on_loan for s in servers):  # one event: all or none
            self.state.set_on_loan(servers, False)
            self._emit(
                {"event": "loan", "t": confirmed, "servers": servers, "on_loan": False}
            )
        self._emit(
            {
                "event": "reclaim",
                "t": confirmed,
                "servers": servers,
                "demand_gpus": drain["demand_gpus"],
                "collateral_gpus": drain["collateral_gpus"],
                "free": drain["free"],
            }
        )
        self.backend.release(servers)
        self._dirty = True

    def _confirm(self, now: float, servers: Sequence[Any]) -> None:
        """Wait until no aryl worker runs on ``servers``; kill what is left at the
        deadline, journaling the work lost."""
        deadline = now + self.grace
        waiting = [s for s in servers if self.backend.busy(s)]
        while waiting and self.clock.now() < deadline:
            self.clock.wait_until(min(deadline, self.clock.now() + 1.0))
            waiting = [s for s in waiting if self.backend.busy(s)]
        for s in waiting:
            for job, fraction in self.backend.kill(s).items():
                killed = max(now, self.clock.now())
                self._emit(
                    {"event": "lost", "t": killed, "job": job, "fraction": fraction}
                )


def _drain_event(
    now: float,
    servers: List[Any],
    record: Record,
    jobs: List[Job],
    index: Mapping[Any, int],
    held: Sequence[Worker],
    journaled: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The ``drain`` event of a reclaim of ``servers`` at ``now``: its plan (the
    jobs it preempts and scales in) and its figures (demand, collateral GPUs,
    servers freed without a preemption there) from the workers ``held`` before it.
    ``journaled``: a drain event read back, completed when an older journal wrote it
    without them (from what the record holds now)."""
    if journaled is not None:
        now, servers = float(journaled["t"]), list(journaled["servers"])
        if "preempted" in journaled:
            return dict(journaled)
        held = [
            Worker(j, s, jobs[index[j]].gpus_per_worker, f)
            for j in record.running()
            for s, f in record.workers[j]
        ]
    preempted, scaled = _plan(record, jobs, index, servers)
    gone = set(preempted)
    placed = [(w.job, w.server, w.gpus or 0) for w in held]
    return {
        "event": "drain",
        "t": now,
        "servers": servers,
        "preempted": preempted,
        "scaled": scaled,
        "demand_gpus": sum(record.server[s].gpus for s in servers),
        # GPUs preempted elsewhere; servers returned without preempting a job there
        "collateral_gpus": sum(
            g for j, srv, g in placed if j in gone and srv not in servers
        ),
        "free": sum(
            not any(j in gone and srv == s for j, srv, _ in placed) for s in servers
        ),
    }


def _plan(
    record: Record, jobs: List[Job], index: Mapping[Any, int], servers: Sequence[Any]
) -> Tuple[List[Any], List[Any]]:
    """Jobs a return of ``servers`` preempts (left below ``min_workers``) and scales in."""
    preempted: List[Any] = []
    scaled: List[Any] = []
    for j in record.running():
        placed = record.workers[j]
        left = sum(s not in servers for s, _ in placed)
        if left == len(placed):
            continue
        (
            scaled if left >= jobs[index[j]].min_workers and left > 0 else preempted
        ).append(j)
    return preempted, scaled
