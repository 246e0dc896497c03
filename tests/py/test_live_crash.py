"""Crash points (issue 44, item 2): a live run on the in-process backend, killed
right after each journal event in turn and in the middle of writing each, then
resumed with the same backend (as Ray's detached agents and workers outlive the
controller), ends with every job finished exactly once and the result of the run
that was never interrupted."""

import json
import os

import numpy as np
import pytest

from aryl import Job
from aryl.live import Controller, FakeBackend, Journal, JournalRepaired, VirtualClock
from aryl.sim import Cluster, Config

# A small trace with every kind of step: starts, a scale-out, completions, a lend,
# and a reclaim at 900 s that preempts one job and scales another in.
JOBS = [
    Job("a", 8, 1, 1, 700.0),
    Job("b", 8, 1, 3, 700.0, submit_time=60.0),
    Job("c", 8, 1, 1, 400.0, submit_time=120.0),
    Job("d", 8, 1, 1, 500.0, submit_time=700.0),
]
CLUSTER = Cluster(1, 2, inference_gpu="V100")
LOAD = [(0.0, 0.0), (900.0, 0.5), (1200.0, 0.9)]
CONFIG = Config(lend_hold=0.0)


#: Backends to crash on: plain; lent servers that join 250 s after the lend (the
#: controller goes on meanwhile); and b's workers ignoring their stops, so that each
#: reclaim waits its grace (120 s) and kills them, losing the work since b's last
#: checkpoint (every 100 s).
SETUPS = {
    "plain": {},
    "joining": {"join": 250.0},
    "hung": {"checkpoint_every": 100.0},
}


def backend(path, setup, cls=None):
    made = (cls or FakeBackend)(str(path / "ckpt"), **SETUPS[setup])
    if setup == "hung":
        made.hang("b")
    return made


class Crash(BaseException):
    """The controller's process dies (nothing in it may catch this)."""


def run(path, backend, resume=False):
    return Controller(
        JOBS,
        CLUSTER,
        backend,
        "aryl",
        load=LOAD,
        config=CONFIG,
        clock=VirtualClock(),
        journal=path / "journal.jsonl",
        resume=resume,
    ).run()


def crashing(monkeypatch, point, torn):
    """Journal.append that dies after its ``point``-th event (``torn``: in the middle
    of writing it, half the line on disk)."""
    append = Journal.append
    count = [0]

    def dying(self, event):
        count[0] += 1
        if count[0] == point:
            if torn:
                line = json.dumps(event) + "\n"
                self._file.write(line[: len(line) // 2])
                self._file.flush()
            else:
                append(self, event)
            raise Crash(point)
        append(self, event)

    monkeypatch.setattr(Journal, "append", dying)
    return lambda: monkeypatch.setattr(Journal, "append", append)


WHOLE = {}


@pytest.fixture(autouse=True)
def no_sync(monkeypatch):
    """No fsync per event: the process never really dies here, and hundreds of runs
    of syncs would make this an I/O test."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def whole(tmp_path_factory, setup):
    """The uninterrupted run on ``setup`` and the number of its journal's events."""
    if setup not in WHOLE:
        path = tmp_path_factory.mktemp(setup)
        result = run(path, backend(path, setup)).check()
        lines = (path / "journal.jsonl").read_text().splitlines()
        WHOLE[setup] = result, len(lines), [json.loads(line) for line in lines]
    return WHOLE[setup][:2]


@pytest.mark.parametrize("setup", list(SETUPS))
def test_the_runs_are_long_enough_to_test(tmp_path_factory, setup):
    _, events = whole(tmp_path_factory, setup)
    journal = WHOLE[setup][2]
    kinds = {e.get("why", e["event"]) for e in journal}
    assert {"reclaim_preemption", "reclaim_scale_in", "scale_out", "finish"} <= kinds
    assert 40 <= events <= 200  # every crash point below, in seconds
    if setup == "hung":  # the kill at the grace lost work
        assert any(e["event"] == "lost" and e["fraction"] > 0 for e in journal)
    if setup == "joining":
        assert any(e["event"] == "lend" for e in journal)


@pytest.mark.parametrize(
    "setup, torn",
    [("plain", False), ("plain", True), ("joining", False), ("hung", False)],
    ids=["after", "mid-write", "after-joining", "after-hung"],
)
def test_a_crash_at_every_journal_event_resumes_to_the_same_run(
    tmp_path, tmp_path_factory, monkeypatch, setup, torn
):
    reference, events = whole(tmp_path_factory, setup)
    failures = []
    for point in range(1, events + 1):
        path = tmp_path / str(point)
        made = backend(path, setup)
        heal = crashing(monkeypatch, point, torn)
        with pytest.raises(Crash):
            run(path, made)
        heal()
        try:
            if torn:
                with pytest.warns(JournalRepaired):
                    result = run(path, made, resume=True)
            else:
                result = run(path, made, resume=True)
            result.check()
            finished = [
                json.loads(line)["job"]
                for line in (path / "journal.jsonl").read_text().splitlines()
                if json.loads(line).get("why") == "finish"
            ]
            assert sorted(finished) == sorted(j.id for j in JOBS), "finished once"
            for column in (
                "start_time",
                "finish_time",
                "preemptions",
                "scaling_ops",
                "work_lost",
            ):
                np.testing.assert_allclose(
                    result.jobs[column], reference.jobs[column], err_msg=column
                )
            assert result.totals == reference.totals
        except Exception as error:  # every crash point, then one report
            failures.append(f"event {point}: {type(error).__name__}: {error}")
    assert not failures, "\n".join(failures)


# every call that changes something (``busy``, a read, is polled each simulated
# second of a reclaim's wait: a crash there is one before the next call)
ACTIONS = (
    "submit",
    "set_workers",
    "set_workers_many",
    "poll",
    "drain",
    "kill",
    "release",
    "lend",
    "forget",
)


class Dies(FakeBackend):
    """The controller dies in its ``point``-th call of the backend, before the call
    acts (as a kill between two Ray calls leaves it); the backend lives on."""

    point = 0
    calls = 0

    def __getattribute__(self, name):
        if name in ACTIONS and object.__getattribute__(self, "point"):
            self.calls += 1
            if self.calls == self.point:
                self.point = 0
                raise Crash(name)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("setup", ["plain", "hung"])
def test_a_crash_in_any_backend_call_resumes_to_the_same_run(
    tmp_path, tmp_path_factory, setup
):
    reference, _ = whole(tmp_path_factory, setup)
    failures = []
    point = 0
    while True:
        point += 1
        path = tmp_path / str(point)
        made = backend(path, setup, Dies)
        made.point = point
        try:
            run(path, made)
        except Crash:
            pass
        else:
            break  # past the run's last call
        try:
            result = run(path, made, resume=True).check()
            for column in ("finish_time", "work_lost"):
                np.testing.assert_allclose(
                    result.jobs[column], reference.jobs[column], err_msg=column
                )
            assert result.totals == reference.totals
        except Exception as error:
            failures.append(f"call {point}: {type(error).__name__}: {error}")
    assert point > 50 and not failures, "\n".join(failures)
