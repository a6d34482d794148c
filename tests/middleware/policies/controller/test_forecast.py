"""The response forecast of Eq. 9, shared by both runtimes' controllers: persistence or an AR(q) fitted online."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.middleware.policies.controller.forecast import ResponseForecaster, ar_forecast


def ar_by_hand(y, q, steps):
    """AR(q) with a constant by ordinary least squares on the lagged values, then iterated."""
    y = np.asarray(y, float)
    rows = [np.r_[1.0, y[i - q:i][::-1]] for i in range(q, len(y))]
    coef, *_ = np.linalg.lstsq(np.array(rows), y[q:], rcond=None)
    hist = list(y)
    out = []
    for _ in range(steps):
        nxt = coef[0] + sum(coef[1 + j] * hist[-1 - j] for j in range(q))
        hist.append(nxt)
        out.append(nxt)
    return np.array(out)


def test_the_ar_forecast_is_ordinary_least_squares_on_the_lags():
    rng = np.random.default_rng(2)
    y = [1.0]
    for _ in range(120):
        y.append(0.5 + 0.7 * y[-1] + 0.1 * rng.standard_normal())
    for q, steps in ((1, 5), (3, 4)):
        assert ar_forecast(y, q, steps) == pytest.approx(ar_by_hand(y, q, steps), rel=1e-8, abs=1e-10)


def test_the_forecaster_is_persistence_until_the_series_is_long_enough():
    f = ResponseForecaster("ar", q=3, steps=2)
    assert math.isnan(f.forecast("lps"))
    for x in (1.0, 2.0, 3.0, 2.5, 2.0, 1.5, 1.0):  # 7 = 2q + 1 values: not enough
        f.add("lps", x)
    assert f.forecast("lps") == 1.0 and f.fitted == 0
    f.add("lps", 0.5)
    want = max(0.0, float(np.max(ar_by_hand([1, 2, 3, 2.5, 2, 1.5, 1, 0.5], 3, 2))))
    assert f.forecast("lps") == pytest.approx(want) and f.fitted == 1
    flat = ResponseForecaster("ar", q=1)
    for _ in range(10):
        flat.add("hps", 0.4)
    assert flat.forecast("hps") == 0.4  # a constant series has no AR fit: it stays constant
    last = ResponseForecaster("last")
    for x in (5.0, 1.0, math.nan):
        last.add("lps", x)
    assert last.forecasts() == {"lps": 1.0}
    with pytest.raises(ValueError):
        ResponseForecaster("prophet")


def test_a_rising_response_is_forecast_above_the_threshold_before_it_gets_there():
    f = ResponseForecaster.for_params("ar", 1, t=50, d=10)  # 5 samples ahead
    assert f.steps == 5
    for k in range(20):
        f.add("lps", 10.0 + 2.0 * k)  # last value 48
    assert f.forecast("lps") > 55  # persistence would say 48


def test_the_simulated_controller_uses_the_spec_forecast():
    from iolab.specs import parse_spec
    from iolab.sim.batch.run import run_batch

    def spec(forecast):
        return parse_spec({
            "kind": "batch", "platform": {"nodes": 4, "lps": {"rate": "1GB/s"},
                                          "hps": {"rate": "10GB/s", "capacity": "10GB"}, "stage_rate": "1GB/s"},
            "scheduler": "fcfs",
            "workload": [{"id": j, "submit": 10 * i, "nodes": 1, "walltime": 4000, "runtime": 2000, "data": "200GB"}
                         for i, j in enumerate("abc")],
            "controller": {"d": 10, "ws": 60, "r_threshold": 2, "t": 60, "short_sleep": 20, "omega": "1GB",
                           "forecast": forecast, "model": {"gamma": 0.5, "knee": 1}}})

    ar = run_batch(spec("ar"), strict=True).controller
    assert ar.forecaster.kind == "ar" and ar.forecaster.fitted > 0
    again = run_batch(spec("ar"), strict=True).controller
    assert again.samples == ar.samples and again.actions == ar.actions  # deterministic
    assert run_batch(spec("last")).controller.forecaster.fitted == 0


def test_forecast_skill_on_a_known_recurrence_and_on_noise():
    from iolab.middleware.policies.controller.forecast import forecast_skill

    y = [0.0]
    for _ in range(120):
        y.append(0.8 * y[-1] + 2.0)  # AR(1) rising to 10: the AR is exact, persistence lags
    rows = forecast_skill(y, [1, 4], q=1, threshold=9.0)
    assert [r["steps"] for r in rows] == [1, 4]
    assert all(r["mae"] < 1e-9 and r["state_accuracy"] == 1.0 for r in rows)
    assert rows[1]["persistence_mae"] > rows[0]["persistence_mae"] > 0
    # by hand: persistence 4 ahead from every origin the function uses (i = 4 .. len - 4)
    pers = [abs(y[i - 1] - y[i + 3]) for i in range(4, len(y) - 3)]
    assert rows[1]["persistence_mae"] == pytest.approx(float(np.mean(pers)), rel=1e-12)
    assert rows[1]["n"] == len(pers)
    flat = forecast_skill([5.0] * 30, [2], q=2, threshold=5.0)[0]  # constant: persistence, right every time
    assert flat["mae"] == 0 and flat["state_accuracy"] == 1.0
    with pytest.raises(ValueError, match="too short"):
        forecast_skill([1.0, 2.0, 3.0], [1], q=2)


def test_an_explosive_ar_fit_falls_back_to_persistence():
    y = [1.0, 1.1]
    for _ in range(30):
        y.append(1.5 * y[-1] - 0.1 * y[-2])  # grows geometrically: the fitted AR(2) is explosive
    assert ar_forecast(y, 2, 5, refuse_explosive=True) is None
    assert ar_forecast(y, 2, 5)[-1] > y[-1]  # without the check: the explosive forecast
    f = ResponseForecaster("ar", q=2, steps=5)
    for v in y:
        f.add("lps", v)
    assert f.forecast("lps") == y[-1] and f.unstable == 1 and f.fitted == 0
