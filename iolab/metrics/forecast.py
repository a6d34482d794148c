"""A volume's response time forecast over the next ``t`` seconds (dheenadayalan2017 §4.2, Eq. 9).

The controller sleeps long (``t``) when a volume's forecast reaches the threshold and comes
back soon otherwise.  :class:`ResponseForecaster` keeps each volume's series of responses
(one per sample, every ``d`` seconds) and forecasts it ``steps = ceil(t / d)`` samples ahead:

- ``last`` (persistence): the last response;
- ``ar``: an AR(q) with a constant (statsmodels ``AutoReg``, OLS: deterministic) fitted to the
  last ``history`` responses, the largest of its ``steps`` predictions (never below 0).  Until
  the series has more than ``2 q + 1`` values the forecast is the last response.

One implementation for both runtimes: the simulator's controller and the real run's controller
actor hold one each.
"""

from __future__ import annotations

import math
import warnings
from collections import deque

import numpy as np

KINDS = ("last", "ar")


def ar_forecast(series, q: int, steps: int) -> np.ndarray:
    """The next ``steps`` values of ``series`` by an AR(q) with a constant fitted to it."""
    from statsmodels.tsa.ar_model import AutoReg  # lazy: statsmodels only to forecast

    y = np.asarray(series, dtype=float)
    if len(y) <= 2 * q + 1:
        raise ValueError(f"an AR({q}) forecast needs more than {2 * q + 1} values, got {len(y)}")
    with warnings.catch_warnings():  # a deterministic (simulated) series is often rank-deficient: the
        warnings.simplefilter("ignore")  # least-squares solution is still the forecast (tested by hand)
        fit = AutoReg(y, lags=q, trend="c").fit()
        return np.asarray(fit.predict(start=len(y), end=len(y) + steps - 1))


class ResponseForecaster:
    def __init__(self, kind: str = "last", q: int = 3, steps: int = 1, history: int = 256):
        if kind not in KINDS:
            raise ValueError(f"forecast must be one of {', '.join(KINDS)}, got {kind!r}")
        self.kind, self.q, self.steps = kind, int(q), max(1, int(steps))
        self.series: dict[str, deque] = {}
        self.history = history
        self.fitted = 0  # forecasts made by the AR model (the others: persistence)

    @classmethod
    def for_params(cls, kind: str, q: int, t: float, d: float) -> "ResponseForecaster":
        return cls(kind, q, math.ceil(t / d - 1e-9))

    def add(self, volume: str, response: float) -> None:
        if response == response and math.isfinite(response):
            self.series.setdefault(volume, deque(maxlen=self.history)).append(float(response))

    def forecast(self, volume: str) -> float:
        y = self.series.get(volume)
        if not y:
            return math.nan
        if self.kind == "last" or len(y) <= 2 * self.q + 1 or np.ptp(np.asarray(y)) == 0:
            return y[-1]
        pred = ar_forecast(list(y), self.q, self.steps)
        self.fitted += 1
        best = float(np.max(pred))
        return max(0.0, best) if math.isfinite(best) else y[-1]

    def forecasts(self) -> dict[str, float]:
        return {v: self.forecast(v) for v in sorted(self.series)}


__all__ = ["KINDS", "ResponseForecaster", "ar_forecast"]
