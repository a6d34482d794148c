"""Small statistics the criteria's measurements need (numpy only)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def ranks(v: Sequence[float]) -> np.ndarray:
    """Ranks from 0, ties given their average rank."""
    v = np.asarray(v, dtype=float)
    r = np.empty(len(v))
    r[np.argsort(v, kind="stable")] = np.arange(len(v), dtype=float)
    for val in np.unique(v):
        idx = v == val
        r[idx] = r[idx].mean()
    return r


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation; 0 for fewer than 3 points or a constant side."""
    if len(x) < 3:
        return 0.0
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def quadratic_minimum(x: Sequence[float], y: Sequence[float]) -> float:
    """Where the least-squares parabola through (x, y) is lowest on [min x, max x] (lackner2019's fit)."""
    xs = np.linspace(min(x), max(x), 1001)
    return float(xs[int(np.argmin(np.polyval(np.polyfit(x, y, 2), xs)))])


__all__ = ["quadratic_minimum", "ranks", "spearman"]
