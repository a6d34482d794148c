"""Real runs against simulations as distributions (``iolab validate --repeats``), on samples with a known answer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from iolab.metrics.distribution import compare_samples, ks_statistic


def ks_by_hand(a, b) -> float:
    """The KS distance, computed the obvious way: at every point, count the samples at or below it."""
    best = 0.0
    for x in itertools.chain(a, b):
        fa = sum(v <= x for v in a) / len(a)
        fb = sum(v <= x for v in b) / len(b)
        best = max(best, abs(fa - fb))
    return best


def test_the_ks_distance_agrees_with_counting_and_with_scipy():
    from scipy.stats import ks_2samp

    rng = np.random.default_rng(3)
    for n, m in ((5, 20), (7, 7), (12, 40)):
        a, b = rng.normal(0, 1, n).round(1), rng.normal(0.5, 1.5, m).round(1)  # rounded: ties happen
        assert ks_statistic(a, b) == pytest.approx(ks_by_hand(a, b))
        assert compare_samples(a, b)["ks"] == pytest.approx(ks_2samp(a, b).statistic)


def test_runs_drawn_from_the_simulated_law_are_noise():
    rng = np.random.default_rng(7)
    sim = rng.normal(100, 5, 200)
    real = rng.normal(100, 5, 8)
    c = compare_samples(real, sim)
    assert c["verdict"] == "noise" and c["inside_band"]
    assert c["band"][0] < 100 < c["band"][1] and abs(c["sim_median"] - 100) < 1.5
    assert c["ks_pvalue"] > 0.05 and c["error"] < 0.05 and c["n_real"] == 8 and c["n_sim"] == 200


def test_a_shift_far_beyond_the_band_is_a_model_error():
    rng = np.random.default_rng(7)
    sim = rng.normal(100, 5, 200)
    real = rng.normal(150, 5, 8)  # ten standard deviations away
    c = compare_samples(real, sim)
    assert c["verdict"] == "model error" and not c["inside_band"] and c["percentile"] == 1.0
    assert c["ks"] == 1.0 and c["ks_pvalue"] < 1e-6
    assert c["error"] == pytest.approx(abs(np.median(real) / np.median(sim) - 1))


def test_the_band_is_the_5_to_95_percentiles_and_no_data_says_so():
    sim = np.arange(1, 101, dtype=float)  # 1..100: 5 % -> 5.95, 95 % -> 95.05 (linear interpolation)
    c = compare_samples([5.0, 5.5, 5.9], sim)
    assert c["band"] == pytest.approx([5.95, 95.05]) and c["real_median"] == 5.5 and not c["inside_band"]
    assert compare_samples([6.0, 50.0, 90.0], sim)["verdict"] == "noise"
    empty = compare_samples([math.nan], sim)
    assert empty["verdict"] == "no data" and empty["n_real"] == 0
