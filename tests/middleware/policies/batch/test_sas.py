"""SAS (lackner2019 Alg. 1, 2) and random tier assignment.

Rates: R_lps = 1 GB/s, R_hps = 10 GB/s, R_stage = 5 GB/s.  Job J: 2 nodes,
walltime 1000 s, input 100 GB, output 100 GB, intermediate data 300 GB,
storage 200 GB.  With LPS it holds its nodes 1000 s.  With HPS: its 500 s of
I/O at R_lps take 50 s at R_hps (run 550 s) plus 20 s stage-in and 20 s
stage-out: 590 s.  Worked out by hand:

- HPS free now: T_hps = 590 < T_lps = 1000 -> HPS, starts now.
- HPS held (900 of 1000 GB) until t=500: HPS would end at 1090 > 1000 -> LPS now.
- HPS held until t=300: HPS ends at 890 < 1000 -> SAS picks HPS and J waits
  (Alg. 2 only starts the chosen schedule; plan: HPS at 300).
- no storage request -> LPS, whatever the data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.middleware.policies.batch import (
    HPS, LPS, SAS, Profile, QueuedJob, RandomTier, RunningJob, Snapshot, TierRates,
)

GB = 1e9
RATES = TierRates(lps=1 * GB, hps=10 * GB, stage=5 * GB)


def J(id="J", submit=0.0, nodes=2, walltime=1000.0, storage=200 * GB, **kw):
    io = dict(input=100 * GB, output=100 * GB, data=300 * GB)
    io.update(kw)
    return QueuedJob(id, submit, nodes, walltime, storage=storage, **io)


def snap(queue, running=(), now=0.0, cap=1000 * GB, nodes=4):
    busy = sum(r.nodes for r in running)
    return Snapshot(now=now, total_nodes=nodes, free_nodes=nodes - busy, queue=tuple(queue),
                    running=tuple(running), hps_capacity=cap, rates=RATES)


def test_durations_by_hand():
    j = J()
    assert RATES.duration(j, LPS) == 1000
    assert RATES.duration(j, HPS) == pytest.approx(590)


def test_hps_when_free():
    d = SAS().decide(snap([J()]))
    (s,) = d.starts
    assert (s.tier, s.expected_end, s.storage) == (HPS, pytest.approx(590), 200 * GB)


def test_lps_when_hps_wait_is_too_long():
    d = SAS().decide(snap([J()], running=[RunningJob("R", 1, 500, HPS, 900 * GB)]))
    (s,) = d.starts
    assert (s.tier, s.expected_end) == (LPS, 1000)


def test_waits_for_hps_when_it_pays():
    d = SAS().decide(snap([J()], running=[RunningJob("R", 1, 300, HPS, 900 * GB)]))
    assert d.starts == ()
    (e,) = d.plan
    assert (e.tier, e.start, e.reserved) == (HPS, 300, True)
    assert e.end == pytest.approx(890)


def test_no_storage_request_means_lps():
    d = SAS().decide(snap([J(storage=0.0)]))
    assert [s.tier for s in d.starts] == [LPS]


def test_request_larger_than_hps_means_lps():
    d = SAS().decide(snap([J(storage=2000 * GB)]))
    assert [s.tier for s in d.starts] == [LPS]


def test_tie_goes_to_lps():
    # No I/O at all: HPS and LPS give the same turnaround.
    d = SAS().decide(snap([J(input=0, output=0, data=0)]))
    assert [s.tier for s in d.starts] == [LPS]


def test_backfill_is_shortest_job_first_and_protects_the_head():
    # 4 nodes; R holds 2 until 100.  Head H needs 4 nodes -> reserved at 100 (LPS, no storage).
    # Candidates for 2 free nodes until 100: long L (200 s) would delay H; S1 (80 s, 50 GB)
    # and S2 (80 s, 10 GB) both fit but only one at a time (2 nodes each): SJF with the
    # smaller storage first picks S2.
    q = [QueuedJob("H", 0, 4, 100), QueuedJob("L", 1, 2, 200),
         QueuedJob("S1", 2, 2, 80, storage=50 * GB), QueuedJob("S2", 3, 2, 80, storage=10 * GB)]
    d = SAS().decide(snap(q, running=[RunningJob("R", 2, 100)]))
    assert d.started == ["S2"]
    assert d.start_of("H") == 100


@st.composite
def tiered_snapshots(draw):
    total = 6
    running, busy, held = [], 0, 0.0
    for i, (n, end, hps) in enumerate(draw(st.lists(
            st.tuples(st.integers(1, 3), st.integers(1, 400), st.integers(0, 600)), max_size=3))):
        if busy + n > total or held + hps * GB > 1000 * GB:
            break
        running.append(RunningJob(f"r{i}", n, float(end), HPS if hps else LPS, hps * GB))
        busy += n
        held += hps * GB
    jobs = draw(st.lists(st.tuples(st.integers(1, 6), st.integers(10, 1000), st.integers(0, 800),
                                   st.integers(0, 200)), min_size=1, max_size=8))
    queue = [QueuedJob(f"j{i}", float(i), n, float(w), storage=s * GB, input=io * GB / 2, output=io * GB / 2,
                       data=io * GB) for i, (n, w, s, io) in enumerate(jobs)]
    return snap(queue, running, nodes=total)


@settings(max_examples=150, deadline=None)
@given(tiered_snapshots())
def test_sas_never_overbooks_and_never_delays_the_head(s):
    d = SAS().decide(s)
    assert sum(x.nodes for x in d.starts) <= s.free_nodes
    assert sum(x.storage for x in d.starts if x.tier == HPS) <= s.hps_free + 1
    prof = Profile.from_snapshot(s)
    for e in d.plan:  # starts + the head's reservation are jointly feasible
        if e.reserved:
            prof.reserve(e.start, e.end - e.start, e.nodes, e.storage if e.tier == HPS else 0.0)
    waiting = [e for e in d.plan if e.start > s.now]
    if waiting:
        head = waiting[0]
        idx = [j.id for j in s.queue].index(head.job)
        alone = Snapshot(now=s.now, total_nodes=s.total_nodes, free_nodes=s.free_nodes, queue=s.queue[: idx + 1],
                         running=s.running, hps_capacity=s.hps_capacity, rates=s.rates)
        e2 = SAS().decide(alone).plan[-1]
        assert (e2.start, e2.tier) == (head.start, head.tier)


def test_random_tier_proportion_matches_p():
    p, n = 0.3, 4000
    queue = [J(id=f"j{i}", submit=float(i)) for i in range(n)]
    pol = RandomTier(p, np.random.default_rng(12345), project=False)
    pol.decide(Snapshot(now=0, total_nodes=4, free_nodes=4, queue=tuple(queue), hps_capacity=1e15, rates=RATES))
    hps = sum(pol.tier_of(f"j{i}") == HPS for i in range(n))
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(hps - n * p) < 4 * sigma
    # Same seed, same draws; a Generator or an int seed are both accepted.
    again = RandomTier(p, np.random.default_rng(12345), project=False)
    again.decide(Snapshot(now=0, total_nodes=4, free_nodes=4, queue=tuple(queue), hps_capacity=1e15, rates=RATES))
    assert all(again.tier_of(f"j{i}") == pol.tier_of(f"j{i}") for i in range(n))


@pytest.mark.parametrize("p,tier", [(0.0, LPS), (1.0, HPS)])
def test_random_tier_extremes(p, tier):
    d = RandomTier(p, 7).decide(snap([J()]))
    assert [s.tier for s in d.starts] == [tier]


def test_random_tier_draw_is_sticky_across_decisions():
    pol = RandomTier(0.5, 3)
    first = pol.decide(snap([J(id=f"j{i}", submit=i) for i in range(20)]))
    tiers = {e.job: e.tier for e in first.plan}
    assert all(pol.tier_of(j) in (HPS, LPS) for j in tiers)
    before = {j: pol.tier_of(j) for j in tiers}
    pol.decide(snap([J(id=f"j{i}", submit=i) for i in range(20)], now=10))
    assert {j: pol.tier_of(j) for j in tiers} == before


def test_sas_needs_rates():
    with pytest.raises(ValueError, match="rates"):
        SAS().decide(Snapshot(now=0, total_nodes=4, free_nodes=4, queue=(J(),)))


def test_start_now_reading_backfills_a_job_on_lps_instead_of_waiting_for_hps():
    # 6 nodes; R holds 2 nodes and 900 GB of HPS until 300.  Head H needs 5 nodes -> reserved at 300.
    # K (1 node, J's I/O) prefers HPS at 300 (ends 890 < 1000 on LPS now): the literal reading keeps it
    # waiting; with start_now it starts on LPS now (1 node until 1000 leaves H its 5 nodes at 300).
    H = QueuedJob("H", 0, 5, 100.0)
    K = J("K", submit=1, nodes=1)
    s = snap([H, K], running=[RunningJob("R", 2, 300, HPS, 900 * GB)], nodes=6)
    literal = SAS().decide(s)
    assert literal.started == [] and literal.start_of("K") == 300
    assert [e.tier for e in literal.plan if e.job == "K"] == [HPS]
    now = SAS(start_now=True).decide(s)
    assert now.started == ["K"] and [x.tier for x in now.starts] == [LPS]
    assert now.start_of("H") == 300  # the head is not delayed
    # a head that would be delayed keeps the literal answer: H needs all 6 nodes at 300
    H6 = QueuedJob("H", 0, 6, 100.0)
    s6 = snap([H6, K], running=[RunningJob("R", 2, 300, HPS, 900 * GB)], nodes=6)
    assert SAS(start_now=True).decide(s6).started == []
    # nothing changes when the best schedule starts now anyway
    assert SAS(start_now=True).decide(snap([J()])).starts == SAS().decide(snap([J()])).starts


@settings(max_examples=150, deadline=None)
@given(tiered_snapshots())
def test_start_now_never_overbooks_and_never_delays_the_head(s):
    d = SAS(start_now=True).decide(s)
    assert sum(x.nodes for x in d.starts) <= s.free_nodes
    assert sum(x.storage for x in d.starts if x.tier == HPS) <= s.hps_free + 1
    lit = SAS().decide(s)
    head = [e for e in lit.plan if e.reserved and e.job not in lit.started]
    for e in head:  # the literal reading's head keeps its start
        assert d.start_of(e.job) <= e.start + 1e-9


def test_start_now_is_a_sas_option_of_the_spec():
    from iolab.errors import SpecError
    from iolab.middleware.policies.batch.kernel import make_policy
    from iolab.specs import parse_spec

    def spec(sched):
        return parse_spec({"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": "1GB/s"},
                                                          "hps": {"rate": "10GB/s", "capacity": "10GB"},
                                                          "stage_rate": "1GB/s"},
                           "scheduler": sched, "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 10,
                                                             "runtime": 5}]})

    assert make_policy(spec({"kind": "sas", "start_now": True})).start_now is True
    assert make_policy(spec("sas")).start_now is False
    with pytest.raises(SpecError, match="start_now"):
        spec({"kind": "easy", "start_now": True})
