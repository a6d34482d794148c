"""The I/O kernel both clocks share: the app view, the one request builder, the pack turns."""

from __future__ import annotations

import math

import pytest

from iolab.middleware.policies.io_apps import IOApp, PackTurns, io_apps
from iolab.middleware.policies.plan import make_plan
from iolab.specs import parse_spec


def app(**kw):
    base = dict(id="A", rank=0, nodes=2, release=0.0, kinds=["compute", "write", "compute", "read"],
                amounts=[3.0, 8.0, 1.0, 4.0], bandwidth=2.0)
    return IOApp(**{**base, **kw})


def test_contention_free_times_per_phase_and_before_each_phase():
    a = app()
    assert a.cf == (3.0, 4.0, 1.0, 2.0)
    assert a.done == (0.0, 3.0, 7.0, 8.0, 10.0)
    assert (a.compute_time, a.io_volume, a.min_time) == (4.0, 12.0, 10.0)  # T_i(b) = 4 + 12 / 2


def test_request_fields_by_name():
    # the builder is positional for speed: this pins every field to its name
    req = app().request(3, now=20.0, start=5.0, io_received=6.0)
    assert req._asdict() == {"app": "A", "rank": 0, "requested_at": 20.0, "volume": 4.0, "io_time": 2.0,
                             "remaining": 2.0, "total": 10.0, "start": 5.0, "done": 8.0,
                             "io_received": 6.0, "phase": 3}


def test_bad_apps_are_refused_by_field():
    with pytest.raises(ValueError, match="kind 'sleep'"):
        app(kinds=["compute", "sleep", "compute", "read"])
    with pytest.raises(ValueError, match="4 phase kinds but 3 amounts"):
        app(amounts=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="phase 1 has amount -1"):
        app(amounts=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        app(bandwidth=0)
    # the whole-app check lets nothing through that the phase-by-phase one names
    with pytest.raises(ValueError, match="phase 3 has amount nan"):
        app(amounts=[1.0, 2.0, 3.0, math.nan])
    with pytest.raises(ValueError, match="phase 0 has amount nan"):
        app(amounts=[math.nan, 2.0, -1.0, 1.0])
    assert app(amounts=[0.0, math.inf, 0.0, 1.0]).cf[1] == math.inf  # allowed before as well


def _phase_by_phase(kinds, amounts, b):
    """cf and done as the definition says, one phase after the other (the reference)."""
    cf, done, total = [], [0.0], 0.0
    for k, x in zip(kinds, amounts):
        cf.append(float(x) if k == "compute" else float(x) / b)
        total += cf[-1]
        done.append(total)
    return tuple(cf), tuple(done)


@pytest.mark.parametrize("kinds, amounts", [
    (("compute", "write") * 500, (0.1, 0.3) * 500),  # periodic: one period converted
    (("compute", "write") * 499 + ("compute", "read"), (0.1, 0.3) * 500),  # the last kind differs
    (("compute", "write") * 500, (0.1, 0.3) * 499 + (0.1, 0.7)),  # the last amount differs
    (("write", "compute") * 3, (1, 2) * 3),  # ints become floats in both paths
    (("compute", "write", "compute"), (0.1, 0.3, 0.1)),  # odd: not a period of two
])
def test_a_periodic_app_is_built_as_phase_by_phase(kinds, amounts):
    a = app(kinds=kinds, amounts=amounts, bandwidth=0.7)
    cf, done = _phase_by_phase(kinds, amounts, 0.7)
    assert a.cf == cf and a.done == done  # the same floats (tuple == compares them exactly)
    assert a.amounts == tuple(map(float, amounts)) and all(type(x) is float for x in a.amounts)
    assert a.kinds == tuple(kinds)


def test_a_periodic_app_names_its_first_bad_phase():
    with pytest.raises(ValueError, match="phase 1 has amount -1"):
        app(kinds=("compute", "write") * 50, amounts=(1.0, -1.0) * 50)
    with pytest.raises(ValueError, match="phase 0 has kind 'sleep'"):
        app(kinds=("sleep", "write") * 50, amounts=(1.0, 1.0) * 50)
    with pytest.raises(ValueError, match="phase 99 has amount -1"):  # not periodic: found where it is
        app(kinds=("compute", "write") * 50, amounts=(1.0, 1.0) * 49 + (1.0, -1.0))


def test_the_periodic_form_lists_its_pattern_iteration_by_iteration():
    spec = parse_spec({"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
                       "apps": [{"id": "A", "nodes": 1, "iterations": 3, "compute": 2, "io_volume": 0.5,
                                 "io_kind": "read"},
                                {"id": "B", "nodes": 1, "phases": [{"write": 1}, {"compute": 4}]}]})
    a, b = spec.apps
    assert a.phase_list() == [("compute", 2.0), ("read", 0.5)] * 3
    assert b.phase_list() == [("write", 1.0), ("compute", 4.0)]
    assert a.phase_columns() == (("compute", "read") * 3, (2.0, 0.5) * 3)


def test_io_apps_take_the_specs_numbers_and_the_plans_places():
    spec = parse_spec({"platform": {"io_nodes": 2, "nodes_per_io_node": 8, "bandwidth": 3.0},
                       "mapping": {"kind": "make-pack", "sensibility": 1},
                       "apps": [{"id": "A", "nodes": 4, "iterations": 3, "compute": 0.1, "io_volume": 0.7},
                                {"id": "B", "nodes": 8, "release": 2, "iterations": 2, "compute": 5, "io_volume": 1}]})
    plan = make_plan(spec)
    apps = io_apps(spec, plan)
    where = plan.location()
    for rank, (a, s) in enumerate(zip(apps, spec.apps)):
        assert (a.id, a.rank, a.nodes, a.release) == (s.id, rank, s.nodes, s.release)
        assert (a.io_node, a.pack) == where[rank]
        assert list(zip(a.kinds, a.amounts)) == s.phase_list()
        # bit for bit the spec's T_i(b), even where summing the phases would round otherwise
        assert (a.min_time, a.compute_time, a.io_volume) == (s.min_time(3.0), s.compute_time(), s.io_total())


def test_without_packs_every_app_may_start_at_its_release():
    t = PackTurns([[[0, 1]], [[2]]], [5.0, 0.0, 2.0], packed=False)
    assert t.initial() == [0, 1, 2]
    assert [t.due(r) for r in range(3)] == [5.0, 0.0, 2.0]
    assert t.end(1, 3.0) == []


def test_packs_of_a_node_take_turns_and_wait_for_every_release_of_the_pack():
    # node 0: pack (0, 1) then pack (2,); node 1: pack (3,) then (4,)
    t = PackTurns([[[0, 1], [2]], [[3], [4]]], [0.0, 4.0, 1.0, 0.0, 9.0], packed=True)
    assert t.initial() == [0, 1, 3]
    assert (t.due(0), t.due(1), t.due(3)) == (4.0, 4.0, 0.0)  # 0 waits for 1's release
    assert t.due(2) == math.inf and t.due(4) == math.inf
    assert t.end(0, 10.0) == []  # 1 still runs
    assert t.end(1, 12.0) == [2]
    assert t.due(2) == 12.0  # released at 1, opened at 12
    assert t.end(3, 3.0) == [4] and t.due(4) == 9.0  # opened at 3, released at 9
    assert t.end(1, 13.0) == []  # an app ends once


def test_a_pack_whose_apps_all_ended_early_is_skipped():
    # the arbiter kills apps of a later pack (run interrupted, crash): their pack never waits
    t = PackTurns([[[0], [1], [2]]], [0.0, 0.0, 0.0], packed=True)
    assert t.end(1, 1.0) == []  # killed before its turn
    assert t.end(0, 2.0) == [1, 2]  # pack 1 opens and, all ended, hands over to pack 2
    assert t.due(2) == 2.0


def test_packs_must_cover_every_rank_once():
    with pytest.raises(ValueError, match="in no pack"):
        PackTurns([[[0]]], [0.0, 0.0], packed=True)
    with pytest.raises(ValueError, match="in two packs"):
        PackTurns([[[0], [0, 1]]], [0.0, 0.0], packed=True)
