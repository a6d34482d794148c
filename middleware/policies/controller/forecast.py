"""A volume's response time forecast over the next ``t`` seconds (dheenadayalan2017 §4.2, Eq. 9).

The controller sleeps long (``t``) when a volume's forecast reaches the threshold and comes
back soon otherwise.  :class:`ResponseForecaster` keeps each volume's series of responses
(one per sample, every ``d`` seconds) and forecasts it ``steps = ceil(t / d)`` samples ahead:

- ``last`` (persistence): the last response;
- ``ar``: an AR(q) with a constant (statsmodels ``AutoReg``, OLS: deterministic) fitted to the
  last ``history`` responses, the largest of its ``steps`` predictions (never below 0).  Until
  the series has more than ``2 q + 1`` values, and when the fit is explosive (its
  forecast would grow geometrically), the forecast is the last response.

One implementation for both runtimes: the simulator's controller and the real run's controller
actor hold one each.

:func:`forecast_skill` measures a forecast against what came: over a kept series (a trace's
``predicted`` or ``response`` column), from rolling origins, the error ``h`` samples ahead and how
often the forecast's state (at or above ``r_threshold``, Eq. 9's test) matched the real one, next
to persistence (the last value) as the baseline (dheenadayalan2017 §4.2: right 91-94 % of the
time ``t`` minutes ahead).
"""

from __future__ import annotations

import math
import warnings
from collections import deque

import numpy as np

KINDS = ("last", "ar")


def ar_forecast(series, q: int, steps: int, *, refuse_explosive: bool = False) -> np.ndarray | None:
    """The next ``steps`` values of ``series`` by an AR(q) with a constant fitted to it.

    ``refuse_explosive=True``: None when the fitted AR is explosive (a root of its lag polynomial
    inside the unit circle): its forecast grows geometrically with the horizon (measured: a short
    spiky response series gave forecasts of 1e7 s 18 samples ahead), so the caller falls back to
    persistence.  A unit root (a linear trend) is kept: its forecast grows linearly."""
    from statsmodels.tsa.ar_model import AutoReg  # lazy: statsmodels only to forecast

    y = np.asarray(series, dtype=float)
    if len(y) <= 2 * q + 1:
        raise ValueError(f"an AR({q}) forecast needs more than {2 * q + 1} values, got {len(y)}")
    with warnings.catch_warnings():  # a deterministic (simulated) series is often rank-deficient: the
        warnings.simplefilter("ignore")  # least-squares solution is still the forecast (tested by hand)
        fit = AutoReg(y, lags=q, trend="c").fit()
        if refuse_explosive and np.min(np.abs(fit.roots), initial=np.inf) < 1.0 - 1e-6:  # a unit root (a trend) stays
            return None
        return np.asarray(fit.predict(start=len(y), end=len(y) + steps - 1))


class ResponseForecaster:
    def __init__(self, kind: str = "last", q: int = 3, steps: int = 1, history: int = 256):
        if kind not in KINDS:
            raise ValueError(f"forecast must be one of {', '.join(KINDS)}, got {kind!r}")
        self.kind, self.q, self.steps = kind, int(q), max(1, int(steps))
        self.series: dict[str, deque] = {}
        self.history = history
        self.fitted = 0  # forecasts made by the AR model (the others: persistence)
        self.unstable = 0  # explosive AR fits refused (persistence instead)

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
        pred = ar_forecast(list(y), self.q, self.steps, refuse_explosive=True)
        if pred is None:  # an explosive fit: persistence
            self.unstable += 1
            return y[-1]
        self.fitted += 1
        best = float(np.max(pred))
        return max(0.0, best) if math.isfinite(best) else y[-1]

    def forecasts(self) -> dict[str, float]:
        return {v: self.forecast(v) for v in sorted(self.series)}


def forecast_skill(series, steps, *, q: int = 3, threshold: float = math.inf, history: int = 256,
                   origins: int = 400) -> list[dict]:
    """The AR(q) forecast's error ``h`` samples ahead, for each ``h`` of ``steps``.

    From each origin ``i`` (at most ``origins`` of them, evenly spread over the series, each with
    more than ``2 q + 1`` values before it, as :class:`ResponseForecaster` needs), an AR(q) with a
    constant is fitted to the last ``history`` values before ``i`` and predicts ``max(steps)``
    values; the one ``h`` ahead, ``y[i + h - 1]``, is compared with the forecast (never below 0,
    as the controller uses it) and with persistence (``y[i - 1]``).  A constant stretch or an
    explosive fit gives persistence, as the controller's forecaster does.  Per ``h``: ``n`` comparisons,
    ``mae`` and ``state_accuracy`` (share of forecasts on the same side of ``threshold`` as the
    value), and ``persistence_mae``, ``persistence_accuracy``.
    """
    y = np.asarray([v for v in series if v == v and math.isfinite(v)], dtype=float)
    steps = sorted({int(h) for h in steps})
    if not steps or steps[0] < 1:
        raise ValueError(f"steps ahead must be >= 1, got {steps}")
    first = 2 * q + 2
    last = len(y) - steps[0]
    if last < first:
        raise ValueError(f"a series of {len(y)} values is too short to forecast {steps[0]} ahead with AR({q}) "
                         f"(needs more than {first + steps[0] - 1})")
    idx = np.unique(np.linspace(first, last, min(origins, last - first + 1)).round().astype(int))
    err = {h: [] for h in steps}
    hit = {h: [] for h in steps}
    p_err = {h: [] for h in steps}
    p_hit = {h: [] for h in steps}
    for i in idx:
        past = y[max(0, i - history):i]
        pred = ar_forecast(past, q, steps[-1], refuse_explosive=True) if np.ptp(past) > 0 else None
        if pred is None:  # constant or explosive: persistence, as the controller's forecaster
            pred = np.full(steps[-1], past[-1])
        for h in steps:
            if i + h - 1 >= len(y):
                continue
            actual, f, pers = y[i + h - 1], max(0.0, float(pred[h - 1])), y[i - 1]
            err[h].append(abs(f - actual))
            hit[h].append((f >= threshold) == (actual >= threshold))
            p_err[h].append(abs(pers - actual))
            p_hit[h].append((pers >= threshold) == (actual >= threshold))
    return [{"steps": h, "n": len(err[h]), "mae": float(np.mean(err[h])), "state_accuracy": float(np.mean(hit[h])),
             "persistence_mae": float(np.mean(p_err[h])), "persistence_accuracy": float(np.mean(p_hit[h]))}
            for h in steps if err[h]]


__all__ = ["KINDS", "ResponseForecaster", "ar_forecast", "forecast_skill"]
