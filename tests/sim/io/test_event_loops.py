"""The event engine's loop for list policies against its general loop, on random experiments.

``EventEngine.run`` takes ``_run_exclusive`` for a list policy: the general loop's transitions
written out in one function, for speed (docs/performance.md, "The I/O simulator's loop").  Both
must record the same run, bit for bit: every app's start and end, its waits and transfer time,
every phase row and grant row in the same order, and the same event count.  Strict mode's
checker watches both.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.sim.io.scenario import Scenario
from iolab.specs import parse_spec
from iolab.specs.io import LIST_POLICIES

from io_strategies import experiments
from loop_compare import both, same


@settings(max_examples=60, deadline=None)
@given(spec=experiments(aligned=True), policy=st.sampled_from(LIST_POLICIES))
def test_aligned_runs_are_the_same_in_both_loops(spec, policy):
    """Whole seconds: many requests meet at one instant, so tie-breaking is exercised."""
    same(*both(lambda: Scenario.from_spec(spec), policy))


@settings(max_examples=40, deadline=None)
@given(spec=experiments(aligned=False), policy=st.sampled_from(LIST_POLICIES),
       jitter=st.sampled_from([0.0, 0.05, 0.3]))
def test_runs_with_jitter_are_the_same_in_both_loops(spec, policy, jitter):
    doc = spec.model_dump(mode="json")
    doc.setdefault("sim", {})["jitter"] = {"compute": jitter, "io": jitter}
    spec = parse_spec(doc)
    sc = Scenario.from_spec(spec)
    assert bool(any(sc.factors)) == (jitter > 0 and any(a.phase_list() for a in spec.apps))
    same(*both(lambda: Scenario.from_spec(spec), policy))


def test_empty_phases_and_zero_compute_take_the_same_path():
    """Zero-length phases end within their instant: the heap gets entries at the current time."""
    spec = parse_spec({
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
        "policy": "fifo",
        "apps": [
            {"id": "a", "nodes": 1, "phases": [{"compute": 0}, {"write": 0}, {"write": 2}, {"compute": 0}, {"read": 1}]},
            {"id": "b", "nodes": 1, "phases": [{"write": 2}, {"write": 0}, {"compute": 1}, {"read": 3}]},
            {"id": "c", "nodes": 1, "release": 2, "phases": [{"read": 0}]},
        ],
    })
    for policy in LIST_POLICIES:
        fast, slow = both(lambda: Scenario.from_spec(spec), policy)
        same(fast, slow)
        assert fast.end[2] == 2.0  # c: only an empty phase, ends at its release
    assert fast.events > 0
