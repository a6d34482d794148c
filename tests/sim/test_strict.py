"""Strict mode in the simulator: normal runs of every policy pass; a broken decision is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

import iolab.sim.event as event
from iolab.invariants import InvariantViolation
from iolab.middleware.policies import POLICIES
from iolab.sim.event import EventEngine
from iolab.sim.run import simulate
from iolab.sim.scenario import Scenario
from iolab.sim.stepped import SteppedEngine
from iolab.specs import load_spec, parse_spec

from io_fakes import GrantsTwice, queues_twice

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PACKED = {"platform": {"io_nodes": 2, "nodes_per_io_node": 8, "bandwidth": 2.0},
          "mapping": {"kind": "make-pack", "sensibility": 0.5},
          "apps": [{"id": f"a{i}", "nodes": 2 + i % 3, "release": i % 4, "iterations": 3 + i % 4,
                    "compute": 2 + i, "io_volume": 1 + (i * 7) % 5} for i in range(9)]}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_runs_table1_and_packs_clean_in_both_engines(policy):
    table1 = load_spec(EXAMPLES / "carretero-table1.yaml")
    for spec in (table1, parse_spec(PACKED)):
        for mode, dt in (("event", None), ("step", 0.5)):
            trace = simulate(spec, policy=policy, mode=mode, dt=dt, strict=True)
            assert (trace.jobs["status"] == "ok").all()


def two_writers():
    return Scenario.from_spec(parse_spec({
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
        "apps": [{"id": "A", "nodes": 1, "iterations": 2, "compute": 1, "io_volume": 3},
                 {"id": "B", "nodes": 1, "iterations": 2, "compute": 1, "io_volume": 3}]}))


@pytest.mark.parametrize("engine", ["event", "step"])
def test_an_arbiter_that_grants_twice_stops_the_run_naming_node_time_and_apps(engine):
    """The arbiter drives the event engine's general loop (``shared``, and every policy in
    tests/sim/test_event_loops.py) and the fixed-step engine."""
    sc = two_writers()
    eng = EventEngine(sc, "fifo", strict=True) if engine == "event" else SteppedEngine(sc, "fifo", 0.5, strict=True)
    eng.kernel.arbiters[0] = GrantsTwice(eng.policy, 0)
    with pytest.raises(InvariantViolation) as err:
        eng._run_general() if engine == "event" else eng.run()
    v = err.value
    # both apps compute 1 s, then ask at t=1: the second grant at t=1 breaks exclusivity
    assert (v.rule, v.subject, v.time) == ("exclusive-io", "I/O node 0", 1.0)
    assert "app B" in v.detail and "A transfers" in v.detail


def test_not_strict_does_not_check():
    sc = two_writers()
    eng = EventEngine(sc, "fifo", strict=False)
    eng.kernel.arbiters[0] = GrantsTwice(eng.policy, 0)
    rec = eng._run_general()  # the broken decisions go through unnoticed
    assert rec.end[0] == rec.end[1]


def test_a_queue_that_chooses_an_app_twice_stops_the_list_policy_loop(monkeypatch):
    """The event engine's loop for list policies takes who goes next from the wait queue
    (``io_queue``); a queue that hands out a request a second time is caught at that grant."""
    monkeypatch.setattr(event, "wait_queue", queues_twice)
    eng = EventEngine(two_writers(), "fifo", strict=True)
    assert eng.exclusive  # run() takes the list-policy loop
    with pytest.raises(InvariantViolation) as err:
        eng.run()
    v = err.value
    # A transfers 1-4 s; at 4 the node is free and A's request comes out of the queue again
    assert (v.rule, v.subject, v.time) == ("grant-not-waiting", "I/O node 0", 4.0)
    assert "grants app A phase 1" in v.detail and "no waiting request" in v.detail


def test_a_start_before_the_packs_turn_is_caught():
    spec = parse_spec({**PACKED, "apps": [{**a, "release": 0} for a in PACKED["apps"]]})
    sc = Scenario.from_spec(spec)
    node, seq = next((n, s) for n, s in enumerate(sc.plan.nodes) if len(s) > 1)
    eng = EventEngine(sc, "fifo", strict=True)
    late = seq[1][0]
    eng._push(0.0, 0, late)  # an app of the second pack started at 0 with the first
    with pytest.raises(InvariantViolation) as err:
        eng.run()
    v = err.value
    assert (v.rule, v.subject, v.time) == ("pack-turn", f"app {sc.apps[late].id}", 0.0)
