"""Strict mode of the I/O level: every rule fires on a sequence that breaks it, naming rule, subject, time."""

from __future__ import annotations

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.policies.io_checker import IOChecker


def apps(release_b=0.0):
    return [IOApp(id=a, rank=i, nodes=1, release=r, kinds=["compute", "write"], amounts=[1.0, 2.0], bandwidth=1.0)
            for i, (a, r) in enumerate([("A", 0.0), ("B", release_b)])]


def checker(packs=None, packed=False, exclusive=True, release_b=0.0):
    a = apps(release_b)
    return a, IOChecker(a, packs or [[[0, 1]]], packed=packed, exclusive=exclusive)


def violation(rule, subject, time, fn, *args):
    with pytest.raises(InvariantViolation) as err:
        fn(*args)
    v = err.value
    assert (v.rule, v.subject, v.time) == (rule, subject, time), str(v)
    return v


def run_to_request(a, c, rank, t):
    """rank starts at 0, computes to 1, asks for its write phase at t."""
    c.start(rank, 0.0)
    c.phase(rank, 0, "compute", 0.0, 1.0)
    req = a[rank].request(1, t, 0.0, 0.0)
    c.request(req, t)
    return req


def test_a_clean_sequence_passes_and_ends():
    a, c = checker()
    req = run_to_request(a, c, 0, 1.0)
    c.grant(0, [req], 1.0)
    c.release(0, 1, 3.0)
    c.phase(0, 1, "write", 2.0, 3.0)
    c.end(0, 3.0)
    assert c.ended[0] and c.moved[0] == 2.0


def test_two_grants_at_once_on_one_io_node_break_exclusive_io():
    a, c = checker()
    ra, rb = run_to_request(a, c, 0, 1.0), run_to_request(a, c, 1, 1.0)
    v = violation("exclusive-io", "I/O node 0", 1.0, c.grant, 0, [ra, rb], 1.0)  # a policy granting twice
    assert "app B" in v.detail and "A transfers" in v.detail


def test_shared_grants_everyone():
    a, c = checker(exclusive=False)
    ra, rb = run_to_request(a, c, 0, 1.0), run_to_request(a, c, 1, 1.0)
    c.grant(0, [ra, rb], 1.0)
    assert set(c.active[0]) == {0, 1}


def test_a_grant_without_a_waiting_request():
    a, c = checker()
    c.start(0, 0.0)
    c.phase(0, 0, "compute", 0.0, 1.0)
    violation("grant-not-waiting", "I/O node 0", 1.0, c.grant, 0, [a[0].request(1, 1.0, 0.0, 0.0)], 1.0)


def test_a_grant_on_another_io_node_or_while_suspended():
    a, c = checker(packs=[[[0]], [[1]]])
    req = run_to_request(a, c, 0, 1.0)
    violation("grant-not-waiting", "I/O node 1", 2.0, c.grant, 1, [req], 2.0)
    c.suspend(0)
    v = violation("grant-not-waiting", "I/O node 0", 2.0, c.grant, 0, [req], 2.0)
    assert "suspended" in v.detail
    c.resume(0)
    c.grant(0, [req], 2.0)


def test_starting_before_the_release():
    a, c = checker(release_b=5.0)
    violation("start-before-release", "app B", 4.0, c.start, 1, 4.0)
    c.start(1, 5.0)
    violation("start-twice", "app B", 6.0, c.start, 1, 6.0)


def test_a_pack_waits_for_every_release_of_the_pack():
    a, c = checker(packs=[[[0, 1]]], packed=True, release_b=5.0)
    v = violation("start-before-release", "app A", 1.0, c.start, 0, 1.0)  # A is released, B is not
    assert "every app of its pack" in v.detail


def test_starting_before_the_packs_turn():
    a, c = checker(packs=[[[0], [1]]], packed=True)
    req = run_to_request(a, c, 0, 1.0)
    v = violation("pack-turn", "app B", 2.0, c.start, 1, 2.0)
    assert "app A of pack 0" in v.detail
    c.grant(0, [req], 1.0)
    c.release(0, 1, 3.0)
    c.phase(0, 1, "write", 2.0, 3.0)
    c.end(0, 3.0)
    c.start(1, 3.0)


def test_phases_out_of_order():
    a, c = checker()
    c.start(0, 0.0)
    violation("phase-order", "app A", 1.0, c.phase, 0, 1, "write", 2.0, 1.0)  # skips phase 0
    violation("phase-order", "app A", 1.0, c.phase, 0, 0, "write", 0.0, 1.0)  # phase 0 is compute
    violation("phase-order", "app A", 0.5, c.request, a[0].request(1, 0.5, 0.0, 0.0), 0.5)  # compute not done
    violation("phase-order", "app B", 0.5, c.request, a[1].request(1, 0.5, 0.0, 0.0), 0.5)  # B not started
    c.phase(0, 0, "compute", 0.0, 1.0)
    violation("phase-order", "app A", 1.0, c.end, 0, 1.0)  # its write phase is not done


def test_a_release_without_a_grant():
    a, c = checker()
    run_to_request(a, c, 0, 1.0)
    violation("release-not-granted", "app A", 2.0, c.release, 0, 1, 2.0)


def test_bytes_stated_requested_granted_recorded_and_moved():
    a, c = checker()
    c.start(0, 0.0)
    c.phase(0, 0, "compute", 0.0, 1.0)
    asks_more = a[0].request(1, 1.0, 0.0, 0.0)._replace(volume=3.0)
    v = violation("bytes-conserved", "app A", 1.0, c.request, asks_more, 1.0)
    assert "states 2" in v.detail and "asks 3" in v.detail
    # a phase recorded with units that were never granted
    a, c = checker()
    run_to_request(a, c, 0, 1.0)
    violation("bytes-conserved", "app A", 3.0, c.phase, 0, 1, "write", 2.0, 3.0)
    # a phase recording another volume than its spec states
    a, c = checker()
    req = run_to_request(a, c, 0, 1.0)
    c.grant(0, [req], 1.0)
    c.release(0, 1, 3.0)
    violation("bytes-conserved", "app A", 3.0, c.phase, 0, 1, "write", 1.5, 3.0)


def test_an_app_that_ends_without_moving_what_it_states():
    # the arbiter's books (unordered reports): every phase reported, but the write was never granted
    a = apps()
    c = IOChecker(a, [[[0, 1]]], packed=False, exclusive=True, ordered=False)
    c.start(0, 0.0)
    c.phase(0, 0, "compute", 0.0, 1.0)
    c.seen[0].add(1)  # as if phase 1 had been reported without volume checks
    v = violation("bytes-conserved", "app A", 4.0, c.end, 0, 4.0)
    assert "moved 0 units" in v.detail


def test_a_dropped_app_frees_its_pack_and_its_grant():
    a, c = checker(packs=[[[0], [1]]], packed=True)
    req = run_to_request(a, c, 0, 1.0)
    c.grant(0, [req], 1.0)
    c.drop(0, 2.0)  # crashed while transferring
    c.start(1, 2.0)
    assert c.active[0] == {}


def test_a_dispatch_that_leaves_a_free_node_idle_while_a_request_waits():
    a, c = checker()
    ra, rb = run_to_request(a, c, 0, 1.0), run_to_request(a, c, 1, 1.5)
    c.dispatched(0, [ra], 1.5)
    c.dispatched(0, [], 2.0)  # A transfers: B waits, as it should
    c.release(0, 1, 3.0)
    v = violation("idle-while-waiting", "I/O node 0", 3.0, c.dispatched, 0, [], 3.0)
    assert "grants nothing to B waiting since t=1.5" in v.detail
    c.suspend(1)
    c.dispatched(0, [], 3.0)  # a suspended app's request is set aside: nothing is owed
    c.resume(1)
    c.dispatched(0, [rb], 3.5)


def test_shared_owes_every_waiting_request_a_grant():
    a, c = checker(exclusive=False)
    ra, rb = run_to_request(a, c, 0, 1.0), run_to_request(a, c, 1, 1.0)
    v = violation("idle-while-waiting", "I/O node 0", 1.0, c.dispatched, 0, [ra], 1.0)
    assert "grants nothing to B" in v.detail and "shared" in v.detail


def test_the_end_of_a_run_with_an_app_not_ended():
    a, c = checker()
    run_to_request(a, c, 0, 1.0)
    v = violation("unfinished", "app A", 4.0, c.close, 4.0)
    assert "waits for I/O phase 1" in v.detail
    c.drop(0, 4.0)
    v = violation("unfinished", "app B", 4.0, c.close, 4.0)
    assert "never started" in v.detail
