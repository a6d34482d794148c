"""dheenadayalan2017's protocol: the volume is fitted on DS1 alone, then DS2 and DS3 run out of sample."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iolab.studies import dheenadayalan as study
from iolab.studies import dheenadayalan_protocol as protocol
from iolab.studies.as_campaign import Engine

TINY = replace(protocol.QUICK, rates_mb=(10.0, 20.0), gammas=(0.0, 0.25), refine=False)


def test_the_fit_reads_ds1_only(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the fit read DS2 or DS3")

    monkeypatch.setattr(study, "datasets", refused)
    monkeypatch.setattr(study, "_datasets", refused)
    monkeypatch.setattr(protocol, "datasets_at", refused)
    fit, table = protocol.fit(tmp_path, TINY, Engine(use_ray=False, progress=False))
    assert len(table) == 4 and fit.points == 4
    assert all(r["kind"] == "ds1" for r in protocol.fit_runs(TINY.rates_mb, TINY.gammas, TINY, "coarse"))
    # the fitted point is the feasible one nearest Table 1's DS1 totals
    feasible = [r for r in table if r["premise_holds"]]
    assert fit.error == min(r["error"] for r in feasible)
    assert fit.premise == protocol.unit_response(fit.rate, fit.gamma, 4) >= 60.0


def test_choose_keeps_the_premise_and_refuses_a_grid_without_it():
    shape = protocol.DS1Shape()
    off, on = protocol.seconds("15:35:27"), protocol.seconds("12:51:16")

    def pair(rate, gamma, a, b):
        return [{"rate": rate, "gamma": gamma, "controller": False, "total_completion": a, "suspensions": 0},
                {"rate": rate, "gamma": gamma, "controller": True, "total_completion": b, "suspensions": 3}]

    # the exact totals on a volume too fast for 4 writers to load it (5 GB / 1 GB/s = 5 s < 60 s) lose to a
    # worse fit that holds the premise
    rows = pair(1e9, 0.0, off, on) + pair(20e6, 0.25, 1.1 * off, 1.1 * on)
    fit, table = protocol.choose(rows, shape)
    assert (fit.rate, fit.gamma) == (20e6, 0.25)
    assert [(r["rate_mb"], r["premise_holds"]) for r in table] == [(20.0, True), (1000.0, False)]
    with pytest.raises(ValueError, match="premise"):
        protocol.choose(pair(1e9, 0.0, off, on), shape)


def test_ds1_is_in_the_papers_range_and_ds2_is_recapped_at_the_rate():
    jobs = protocol.ds1_jobs(20e6)
    io = [j for j in jobs if j.get("data")]
    assert len(io) == 4 and len(jobs) == 6
    assert all(10e9 <= j["data"] <= 100e9 for j in io)  # §5: files of 10-100 GB
    assert all(abs(j["runtime"] - (1000 + j["data"] / 20e6)) < 1e-3 for j in io)
    drawn = study.datasets(study.QUICK)["DS2"]
    slow = protocol.recapped(drawn, 20e6)
    for a, b in zip(drawn, slow):
        if "data" in a:
            assert b["data"] == pytest.approx(min(a["data"], 0.8 * a["runtime"] * 20e6))
    assert protocol.recapped(drawn, 1e8) == [{**j, "data": float(j["data"])} if "data" in j else j for j in drawn]


def test_the_out_of_sample_runs_use_the_fit_and_vary_around_it():
    fit = protocol.Fit(20e6, 0.25, 1.0, 1.0, 0.0, 500.0, 1)
    runs = protocol.oos_runs(protocol.QUICK, fit)
    t1 = [r for r in runs if r["step"] == "table1"]
    assert len(t1) == 12 and {r["rate"] for r in t1} == {20e6} and {r["gamma"] for r in runs} == {0.25}
    sweep = {(r["rate"], r.get("r_threshold")) for r in runs if r["step"] == "sweep" and r["controller"]}
    assert sweep == {(20e6 * k, t) for k in protocol.QUICK.rate_factors for t in protocol.QUICK.thresholds}
    assert sorted(r["t"] for r in runs if r["step"] == "horizon") == [60.0 * t for t in protocol.QUICK.horizons_min]
