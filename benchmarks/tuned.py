"""Aryl+TunedJobs on the ITP trace (paper Table 3 row 12, §7.4), beside the paper.

The embedded ITP cluster04 trace as ``aryl compare`` reads it (``to_jobs`` with its
default any-type share and seed 0), the Basic scenario (seed 0), every job mapped
onto a Pollux application by GPU-time (``traces.pollux_profiles``, seed 0, work
scaled to its trace duration), run under policy ``aryl`` with each job's Pollux
agent (``config.agent = "pollux"``), no loaning, on the training servers ``aryl
compare`` sizes for the trace (85 8-GPU servers) split into 4-GPU nodes
(``sim.pollux_nodes``: the Pollux profiles cover at most 4 GPUs per node). For
reference the same mapped jobs also run without the agent (the user's batch,
values from the linear curve). Printed: mean JCT and mean queuing, with the
paper's Pollux and Aryl+TunedJobs values; the wall time of each run.

Run: python benchmarks/tuned.py [--training-servers N] [--no-plain]
"""

from __future__ import annotations

import argparse
import time

from _common import machine, table

#: The paper's Table 3 (ITP trace): mean JCT (s) of Pollux and Aryl+TunedJobs.
PAPER = {"Pollux": 14_534.0, "Aryl+TunedJobs": 10_229.0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--training-servers", type=int, default=85)
    parser.add_argument("--no-plain", action="store_true", help="skip the run without agent")
    args = parser.parse_args()
    from aryl import sim, traces

    start = time.perf_counter()
    frame, _ = traces.load_default()
    jobs = sim.scenario(traces.to_jobs(frame, seed=0), "basic", seed=0)
    workload = traces.pollux_profiles(jobs, seed=0, node_gpus=4)
    mapping_wall = time.perf_counter() - start
    nodes = sim.pollux_nodes(sim.Cluster(args.training_servers, 0))
    shares = workload.groupby("application").size() / len(workload)
    print(f"Machine: {machine()}\n")
    print(f"{len(workload):,} jobs mapped in {mapping_wall:.1f} s; applications: "
          + ", ".join(f"{a} {s:.1%}" for a, s in shares.items()))
    print(f"Cluster: {nodes.training_servers} nodes x 4 GPUs "
          f"({args.training_servers} 8-GPU servers), no loaning\n")
    rows = []
    for label, agent in (("Aryl+TunedJobs", "pollux"), ("aryl, no agent", None)):
        if agent is None and args.no_plain:
            continue
        start = time.perf_counter()
        result = sim.simulate(workload, nodes, policy="aryl",
                              config={"agent": agent, "loaning": False}, label=label)
        wall = time.perf_counter() - start
        s = result.check().summary()
        paper = PAPER.get(label)
        rows.append([label, f"{s['jct_mean']:.0f}", f"{s['queuing_mean']:.0f}",
                     f"{s['jobs_unfinished']}", f"{paper:.0f}" if paper else "—",
                     f"{wall:.1f} s"])
    rows.append(["Pollux (paper)", "—", "—", "—", f"{PAPER['Pollux']:.0f}", ""])
    print(table(["run", "mean JCT (s)", "mean queuing (s)", "unfinished",
                 "paper mean JCT (s)", "wall"], rows))


if __name__ == "__main__":
    main()
