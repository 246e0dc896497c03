"""The live controller's limits (issue 44): a clock it can follow, journal times it
can count, and the inference load ``simulate`` takes."""

import json
import threading

import pytest

from aryl.live import MAX_COMPRESSION, Clock, Controller, FakeBackend, VirtualClock
from aryl.sim import simulate
from test_live import CLUSTER, CONFIG, JOBS, LOAD


@pytest.mark.parametrize("compression", [1e15, 1e300, MAX_COMPRESSION * 1.01])
def test_a_clock_faster_than_the_loop_can_follow_is_refused(compression):
    """R5-08: named, with the bound."""
    with pytest.raises(ValueError, match="compression must be > 0 and at most 10000"):
        Clock(compression)
    assert Clock(MAX_COMPRESSION).compression == MAX_COMPRESSION


class Leaping(VirtualClock):
    """A clock that jumps ``leap`` seconds once past 1,000 s (a stalled process)."""

    def __init__(self, leap):
        super().__init__()
        self.leap = leap

    def wait_until(self, t):
        super().wait_until(t)
        if self.leap and self._now > 1000.0:
            self._now += self.leap
            self.leap = 0.0


def test_the_loop_jumps_to_its_next_epoch_however_far_the_clock_went(tmp_path):
    """R5-08: the next epoch and loan decision after a jump of 1e11 s come at once,
    not 60 s at a time (which took for ever)."""
    controller = Controller(
        JOBS,
        CLUSTER,
        FakeBackend(str(tmp_path / "ckpt")),
        load=LOAD,
        config=CONFIG,
        clock=Leaping(1e11),
        journal=tmp_path / "journal.jsonl",
    )
    done = []
    worker = threading.Thread(target=lambda: done.append(controller.run()))
    worker.daemon = True  # a spinning loop must not hold the test run
    worker.start()
    worker.join(60.0)
    assert done, "the controller's loop did not end"
    assert done[0].jobs["finish_time"].notna().all()


@pytest.mark.parametrize("t", [1e17, float("inf"), float("nan")])
def test_a_journal_time_it_cannot_count_is_refused(tmp_path, t):
    """R5-08: a resume from a journal whose last time is 1e17 s (or not finite) is
    a ValueError naming the line, not a loop that never ends."""
    backend = FakeBackend(str(tmp_path / "ckpt"))
    kwargs = dict(load=LOAD, config=CONFIG, clock=VirtualClock())
    path = tmp_path / "journal.jsonl"
    Controller(JOBS, CLUSTER, backend, journal=path, **kwargs).run(until=1000.0)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    path.write_text("\n".join([*lines[:-1], json.dumps({**last, "t": t})]) + "\n")
    with pytest.raises(ValueError, match=rf"line {len(lines)}: .*must be finite"):
        Controller(JOBS, CLUSTER, backend, journal=path, resume=True, **kwargs)


@pytest.mark.parametrize(
    "load", [[(0.0, 50.0)], [(0.0, 0.0), (600.0, -0.1)], [(0.0, 0.0), (3e3, 1.5)]]
)
def test_a_load_simulate_refuses_is_refused_live_with_its_message(tmp_path, load):
    """R5-14: a series in percent is refused before the run, as ``simulate``
    refuses it, in the same words."""
    with pytest.raises(ValueError) as simulated:
        simulate(JOBS, CLUSTER, inference_load=load, config=CONFIG)
    backend = FakeBackend(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError) as live:
        Controller(JOBS, CLUSTER, backend, load=load, config=CONFIG)
    assert str(live.value) == str(simulated.value)


def test_a_load_callable_answering_a_percentage_is_refused_naming_the_time(tmp_path):
    backend = FakeBackend(str(tmp_path / "ckpt"))
    controller = Controller(
        JOBS, CLUSTER, backend, load=lambda t: 50.0, config=CONFIG, clock=VirtualClock()
    )
    with pytest.raises(ValueError, match=r"at t = 0 s: load\(t\) must be in \[0, 1\]"):
        controller.run()
