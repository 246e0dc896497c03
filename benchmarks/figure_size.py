"""Sizes of the usage figures ``aryl.plot.save_all`` writes, on the embedded trace.

Two cases: the Aryl Basic row alone (``aryl.sim.paper_runs``; ``docs/figures/gantt.py``
draws the same run), whose ``usage`` figure is written with hourly means (the default
``window``) and with every scheduling step (``window=None``); and all rows of ``aryl
compare`` (``usage_grid``, one panel per run, hourly means). Each on the cluster
``aryl.sim.size_cluster`` sizes. Prints a Markdown table of the files' sizes.

Run: python benchmarks/figure_size.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Dict, Optional


def paper_results(only: Optional[str] = None) -> Dict[str, Any]:
    """The embedded trace's comparison rows (or the row ``only``), simulated."""
    from aryl import sim, traces

    frame, load = traces.load_default()
    jobs = traces.to_jobs(frame, seed=0)
    cluster = sim.size_cluster(jobs).cluster
    rows = sim.paper_runs(jobs, load)
    return {
        name: sim.simulate(cluster=cluster, label=name, **row)
        for name, row in rows.items()
        if only in (None, name)
    }


def usage_sizes(results: Dict[str, Any], window: Optional[float]) -> str:
    """``| SVG | PDF |`` cells: the sizes of save_all's usage files, in kB."""
    from aryl import plot

    with tempfile.TemporaryDirectory() as folder:
        plot.save_all(results, folder, formats=("svg", "pdf"), window=window)
        sizes = [(Path(folder) / f"usage.{f}").stat().st_size for f in ("svg", "pdf")]
    return " | ".join(f"{size / 1e3:,.0f} kB" for size in sizes)


def main() -> None:
    basic = paper_results("Aryl Basic")
    runs = paper_results()
    rows = (
        ("Aryl Basic, hourly means (default)", basic, 3600.0),
        ("Aryl Basic, every step (`window=None`)", basic, None),
        (f"all {len(runs)} rows of `aryl compare`, hourly means", runs, 3600.0),
    )
    print("| usage figure | SVG | PDF |\n|---|---|---|")
    for name, results, window in rows:
        print(f"| {name} | {usage_sizes(results, window)} |")


if __name__ == "__main__":
    main()
