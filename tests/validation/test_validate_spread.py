"""The simulated distribution that `iolab validate --seeds` places a real run in.

These tests use simulated traces as stand-ins for real ones (the functions only read
traces); the real-run path is in tests/emulator/io/test_emulate.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.validation.io_comparison import compare
from iolab.validation.spread import _place, compare_spread, duration_ratios, measured_jitter, simulate_spread
from iolab.specs import parse_spec
from iolab.specs.io import Jitter
from iolab.sim.io.run import simulate

CONTENDED = {"name": "c", "platform": {"io_nodes": 1, "nodes_per_io_node": 16, "bandwidth": 2.0}, "seed": 11,
             "apps": [{"id": f"a{i}", "nodes": 2, "iterations": 12, "compute": 4 + i, "io_volume": 3 + i}
                      for i in range(4)]}


def spec(jitter=None, **kw):
    data = {**CONTENDED, **kw}
    if jitter:
        data["sim"] = {"jitter": jitter}
    return parse_spec(data)


def test_duration_ratios_recover_the_jitter_that_made_the_trace():
    long = [{**a, "iterations": 300} for a in CONTENDED["apps"]]
    t = simulate(spec({"compute": 0.05, "io": 0.0}, apps=long))
    r = duration_ratios(t, spec(apps=long), 2.0)
    assert len(r["compute"]) == len(r["io"]) == 4 * 300
    assert np.allclose(r["io"], 1.0)  # transfers at the nominal rate, whatever the waiting before them
    assert 0.045 < np.std(r["compute"]) < 0.055 and abs(np.mean(r["compute"]) - 1) < 0.005
    j = measured_jitter(r)
    assert j.io == 0.0 and 0.045 < j.compute < 0.055


def test_ratios_of_one_give_the_deterministic_run_at_every_seed():
    s = spec()
    sp = simulate_spread(s, "shortest-io", 2.0, 3, ratios={"compute": [1.0], "io": [1.0]})
    det = simulate(s, policy="shortest-io", mode="event")
    assert sp.seeds == [11, 12, 13]
    assert (sp.makespan == np.nanmax(det.jobs["end"])).all()
    base = compare(det, det)["apps"]
    for a, v in base.items():
        assert (sp.slowdown[a] == v["simulator"]).all()


def test_a_real_run_that_is_one_of_the_draws_falls_inside_and_the_spread_is_deterministic():
    j = {"compute": 0.03, "io": 0.08}
    real = simulate(spec(j), policy="shortest-io", mode="event")  # seed 11 = the first of the spread
    one = simulate_spread(spec(), "shortest-io", 2.0, 10, jitter=Jitter(**j))
    two = simulate_spread(spec(), "shortest-io", 2.0, 10, jitter=Jitter(**j))
    assert np.array_equal(one.makespan, two.makespan)
    assert one.makespan[0] == np.nanmax(real.jobs["end"])
    assert len(set(one.makespan)) > 1  # the jitter does move the makespan
    c = compare_spread(compare(real, simulate(spec(), policy="shortest-io", mode="event")), one)
    assert c["inside"] == c["values"] == 5
    assert c["jitter"]["law"] == "normal" and c["seeds"] == 10
    assert 0 < c["makespan"]["percentile"] <= 1


def test_placing_a_value_in_a_distribution():
    sims = np.array([10.0, 11.0, 12.0, 13.0])
    below = _place(9.0, sims)
    assert below["percentile"] == 0 and not below["inside"] and below["error"] == pytest.approx(2.5 / 11.5)
    mid = _place(11.0, sims)
    assert mid["percentile"] == 0.5 and mid["inside"] and mid["median"] == 11.5
    assert math.isnan(_place(math.nan, sims)["percentile"])


def test_one_law_at_a_time():
    with pytest.raises(ValueError, match="not both"):
        simulate_spread(spec(), "fifo", 2.0, 2, ratios={"compute": [1], "io": [1]}, jitter=Jitter())
    with pytest.raises(ValueError, match="seeds must be >= 1"):
        simulate_spread(spec(), "fifo", 2.0, 0, jitter=Jitter())


@pytest.mark.parametrize("value, reason", [("0.01", "give two numbers"), ("a,b", "could not convert"),
                                           ("0.01,0.9", "less than or equal to 0.5")])
def test_a_bad_jitter_is_refused_before_anything_runs(tmp_path, value, reason):
    from click.testing import CliRunner

    from iolab.cli import cli

    spec = tmp_path / "s.json"
    spec.write_text('{"platform": {"io_nodes": 1, "nodes_per_io_node": 2, "bandwidth": 1}, '
                    '"apps": [{"id": "a", "nodes": 1, "iterations": 1, "compute": 1, "io_volume": 1}]}')
    r = CliRunner().invoke(cli, ["validate", str(spec), "--jitter", value, "--work-dir", str(tmp_path / "w")])
    assert r.exit_code == 2 and "--jitter" in r.output and reason in r.output, r.output
    assert not (tmp_path / "w").exists()
