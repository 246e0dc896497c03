"""The whole simulator, C++ engine against the plain-Python reference, on the same work.

Work: the first day of arrivals of the paper-scale synthetic trace
(``aryl.traces.synthetic(days=15, jobs=50_000, seed=0)``, converted with
``to_jobs(seed=0)``), Basic scenario (seed 0), on the paper's 443 training + 520
inference 8-GPU servers, aryl policy, capacity loaning driven by the trace's own
load series, aryl reclaiming. Both run until every one of those jobs finishes.
The engine is timed as the ``_core.simulate`` call alone (median of three runs)
and as the whole ``aryl.sim.simulate``, in CPU time (``time.process_time``: the
machine is shared, wall time is not the code's); the reference
(tests/reference/simulator.py) replays the very arguments ``_core.simulate`` got,
and the script checks that every job starts and finishes at the same time in both.

Run: python benchmarks/reference_ratio.py [--hours H]   (H: arrivals kept, default 24)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import machine, table


def inputs(hours: float):
    """Jobs (Basic scenario) and load of the first ``hours`` of the synthetic trace."""
    import aryl.sim as sim
    from aryl import traces

    frame, load = traces.synthetic(days=15, jobs=50_000, seed=0)
    frame = frame[frame["submit_time_s"] < hours * 3600.0]
    jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
    return jobs, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    hours = parser.parse_args().hours

    from unittest import mock

    from reference import simulator as reference

    import aryl.sim as sim
    from aryl import _core

    jobs, load = inputs(hours)
    calls = []

    def timed(*args, **kwargs):
        start = time.process_time()
        raw = real(*args, **kwargs)
        calls.append((args, time.process_time() - start))
        return raw

    real = _core.simulate
    with mock.patch.object(_core, "simulate", side_effect=timed):
        start = time.process_time()
        result = sim.simulate(
            jobs,
            sim.Cluster(443, 520),
            policy="aryl",
            reclaim="aryl",
            inference_load=load,
            seed=0,
        )
        whole = time.process_time() - start
    args, first = calls[0]
    engine_times = [first]
    for _ in range(2):  # the engine's time is short: the median of three runs
        start = time.process_time()
        real(*args)
        engine_times.append(time.process_time() - start)
    engine = sorted(engine_times)[1]
    start = time.process_time()
    outcome = reference.simulate(*args[:6])
    python = time.process_time() - start

    same = all(
        np.array_equal(
            result.jobs[c].to_numpy(), np.asarray(getattr(outcome, c)), equal_nan=True
        )
        for c in ("start_time", "finish_time")
    )
    print(f"Machine: {machine()}\n")
    print(
        f"{len(jobs)} jobs (first {hours:g} h of arrivals), 443 + 520 servers, "
        f"{result.totals['epochs_run']} epochs run, "
        f"{result.totals['reclaims']} reclaims, "
        f"{int(result.jobs['preemptions'].sum())} preemptions; same start and finish "
        f"for every job: {same}\n"
    )
    print(
        table(
            [
                "C++ engine (_core.simulate, median of 3)",
                "aryl.sim.simulate (whole call)",
                "plain-Python reference",
                "ratio (reference / engine)",
            ],
            [
                (
                    f"{engine:.3f} s",
                    f"{whole:.3f} s",
                    f"{python:.1f} s",
                    f"{python / engine:.0f}x",
                )
            ],
        )
    )


if __name__ == "__main__":
    main()
