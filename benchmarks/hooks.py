"""What a policy of your own costs in the compiled simulator (``simulate(policy=obj)``).

The whole embedded trace (ITP cluster04, 15,802 jobs), its Aryl Basic row of
``sim.paper_runs`` (seed 0) on 85 training + 100 inference servers (the sizing
``aryl compare`` uses), run three ways in this process, each timed in CPU seconds:

- the built-in ``policy="aryl"``;
- the same policy asked through the hooks (``docs/policies.md``'s ``Aryl``:
  ``state.schedule`` and ``state.reclaim`` on the read-only view), which must give the
  same run: the difference over the epochs asked is the hooks' own cost per epoch
  (building the view, crossing to Python and back, checking the answer);
- the docs' new policy (``SmallestGpuTimeFirst``), all Python: the hooks plus the
  policy's own work (the issue's bar: 30 s);
- the same policy on the kernel's parts (``SmallestGpuTimeFirstParts``:
  ``state.columns()`` and ``state.schedule(queue=...)``), and the docs' ``LeastAttainedService``
  (the bar: within 10x of the built-in aryl).

Run: python benchmarks/hooks.py [--days D] [--repeat R]   (D: keep the jobs submitted
in the first D days; default: all. R: run each policy R times and keep its least CPU
time, the fairest reading on a shared machine; default 1)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any, Dict

from _common import ROOT, machine, table


def docs_policies() -> Dict[str, Any]:
    """The policies of docs/policies.md, defined as written there."""
    text = (ROOT / "docs" / "policies.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    namespace: Dict[str, Any] = {}
    for block in blocks:  # the policies, not the page's runs
        if "sim.simulate(" not in block and "ClusterState.from_records" not in block:
            exec(compile(block, "docs/policies.md", "exec"), namespace)
    return namespace


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=float, default=None, help="first D days only")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per policy; the least CPU is kept"
    )
    args = parser.parse_args(argv)
    from aryl import sim, traces

    raw, load = traces.load_default()
    if args.days is not None:
        raw = raw[raw["submit_time_s"] < args.days * 86400]
    jobs = traces.to_jobs(raw)
    run = dict(sim.paper_runs(jobs, load)["Aryl Basic"])
    cluster = sim.Cluster(85, 100)
    policies = docs_policies()
    print(machine())
    print(f"{len(jobs):,} jobs; load average at start {os.getloadavg()[0]:.1f}")
    rows, results = [], {}
    for name, policy in (
        ("built-in aryl", "aryl"),
        ("aryl via hooks", policies["Aryl"]()),
        ("smallest GPU-time first (Python)", policies["SmallestGpuTimeFirst"]()),
        ("smallest GPU-time first (parts)", policies["SmallestGpuTimeFirstParts"]()),
        ("LAS (parts)", policies["LeastAttainedService"]()),
    ):
        cpu = float("inf")
        for _ in range(max(args.repeat, 1)):
            start = time.process_time()
            result = sim.simulate(cluster=cluster, **{**run, "policy": policy}).check()
            cpu = min(cpu, time.process_time() - start)
        results[name] = result
        epochs = int(result.totals["epochs_run"])
        summary = result.summary()
        rows.append([name, f"{cpu:.2f} s", f"{epochs:,}", f"{summary['jct_mean']:.0f}"])
        print(f"{name}: {cpu:.2f} s CPU, {epochs:,} epochs", flush=True)
    print(table(["run", "CPU", "epochs asked", "mean JCT (s)"], rows))
    built_in, hooked = results["built-in aryl"], results["aryl via hooks"]
    same = built_in.jobs.equals(hooked.jobs.drop(columns="rejected")) and (
        built_in.timeline.equals(hooked.timeline)
    )
    cpu = [float(r[1].split()[0]) for r in rows]
    per_epoch = (cpu[1] - cpu[0]) / max(int(hooked.totals["epochs_run"]), 1)
    print(f"aryl via hooks gives the built-in run: {same}")
    print(f"the hooks' cost: {per_epoch * 1e3:.2f} ms CPU per epoch asked")
    for name, row in zip([r[0] for r in rows], cpu):
        print(f"{name}: {row / cpu[0]:.1f}x the built-in aryl's CPU")
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
