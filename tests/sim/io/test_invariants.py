"""Invariants that must hold for any workload and any list policy."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings

from iolab.metrics import io_metrics
from iolab.sim.io.run import simulate

from io_strategies import experiments

EPS = 1e-9


@settings(max_examples=150, deadline=None)
@given(spec=experiments())
def test_list_policy_invariants(spec):
    trace = simulate(spec, mode="event")
    jobs = {j["id"]: j for j in trace.jobs.rows()}
    apps = {a.id: a for a in spec.apps}
    b = spec.platform.bandwidth

    # every app ends, and nothing starts before its release
    for j in jobs.values():
        assert j["status"] == "ok"
        assert j["start"] >= j["release"] - EPS
    for p in trace.phases.rows():
        assert p["start"] >= jobs[p["job"]]["start"] - EPS

    # under a list policy no two transfers overlap on one I/O node, and each is exclusive
    per_node = defaultdict(list)
    for g in trace.grants.rows():
        per_node[g["io_node"]].append((g["grant"], g["release"]))
        assert g["grant"] >= g["request"] - EPS
    for spans in per_node.values():
        spans.sort()
        for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
            assert s2 >= e1 - EPS

    # every unit of I/O is transferred, at full bandwidth
    moved = defaultdict(float)
    for p in trace.phases.rows():
        if p["kind"] != "compute":
            moved[p["job"]] += p["volume"]
            assert abs((p["end"] - p["start"]) * b - p["volume"]) <= 1e-6 * max(1, p["volume"])
    for a in spec.apps:
        assert abs(moved[a.id] - apps[a.id].io_total()) <= 1e-9 * max(1, apps[a.id].io_total())

    # stretch <= 1 (Eq. 2)
    for a in io_metrics(trace).apps:
        assert a.stretch <= 1 + 1e-9

    # packs: apps of a pack start together, after the previous pack on that node ended;
    # at no time do the apps on a partition need more than its P nodes
    if trace.attrs["packed"]:
        packs = defaultdict(list)
        for j in jobs.values():
            packs[(j["io_node"], j["pack"])].append(j)
        by_node = defaultdict(list)
        for (node, pid), members in packs.items():
            assert len({m["start"] for m in members}) == 1
            assert sum(m["nodes"] for m in members) <= spec.platform.nodes_per_io_node
            by_node[node].append((members[0]["start"], max(m["end"] for m in members)))
        for spans in by_node.values():
            spans.sort()
            for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
                assert s2 >= e1 - EPS


@settings(max_examples=60, deadline=None)
@given(spec=experiments(mapping="none"))
def test_shared_mode_transfers_everything_and_overlaps_only_with_split_bandwidth(spec):
    trace = simulate(spec, policy="shared", mode="event")
    b = spec.platform.bandwidth
    for g in trace.grants.rows():
        assert g["grant"] == g["request"]  # shared: no waiting
    phases = [p for p in trace.phases.rows() if p["kind"] != "compute"]
    for p in phases:  # a transfer never beats the node's full bandwidth
        assert (p["end"] - p["start"]) * b >= p["volume"] * (1 - 1e-9)
