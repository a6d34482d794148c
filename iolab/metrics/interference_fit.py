"""Fit an interference law to measured aggregate throughputs (``iolab storage probe``).

Input: the aggregate throughput ``A(k)`` of ``k`` concurrent writers, ``k = 1..K``.  The shares
are ``s(k) = A(k) / A(1)`` (the rate is the resource's rate with one stream, so ``s(1) = 1``).

- **table**: ``{k: s(k)}`` for ``k >= 2`` as measured (a share above 1 is kept: a resource that
  serves more with more streams);
- **parametric**: ``f(k) = 1 / (1 + gamma * max(0, k - knee))``, least squares on ``s`` over
  ``gamma >= 0`` for every ``knee`` in ``1..K-1`` (``scipy.optimize.least_squares``), the knee
  with the smallest residual kept (ties: the smallest knee).  A resource that loses nothing fits
  ``gamma = 0``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["fit_interference", "shares"]


def shares(aggregate: dict[int, float]) -> dict[int, float]:
    """``{k: A(k) / A(1)}``; ``aggregate`` must hold ``k = 1``."""
    if 1 not in aggregate or not aggregate[1] > 0:
        raise ValueError("the throughput of one writer (k = 1) is needed, > 0")
    return {k: float(a) / float(aggregate[1]) for k, a in sorted(aggregate.items())}


def _parametric(ks: np.ndarray, s: np.ndarray, knee: int) -> tuple[float, float]:
    from scipy.optimize import least_squares  # lazy: scipy only for a probe's fit

    def resid(g):
        return 1.0 / (1.0 + g[0] * np.maximum(0, ks - knee)) - s

    if not np.any(ks > knee):
        return 0.0, float(np.sum(resid([0.0]) ** 2))
    r = least_squares(resid, x0=[0.1], bounds=([0.0], [100.0]))
    return float(r.x[0]), float(np.sum(r.fun ** 2))


def fit_interference(aggregate: dict[int, float]) -> dict:
    """The law of the measured throughputs: ``{"shares", "table", "parametric": {gamma, knee, rms}}``."""
    sh = shares(aggregate)
    ks = np.array(sorted(sh), dtype=float)
    s = np.array([sh[int(k)] for k in ks])
    best = None
    for knee in range(1, max(2, int(ks.max()))):
        gamma, sse = _parametric(ks, s, knee)
        if best is None or sse < best[2] - 1e-12:
            best = (gamma, knee, sse)
    gamma, knee, sse = best
    return {"shares": sh, "table": {k: v for k, v in sh.items() if k >= 2},
            "parametric": {"gamma": gamma, "knee": knee, "rms": math.sqrt(sse / len(ks))}}
