"""The I/O-level metrics of arrays (iolab.metrics.io) that the studies call on an engine's record, each
against a computation made another way: from the trace by ``io_metrics``, or app by app in a loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.metrics import (
    io_makespan, io_metrics, node_times, pack_max_slowdowns, pack_spans, sequential_makespan, slowdown,
)
from iolab.middleware.policies.plan import make_packs, packed_plan
from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario
from iolab.workloads.carretero import CarreteroParams, generate

SMALL = CarreteroParams(nodes_per_io_node=64, apps=(12, 20), iterations=(5, 15))


def packed_spec(io_nodes: int, alpha: float = 0.5):
    """A generated workload Make-Pack (S = 1) cuts into 7 packs (at alpha 0.5, seed 5)."""
    spec = generate(alpha, 5, SMALL, io_nodes=io_nodes)
    return spec.model_validate({**spec.model_dump(), "mapping": {"kind": "make-pack", "sensibility": 1.0}})


def test_per_app_and_per_pack_metrics_equal_those_of_the_trace():
    trace = simulate(packed_spec(2))
    m = io_metrics(trace)
    j = trace.jobs
    release, start, end, tmin = (np.asarray(j[c], dtype=float) for c in ("release", "start", "end", "min_time"))
    assert slowdown(release, end, tmin) == pytest.approx([a.slowdown for a in m.apps], rel=1e-12)
    assert io_makespan(end) == m.makespan
    groups: dict[tuple[int, int], list[int]] = {}
    for i, key in enumerate(zip(j["io_node"].tolist(), j["pack"].tolist())):
        groups.setdefault(key, []).append(i)
    packs = list(groups.values())
    assert len(packs) == m.packs > 2
    worst = pack_max_slowdowns(start, end, tmin, packs)
    assert float(np.mean(worst)) == pytest.approx(m.mean_pack_max_slowdown, rel=1e-12)
    assert worst.tolist() == pytest.approx([max(1 / m.apps[i].pack_stretch for i in p) for p in packs], rel=1e-12)
    # a pack's span: its apps' last end minus their first start, app by app
    assert pack_spans(start, end, packs).tolist() == [max(end[i] for i in p) - min(start[i] for i in p) for p in packs]


def test_node_times_of_an_engine_record_equal_the_split_io_metrics_reads_from_the_trace():
    """The carretero study's Fig. 14 split, from the engine's per-app busy and wait seconds, against
    io_metrics's, from the trace's phase and grant rows of the same run."""
    spec = packed_spec(1)
    m = io_metrics(simulate(spec))
    packs = make_packs(spec, 1.0)
    sc = Scenario.from_spec(spec, packed_plan(spec, packs, [list(range(len(packs)))], 1.0))
    rec = EventEngine(sc, "fifo", rows=False).run()
    got = node_times([a.nodes for a in sc.apps], [rec.io_busy[a.rank] + a.compute_time for a in sc.apps],
                     [rec.wait[a.rank] for a in sc.apps], io_makespan(rec.end), spec.platform.nodes_per_io_node)
    assert got == pytest.approx((m.exec_time, m.delay_time, m.idle_time), rel=1e-9)


def test_sequential_makespan_is_the_last_end_of_packs_run_back_to_back():
    rng = np.random.default_rng(3)
    durations = rng.uniform(1, 100, 17)
    placement = [list(rng.permutation(17)[:k]) for k in (0, 5, 17)]
    ends = []
    for seq in placement:  # each node runs its packs one after the other from 0
        t = 0.0
        for p in seq:
            t = t + durations[p]
        ends.append(t)
    assert sequential_makespan(durations, placement) == max(ends)


def test_io_makespan_leaves_out_the_apps_that_did_not_end():
    ends = [3.0, math.nan, 7.5, 1.0]
    assert io_makespan(ends) == max(e for e in ends if not math.isnan(e))
    assert math.isnan(io_makespan([math.nan, math.nan])) and math.isnan(io_makespan([]))


def test_an_empty_pack_is_refused():
    with pytest.raises(ValueError, match="at least one app"):
        pack_spans([0.0, 1.0], [2.0, 3.0], [[0, 1], []])
