"""The allocation history's cost at paper scale (``simulate(..., history=True)``).

The paper-scale run of ``engine_time.py`` (``aryl.traces.synthetic(days=15,
jobs=50_000, seed=0)``, Basic scenario, 443 training + 520 inference servers, aryl
policy and reclaim) with and without the history, alternately, each in a fresh
(spawned) process: CPU time inside the engine (``_core.simulate``, the recording),
CPU time of the whole ``simulate`` call (the recording plus building the table), and
the process's peak memory (``maxrss``: Python, pandas, the engine). Medians over
``ROUNDS`` pairs, with every figure printed.

Run: python benchmarks/history.py [ROUNDS]
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from typing import Any, Dict

from _common import machine
from engine_time import engine_seconds

ROUNDS = 3


def _child(history: bool, out: Any) -> None:
    run = engine_seconds(15, 50_000, 443, 520, history=history)
    result = run["result"]
    info: Dict[str, Any] = {
        "engine_s": run["cpu"],
        "simulate_s": run["simulate_cpu"],
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jct_mean": run["jct_mean"],
    }
    if history:
        start = time.process_time()
        result.check()
        info["check_s"] = time.process_time() - start
        h = result.history()
        info["rows"] = len(h)
        info["table_mb"] = h.memory_usage(deep=True).sum() / 1e6
    out.put(info)


def measure(history: bool) -> Dict[str, Any]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=_child, args=(history, out))
    p.start()
    info: Dict[str, Any] = out.get()
    p.join()
    return info


def main(argv: list) -> int:
    rounds = int(argv[0]) if argv else ROUNDS
    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    runs: Dict[bool, list] = {False: [], True: []}
    for r in range(rounds):
        for history in (False, True):
            info = measure(history)
            runs[history].append(info)
            print(f"round {r}, history={history}: {info}", flush=True)
    off, on = runs[False], runs[True]
    assert all(i["jct_mean"] == off[0]["jct_mean"] for i in off + on)  # same run
    med = {
        k: (statistics.median(i[k] for i in off), statistics.median(i[k] for i in on))
        for k in ("engine_s", "simulate_s", "maxrss_mb")
    }
    for key, (a, b) in med.items():
        print(f"median {key}: without {a:.3f}, with {b:.3f}, ratio {b / a:.3f}")
    print(
        f"history: {on[0]['rows']:,} rows, {on[0]['table_mb']:.1f} MB as a DataFrame; "
        f"Result.check() with it {statistics.median(i['check_s'] for i in on):.2f} s CPU"
    )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
