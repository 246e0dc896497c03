"""A live controller resumes from wherever it died (issue 44): in mid-reclaim, as a
job completes, after any journal event, in mid-write; and a journal that is not
this run's is refused."""

import dataclasses
import json

import numpy as np
import pytest

from aryl.live import (
    Controller,
    FakeBackend,
    Journal,
    JournalMismatch,
    JournalRepaired,
    VirtualClock,
)
from aryl.sim import Cluster, Config
from test_live import CLUSTER, CONFIG, JOBS, LOAD


class Crash(BaseException):
    """The controller's process dies here (not an error it could catch)."""


def controller(tmp_path, backend, resume=False, **kwargs):
    return Controller(
        kwargs.pop("jobs", JOBS),
        kwargs.pop("cluster", CLUSTER),
        backend,
        kwargs.pop("policy", "aryl"),
        load=kwargs.pop("load", LOAD),
        config=kwargs.pop("config", CONFIG),
        clock=VirtualClock(),
        journal=tmp_path / "journal.jsonl",
        resume=resume,
        **kwargs,
    )


def backend_in(tmp_path, cls=FakeBackend):
    return cls(str(tmp_path / "ckpt"))


def crash_after(monkeypatch, dies):
    """The controller dies right after journaling the first event ``dies(event)``
    holds for; returns what heals the journal for the next controller."""
    append = Journal.append

    def dying(self, event):
        append(self, event)
        if dies(event):
            raise Crash(event["event"])

    monkeypatch.setattr(Journal, "append", dying)
    return lambda: monkeypatch.setattr(Journal, "append", append)


def same_run(result, whole):
    for column in ("start_time", "finish_time", "preemptions", "scaling_ops", "jct"):
        np.testing.assert_allclose(
            result.jobs[column], whole.jobs[column], rtol=1e-9, err_msg=column
        )
    assert result.totals == whole.totals


def events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    path = tmp_path_factory.mktemp("whole")
    return controller(path, backend_in(path)).run().check()


@pytest.mark.parametrize("kind", ["drain", "workers", "loan"])
def test_a_controller_that_dies_in_mid_reclaim_resumes_it(
    tmp_path, monkeypatch, whole, kind
):
    """R5-02: dead after the drain (or one of its stops, or the loan-off), a resumed
    controller confirms, releases and journals the reclaim before it decides."""
    backend = backend_in(tmp_path)
    heal = crash_after(
        monkeypatch,
        {
            "drain": lambda e: e["event"] == "drain",
            # the reclaim's first stop
            "workers": lambda e: e.get("why") == "reclaim_preemption",
            # the loan-off, before the reclaim event
            "loan": lambda e: e["event"] == "loan" and not e["on_loan"],
        }[kind],
    )
    with pytest.raises(Crash):
        controller(tmp_path, backend).run()
    heal()
    assert "reclaim" not in [e["event"] for e in events(tmp_path / "journal.jsonl")]
    result = controller(tmp_path, backend, resume=True).run().check()
    assert result.jobs["finish_time"].notna().all()
    same_run(result, whole)
    released = [e[1] for e in backend.log if e[0] == "release"]
    assert sorted(released) == ["i0", "i1"]


class ForgetFails(FakeBackend):
    """The controller dies in its first ``forget`` (after the finish is journaled)."""

    failed = False

    def forget(self, job):
        if not self.failed:
            self.failed = True
            raise Crash("forget")
        super().forget(job)


def test_a_controller_that_dies_as_a_job_completes_resumes(tmp_path, whole):
    """R5-03: the completion is journaled; the backend reports it again on resume and
    is told to forget it, nothing more."""
    backend = backend_in(tmp_path, ForgetFails)
    with pytest.raises(Crash):
        controller(tmp_path, backend).run()
    finished = [
        e["job"]
        for e in events(tmp_path / "journal.jsonl")
        if e["event"] == "workers" and e["why"] == "finish"
    ]
    assert len(finished) == 1 and finished[0] in backend.agents
    result = controller(tmp_path, backend, resume=True).run().check()
    assert finished[0] not in backend.agents
    same_run(result, whole)


def tear(path):
    """Cut the journal's last line in half, as a crash in mid-write leaves it."""
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: last + (len(data) - last) // 2])
    return data[last:]


def test_a_torn_last_line_is_cut_off_and_the_run_resumes_again(tmp_path, whole):
    """R5-05: the torn line is cut (what was whole is kept), the next event starts a
    line of its own, and a second resume works."""
    backend = backend_in(tmp_path)
    controller(tmp_path, backend).run(until=3300.0)
    path = tmp_path / "journal.jsonl"
    kept = path.read_bytes()
    torn = tear(path)
    with pytest.warns(JournalRepaired, match="bytes"):
        second = controller(tmp_path, backend, resume=True)
    assert kept.startswith(path.read_bytes()) and kept != path.read_bytes()
    second.run(until=6000.0)
    assert all(json.loads(line) for line in path.read_text().splitlines())
    assert json.loads(torn)["event"] in [e["event"] for e in events(path)]
    third = controller(tmp_path, backend, resume=True)
    same_run(third.run().check(), whole)


@pytest.mark.parametrize(
    "change, named",
    [
        (
            {"jobs": [dataclasses.replace(j, duration=10 * j.duration) for j in JOBS]},
            "jobs",
        ),
        ({"jobs": JOBS[:4]}, "jobs"),
        ({"cluster": Cluster(2, 1, inference_gpu="V100")}, "servers"),
        ({"policy": "fifo"}, "policy"),
        ({"load": [(0.0, 0.0)]}, "load"),
        ({"config": Config(lend_hold=0.0, restart_overhead=1.0)}, "config"),
        ({"seed": 3}, "seed"),
    ],
)
def test_a_journal_of_another_run_is_refused(tmp_path, change, named):
    """R5-11: the journal's header holds the run's fingerprints; a resume with other
    jobs, servers, policy, options, load or seed is refused, naming what differs,
    and leaves the journal as it was."""
    backend = backend_in(tmp_path)
    controller(tmp_path, backend).run(until=3300.0)
    path = tmp_path / "journal.jsonl"
    before = path.read_bytes()
    assert events(path)[0]["event"] == "header"
    with pytest.raises(JournalMismatch, match=f"another run's journal.*{named}: "):
        controller(tmp_path, backend, resume=True, **change)
    assert path.read_bytes() == before
    controller(tmp_path, backend, resume=True).run().check()  # its own run resumes


def test_a_journal_without_a_header_or_with_a_bad_line_is_named(tmp_path):
    backend = backend_in(tmp_path)
    controller(tmp_path, backend).run(until=1000.0)
    path = tmp_path / "journal.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(JournalMismatch, match="no header"):
        controller(tmp_path, backend, resume=True)
    arrive = json.loads(lines[1])
    assert arrive["event"] == "arrive"
    for bad, message in [
        ({"event": "arrive", "t": 5.0}, "line 2: 'arrive' event: missing field 'job'"),
        ({**arrive, "t": float("inf")}, "line 2: 'arrive' event: .*finite"),
        ({"event": "loan", "t": 1.0, "servers": ["x"], "on_loan": False}, "line 2"),
    ]:
        path.write_text("\n".join([lines[0], json.dumps(bad), *lines[2:]]) + "\n")
        with pytest.raises(ValueError, match=message):
            controller(tmp_path, backend, resume=True)
    (tmp_path / "dir").mkdir()
    with pytest.raises(ValueError, match="not a file"):
        Controller(JOBS, CLUSTER, backend, journal=tmp_path / "dir", resume=True)


def test_the_restart_cap_holds_across_controller_restarts(tmp_path):
    """R5-20: a worker of j0 dies again and again, the controller restarting after
    each death: j0 is restarted in place ``worker_restarts`` times, then requeued."""
    backend = backend_in(tmp_path)
    first = controller(tmp_path, backend, load=None, worker_restarts=2)
    first.run(until=600.0)
    for _ in range(3):
        backend.fail_worker("j0")
        again = controller(tmp_path, backend, resume=True, load=None, worker_restarts=2)
        again.run(until=again.record.now + 120.0)
    assert [e for e in backend.log if e == ("restart", "j0")] == [("restart", "j0")] * 3
    assert again.restarts == {"j0": 3}
    result = controller(tmp_path, backend, resume=True, load=None).run().check()
    assert result.jobs.set_index("id").loc["j0", "preemptions"] == 1
