"""Real runs against simulations as distributions: is a difference a model error or noise?

One real run and one deterministic simulation of a starvation-prone policy can be far
apart for no fault of the model: which app wins a tie is a coin toss in both runtimes.
With several real runs (``iolab validate --repeats N``) and several jittered
simulations (``--seeds M``), :func:`compare_samples` asks of every value (an app's
slowdown, a makespan):

- the real median and the simulated median, and the relative error between them;
- the simulated 5-95 % band (``numpy.percentile``, linear interpolation) and the
  percentile of the real median in the simulated sample (share at or below it);
- the two-sample Kolmogorov-Smirnov test of the two samples
  (``scipy.stats.ks_2samp``, two-sided, exact for small samples);
- the verdict: ``model error`` when the real median is outside the simulated band,
  else ``noise``.  The KS p-value is reported beside it, not used for the verdict:
  with 5 real runs it can only reject large differences.
"""

from __future__ import annotations

import math

import numpy as np

BAND = (5.0, 95.0)


def ks_statistic(a, b) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest distance between the two
    empirical distribution functions (over every sample value)."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def compare_samples(real, sim) -> dict:
    """The comparison of one value's real and simulated samples (see the module)."""
    r = np.asarray([x for x in real if x == x and math.isfinite(x)], float)
    s = np.asarray([x for x in sim if x == x and math.isfinite(x)], float)
    if r.size == 0 or s.size == 0:
        return {"real": r.tolist(), "real_median": math.nan, "sim_median": math.nan, "band": [math.nan, math.nan],
                "percentile": math.nan, "inside_band": False, "error": math.nan, "ks": math.nan,
                "ks_pvalue": math.nan, "verdict": "no data", "n_real": int(r.size), "n_sim": int(s.size)}
    from scipy.stats import ks_2samp  # lazy: scipy only when distributions are compared

    rm, sm = float(np.median(r)), float(np.median(s))
    lo, hi = (float(x) for x in np.percentile(s, BAND))
    inside = bool(lo * (1 - 1e-9) - 1e-12 <= rm <= hi * (1 + 1e-9) + 1e-12)
    test = ks_2samp(r, s)
    return {
        "real": r.tolist(), "real_median": rm, "sim_median": sm, "band": [lo, hi],
        "percentile": float(np.mean(s <= rm)), "inside_band": inside,
        "error": abs(rm - sm) / abs(sm) if sm else math.nan,
        "ks": float(test.statistic), "ks_pvalue": float(test.pvalue),
        "verdict": "noise" if inside else "model error", "n_real": int(r.size), "n_sim": int(s.size),
    }


__all__ = ["BAND", "compare_samples", "ks_statistic"]
