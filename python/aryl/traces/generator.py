"""A seeded job and inference-load generator calibrated to the paper's published statistics.

What the paper gives (§2, §7.1) and how ``synthetic`` matches it at its defaults:

* **Jobs and span** — 50,390 jobs in 15 days: ``jobs=50_000, days=15`` (139 jobs/h; paper 140).
* **Offered training load** — 443 8-GPU servers (3,544 GPUs) at 82% average utilisation
  (§2): durations are scaled by one factor so that the mean GPU-time per job is
  ``0.82 * 3544 * 15 d / 50,390 = 74,745`` GPU-s (``GPU_SECONDS_PER_JOB``); the offered load,
  total GPU-time over the span, is then 82% of 3,544 GPUs at the paper's arrival rate
  (81.4% at the defaults, whose 50,000 jobs are 0.8% fewer; proportional to ``jobs / days``).
* **GPU demand and durations** — the paper gives only aggregates ("minutes to days"), so
  ``(num_gpus, duration_s)`` pairs are drawn uniformly, with replacement, from the embedded
  ITP cluster04 trace (``load_default``): its mix (1 GPU 75.5%, 8 GPUs 17.6%, up to 64) and its
  joint shape (wide jobs run longer) are kept; durations are then scaled (by ~0.47, so
  ITP's median 2.2 h becomes ~1 h and its 14.3-day maximum ~6.7 days) and rounded to whole
  seconds (at least 1).
* **Arrivals** — a Poisson process with a diurnal rate ``1 + 0.5 cos(2 pi (h - 14) / 24)``
  (``h`` = hour of day, time 0 = midnight; busiest at 14:00, 3x the 02:00 rate), conditioned
  on ``jobs`` arrivals. A modelling choice: the paper says training demand shows no clear
  pattern, and the ITP trace is burstier (batches of submissions) than Poisson.
* **Inference load** (§2, Fig. 2) — 5-min steps, daily peak-to-trough ~2.2 (of hourly means),
  mean ~65% utilisation, peak hours near 95% that last about four hours at night, the trough
  before dawn: a piecewise-linear daily profile ``0.42 + 0.53 f(h)`` (``LOAD_PROFILE`` gives
  ``f``: 1 from 20:00 to 24:00, 0 at 05:00), times a per-day factor ``1 + N(0, 0.03)``, plus
  AR(1) noise (``phi = 0.8``, stationary sd 0.02), clipped to ``[0, 1]`` and rounded to 5
  decimals. Measured at the defaults (seed 0): mean 0.659, daily ratios 2.14-2.41 (mean
  2.25), trough hour 05, peak hours 20-24; 5-min values touch 1.0 on ~1-3% of samples, so the
  mean is also ~0.66 of the series' own peak.

``tests/py/test_traces.py`` checks these statistics on ``synthetic(days=3, jobs=10_000)``.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from importlib.resources import files
from typing import Tuple

import numpy as np
import pandas as pd

from .reading import DEFAULT_JOBS, read_jobs

#: The paper's training cluster (§7.1): 443 8-GPU servers, 50,390 jobs in 15 days, at the
#: 82% average GPU utilisation of §2's Fig. 3.
PAPER_GPUS, PAPER_JOBS, PAPER_DAYS, PAPER_UTILIZATION = 3544, 50_390, 15, 0.82
#: Mean GPU-time per job (GPU-seconds) that gives the paper's utilisation at its arrival rate.
GPU_SECONDS_PER_JOB = PAPER_UTILIZATION * PAPER_GPUS * PAPER_DAYS * 86400.0 / PAPER_JOBS
#: Diurnal arrival rate: relative amplitude and busiest hour of day.
ARRIVAL_AMPLITUDE, ARRIVAL_PEAK_HOUR = 0.5, 14.0
#: Daily inference-load shape ``f(h)`` in [0, 1]: (hour, value) knots, linear in between.
LOAD_PROFILE = (
    (0, 1.0),
    (1, 0.6),
    (3, 0.15),
    (5, 0.0),
    (8, 0.1),
    (12, 0.28),
    (16, 0.4),
    (18, 0.55),
    (20, 1.0),
    (24, 1.0),
)
#: Load = ``LOAD_TROUGH + (LOAD_PEAK - LOAD_TROUGH) * f(h)`` before noise.
LOAD_TROUGH, LOAD_PEAK = 0.42, 0.95
LOAD_STEP_S = 300


@lru_cache(maxsize=1)
def _itp_pairs() -> Tuple[np.ndarray, np.ndarray]:
    with (files("aryl") / "data" / DEFAULT_JOBS).open("rb") as f:
        frame = read_jobs(f)
    return frame["num_gpus"].to_numpy(), frame["duration_s"].to_numpy()


def _arrivals(rng: np.random.Generator, jobs: int, span: float) -> np.ndarray:
    """``jobs`` sorted submit times in ``[0, span)`` with the diurnal rate (inverse CDF)."""
    grid = np.linspace(0.0, span, int(span // 60) + 2)
    rate = 1.0 + ARRIVAL_AMPLITUDE * np.cos(
        2 * np.pi * (grid / 3600 - ARRIVAL_PEAK_HOUR) / 24
    )
    cdf = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    times = np.interp(rng.random(jobs) * cdf[-1], cdf, grid)
    return np.sort(np.minimum(np.floor(times), span - 1))


def _load(rng: np.random.Generator, days: int) -> pd.DataFrame:
    time = np.arange(days * 86400 // LOAD_STEP_S) * float(LOAD_STEP_S)
    hours, shape = zip(*LOAD_PROFILE)
    level = LOAD_TROUGH + (LOAD_PEAK - LOAD_TROUGH) * np.interp(
        time / 3600 % 24, hours, shape
    )
    level *= np.repeat(1.0 + 0.03 * rng.standard_normal(days), 86400 // LOAD_STEP_S)
    phi, shocks = 0.8, 0.02 * np.sqrt(1 - 0.8**2) * rng.standard_normal(len(time))
    noise = np.empty(len(time))
    noise[0] = 0.02 * rng.standard_normal()
    for i in range(1, len(time)):
        noise[i] = phi * noise[i - 1] + shocks[i]
    return pd.DataFrame(
        {"time_s": time, "load": np.round(np.clip(level + noise, 0.0, 1.0), 5)}
    )


def synthetic(
    days: int = 15, jobs: int = 50_000, seed: int = 0
) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """A seeded job trace and inference-load series calibrated to the paper (module docstring).

    Parameters
    ----------
    days
        Span (whole days, >= 1) of arrivals and of the load series.
    jobs
        Number of jobs (>= 1); ``jobs / days`` sets the arrival rate and so the offered load.
    seed
        Seeds everything; the load series depends only on ``days`` and ``seed``.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(jobs, load)`` with ``read_jobs`` / ``read_load``'s schemas: jobs ``job_id``
        (``syn-000000``...), ``submit_time_s``, ``num_gpus``, ``duration_s``, ``gpu_type``
        (``"unknown"``), sorted by submit time; load ``time_s`` (0, 300, ...) and ``load``.
    """
    if int(days) != days or days < 1 or int(jobs) != jobs or jobs < 1:
        raise ValueError(
            f"days and jobs must be integers >= 1, got {days!r} and {jobs!r}"
        )
    days, jobs = int(days), int(jobs)
    job_seed, arrival_seed, load_seed = np.random.SeedSequence(seed).spawn(3)
    gpus, duration = _itp_pairs()
    pick = np.random.default_rng(job_seed).integers(len(gpus), size=jobs)
    gpus, duration = gpus[pick], duration[pick]
    duration = duration * GPU_SECONDS_PER_JOB / float(np.mean(gpus * duration))
    frame = pd.DataFrame(
        {
            "job_id": [f"syn-{i:06d}" for i in range(jobs)],
            "submit_time_s": _arrivals(
                np.random.default_rng(arrival_seed), jobs, days * 86400.0
            ),
            "num_gpus": gpus.astype(np.int64),
            "duration_s": np.maximum(1.0, np.round(duration)),
            "gpu_type": "unknown",
        }
    )
    source = f"synthetic(days={days}, jobs={jobs}, seed={seed})"
    frame.attrs.update(source=source, dropped=0, drop_reasons=Counter())
    load = _load(np.random.default_rng(load_seed), days)
    load.attrs.update(source=source)
    return frame, load
