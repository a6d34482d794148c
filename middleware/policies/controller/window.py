"""The response window of dheenadayalan2017 §4.2 (Eqs. 5-8): is a volume loaded?

Every ``d`` seconds the model predicts the volume's response time ``r_out``
(the time to write the benchmark unit).  The penalty function (Eq. 6) turns
it into a window entry: ``1`` for a high response, ``-floor(beta / 3)`` for a
low one.  With every new entry the older negative entries decay by 1 towards
0 (Eq. 7, psi), so a low prediction weighs for 33 % of ``beta`` instances.
The window keeps the last ``beta = ws * 60 / d`` entries (Eq. 5); the volume
is *loaded* when their sum divided by ``beta`` is at least ``alpha``
(Eq. 8, S(alpha, beta)).

Conventions the paper leaves open (documented in docs/controller.md):

- ``r_out == r_threshold`` counts as high (Eq. 9 uses >= for the forecast);
- while fewer than ``beta`` entries were seen, the missing ones count 0 (the
  sum is still divided by ``beta``): a fresh volume is never loaded before
  ``ceil(alpha * beta)`` high predictions.

Pure: no clock, no model; the caller feeds predicted response times.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Iterable

__all__ = ["ResponseWindow", "decay", "penalty", "sleep_interval", "window_size"]


def window_size(ws: float, d: float) -> int:
    """Eq. 5: ``beta = ws * 60 / d`` with ``ws`` in minutes and ``d`` in seconds (rounded, >= 1)."""
    if not (ws > 0 and d > 0):
        raise ValueError(f"ws and d must be > 0, got ws={ws}, d={d}")
    return max(1, round(ws * 60.0 / d))


def penalty(r_out: float, r_threshold: float, beta: int) -> int:
    """Eq. 6, phi(beta): 1 for a high predicted response, ``-floor(beta / 3)`` for a low one."""
    if math.isnan(r_out):
        raise ValueError("penalty of a NaN response time")
    return 1 if r_out >= r_threshold else -(beta // 3)


def decay(w: int) -> int:
    """Eq. 7, psi: a negative entry moves 1 towards 0 at every new instance; others stay."""
    return w + 1 if w < 0 else w


class ResponseWindow:
    """The window ``w`` of one volume: ``beta`` entries of the penalty function, decayed."""

    def __init__(self, beta: int, alpha: float, r_threshold: float):
        if beta < 1:
            raise ValueError(f"beta must be >= 1, got {beta}")
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.beta, self.alpha, self.r_threshold = int(beta), float(alpha), float(r_threshold)
        self.w: deque[int] = deque(maxlen=self.beta)
        self.seen = 0

    def push(self, r_out: float) -> int:
        """Add one predicted response time; returns its window entry."""
        for i, v in enumerate(self.w):
            if v < 0:
                self.w[i] = decay(v)
        entry = penalty(r_out, self.r_threshold, self.beta)
        self.w.append(entry)
        self.seen += 1
        return entry

    def extend(self, r_outs: Iterable[float]) -> None:
        for r in r_outs:
            self.push(r)

    def score(self) -> float:
        """The left side of Eq. 8: the window's sum over ``beta``."""
        return sum(self.w) / self.beta

    def loaded(self) -> bool:
        """Eq. 8, S(alpha, beta): 1 (True) when the score reaches ``alpha``."""
        return self.score() >= self.alpha - 1e-12

    def entries(self) -> tuple[int, ...]:
        return tuple(self.w)


def sleep_interval(forecasts: Iterable[float], r_threshold: float, t: float, short: float) -> float:
    """Eq. 9, Psi: ``t`` if any volume's forecast reaches ``r_threshold`` (it stays loaded),
    else ``short`` (the paper's 1 min: come back soon so suspended jobs are not left waiting)."""
    return t if any(f >= r_threshold for f in forecasts) else short
