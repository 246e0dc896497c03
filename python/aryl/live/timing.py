"""Time and inference load for the live runtime: ``Clock``, ``VirtualClock``, ``LoadSource``,
and ``calibrated`` (a measured start latency as the simulator's configuration).

Everything the controller decides is in simulated seconds, as in the simulator. A
``Clock(compression=C)`` runs them ``C`` times faster than wall time (``C = 1`` for
real jobs); a ``VirtualClock`` jumps straight to the next event, for tests on the
in-process backend, so that a live run there has no timing slack at all.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import _core
from ..defaults import MAX_COMPRESSION
from ..engine.config import Config


def calibrated(config: Config, start_latency: float) -> Config:
    """``config`` for a simulation that books a start latency measured live
    (simulated seconds a start waited for the cluster, ``RayBackend.start_overhead()``)
    where the live run booked it: each start's job holds its workers without progress
    that long (``start_overhead``: running time, not queuing), and a restart from a
    checkpoint waits for it before its own ``restart_overhead``, as a live restart
    does (the simulator charges a restart ``restart_overhead`` instead of
    ``start_overhead``, so the calibrated one is their sum)."""
    if not (0.0 <= start_latency < math.inf):
        raise ValueError(
            f"start_latency must be a finite number of seconds >= 0, got {start_latency}"
        )
    return dataclasses.replace(
        config,
        start_overhead=float(start_latency),
        restart_overhead=config.restart_overhead + float(start_latency),
    )


class Clock:
    """Simulated seconds from wall time, ``compression`` times faster."""

    virtual = False

    def __init__(self, compression: float = 1.0) -> None:
        """``compression``: simulated seconds per wall second (> 0)."""
        if isinstance(compression, bool) or not isinstance(compression, (int, float)):
            raise TypeError(f"compression must be a number, got {compression!r}")
        if not (0.0 < compression <= MAX_COMPRESSION):
            raise ValueError(
                f"compression must be > 0 and at most {MAX_COMPRESSION:g} (a wall "
                f"millisecond is then {MAX_COMPRESSION / 1000:g} simulated seconds; "
                f"faster, the controller cannot follow its epochs), got {compression}"
            )
        self.compression = float(compression)
        self._origin = time.monotonic()
        self._offset = 0.0

    def start(self, at: float = 0.0) -> None:
        """Simulated time ``at`` is now (a restarted controller resumes its time)."""
        self._origin = time.monotonic()
        self._offset = at

    def now(self) -> float:
        """Simulated seconds since ``start``."""
        return self._offset + (time.monotonic() - self._origin) * self.compression

    def wait_until(self, t: float) -> None:
        """Sleep until simulated time ``t`` (at once if it has passed)."""
        wall = (t - self.now()) / self.compression
        if wall > 0:
            time.sleep(wall)

    def wall(self, seconds: float) -> float:
        """Wall seconds that ``seconds`` simulated ones take."""
        return seconds / self.compression


class VirtualClock(Clock):
    """A clock that moves only when waited on: ``wait_until(t)`` makes it ``t``."""

    virtual = True

    def __init__(self) -> None:
        """Starts at 0."""
        super().__init__(1.0)
        self._now = 0.0

    def start(self, at: float = 0.0) -> None:
        """Simulated time ``at`` is now."""
        self._now = at

    def now(self) -> float:
        """The time last waited for."""
        return self._now

    def wait_until(self, t: float) -> None:
        """Jump to ``t`` (never back)."""
        self._now = max(self._now, t)


class LoadSource:
    """The inference load: which fraction of the inference servers it needs.

    From ``(time_s, load)`` rows, as ``aryl.sim.simulate`` takes them (a step
    function; before the first row its value), or from a callable ``load(t)``
    (e.g. reading Prometheus), which is sampled at each loan decision: the lending
    hold then sees the samples taken.
    """

    def __init__(
        self,
        load: Any = None,
        servers: int = 0,
        headroom: float = 0.0,
        lend_hold: float = 3600.0,
    ) -> None:
        """``servers``: the inference servers; ``headroom`` and ``lend_hold`` as in
        ``aryl.sim.Config``."""
        self._call: Optional[Callable[[float], float]] = None
        self.times: List[float] = []
        self.loads: List[float] = []
        if callable(load):
            self._call = load
        elif load is not None:
            from ..engine.core_io import _load

            self.times, self.loads = _load(load)
            check_load(self.times, self.loads)
        self.servers = servers
        self.headroom = headroom
        self.hold = lend_hold

    @property
    def active(self) -> bool:
        """Whether anything can be lent (a load and inference servers)."""
        return self.servers > 0 and (self._call is not None or bool(self.times))

    def extend(self, last_submit: float) -> Optional[str]:
        """Repeat a series that ends before ``last_submit``, as ``simulate`` does."""
        from ..engine.provenance import extend_to_jobs

        if self._call is not None:
            return None
        self.times, self.loads, note = extend_to_jobs(
            self.times, self.loads, last_submit
        )
        return note

    def at(self, t: float) -> float:
        """The load at ``t``."""
        if self._call is not None:
            value = float(self._call(t))
            if not 0.0 <= value <= 1.0:
                raise ValueError(
                    f"inference load at t = {_number(t)} s: load(t) must be in "
                    f"[0, 1] (a fraction, not a percentage), got {_number(value)}"
                )
            bisect.insort(self.times, t)
            self.loads.insert(self.times.index(t), value)
            return value
        if not self.times:
            return 0.0
        i = bisect.bisect_right(self.times, t)
        return self.loads[max(i - 1, 0)]

    def spare(self, t: float) -> int:
        """Servers the load at ``t`` leaves spare."""
        return self._spare(self.at(t))

    def lendable(self, t: float) -> int:
        """Servers spare over the whole hold before ``t``: the peak load decides."""
        peak = self.at(t - self.hold) if self._call is None else 0.0
        lo = bisect.bisect_right(self.times, t - self.hold)
        hi = bisect.bisect_right(self.times, t)
        for value in self.loads[lo:hi]:
            peak = max(peak, value)
        return self._spare(peak)

    def settled(self) -> float:
        """When loans can no longer change (a series' end plus the hold; a callable
        never settles)."""
        if self._call is not None:
            return math.inf
        return (self.times[-1] + self.hold) if self.times else 0.0

    def series(self) -> Tuple[Sequence[float], Sequence[float]]:
        """``(times, loads)`` seen or given, for the simulator's run beside a live one."""
        return list(self.times), list(self.loads)

    def _spare(self, load: float) -> int:
        return int(_core.spare_servers([load], self.servers, self.headroom)[0])


def check_load(times: Sequence[float], loads: Sequence[float]) -> None:
    """Refuse an inference-load series as ``aryl.sim.simulate`` does, with its
    messages: every time finite and increasing, every load in [0, 1]."""
    for i, (t, value) in enumerate(zip(times, loads)):
        if not math.isfinite(t) or not 0.0 <= value <= 1.0:
            raise ValueError(
                f"inference load row {i}: time must be finite and load in [0, 1], "
                f"got ({_number(t)}, {_number(value)})"
            )
        if i > 0 and t <= times[i - 1]:
            raise ValueError(
                f"inference load row {i}: times must increase, got {_number(t)} "
                f"after {_number(times[i - 1])}"
            )


def _number(value: float) -> str:
    """A number as the engine's messages print it (``50``, ``0.25``, ``inf``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text
