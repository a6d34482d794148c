"""The books of a batch platform's I/O nodes (one for both runtimes), driven by hand in spec seconds."""

from __future__ import annotations

import math

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch.io_node_book import GRANTED, HELD, WAITING, IONodeBook
from iolab.middleware.policies.batch.io_parts import JobIOFacts, node_counts
from iolab.workloads.steps import Step

RATES = {"lps": 10.0, "hps": 10.0, "stage": 10.0}
STEPS = [Step("compute", 1.0), Step("write", 120.0, "lps")]


def book(policy="fifo", io_nodes=2, strict=True) -> IONodeBook:
    return IONodeBook(io_nodes, policy, 1.0, strict=strict)


def job(b: IONodeBook, name: str, rank: int, counts: dict[int, int], user: str = "u"):
    return b.add_job(JobIOFacts(name, rank, STEPS, RATES, 1.0), 0.0, counts, sum(counts.values()), user)


def test_a_phase_is_split_by_the_jobs_nodes_on_each_io_node():
    b = book()
    j = job(b, "a", 0, node_counts(0b0111, 2))  # nodes 0, 1 on I/O node 0; node 2 on I/O node 1
    ph = b.open(j, 1, 120.0, 5.0)
    assert {n: p.volume for n, p in ph.parts.items()} == {0: 80.0, 1: 40.0}
    assert ph.asked == 5.0 and j.phase is ph


def test_requests_are_granted_at_dispatch_only_on_the_io_nodes_touched():
    b = book()
    a, c = job(b, "a", 0, {0: 1}), job(b, "c", 1, {0: 1})
    pa, pc = b.open(a, 1, 120.0, 0.0).parts[0], b.open(c, 1, 120.0, 0.0).parts[0]
    b.request(pa, pa.volume, 0.0)
    b.request(pc, pc.volume, 0.5)
    assert (pa.state, pc.state, b.pending) == (WAITING, WAITING, {0})
    assert b.dispatch(1.0) == [pa]  # fifo: one at a time
    assert (pa.state, pa.granted, pc.state, b.pending) == (GRANTED, 1.0, WAITING, set())
    assert b.dispatch(2.0) == []
    b.release(pa, 3.0, 120.0, finished=True)
    assert b.dispatch(3.0) == [pc]
    assert b.grants == [("a", 1, 0, 0.0, 1.0, 3.0)]


def test_a_suspended_job_lets_go_and_asks_again_for_its_bytes_left_and_its_io_time_counts_from_its_first_request():
    b = book()
    a, c = job(b, "a", 0, {0: 1, 1: 1}), job(b, "c", 1, {0: 1})
    ph = b.open(a, 1, 120.0, 0.0)
    for p in ph.parts.values():
        b.request(p, p.volume, 0.0)
    pc = b.open(c, 1, 120.0, 0.0).parts[0]
    b.request(pc, pc.volume, 0.0)
    p0, p1 = ph.parts[0], ph.parts[1]
    assert b.dispatch(0.0) == [p0, p1]
    released = b.suspend(a, 10.0, lambda p: (20.0, False))  # each part moved 20 of its 60
    assert released == [p0, p1] and (p0.state, p1.state) == (HELD, HELD)
    assert b.dispatch(10.0) == [pc]  # the I/O node went to c
    assert b.held(0) == ["a"]
    assert b.resume(a, 30.0, lambda p: 40.0) == [p0, p1]
    assert (p0.asked, p0.req.volume, p0.req.io_time) == (40.0, 40.0, 40.0)  # at the I/O node's 1 B/s
    assert b.dispatch(30.0) == [p1]  # p0 waits for c
    b.release(pc, 130.0, 120.0, finished=True)
    assert b.dispatch(130.0) == [p0]
    b.release(p1, 70.0, 40.0, finished=True)
    p1.end = 70.0
    b.release(p0, 170.0, 40.0, finished=True)
    p0.end = 170.0
    b.phase_done(ph, 170.0)
    assert a.io_time == 170.0 and a.phase is None
    assert b.ended[("a", 1)] == [(0, 60.0, 170.0), (1, 60.0, 70.0)]
    assert sorted(r for r in b.grants if r[0] == "a") == [
        ("a", 1, 0, 0.0, 0.0, 10.0), ("a", 1, 0, 30.0, 130.0, 170.0), ("a", 1, 1, 0.0, 0.0, 10.0),
        ("a", 1, 1, 30.0, 30.0, 70.0)]
    b.close(170.0)


def test_a_part_that_asks_while_its_job_is_suspended_is_held_and_a_dropped_job_asks_nothing_again():
    b = book()
    a = job(b, "a", 0, {0: 1})
    b.suspend(a, 1.0, lambda p: (0.0, False))
    p = b.open(a, 1, 120.0, 2.0).parts[0]
    b.request(p, p.volume, 2.0)
    assert p.state == HELD and b.pending == set() and b.dispatch(2.0) == []
    b.drop(a, 3.0, lambda p: (0.0, False))
    assert p.state == "" and b.resume(a, 4.0, lambda p: 1.0) == []
    b.close(4.0)


def test_strict_mode_stops_a_double_grant_of_a_broken_arbiter_and_a_run_that_ends_while_a_part_waits():
    from io_fakes import GrantsTwice

    b = IONodeBook(1, "fifo", 1.0, strict=True, arbiter=GrantsTwice)
    parts = []
    for k, name in enumerate("ac"):
        p = b.open(job(b, name, k, {0: 1}), 1, 120.0, 0.0).parts[0]
        b.request(p, p.volume, 0.0)
        parts.append(p)
    with pytest.raises(InvariantViolation) as err:
        b.dispatch(0.0)
    assert err.value.rule == "exclusive-io" and err.value.subject == "I/O node 0"
    b = book()
    p = b.open(job(b, "a", 0, {0: 1}), 1, 120.0, 0.0).parts[0]
    b.request(p, p.volume, 0.0)
    with pytest.raises(InvariantViolation) as err:
        b.close(1.0)
    assert err.value.rule == "unfinished"


def test_a_sharing_is_asked_again_only_when_the_grants_on_its_io_node_change():
    b = book("size-fair", io_nodes=1)
    calls = []
    shares = b.policy.shares

    def counted(streams, now):
        calls.append([s.id for s in streams])
        return shares(streams, now)

    b.policy.shares = counted
    a, c = job(b, "a", 0, {0: 3}), job(b, "c", 1, {0: 1})
    pa, pc = b.open(a, 1, 120.0, 0.0).parts[0], b.open(c, 1, 120.0, 0.0).parts[0]
    for p in (pa, pc):
        b.request(p, p.volume, 0.0)
    b.dispatch(0.0)
    parts, x = b.shares(0, 1.0, lambda p: 0.0)
    assert parts == [pa, pc] and x == pytest.approx([0.75, 0.25])
    assert b.shares(0, 2.0, lambda p: 5.0)[1] is x and calls == [["a@io0", "c@io0"]]
    b.release(pa, 3.0, 120.0, finished=True)
    assert b.shares(0, 3.0, lambda p: 0.0) == ([pc], [1.0]) and calls[-1] == ["c@io0"]
    s = b.stream(pc, 7.0)
    assert (s.job, s.rank, s.nodes, s.volume, s.moved, s.granted, s.user) == ("c", 1, 1, 120.0, 7.0, 0.0, "u")
    assert math.isnan(pa.granted)
