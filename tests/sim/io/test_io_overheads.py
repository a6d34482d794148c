"""``platform.overheads`` of an I/O spec: the costs of a real run the simulator adds.

A transfer holds its I/O node ``io_phase`` seconds besides its bytes; an app's first phase begins
``launch`` after its start, each next phase ``gap`` after the one before ends, and the app ends
``exit`` after its last phase.  Checked by hand-computed times in both engines (and both loops of
the event engine), and on random experiments: the two loops agree with overheads too, and a spec
whose overheads are all 0 runs exactly as one without them.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario
from iolab.sim.io.stepped import SteppedEngine
from iolab.specs import parse_spec
from iolab.specs.io import LIST_POLICIES
from iolab.errors import SpecError

from io_strategies import experiments
from loop_compare import both, same


def spec_of(apps, policy="fifo", bandwidth=2.0, **overheads):
    return parse_spec({
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": bandwidth, "overheads": overheads},
        "policy": policy, "apps": apps,
    })


def ends(spec, policy=None, engine="event", dt=0.25):
    """App ends from the exclusive loop, the general loop, or the stepped engine."""
    policy = policy or spec.policy
    sc = Scenario.from_spec(spec)
    if engine == "event":
        return list(EventEngine(sc, policy, strict=True).run().end)
    if engine == "general":
        return list(EventEngine(sc, policy, strict=True)._run_general().end)
    return list(SteppedEngine(sc, policy, dt, strict=True).run().end)


ENGINES = ["event", "general", "step"]

ONE = [{"id": "a", "nodes": 1, "release": 1.0,
        "phases": [{"compute": 3}, {"write": 2}, {"compute": 1}, {"read": 4}]}]


@pytest.mark.parametrize("engine", ENGINES)
def test_one_app_is_delayed_by_exactly_its_overheads(engine):
    """Alone, an app's end moves by launch + 3 gaps + 2 fixed costs + exit (4 phases, 2 transfers)."""
    base = ends(spec_of(ONE), engine=engine)[0]
    assert base == 1 + 3 + 1 + 1 + 2  # release, compute, 2/b, compute, 4/b
    o = {"launch": 0.5, "gap": 0.25, "exit": 0.75, "io_phase": 1.25}
    got = ends(spec_of(ONE, **o), engine=engine)[0]
    assert got == pytest.approx(base + 0.5 + 3 * 0.25 + 2 * 1.25 + 0.75, abs=1e-12)
    for key, value in o.items():  # each cost on its own
        n = {"launch": 1, "gap": 3, "exit": 1, "io_phase": 2}[key]
        assert ends(spec_of(ONE, **{key: value}), engine=engine)[0] == pytest.approx(base + n * value, abs=1e-12)


def test_the_phase_rows_show_the_gaps_and_the_fixed_cost():
    """The trace a user opens: phases separated by the gap, a transfer's row lasting io_phase + v/b."""
    t = simulate(spec_of(ONE, launch=0.5, gap=0.25, exit=0.75, io_phase=1.25))
    p = t.phases
    rows = sorted(zip(p["index"], p["start"], p["end"]))
    assert [r[0] for r in rows] == [0, 1, 2, 3]
    assert rows[0][1] == 1.5  # release 1 + launch
    for (_, _, end), (_, start, _) in zip(rows, rows[1:]):
        assert start == pytest.approx(end + 0.25)
    assert rows[1][2] - rows[1][1] == pytest.approx(1.25 + 2 / 2.0)
    assert rows[3][2] - rows[3][1] == pytest.approx(1.25 + 4 / 2.0)
    assert float(t.jobs["end"][0]) == pytest.approx(rows[3][2] + 0.75)
    g = t.grants  # the request reaches the arbiter one gap after the compute phase ends
    assert float(g["request"][0]) == pytest.approx(rows[0][2] + 0.25)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_fixed_cost_holds_the_io_node(engine):
    """Two apps ask at once: the second is granted when the first's io_phase + v/b are over."""
    apps = [{"id": a, "nodes": 1, "phases": [{"write": 2}]} for a in "ab"]
    got = ends(spec_of(apps, io_phase=0.5), engine=engine)
    assert got == pytest.approx([0.5 + 1.0, 2 * (0.5 + 1.0)])


@pytest.mark.parametrize("engine", ["general", "step"])
def test_shared_transfers_join_the_link_after_their_fixed_cost(engine):
    """``shared``: both granted at 0; during the fixed cost neither moves bytes, then they split b."""
    apps = [{"id": "a", "nodes": 1, "phases": [{"write": 2}]},
            {"id": "b", "nodes": 1, "phases": [{"write": 4}]}]
    got = ends(spec_of(apps, policy="shared", io_phase=0.5), engine=engine)
    # from 0.5 both at b/2 = 1 unit/s: a ends at 2.5 (2 units); b has 2 left, alone at 2 units/s: 3.5
    assert got == pytest.approx([2.5, 3.5])


@pytest.mark.parametrize("engine", ENGINES)
def test_an_empty_phase_gets_its_gap(engine):
    apps = [{"id": "a", "nodes": 1, "phases": [{"compute": 1}, {"write": 0}, {"compute": 1}]}]
    assert ends(spec_of(apps, gap=0.25, exit=0.5), engine=engine)[0] == pytest.approx(1 + 0.25 + 0.25 + 1 + 0.5)


def test_no_overheads_and_zero_overheads_are_the_same_run():
    spec = parse_spec({
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.3},
        "policy": "stretch",
        "apps": [{"id": f"a{i}", "nodes": 1, "release": 0.1 * i, "iterations": 4, "compute": 1.7 + i,
                  "io_volume": 0.9 + 0.3 * i} for i in range(4)],
    })
    zero = spec.model_copy(update={"platform": spec.platform.model_copy(update={
        "overheads": spec.platform.overheads.model_copy(update={"io_phase": 0.0, "gap": 0.0})})})
    a, b = EventEngine(Scenario.from_spec(spec), "stretch").run(), EventEngine(Scenario.from_spec(zero), "stretch").run()
    same(a, b)


overheads = st.fixed_dictionaries({
    k: st.sampled_from([0.0, 0.25, 1.0, 0.013]) for k in ("launch", "gap", "exit", "io_phase")})


@settings(max_examples=50, deadline=None)
@given(spec=experiments(aligned=True), policy=st.sampled_from(LIST_POLICIES), o=overheads)
def test_both_loops_agree_with_overheads(spec, policy, o):
    doc = spec.model_dump(mode="json")
    doc["platform"]["overheads"] = o
    spec = parse_spec(doc)
    same(*both(lambda: Scenario.from_spec(spec), policy))


@settings(max_examples=30, deadline=None)
@given(spec=experiments(aligned=True), policy=st.sampled_from(LIST_POLICIES), o=overheads)
def test_overheads_only_delay(spec, policy, o):
    """Every app ends no earlier than without overheads plus its own launch and exit when alone on
    its I/O node... and in any case no earlier than its own contention-free time with them."""
    doc = spec.model_dump(mode="json")
    doc["platform"]["overheads"] = o
    slow = parse_spec(doc)
    sc = Scenario.from_spec(slow)
    rec = EventEngine(sc, policy, strict=True).run()
    for app, start, end in zip(sc.apps, rec.start, rec.end):
        if math.isnan(start):
            continue
        n = len(app.kinds)
        n_io = sum(k != "compute" and v > 0 for k, v in zip(app.kinds, app.amounts))
        own = sum(v if k == "compute" else v / slow.platform.bandwidth for k, v in zip(app.kinds, app.amounts))
        floor = own + o["launch"] + o["exit"] + o["gap"] * max(0, n - 1) + o["io_phase"] * n_io
        assert end - start >= floor - 1e-9


@pytest.mark.parametrize("field,value,why", [
    ("gap", -0.1, "greater than or equal to 0"),
    ("io_phase", float("nan"), "finite number"),
    ("launch", 2e9, "less than or equal to"),
    ("bogus", 1.0, "unknown field"),
])
def test_a_bad_overhead_is_named(field, value, why):
    with pytest.raises(SpecError) as e:
        spec_of(ONE, **{field: value})
    assert f"platform.overheads.{field}" in str(e.value) and why in str(e.value)
