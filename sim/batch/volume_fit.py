"""Fit the simulator's volume model to the response times a real run measured.

The simulator's benchmark unit of ``p`` bytes on a volume with ``k`` writers takes
(:class:`iolab.sim.batch.load_controller.VolumeModel`)::

    r(k) = r0 + p (k + 1) (1 + gamma * max(0, k + 1 - knee)) / probe_rate

A real run's ``samples`` table holds, every ``d`` seconds, the measured response (spec
seconds) and the number of active writers.  :func:`fit_volume_model` fits ``r0`` and
``1 / probe_rate`` (both >= 0) by non-negative least squares (``scipy.optimize.lsq_linear``)
on the **median response per writer count**, weighted by the number of samples (a real
disk's response has a long tail; one slow fsync must not set the line).  ``gamma`` stays 0
and ``knee`` 1: the jobs of a real run on this testbed share token buckets paced far below
the disk's rate, so their throughput does not fall under contention, and the few writer
counts a small run sees cannot identify a knee.  With one writer count only the slope is not
identifiable: the response is taken as constant.

The tail: ``spread`` holds the quantiles, at evenly spaced probabilities from 0 to 1, of
each sample's measured response over the fitted model's response for its writer count; the
simulator multiplies its model response by draws from them (``controller.model.spread``), so
a simulated volume shows the real one's slow writes, not only its medians.

``probe_rate`` is the rate the benchmark unit sees, which on a real run is the disk's
(the unit is written unpaced, with fsync) and not the tier's paced rate the jobs get; a
simulated volume without ``probe_rate`` uses its tier's rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VolumeFit:
    gamma: float
    knee: int
    r0: float
    probe_rate: float  # spec bytes per spec second; inf when the response does not grow with p
    rows: list[tuple[int, int, float, float]]  # (writers, samples, median response, model response)
    mae: float  # weighted mean |median - model| over the writer counts, spec seconds
    spread: tuple[float, ...] = ()  # quantiles of response / model response at 0, 1/(n-1), ..., 1
    note: str = ""  # why probe_rate is not measured by these samples ("" if it is)

    def spec(self) -> dict:
        """The ``controller.model`` section of a spec."""
        out = {"gamma": round(self.gamma, 6), "knee": self.knee, "r0": round(self.r0, 6)}
        # a response that does not grow with the unit: a rate so high that p / probe_rate is ~0
        out["probe_rate"] = float(f"{self.probe_rate:.6g}") if math.isfinite(self.probe_rate) else 1e30
        if self.spread:
            out["spread"] = [float(f"{x:.4g}") for x in self.spread]
        return out


def model_response(k, r0: float, inv_rate: float, gamma: float, knee: int, p: float):
    k = np.asarray(k, float)
    return r0 + p * (k + 1) * (1 + gamma * np.maximum(0.0, k + 1 - knee)) * inv_rate


def fit_volume_model(writers, response, p: float, quantiles: int = 21) -> VolumeFit:
    """The fit of the samples (``writers[i]``, ``response[i]``) of a benchmark unit of ``p`` bytes,
    with ``quantiles`` quantiles of their spread around it (0: none)."""
    from scipy.optimize import lsq_linear  # lazy: scipy only when a model is fitted

    w = np.asarray(writers, float)
    r = np.asarray(response, float)
    ok = np.isfinite(w) & np.isfinite(r) & (w >= 0)
    w, r = w[ok].astype(int), r[ok]
    if r.size == 0:
        raise ValueError("no samples with a writer count and a response")
    ks = np.unique(w)
    med = np.array([np.median(r[w == k]) for k in ks])
    n = np.array([np.sum(w == k) for k in ks], float)
    weight = np.sqrt(n / n.sum())
    if ks.size == 1:  # one writer count: the slope is not identifiable; a constant response
        r0, inv_rate = float(med[0]), 0.0
    else:
        a = np.column_stack([np.ones_like(med), p * (ks + 1.0)]) * weight[:, None]
        sol = lsq_linear(a, med * weight, bounds=([0.0, 0.0], [np.inf, np.inf]))
        r0, inv_rate = (float(x) for x in sol.x)
    pred = model_response(ks, r0, inv_rate, 0.0, 1, p)
    rows = [(int(k), int(c), float(m), float(q)) for k, c, m, q in zip(ks, n, med, pred)]
    mae = float(np.sum(n * np.abs(pred - med)) / n.sum())
    spread: tuple[float, ...] = ()
    model = model_response(w, r0, inv_rate, 0.0, 1, p)
    ratio = r[model > 0] / model[model > 0]
    if quantiles >= 2 and ratio.size and np.all(ratio > 0):
        spread = tuple(float(x) for x in np.quantile(ratio, np.linspace(0.0, 1.0, quantiles)))
    rate = 1.0 / inv_rate if inv_rate > 0 else math.inf
    return VolumeFit(gamma=0.0, knee=1, r0=r0, probe_rate=rate, rows=rows, mae=mae, spread=spread,
                     note=_unidentified(ks, med, r0, inv_rate, p))


IDENTIFIED = 0.05  # share of the largest median response the unit's own write must reach for its rate to count


def _unidentified(ks: np.ndarray, med: np.ndarray, r0: float, inv_rate: float, p: float) -> str:
    """Why the samples do not measure ``probe_rate`` ("" if they do): one writer count, or a unit's write
    time (``p (k + 1) / probe_rate``) that stays a sliver of the response at every count, so that any rate
    from the fitted one to infinity fits as well (the fit then reads e.g. 6.3e19 B/s)."""
    if ks.size == 1:
        return (f"one writer count only ({int(ks[0])}): the response cannot be split into r0 and the unit's "
                "write, so probe_rate is not measured (a constant response is fitted)")
    share = p * (ks.max() + 1.0) * inv_rate / max(float(med.max()), 1e-300)
    if share < IDENTIFIED:
        return (f"the response barely grows with the writers (the unit's write is {100 * share:.2g} % of it at "
                f"{int(ks.max())} writers): probe_rate is not measured by these samples, only bounded below; "
                "the model is in effect a constant response r0")
    return ""


__all__ = ["VolumeFit", "fit_volume_model", "model_response"]
