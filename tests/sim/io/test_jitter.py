"""Seeded jitter of phase durations (sim.jitter): deterministic, nominal volumes, right spread."""

from __future__ import annotations

import numpy as np
import pytest

from iolab.errors import SpecError
from iolab.specs import parse_spec
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario

BASE = {"platform": {"io_nodes": 4, "nodes_per_io_node": 8, "bandwidth": 2.0}, "seed": 5,
        "apps": [{"id": f"a{i}", "nodes": 2, "io_node": i, "iterations": 400, "compute": 10, "io_volume": 4}
                 for i in range(4)]}


def spec(jitter=None, seed=5):
    data = {**BASE, "seed": seed}
    if jitter is not None:
        data["sim"] = {"jitter": jitter}
    return parse_spec(data)


def test_no_jitter_keeps_every_duration_nominal():
    sc = Scenario.from_spec(spec())
    assert sc.factors == [[], [], [], []] and sc.factor(0, 0) == 1.0
    assert sc.apps[0].amounts[:2] == (10.0, 4.0)


def test_jitter_draws_durations_and_keeps_the_stated_amounts():
    sc = Scenario.from_spec(spec({"compute": 0.02, "io": 0.05}))
    assert all(x == (10.0 if k == "compute" else 4.0) for app in sc.apps for x, k in zip(app.amounts, app.kinds))
    assert len(sc.factors[0]) == 800 and len(set(sc.factors[0])) == 800


def test_same_seed_same_run_other_seed_other_run():
    j = {"compute": 0.02, "io": 0.05}
    a, b, c = simulate(spec(j)), simulate(spec(j)), simulate(spec(j, seed=6))
    np.testing.assert_array_equal(a.phases["end"], b.phases["end"])
    assert not np.array_equal(a.phases["end"], c.phases["end"])


def test_spread_matches_the_request_and_volumes_stay_nominal():
    # one app per I/O node: no waiting, so every phase's duration is its jittered duration
    t = simulate(spec({"compute": 0.02, "io": 0.05}))
    kind = t.phases["kind"]
    d = t.phases["end"] - t.phases["start"]
    comp = d[kind == "compute"] / 10.0 - 1
    io = d[kind == "write"] / (4 / 2.0) - 1
    assert abs(comp.mean()) < 0.003 and 0.017 < comp.std() < 0.023
    assert abs(io.mean()) < 0.006 and 0.043 < io.std() < 0.057
    assert set(t.phases["volume"][kind == "write"]) == {4.0}  # what the app moved, as stated
    assert len(t.grants) == 1600 and (t.grants["grant"] == t.grants["request"]).all()


def test_both_engines_apply_the_same_draws():
    # whole-second steps would round the jitter away; a fine step follows it closely
    s = spec({"compute": 0.0, "io": 0.1})
    s = parse_spec({**s.model_dump(), "apps": [{**a, "iterations": 20} for a in s.model_dump()["apps"]]})
    ev = simulate(s, mode="event")
    st = simulate(s, mode="step", dt=0.001)
    assert np.allclose(ev.jobs["end"], st.jobs["end"], atol=0.001 * 41)


@pytest.mark.parametrize("bad,where", [({"io": -0.1}, "sim.jitter.io"), ({"compute": 0.9}, "sim.jitter.compute"),
                                       ({"cpu": 0.1}, "sim.jitter.cpu")])
def test_bad_jitter_is_refused_by_name(bad, where):
    with pytest.raises(SpecError) as err:
        spec(bad)
    assert any(p == where for p, _ in err.value.problems), err.value.problems


# -- empirical jitter: durations resampled from measured ratios (iolab validate --jitter auto) --------
def resampled(seed, compute=(1.0, 1.02, 1.3), io=(0.9, 1.1)):
    from iolab.sim.io.scenario import resample_jitter

    sc = Scenario.from_spec(spec())
    resample_jitter(sc, list(compute), list(io), seed)
    return sc


def test_resampled_factors_come_from_the_pools_and_follow_the_seed():
    a, b, c = resampled(1), resampled(1), resampled(2)
    comp = np.array([f for app in a.apps for f, k in zip(a.factors[app.rank], app.kinds) if k == "compute"])
    io = np.array([f for app in a.apps for f, k in zip(a.factors[app.rank], app.kinds) if k != "compute"])
    assert set(np.round(comp, 12)) == {1.0, 1.02, 1.3}  # every value drawn, nothing else
    assert set(io) == {0.9, 1.1}
    assert abs(np.mean(comp == 1.3) - 1 / 3) < 0.03  # with replacement, uniformly (1600 draws)
    assert a.factors == b.factors and a.factors != c.factors
    assert [x.amounts for x in a.apps] == [x.amounts for x in c.apps]  # stated amounts never move


def test_an_empty_pool_leaves_that_kind_nominal():
    sc = resampled(3, compute=(), io=(1.5,))
    assert all(f == (1.0 if k == "compute" else 1.5)
               for app in sc.apps for f, k in zip(sc.factors[app.rank], app.kinds))
