"""Reference: the Pollux goodput model in plain NumPy/SciPy.

The same formulas as cpp/core/src/goodput.cpp and application.cpp, written
straightforwardly: the fit uses SciPy's L-BFGS-B (as the Pollux artifact does) instead
of the core's projected BFGS, so fits are compared by objective value, not bit for bit;
everything else should agree to rounding.
"""

from __future__ import annotations

import math
from typing import Dict, Sequence, Tuple

import numpy as np
import scipy.optimize

TINY = 1e-8
EPS = 1e-8


def accum_time(p, m):
    return p[0] + p[1] * np.asarray(m, dtype=float)


def network_time(p, nodes, replicas):
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    inter, intra = nodes > 1, replicas > 1
    alpha = np.select([inter, intra], [p[2], p[4]], TINY)
    beta = np.select([inter, intra], [p[3], p[5]], TINY)
    return alpha + beta * np.maximum(replicas - 2, TINY)


def log_step_time(p, accum, network):
    g = p[6]
    return np.logaddexp(g * np.log(accum), g * np.log(network)) / g


def step_time(p, nodes, replicas, m):
    return np.exp(log_step_time(p, accum_time(p, m), network_time(p, nodes, replicas)))


def objective(p, nodes, replicas, m, accum, step):
    a = accum_time(p, m)
    lo = log_step_time(p, a, network_time(p, nodes, replicas))
    e1 = np.sqrt(np.mean((np.log(a) - np.log(accum)) ** 2))
    e2 = np.sqrt(np.mean((lo - np.log(step)) ** 2))
    return float(
        e1
        + e2
        + 1e-3 * (p[6] - 1) ** 2
        + 1e-2 * ((p[3] / p[2]) ** 2 + (p[5] / p[4]) ** 2)
    )


def pinned(nodes, replicas, m, accum) -> Dict[int, float]:
    """Parameter index -> pinned value, by the artifact's rules."""
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    out: Dict[int, float] = {}
    if len(np.unique(m)) == 1:
        out[0] = float(np.mean(accum)) / 2
    if not np.any(nodes > 1):
        out[2] = out[3] = TINY
    if not np.any((nodes == 1) & (replicas > 1)):
        out[4] = out[5] = TINY
    if not np.any(replicas > 2):
        out[3] = out[5] = TINY
    return out


def fit(nodes, replicas, m, accum, step) -> Tuple[np.ndarray, float]:
    """(params, objective before the prior) by L-BFGS-B from the artifact's start."""
    start = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([TINY] * 6 + [1.0])
    upper = np.array([np.inf] * 6 + [10.0])
    for i, v in pinned(nodes, replicas, m, accum).items():
        start[i] = lower[i] = upper[i] = v
    args = (
        np.asarray(nodes),
        np.asarray(replicas),
        np.asarray(m, float),
        np.asarray(accum),
        np.asarray(step),
    )
    free = lower < upper

    def f(x):
        p = start.copy()
        p[free] = x
        return objective(p, *args)

    result = scipy.optimize.minimize(
        f, start[free], method="L-BFGS-B", bounds=list(zip(lower[free], upper[free]))
    )
    p = start.copy()
    p[free] = result.x
    value = objective(p, *args)
    if not np.any(np.asarray(nodes) > 1):
        p[2] = max(p[2], p[4] * 1.1)
        p[3] = max(p[3], p[5] * 1.1)
    return p, value


def gain(sqr, var, scale):
    denom = var / scale + sqr
    return (var + sqr) / denom if denom > 0 else 1.0


def throughput(p, nodes, replicas, m, s):
    a = accum_time(p, m)
    total = s * a + step_time(p, nodes, replicas, m)
    return replicas * m * (s + 1) / total


def efficiency(grad, m0, batch):
    scale = batch / m0
    return gain(grad[0], grad[1], scale) / scale


def optimize(p, grad, limits, nodes, replicas):
    """(goodput, atomic, accum) as the artifact's GoodputFunction.optimize with accumulation."""
    m0, mmax, lo, hi = limits
    if replicas == 0:
        return 0.0, 0, 0
    candidates = np.geomspace(max(m0, lo * replicas), mmax, 50)
    best = None
    for batch in candidates:
        local = batch / replicas
        s = math.ceil(local / hi - EPS) - 1
        if replicas == 1 and local > m0 + EPS:
            s = max(s, 1)
        m = math.ceil(local / (s + 1) - EPS)
        g = throughput(p, nodes, replicas, m, s) * efficiency(
            grad, m0, replicas * m * (s + 1)
        )
        if not (lo <= m <= hi):
            g = 0.0
        if best is None or g > best[0]:
            best = (float(g), m, s)
    return best


def fixed_batch(limits, replicas, batch):
    m0, mmax, lo, hi = limits
    local = math.ceil(batch / replicas - EPS)
    s = math.ceil(local / hi - EPS) - 1
    if replicas == 1 and batch > m0:
        s = max(1, s)
    m = math.ceil(local / (s + 1) - EPS)
    return min(m, int(mmax / (replicas * (s + 1)))), s


def speedup(p, grad, limits, nodes, replicas):
    if replicas == 0:
        return 0.0
    return (
        optimize(p, grad, limits, nodes, replicas)[0]
        / optimize(p, grad, limits, 1, 1)[0]
    )


# -- an application's tables -----------------------------------------------------------------


def placement_key(placement: Sequence[int]) -> str:
    p = tuple(g for g in placement if g)
    return "".join(map(str, min(p[i:] + p[:i] for i in range(len(p)))))


def measured_step_time(placements, placement, local_bsz):
    """(step, sync) of a measured placement, linear in local_bsz (None if unmeasured)."""
    rows = placements[placements["placement"].astype(str) == placement_key(placement)]
    if rows.empty:
        return None
    rows = rows.sort_values("local_bsz", kind="stable")
    x = rows["local_bsz"].to_numpy(float)
    return (
        float(np.interp(local_bsz, x, rows["step_time"])),
        float(np.interp(local_bsz, x, rows["sync_time"])),
    )


def grad_stats(validation: Dict[int, object], batch, epoch):
    sizes = sorted(validation)
    lower = max(b for b in sizes if b <= batch)
    upper = min(b for b in sizes if b >= batch)
    lo, hi = validation[lower], validation[upper]
    if lower == upper:
        return float(lo["grad_sqr"][epoch]), float(lo["grad_var"][epoch])
    w = (batch - lower) / (upper - lower)
    return (
        float(
            lo["grad_sqr"][epoch] + (hi["grad_sqr"][epoch] - lo["grad_sqr"][epoch]) * w
        ),
        float(
            lo["grad_var"][epoch] + (hi["grad_var"][epoch] - lo["grad_var"][epoch]) * w
        ),
    )


def epoch_progress(validation, epoch):
    if epoch == 0:
        return 0.0
    return min(float(v["progress"][epoch - 1]) for v in validation.values())


def epoch_at(validation, progress):
    return max(
        int(np.searchsorted(v["progress"].to_numpy(), progress, "right"))
        for v in validation.values()
    )
