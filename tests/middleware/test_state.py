"""The arbiter's state class without Ray: gates, exclusive vs shared grants, leases, the cap."""

from __future__ import annotations

import math

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.bucket import TokenBucket
from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.arbiter_state import AppFailed, ArbiterState

from io_fakes import GrantsTwice, checker_forgets_an_end, kernel_forgets_the_arbiters_release


def two_apps(policy="fifo", lease=math.inf, cap=None, strict=True, **kw):
    apps = [IOApp(id=a, rank=i, nodes=1, release=0.0, kinds=["compute", "write"] * 2, amounts=[1.0, 2.0] * 2,
                  bandwidth=1.0) for i, a in enumerate("AB")]
    # 5 B a unit: the 2-unit phases are the 10 B the apps below ask for
    st = ArbiterState(apps, policy=policy, bandwidth=1.0, lease=lease, cap=cap, unit_bytes=5, strict=strict, **kw)
    for a in "AB":
        st.arrive(a, 0, 1, 0.0)
    st.start(0.0)
    assert st.gates(0.0) == ["A", "B"]
    return st


def test_exclusive_policy_grants_one_at_a_time_in_policy_order():
    st = two_apps("fifo")
    assert st.request("B", 1, "write", 10, 1.0) is False
    assert st.request("A", 1, "write", 10, 1.5) is False
    assert [a for a, _ in st.dispatch(1.5)] == ["B"]  # B asked first
    assert st.dispatch(2.0) == []  # node busy: A waits
    st.release("B", 1, 3.5)
    assert [a for a, _ in st.dispatch(3.5)] == ["A"]
    st.release("A", 1, 5.5)
    rec = st.records()
    assert sorted(rec["grants"]) == [("A", 1, 0, 1.5, 3.5, 5.5), ("B", 1, 0, 1.0, 1.5, 3.5)]


def test_lowest_id_policy_is_the_shared_policy_object():
    st = two_apps("lowest-id")
    st.request("B", 1, "write", 10, 1.0)
    st.request("A", 1, "write", 10, 1.0)
    assert [a for a, _ in st.dispatch(1.0)] == ["A"]


def test_shared_policy_grants_everyone_at_once():
    st = two_apps("shared")
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    assert sorted(a for a, _ in st.dispatch(1.0)) == ["A", "B"]


def test_lease_expiry_hands_the_node_to_the_next_app():
    st = two_apps("fifo", lease=5.0)
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    assert [a for a, _ in st.dispatch(1.0)] == ["A"]
    st.acquire("A", 100, 3.0)  # news from A: the lease runs from here
    assert st.expire(7.9) == []
    assert st.next_due() == pytest.approx(8.0)
    assert st.expire(8.1) == ["A"]
    assert st.apps["A"].status == "failed" and "lease expired" in st.apps["A"].message
    assert [a for a, _ in st.dispatch(8.1)] == ["B"]
    with pytest.raises(AppFailed):
        st.release("A", 1, 9.0)  # too late
    with pytest.raises(AppFailed):
        st.acquire("A", 100, 9.0)
    rec = st.records()
    assert [j["status"] for j in rec["jobs"]] == ["failed", "running"]
    assert math.isnan(rec["jobs"][0]["end"]) and rec["failures"]["A"]["time"] == pytest.approx(8.1)


def test_a_crash_seen_by_the_orchestrator_cancels_grant_and_request():
    st = two_apps("fifo")
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    st.dispatch(1.0)
    assert st.fail("A", "exited with code 9", 2.0) is True
    assert [a for a, _ in st.dispatch(2.0)] == ["B"]
    assert st.fail("A", "again", 3.0) is False


def test_token_bucket_paces_writers_sharing_a_node():
    b = TokenBucket(rate=1000.0)
    assert b.acquire(500, now=0.0) == pytest.approx(0.5)
    assert b.acquire(500, now=0.0) == pytest.approx(1.0)  # a second writer queues behind
    assert b.acquire(250, now=0.8) == pytest.approx(0.45)  # booked until 1.0, then 0.25 s
    assert b.acquire(1000, now=10.0) == pytest.approx(1.0)  # idle link: no credit carried over
    assert TokenBucket(None).acquire(10**9, now=0.0) == 0.0
    with pytest.raises(ValueError):
        TokenBucket(0.0)


def test_token_bucket_counts_its_operations_and_its_queue():
    b = TokenBucket(rate=1000.0)
    for nbytes in (500, 500, 0):
        b.acquire(nbytes, now=0.0)
    assert (b.booked, b.bookings) == (1000, 2)  # an empty booking is no operation
    assert b.backlog(0.0) == pytest.approx(1.0)  # two writers' bytes not served yet: 1 s of the link
    assert b.backlog(0.75) == pytest.approx(0.25) and b.backlog(5.0) == 0.0
    assert TokenBucket(None).backlog(0.0) == 0.0


def test_cap_is_per_io_node_and_in_wall_time():
    st = two_apps("shared", cap=100.0)
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    st.dispatch(1.0)
    assert st.acquire("A", 100, 1.0) == pytest.approx(1.0)
    assert st.acquire("B", 100, 1.0) == pytest.approx(2.0)  # shares A's node


def test_time_scale_turns_wall_seconds_into_spec_seconds():
    st = two_apps("fifo", time_scale=0.5)
    st.request("A", 1, "write", 10, 1.0)  # wall 1.0 = spec 2.0
    st.dispatch(1.0)
    st.release("A", 1, 2.0)
    assert st.records()["grants"] == [("A", 1, 0, 2.0, 2.0, 4.0)]


def test_requests_carry_the_simulators_fields():
    st = two_apps("fifo")
    st.request("A", 3, "write", 10, 4.0)
    req = st.nodes[0].waiting[0]
    assert (req.volume, req.io_time, req.total, req.done, req.remaining) == (2.0, 2.0, 6.0, 4.0, 2.0)


def test_packs_start_when_the_previous_pack_has_ended():
    apps = [IOApp(id=a, rank=i, nodes=1, release=0.0, kinds=["compute"], amounts=[1.0], bandwidth=1.0)
            for i, a in enumerate("AB")]
    st = ArbiterState(apps, policy="fifo", bandwidth=1.0, packs=[[[0], [1]]], strict=True)
    for a in "AB":
        st.arrive(a, 0, 1, 0.0)
    st.start(0.0)
    assert st.gates(0.0) == ["A"]
    assert st.next_due() == math.inf  # B waits for A, not for a time
    st.report("A", 0, "compute", 0.0, 1.0, 0)
    st.finish("A", True, "", 1.0)
    assert st.gates(1.0) == ["B"]


def test_release_times_open_gates_later():
    apps = [IOApp(id="A", rank=0, nodes=1, release=5.0, kinds=["compute"], amounts=[1.0], bandwidth=1.0)]
    st = ArbiterState(apps, policy="fifo", bandwidth=1.0, time_scale=2.0, strict=True)
    st.arrive("A", 0, 2, 0.0)
    assert st.apps["A"].status == "pending"  # one rank of two
    st.arrive("A", 1, 2, 0.0)
    st.start(100.0)
    assert st.gates(105.0) == [] and st.next_due() == pytest.approx(110.0)
    assert st.gates(110.0) == ["A"]


def test_suspend_sets_a_waiting_request_aside_until_resume():
    st = two_apps("fifo")
    st.request("A", 1, "write", 10, 1.0)
    st.suspend("A", 1.0)
    st.request("B", 1, "write", 10, 2.0)
    assert [a for a, _ in st.dispatch(2.0)] == ["B"]
    st.release("B", 1, 3.0)
    st.resume("A", 3.0)
    assert [a for a, _ in st.dispatch(3.0)] == ["A"]
    assert st.records()["actions"] == [("A", 1.0, 3.0)]


def test_bad_calls_are_refused():
    st = two_apps("fifo")
    with pytest.raises(ValueError, match="unknown app"):
        st.request("Z", 1, "write", 10, 1.0)
    with pytest.raises(ValueError, match="not a write phase"):
        st.request("A", 0, "write", 10, 1.0)
    with pytest.raises(RuntimeError, match="holds no grant"):
        st.release("A", 1, 1.0)
    with pytest.raises(ValueError, match="unknown I/O policy"):
        ArbiterState([IOApp("A", 0, 1, 0.0, ["compute"], [1.0], 1.0)], policy="nope", bandwidth=1.0)


def test_a_second_request_is_refused_whatever_phase_it_names():
    """The kernel's refusal, the only one: it comes before the phase is looked at, so a second request for an
    empty phase, or for one the spec does not have, is refused as a second request too."""
    apps = [IOApp(id="A", rank=0, nodes=1, release=0.0, kinds=["write", "write", "compute"],
                  amounts=[2.0, 0.0, 1.0], bandwidth=1.0)]
    st = ArbiterState(apps, policy="fifo", bandwidth=1.0, unit_bytes=5, strict=True)
    st.arrive("A", 0, 1, 0.0)
    st.start(0.0)
    st.gates(0.0)
    assert st.request("A", 0, "write", 10, 1.0) is False
    for phase, kind in ((0, "write"), (1, "write"), (2, "write"), (7, "read")):
        with pytest.raises(RuntimeError) as err:
            st.request("A", phase, kind, 0, 1.5)
        assert str(err.value) == "app 'A' already has an I/O request (phase 0)"
    st.dispatch(1.5)
    st.release("A", 0, 2.0)
    assert st.dispatch(2.0) == []
    with pytest.raises(ValueError, match="phase 2 is not a write phase of its spec"):
        st.request("A", 2, "write", 0, 2.5)
    assert st.request("A", 1, "write", 0, 2.5) is True  # empty: nothing asked of the I/O node
    assert st.kernel.asking[0] is None and not st.kernel.touched


# -- strict mode (the I/O kernel's checker, on spec time) -------------------------------------------
def test_strict_stops_a_second_grant_on_a_busy_io_node_in_spec_time():
    st = two_apps("fifo", strict=True, time_scale=0.5)
    st.nodes[0] = GrantsTwice(st.policy, 0)
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    with pytest.raises(InvariantViolation) as err:
        st.dispatch(1.0)
    v = err.value
    assert (v.rule, v.subject, v.time) == ("exclusive-io", "I/O node 0", 2.0)  # wall 1.0 = spec 2.0
    assert st.violation is v


def test_strict_catches_a_kernel_that_forgets_a_release_in_its_arbiter(monkeypatch):
    """A bug in the kernel's books (not in a policy): the checker keeps its own and sees that
    the node is free and B waits, yet the dispatch grants nothing."""
    kernel_forgets_the_arbiters_release(monkeypatch)
    st = two_apps("fifo", strict=True, time_scale=0.5)
    st.request("A", 1, "write", 10, 0.5)
    st.request("B", 1, "write", 10, 0.5)
    assert [a for a, _ in st.dispatch(0.5)] == ["A"]
    st.release("A", 1, 1.5)
    with pytest.raises(InvariantViolation) as err:
        st.dispatch(1.5)
    v = err.value
    assert (v.rule, v.subject, v.time) == ("idle-while-waiting", "I/O node 0", 3.0)  # wall 1.5 = spec 3.0
    assert "grants nothing to B" in v.detail and st.violation is v
    lenient = two_apps("fifo", strict=False)  # without strict mode B waits, unnoticed
    lenient.request("A", 1, "write", 10, 0.5)
    lenient.request("B", 1, "write", 10, 0.5)
    lenient.dispatch(0.5)
    lenient.release("A", 1, 1.5)
    assert lenient.dispatch(1.5) == [] and lenient.status()["B"]["waiting"]


def test_a_suspended_apps_request_is_held_by_the_kernel_and_not_counted_as_waiting_on_the_node():
    st = two_apps("fifo", strict=True)
    st.suspend("B", 0.5)
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)  # set aside: B is suspended
    assert st.snapshot(1.0)["io_nodes"][0]["held"] == ["B"]
    assert [a for a, _ in st.dispatch(1.0)] == ["A"]
    st.release("A", 1, 3.0)
    assert st.dispatch(3.0) == []  # the node is free, but B's request is held: no violation
    st.resume("B", 4.0)
    assert [a for a, _ in st.dispatch(4.0)] == ["B"]
    with pytest.raises(RuntimeError, match="already has an I/O request"):
        st.request("B", 3, "write", 10, 4.0)


def test_strict_checks_the_bytes_an_app_asks_for_and_moves():
    st = two_apps("fifo", strict=True)
    with pytest.raises(InvariantViolation) as err:
        st.request("A", 1, "write", 11, 1.0)  # 2 units of 5 B
    assert (err.value.rule, err.value.subject, err.value.time) == ("bytes-conserved", "app A", 1.0)
    st = two_apps("fifo", strict=True)
    st.report("A", 0, "compute", 0.0, 1.0, 0)
    with pytest.raises(InvariantViolation) as err:
        st.report("A", 1, "write", 1.0, 3.0, 10)  # reports a transfer it never asked for
    assert (err.value.rule, err.value.subject, err.value.time) == ("bytes-conserved", "app A", 3.0)
    st = two_apps("fifo", strict=True)
    st.report("A", 0, "compute", 0.0, 1.0, 0)
    with pytest.raises(InvariantViolation) as err:
        st.finish("A", True, "", 3.0)  # skipped its other phases
    assert (err.value.rule, err.value.subject, err.value.time) == ("phase-order", "app A", 3.0)


def walk(st, app, t=0.0) -> float:
    """``app`` of :func:`two_apps` walks its phases alone from ``t`` (compute 1 s, write 2 s) and ends ok; returns
    its end."""
    for phase in (0, 1, 2, 3):
        if phase % 2 == 0:
            st.report(app, phase, "compute", t, t + 1, 0)
            t += 1
            continue
        st.request(app, phase, "write", 10, t)
        assert [a for a, _ in st.dispatch(t)] == [app]
        st.release(app, phase, t + 2)
        st.report(app, phase, "write", t, t + 2, 10)
        t += 2
    st.finish(app, True, "", t)
    return t


def test_strict_passes_a_clean_run_and_lenient_state_does_not_check():
    st = two_apps("fifo", strict=True)
    walk(st, "A")
    assert st.apps["A"].status == "ok" and st.violation is None
    lenient = two_apps("fifo", strict=False)
    lenient.nodes[0] = GrantsTwice(lenient.policy, 0)
    lenient.request("A", 1, "write", 10, 1.0)
    lenient.request("B", 1, "write", 10, 1.0)
    assert sorted(a for a, _ in lenient.dispatch(1.0)) == ["A", "B"]


def test_a_packed_plan_waits_for_every_release_of_a_pack_even_with_one_pack_per_node():
    # as the simulator does: with packs (make-pack / first-fit), a pack's apps start together
    apps = [IOApp(id=a, rank=i, nodes=1, release=r, kinds=["compute"], amounts=[1.0], bandwidth=1.0)
            for i, (a, r) in enumerate([("A", 0.0), ("B", 4.0)])]
    st = ArbiterState(apps, policy="fifo", bandwidth=1.0, packs=[[[0, 1]]], packed=True, strict=True)
    for a in "AB":
        st.arrive(a, 0, 1, 0.0)
    st.start(0.0)
    assert st.gates(1.0) == [] and st.next_due() == 4.0
    assert st.gates(4.0) == ["A", "B"]


# -- the end of a run ---------------------------------------------------------------------------
def test_the_last_app_to_end_ok_closes_the_kernel_once(monkeypatch):
    st = two_apps("fifo", strict=True, time_scale=0.5)
    closed = []
    monkeypatch.setattr(st.kernel, "close", closed.append)
    t = walk(st, "A")
    assert closed == []  # B is still going
    end = walk(st, "B", t)
    assert closed == [end / 0.5] and st.violation is None  # at the spec time of B's end


def test_a_run_where_an_app_failed_is_not_closed(monkeypatch):
    checker_forgets_an_end(monkeypatch)  # a close would raise
    st = two_apps("fifo", strict=True)
    walk(st, "A")
    st.fail("B", "processes exited with code 1", 7.0)
    assert st.apps["B"].status == "failed" and st.violation is None


def test_an_app_the_checker_lost_is_the_same_violation_as_in_the_simulator(monkeypatch):
    """The close is the simulator's check at its last event: a run that ended well with an app the books
    never saw end raises the same violation in both runtimes."""
    from iolab.sim.io.run import simulate
    from iolab.specs import parse_spec

    checker_forgets_an_end(monkeypatch)
    doc = {"name": "close", "platform": {"io_nodes": 1, "nodes_per_io_node": 2, "bandwidth": 1.0},
           "apps": [{"id": a, "nodes": 1, "iterations": 2, "compute": 1.0, "io_volume": 2.0} for a in "AB"]}
    with pytest.raises(InvariantViolation) as sim:
        simulate(parse_spec(doc), strict=True)
    st = two_apps("fifo", strict=True)
    t = walk(st, "A")
    with pytest.raises(InvariantViolation) as real:
        walk(st, "B", t)
    assert (real.value.rule, real.value.subject, real.value.detail) == \
        (sim.value.rule, sim.value.subject, sim.value.detail) == \
        ("unfinished", "app A", "the run is over while it has not ended")
    assert st.violation is real.value
