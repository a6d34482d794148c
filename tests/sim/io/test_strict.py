"""Strict mode in the simulator: normal runs of every policy pass; a broken decision is caught."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import iolab.sim.io.event as event
from iolab.invariants import InvariantViolation
from iolab.middleware.policies import POLICIES
from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario
from iolab.sim.io.stepped import SteppedEngine
from iolab.specs import load_spec, parse_spec

from io_fakes import (GrantsTwice, kernel_forgets_a_phase_index, kernel_forgets_the_arbiters_release,
                      kernel_forgets_to_touch_a_released_node, queues_twice)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

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
    tests/sim/io/test_event_loops.py) and the fixed-step engine."""
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


# -- bugs in the I/O kernel's books (not in a policy): the checker keeps its own ---------------------
def engine(kind: str, strict: bool = True):
    sc = two_writers()
    return EventEngine(sc, "fifo", strict=strict) if kind == "event" else SteppedEngine(sc, "fifo", 0.5, strict=strict)


def run_general(eng):
    """The loops that drive the kernel's methods (the list-policy loop inlines them)."""
    return eng._run_general() if isinstance(eng, EventEngine) else eng.run()


def violation_in(kind: str) -> InvariantViolation:
    """What strict mode stops a run of ``engine(kind)`` with."""
    with pytest.raises(InvariantViolation) as err:
        run_general(engine(kind))
    return err.value


@pytest.mark.parametrize("kind", ["event", "step"])
def test_a_kernel_that_forgets_a_release_in_its_arbiter_is_caught_at_the_next_dispatch(kind, monkeypatch):
    kernel_forgets_the_arbiters_release(monkeypatch)
    v = violation_in(kind)
    # A transfers 1-4 s; at 4 its node's arbiter still shows A's transfer and grants B nothing
    assert (v.rule, v.subject, v.time) == ("idle-while-waiting", "I/O node 0", 4.0)
    assert "grants nothing to B" in v.detail and "t=1" in v.detail


def test_without_strict_mode_the_forgotten_release_shows_only_later_and_elsewhere(monkeypatch):
    kernel_forgets_the_arbiters_release(monkeypatch)
    eng = engine("event", strict=False)
    with pytest.raises(RuntimeError, match="'A' already has an I/O request"):  # A's next request, at 5
        run_general(eng)
    assert math.isnan(eng.rec.end[1]) and eng.kernel.waits(1)  # B waited from 1 on, unnoticed


def test_a_kernel_that_forgets_to_dispatch_a_released_node_is_caught_at_the_runs_end(monkeypatch):
    kernel_forgets_to_touch_a_released_node(monkeypatch)
    v = violation_in("event")
    # fifo: the node is dispatched only when a request touches it: A's at 5 hands it to B (5-8),
    # B's at 9 to A (9-12); A's release at 12 is its last event and B's last write waits forever
    assert (v.rule, v.subject, v.time) == ("unfinished", "app B", 12.0)
    assert "waits for I/O phase 3" in v.detail


@pytest.mark.parametrize("kind", ["event", "step"])
def test_a_kernel_that_loses_a_phase_index_is_caught(kind, monkeypatch):
    kernel_forgets_a_phase_index(monkeypatch)
    v = violation_in(kind)
    # A's second compute phase (index 2) begins at 4 with the index of its write (1): at its end
    # the kernel records a compute phase 1, which the spec does not have
    assert (v.rule, v.subject, v.time) == ("phase-order", "app A", 5.0)
    assert "compute phase 1" in v.detail
