"""The time-stepped and next-event engines agree; runs are deterministic."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.specs import parse_spec
from iolab.trace import read_trace, write_trace
from iolab.sim.io.run import simulate
from iolab.workloads.carretero import CarreteroParams, generate

from io_strategies import experiments


def _same_tables(a, b, tables=("jobs", "phases", "grants")):
    for name in tables:
        ta, tb = a.tables[name], b.tables[name]
        for col in ta.columns:
            x, y = ta[col], tb[col]
            if x.dtype == object:
                assert list(x) == list(y), (name, col)
            else:
                np.testing.assert_array_equal(x, y, err_msg=f"{name}.{col}")


@settings(max_examples=80, deadline=None)
@given(spec=experiments(aligned=True), dt=st.sampled_from([1.0, 0.5, 0.25]))
def test_step_equals_event_when_durations_are_whole_steps(spec, dt):
    # whole seconds with b = 1: every boundary falls on the step grid
    _same_tables(simulate(spec, mode="event"), simulate(spec, mode="step", dt=dt))


@settings(max_examples=60, deadline=None)
@given(spec=experiments(mapping="none", max_apps=3), dt=st.sampled_from([0.5, 0.05]))
def test_without_contention_each_phase_ends_at_most_one_step_late(spec, dt):
    # one app per I/O node: nothing competes, so only the rounding of each
    # boundary up to the grid separates the two engines
    data = spec.model_dump()
    data["platform"]["io_nodes"] = len(data["apps"])
    for i, app in enumerate(data["apps"]):
        app["io_node"] = i
    spec = parse_spec(data)
    ev = simulate(spec, mode="event")
    stp = simulate(spec, mode="step", dt=dt)
    for i, app in enumerate(spec.apps):
        late = stp.jobs["end"][i] - ev.jobs["end"][i]
        assert -1e-9 <= late <= dt * (len(app.phase_list()) + 1) + 1e-9


def test_step_mode_converges_to_event_mode():
    spec = generate(2.0, seed=3, params=CarreteroParams(nodes_per_io_node=64, apps=(5, 8), iterations=(3, 6)))
    exact = simulate(spec, mode="event").jobs["end"].max()
    errs = [abs(simulate(spec, mode="step", dt=dt).jobs["end"].max() - exact) for dt in (1.0, 0.1, 0.01)]
    assert errs[2] < errs[0]
    assert errs[2] <= 0.01 * sum(len(a.phase_list()) for a in spec.apps)


def test_same_spec_and_seed_give_identical_traces(tmp_path):
    p = CarreteroParams(nodes_per_io_node=64, apps=(10, 20), iterations=(5, 20))
    a, b = generate(1.5, seed=11, params=p), generate(1.5, seed=11, params=p)
    assert a == b
    assert generate(1.5, seed=12, params=p) != a
    for policy in ("fifo", "stretch", "shared"):
        ta, tb = simulate(a, policy=policy), simulate(b, policy=policy)
        _same_tables(ta, tb)
        # and through the HDF5 file, bit for bit
        write_trace(ta, tmp_path / "a.h5")
        _same_tables(ta, read_trace(tmp_path / "a.h5"), tables=("jobs", "phases", "grants", "allocations"))


def test_explicit_zero_length_phases_are_handled():
    spec = parse_spec({
        "platform": {"nodes_per_io_node": 4, "bandwidth": 2.0},
        "apps": [{"id": "z", "nodes": 1, "phases": [{"compute": 0}, {"write": 0}, {"read": 4}, {"compute": 0}]}],
    })
    for mode in ("event", "step"):
        t = simulate(spec, mode=mode, dt=0.5)
        assert t.jobs["end"][0] == 2.0
        assert list(t.phases["kind"]) == ["compute", "write", "read", "compute"]
