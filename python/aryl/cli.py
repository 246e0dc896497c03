"""The ``aryl`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional, Sequence

from . import reclaiming
from .demo import loaned_cluster


def _table(header: Sequence[str], rows: List[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]])


def demo(args: argparse.Namespace) -> int:
    servers, jobs, workers = loaned_cluster(args.training_servers, args.loaned_servers, args.seed)
    on_loan = sum(s.on_loan for s in servers)
    elastic = sum(j.elastic for j in jobs)
    print(f"Cluster: {len(servers) - on_loan} training + {on_loan} on-loan 8-GPU servers, "
          f"{len(jobs)} running jobs ({elastic} elastic), {len(workers)} workers.")
    print("The inference cluster asks for servers back; each policy picks which to return.\n")
    rows = []
    for n in args.reclaim:
        for policy in reclaiming.POLICIES:
            start = time.perf_counter()
            try:
                plan = reclaiming.reclaim(servers, jobs, workers, n, policy, seed=args.seed)
            except ValueError as exc:
                if policy != "exact":
                    raise
                rows.append((n, policy, "—", "—", "—", "too large for exact search"))
                continue
            ms = (time.perf_counter() - start) * 1e3
            rows.append((n, policy, len(plan.preempted), sum(plan.scaled_in.values()),
                         f"{plan.collateral_gpus} ({plan.collateral_damage:.0%})", f"{ms:.2f}"))
    print(_table(["reclaim", "policy", "jobs preempted", "workers scaled in",
                  "collateral GPUs", "time (ms)"], rows))
    print("\nFewer preempted jobs is better; collateral GPUs are freed on servers that are kept.")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aryl",
        description="aryl: capacity loaning and elastic scaling for deep-learning clusters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser(
        "demo",
        help="reclaim loaned servers on a packed, real-looking cluster under every policy",
        description="Build a seeded cluster whose job sizes follow the ITP trace, then "
        "reclaim on-loan servers under the aryl, scf, random and exact policies and "
        "print how many jobs each preempts.",
    )
    p.add_argument("--training-servers", type=int, default=32, metavar="N",
                   help="training servers (8 GPUs each; default 32)")
    p.add_argument("--loaned-servers", type=int, default=48, metavar="N",
                   help="inference servers on loan (8 GPUs each; default 48)")
    p.add_argument("--reclaim", type=int, nargs="+", default=[4, 12, 24], metavar="N",
                   help="how many servers to reclaim, one run each (default 4 12 24)")
    p.add_argument("--seed", type=int, default=0, help="seed of the cluster and of 'random'")
    p.set_defaults(run=demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``aryl`` console script."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as exc:
        print(f"aryl: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
