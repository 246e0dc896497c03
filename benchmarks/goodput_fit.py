"""Accuracy of the fitted Pollux throughput model on each application's measurements.

For each of the six embedded applications (the Pollux artifact's traces), fit the
7-parameter throughput model to every measured row of `placements.csv` and
`scalability.csv` (the C++ fit, `aryl._core.fit_perf_params`) and report the median
relative error |predicted - measured| / measured of the step time, separately on the
two files (the issue's target: under 10% each). For comparison, the same objective
fitted by SciPy's L-BFGS-B (tests/reference/goodput.py, the artifact's optimiser) and
a harder check: fitted on `placements.csv` alone (at most 4 nodes, what a job profiles
on a 4-node slice) and evaluated on `scalability.csv` (6-16 nodes). Fit times are the
median of repeated runs.

Run: python benchmarks/goodput_fit.py
"""

from __future__ import annotations

from functools import partial

import numpy as np
from reference import goodput as ref

from _common import fmt_time, machine, median_seconds, table
from aryl import _core
from aryl.traces import POLLUX_APPLICATIONS, pollux_application

COLUMNS = ("num_nodes", "num_replicas", "atomic_bsz", "accum_time", "step_time")


def median_errors(params, profile, rows):
    pred = _core.predict_step_time(
        params,
        profile["num_nodes"][rows],
        profile["num_replicas"][rows],
        profile["atomic_bsz"][rows],
    )
    measured = profile["step_time"][rows]
    return float(np.median(np.abs(pred - measured) / measured))


def main() -> None:
    print(f"Machine: {machine()}\n")
    rows = []
    for name in POLLUX_APPLICATIONS:
        app = pollux_application(name)
        profile = app.core.profile()
        cols = [profile[c] for c in COLUMNS]
        n_place = len(app.placements)
        place = np.arange(len(profile["step_time"])) < n_place
        scal = ~place
        fit = _core.fit_perf_params(*cols)
        seconds = median_seconds(
            partial(_core.fit_perf_params, *cols), repeat=5, min_total=0.1
        )
        ref_params, ref_objective = ref.fit(*cols)
        ref_seconds = median_seconds(partial(ref.fit, *cols), repeat=1, min_total=0.0)
        small = _core.fit_perf_params(*[c[place] for c in cols])
        rows.append(
            [
                name,
                f"{n_place} / {int(scal.sum())}",
                f"{100 * median_errors(fit['params'], profile, place):.1f}%",
                f"{100 * median_errors(fit['params'], profile, scal):.1f}%",
                f"{fit['objective']:.4f}",
                f"{ref_objective:.4f}",
                f"{100 * median_errors(ref_params, profile, place):.1f}% / "
                f"{100 * median_errors(ref_params, profile, scal):.1f}%",
                f"{100 * median_errors(small['params'], profile, scal):.1f}%",
                fmt_time(seconds),
                fmt_time(ref_seconds),
            ]
        )
    print(
        table(
            [
                "application",
                "rows (placements / scalability)",
                "median error, placements",
                "median error, scalability",
                "objective (C++)",
                "objective (L-BFGS-B)",
                "L-BFGS-B errors",
                "scalability, fit on placements only",
                "C++ fit",
                "SciPy fit",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
