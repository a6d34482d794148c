"""FCFS, EASY and conservative backfilling on hand-made queues, and their invariants.

The hand-made case (4 nodes, one running job R of 3 nodes until t=100)::

    A: 3 nodes, 100 s      B: 4 nodes, 50 s      C: 1 node, 300 s   (submitted in this order)

Expected, worked out by hand before running anything:

- FCFS: nothing starts; A at 100, B at 200 (after A), C at 250 (not before B).
- conservative: nothing starts; A 100, B 200, C 250 (C at 0 would still run at
  200 and delay B's reservation).
- EASY: C starts now (it uses the node A leaves free, so A still starts at
  100); A reserved at 100; B only projected, at 300 (C delays it: EASY protects
  the head only).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.middleware.policies.batch import (
    EASY, FCFS, Conservative, Profile, QueuedJob, RunningJob, Snapshot, get_scheduler,
)


def case(now: float = 0.0, r_end: float = 100.0) -> Snapshot:
    q = (QueuedJob("A", 0, 3, 100), QueuedJob("B", 1, 4, 50), QueuedJob("C", 2, 1, 300))
    running = (RunningJob("R", 3, r_end),) if r_end > now else ()
    free = 1 if running else 4
    return Snapshot(now=now, total_nodes=4, free_nodes=free, queue=q, running=running)


def starts(plan) -> dict[str, float]:
    return {e.job: e.start for e in plan}


def test_fcfs_hand_case():
    d = FCFS().decide(case())
    assert d.started == []
    assert starts(d.plan) == {"A": 100, "B": 200, "C": 250}


def test_conservative_hand_case():
    d = Conservative().decide(case())
    assert d.started == []
    assert starts(d.plan) == {"A": 100, "B": 200, "C": 250}
    assert all(e.reserved for e in d.plan)


def test_easy_hand_case():
    d = EASY().decide(case())
    assert d.started == ["C"]
    assert starts(d.plan) == {"A": 100, "B": 300, "C": 0}
    reserved = {e.job: e.reserved for e in d.plan}
    assert reserved == {"A": True, "B": False, "C": True}
    (s,) = d.starts
    assert (s.job, s.nodes, s.expected_end, s.tier) == ("C", 1, 300, "lps")


def test_easy_backfills_when_the_job_ends_before_the_shadow_time():
    q = (QueuedJob("A", 0, 4, 50), QueuedJob("B", 1, 2, 100), QueuedJob("C", 2, 1, 300))
    snap = Snapshot(now=0, total_nodes=4, free_nodes=2, queue=q, running=(RunningJob("R", 2, 100),))
    d = EASY().decide(snap)
    assert d.started == ["B"]  # ends at 100 = A's reserved start
    assert starts(d.plan) == {"A": 100, "B": 0, "C": 150}


def test_conservative_compresses_when_a_job_ends_early():
    before = starts(Conservative().decide(case()).plan)
    # R was expected until 100 but ends at 50: the caller asks again at 50.
    d = Conservative().decide(case(now=50, r_end=50))
    after = starts(d.plan)
    assert after == {"A": 50, "B": 150, "C": 200}
    assert d.started == ["A"]
    assert all(after[j] <= before[j] for j in before)


def test_fcfs_keeps_order_after_early_end():
    d = FCFS().decide(case(now=50, r_end=50))
    assert starts(d.plan) == {"A": 50, "B": 150, "C": 200}


def test_overrunning_job_is_assumed_to_end_soon():
    snap = Snapshot(now=200, total_nodes=4, free_nodes=1, queue=(QueuedJob("A", 0, 3, 100),),
                    running=(RunningJob("R", 3, 100),), overrun_grace=5)
    assert starts(EASY().decide(snap).plan) == {"A": 205}


def test_policy_remembers_its_last_plan():
    pol = get_scheduler("conservative")
    assert pol.plan() == ()
    d = pol.decide(case())
    assert pol.plan() == d.plan and isinstance(pol.plan(), tuple)


@pytest.mark.parametrize("bad", [
    dict(free_nodes=5),  # more free than the machine
    dict(queue=(QueuedJob("X", 0, 9, 10),)),  # larger than the machine
    dict(queue=(QueuedJob("X", 0, 1, 10), QueuedJob("X", 1, 1, 10))),
])
def test_snapshot_refuses_inconsistent_state(bad):
    args = dict(now=0, total_nodes=4, free_nodes=4)
    args.update(bad)
    with pytest.raises(ValueError):
        Snapshot(**args)


def test_profile_earliest_fit_skips_blocking_segments():
    p = Profile(0, 2)
    p.add(10, math.inf, -2)  # 2 more nodes from t=10
    p.reserve(10, 20, 4)  # [10, 30) fully used
    assert p.earliest_fit(1, 5) == 0
    assert p.earliest_fit(1, 15) == 30
    assert p.earliest_fit(3, 1) == 30
    assert p.earliest_fit(5, 1) == math.inf


def _earliest_by_brute_force(p, nodes, duration, hps, not_before):
    """Every candidate start in time order (``not_before`` and each later breakpoint), each
    checked against every segment its interval overlaps: obviously right, and quadratic."""
    times = p.times
    floor = times[0] if not_before is None else max(not_before, times[0])
    for c in sorted({floor} | {x for x in times if x > floor}):
        overlapped = [k for k in range(len(times))
                      if times[k] < c + duration and (k + 1 == len(times) or times[k + 1] > c)]
        if all(p.nodes[k] >= nodes and p.hps[k] + p.eps >= hps for k in overlapped):
            return c
    return math.inf


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(1, 6), st.integers(-2, 3), st.sampled_from([0.0, 0.5, 1.0])),
                max_size=10),
       st.integers(0, 6), st.sampled_from([0.5, 1.0, 2.5, 6.0, math.inf]), st.sampled_from([0.0, 0.25, 1.0, 2.5]),
       st.sampled_from([None, 0.0, 1.5, 4.0, 11.0]))
def test_profile_earliest_fit_is_the_brute_force_one(adds, nodes, duration, hps, not_before):
    p = Profile(0.0, 4, 2.0)
    for start, length, n, h in adds:  # random holds and releases, so segments of any kind
        p.add(float(start), float(start + length), n, h)
    assert p.earliest_fit(nodes, duration, hps, not_before) == _earliest_by_brute_force(p, nodes, duration, hps, not_before)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0, math.inf]),
                          st.integers(0, 4), st.sampled_from([0.0, 0.0, 0.25, 1.5]),
                          st.sampled_from([None, 0.0, 0.5, 3.0, 7.25])), min_size=1, max_size=12))
def test_profile_place_is_earliest_fit_then_add(calls):
    """place() reuses the search's indices to split; the lists must be the ones the two calls
    leave, float for float, breakpoints included, and a job that never fits holds nothing."""
    one, two = Profile(0.0, 4, 2.0), Profile(0.0, 4, 2.0)
    for p in (one, two):
        p.add(1.5, math.inf, -2, -1.0)  # more room later, so that a search has somewhere to go
        p.add(3.0, 5.0, 3, 0.5)
    for start, duration, nodes, hps, floor in calls:
        t = one.earliest_fit(nodes, duration, hps, floor)
        if t != math.inf:
            one.add(t, t + duration, nodes, hps)  # what a hold is, unchecked
        assert two.place(nodes, duration, hps, floor) == t
        assert (two.times, two.nodes, two.hps) == (one.times, one.nodes, one.hps)
        one.add(float(start), float(start) + 1.0, -1)  # someone else's release: new breakpoints
        two.add(float(start), float(start) + 1.0, -1)


# ---------------------------------------------------------------- properties

job_st = st.builds(lambda n, w, s: (n, w, s), st.integers(1, 8), st.integers(1, 50), st.integers(0, 20))


@st.composite
def snapshots(draw):
    total = 8
    running = []
    busy = 0
    for i, (n, end) in enumerate(draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 60)), max_size=4))):
        if busy + n > total:
            break
        running.append(RunningJob(f"r{i}", n, float(end)))
        busy += n
    free = total - busy
    jobs = draw(st.lists(job_st, min_size=1, max_size=10))
    queue = tuple(QueuedJob(f"j{i}", float(i), n, float(w)) for i, (n, w, s) in enumerate(jobs))
    return Snapshot(now=0.0, total_nodes=total, free_nodes=free, queue=queue, running=tuple(running))


def _check_common(snap, d):
    assert sum(s.nodes for s in d.starts) <= snap.free_nodes
    assert [e.job for e in d.plan] == [j.id for j in snap.queue]
    assert all(e.start >= snap.now for e in d.plan)
    # Starts and reservations are jointly feasible: nothing double-booked.
    prof = Profile.from_snapshot(snap)
    for e in d.plan:
        if e.reserved:
            prof.reserve(e.start, e.end - e.start, e.nodes)


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_conservative_never_delays_an_earlier_job(snap):
    d = Conservative().decide(snap)
    _check_common(snap, d)
    full = starts(d.plan)
    for k in range(1, len(snap.queue) + 1):  # later jobs never change earlier reservations
        prefix = Snapshot(now=snap.now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes,
                          queue=snap.queue[:k], running=snap.running)
        sub = starts(Conservative().decide(prefix).plan)
        assert all(sub[j] == full[j] for j in sub)


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_easy_never_delays_the_head(snap):
    d = EASY().decide(snap)
    _check_common(snap, d)
    waiting = [e for e in d.plan if e.start > snap.now]
    if not waiting:
        return
    head = waiting[0]
    assert head.reserved
    idx = [j.id for j in snap.queue].index(head.job)
    # The head's start is what it would be if no later job existed (no backfill).
    alone = Snapshot(now=snap.now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes,
                     queue=snap.queue[: idx + 1], running=snap.running)
    assert starts(FCFS().decide(alone).plan)[head.job] == head.start


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_fcfs_never_overtakes(snap):
    d = FCFS().decide(snap)
    _check_common(snap, d)
    s = [e.start for e in d.plan]
    assert s == sorted(s)


def _easy_by_definition(snap):
    """EASY as Lifka states it, searching every job's earliest slot: the job starts now iff that slot is now."""
    prof = Profile.from_snapshot(snap)
    started, head = [], None
    for job in snap.queue:
        t = prof.earliest_fit(job.nodes, job.walltime, not_before=snap.now)
        if t == snap.now:
            prof.reserve(t, job.walltime, job.nodes)
            started.append(job.id)
        elif head is None:
            prof.reserve(t, job.walltime, job.nodes)
            head = (job.id, t)
    return started, head


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_easy_starts_what_the_definition_starts(snap):
    # the policy only asks "does it fit now?" after the head (no search ahead): same decisions
    d = EASY().decide(snap)
    started, head = _easy_by_definition(snap)
    assert [s.job for s in d.starts] == started
    reserved = [(e.job, e.start) for e in d.plan if e.reserved and e.start > snap.now]
    assert reserved == ([head] if head else [])


@settings(max_examples=100, deadline=None)
@given(snapshots(), st.floats(0, 50), st.booleans())
def test_a_trusted_snapshot_is_the_checked_one(snap, now, default_free):
    # the engine's fast path builds exactly what the checked constructor builds
    fields = dict(now=now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes, queue=snap.queue,
                  running=snap.running, hps_capacity=100.0, hps_free=None if default_free else 40.0,
                  rates=None, overrun_grace=2.0)
    assert Snapshot.trusted(**fields) == Snapshot(**fields)
    assert EASY().decide(Snapshot.trusted(**fields)) == EASY().decide(Snapshot(**fields))


@pytest.mark.parametrize("queue, message", [
    ((QueuedJob("a", 0.0, 2, 10.0), QueuedJob("a", 1.0, 2, 10.0)), "twice in the queue"),
    ((QueuedJob("a", 0.0, 9, 10.0),), "needs 9 nodes"),
    ((QueuedJob("a", 0.0, 2, 0.0),), "walltime must be > 0"),
])
def test_jobs_are_checked_once_before_the_trusted_path(queue, message):
    with pytest.raises(ValueError, match=message):
        Snapshot.check_jobs(queue, 8)
