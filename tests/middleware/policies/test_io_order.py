"""Each priority order of carretero2020 §5.1 on a case whose grant order is known.

App X (rank 0) grabs the I/O node at t=0 for 10 s.  Meanwhile A, B, C finish
their first compute phase and queue:

    app  rank  request at  I/O time  remaining work at request  done (contention-free)
    A    1     3           2         2 + 50 = 52                3
    B    2     1           6         6 + 1  = 7                 1
    C    3     2           4         4 + 20 = 24                2

So at t=10, when X releases, the policies must grant in these orders.
"""

from __future__ import annotations

import pytest

from iolab.specs import parse_spec
from iolab.middleware.policies import IONodeArbiter, IORequest, get_policy
from iolab.middleware.policies.io_order import POLICIES
from iolab.sim.io.run import simulate

SPEC = {
    "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
    "apps": [
        {"id": "X", "nodes": 1, "phases": [{"write": 10}]},
        {"id": "A", "nodes": 1, "phases": [{"compute": 3}, {"write": 2}, {"compute": 50}]},
        {"id": "B", "nodes": 1, "phases": [{"compute": 1}, {"write": 6}, {"compute": 1}]},
        {"id": "C", "nodes": 1, "phases": [{"compute": 2}, {"write": 4}, {"compute": 20}]},
    ],
}

EXPECTED = {
    "lowest-id": "ABC",
    "fifo": "BCA",
    "longest-io": "BCA",
    "shortest-io": "ACB",
    "shortest-remaining": "BCA",
    "longest-remaining": "ACB",
    # stretch if granted at 10: A 5/12=.417, B 7/16=.4375, C 6/14=.429 -> A;
    # at 12: B 7/18=.389, C 6/16=.375 -> C, then B.
    "stretch": "ACB",
}


@pytest.mark.parametrize("mode", ["event", "step"])
@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_grant_order_in_the_simulator(policy, mode):
    trace = simulate(parse_spec(SPEC), policy=policy, mode=mode, dt=1.0)
    g = trace.grants
    order = "".join(j for _, j in sorted(zip(g["grant"], g["job"])) if j != "X")
    assert order == EXPECTED[policy]
    # exclusive: each grant starts when the previous transfer ends
    starts = sorted(g["grant"])
    assert starts == [0.0, 10.0, 10.0 + {"A": 2, "B": 6, "C": 4}[EXPECTED[policy][0]],
                      starts[3]]


def _req(app, rank, at, io_time, remaining=10.0, done=0.0, received=0.0, start=0.0):
    return IORequest(app, rank, at, io_time, io_time, remaining, 100.0, start, done, received)


def test_bandwidth_order_favours_the_app_with_the_least_io_share():
    # P has spent 5 of its 10 s in I/O, Q only 1 of 10: Q goes first although P asked first.
    p = _req("P", 0, 9.0, 1.0, received=5.0)
    q = _req("Q", 1, 9.5, 1.0, received=1.0)
    assert [r.app for r in get_policy("bandwidth").order([p, q], now=10.0)] == ["Q", "P"]


def test_bandwidth_order_changes_while_requests_wait():
    # the keys depend on now: P started at 0, Q at 1.5
    p = _req("P", 0, 1.0, 1.0, received=1.0, start=0.0)
    q = _req("Q", 1, 1.0, 1.0, received=0.9, start=1.5)
    pol = get_policy("bandwidth")
    assert pol.time_dependent
    assert pol.pick([p, q], now=2.0).app == "P"  # P: 1/2 = .5, Q: .9/.5 = 1.8
    assert pol.pick([p, q], now=20.0).app == "Q"  # P: 1/20 = .05, Q: .9/18.5 = .049


def test_ties_break_by_request_time_then_lowest_id():
    a = _req("A", 1, 5.0, 2.0)
    b = _req("B", 0, 5.0, 2.0)
    c = _req("C", 2, 4.0, 2.0)
    for name in ("fifo", "longest-io", "shortest-io", "shortest-remaining", "longest-remaining"):
        assert [r.app for r in get_policy(name).order([a, b, c], 6.0)] == ["C", "B", "A"], name


def test_policy_names_are_normalised_and_unknown_ones_refused():
    assert get_policy("Longest_IO").name == "longest-io"
    with pytest.raises(ValueError, match="unknown I/O policy 'lifo'"):
        get_policy("lifo")


def test_exclusive_arbiter_grants_one_at_a_time_and_shared_grants_all():
    fifo = IONodeArbiter(get_policy("fifo"))
    for i, app in enumerate("ABC"):
        fifo.submit(_req(app, i, float(i), 1.0))
    assert [r.app for r in fifo.dispatch(3.0)] == ["A"]
    assert fifo.dispatch(3.0) == []  # busy: nothing more
    fifo.release("A")
    assert [r.app for r in fifo.dispatch(4.0)] == ["B"]
    shared = IONodeArbiter(get_policy("shared"))
    for i, app in enumerate("ABC"):
        shared.submit(_req(app, i, float(i), 1.0))
    assert [r.app for r in shared.dispatch(3.0)] == ["A", "B", "C"]


def test_arbiter_refuses_protocol_misuse_and_cancels():
    arb = IONodeArbiter(get_policy("fifo"))
    arb.submit(_req("A", 0, 0.0, 1.0))
    with pytest.raises(RuntimeError, match="already has an I/O request"):
        arb.submit(_req("A", 0, 0.0, 1.0))
    with pytest.raises(RuntimeError, match="holds no grant"):
        arb.release("B")
    arb.submit(_req("B", 1, 0.5, 1.0))
    arb.dispatch(1.0)  # A granted
    assert arb.cancel("A") is not None  # A died holding the node
    assert [r.app for r in arb.dispatch(2.0)] == ["B"]
    arb.submit(_req("C", 2, 3.0, 1.0))
    arb.cancel("C")  # cancelled while waiting: never granted
    arb.release("B")
    assert arb.dispatch(4.0) == []


def test_a_wait_key_is_the_order_at_any_time_and_its_fields_are_the_documented_ones():
    import random
    rng = random.Random(3)
    reqs = [IORequest(f"a{i}", rng.randrange(6), rng.choice([0.0, 1.5, 3.0]), 1.0, rng.choice([0.5, 2.0]),
                      rng.choice([1.0, 4.0, 9.0]), 10.0, 0.0) for i in range(60)]
    static = [p for p in POLICIES.values() if getattr(p, "wait_key", None) is not None]
    assert {p.name for p in static} == {"lowest-id", "longest-io", "shortest-io", "shortest-remaining",
                                        "longest-remaining", "fifo"}
    for p in static:
        assert not p.time_dependent
        for r in reqs:
            assert p.key(r, rng.uniform(0, 100)) == p.wait_key(r)
    assert get_policy("fifo").wait_key(reqs[0]) == (reqs[0].requested_at, reqs[0].rank)
    assert get_policy("lowest-id").wait_key(reqs[0]) == (reqs[0].rank, reqs[0].requested_at)


def test_a_policy_needs_exactly_one_kind_of_key():
    from iolab.middleware.policies.io_order import ListPolicy
    with pytest.raises(ValueError, match="give a key, a wait_key, a key_at or a choose"):
        ListPolicy("none")
    with pytest.raises(ValueError, match="a key_at is for a time-dependent order"):
        ListPolicy("still", key_at=lambda now: (lambda r: (r.rank,)))
    with pytest.raises(ValueError, match="a key_at is for a time-dependent order"):
        ListPolicy("twice", key=lambda r, now: (now,), key_at=lambda now: (lambda r: (now,)), time_dependent=True)
    with pytest.raises(ValueError, match="give it alone"):
        ListPolicy("both", key=lambda r, now: (now,), wait_key=lambda r: (r.rank,))
    with pytest.raises(ValueError, match="give it alone"):
        ListPolicy("moving", wait_key=lambda r: (r.rank,), time_dependent=True)
    # a policy given only a key that does not move is still kept in a heap by the arbiter
    p = ListPolicy("by-rank", key=lambda r, now: (r.rank,))
    arb = IONodeArbiter(p)
    for i, rank in enumerate([2, 0, 1]):
        arb.submit(IORequest(f"x{rank}", rank, float(i), 1.0, 1.0, 1.0, 1.0, 0.0))
    order = []
    while len(arb):
        (g,) = arb.dispatch(5.0)
        order.append(g.rank)
        arb.release(g.app)
    assert order == [0, 1, 2]


def test_a_time_dependent_key_at_is_its_key_and_the_documented_formula():
    """stretch and bandwidth give their order as key_at(now); key(r, now) is derived from it, and
    both follow the formulas written out here (carretero2020 Eq. 2 on progress; the I/O share)."""
    import random
    rng = random.Random(5)
    for _ in range(300):
        io_time, start, done, received = rng.uniform(0.1, 5), rng.uniform(0, 50), rng.uniform(0, 30), rng.uniform(0, 9)
        r = IORequest("a", rng.randrange(9), rng.uniform(0, 60), io_time, io_time, 10.0, 40.0, start, done, received)
        now = rng.choice([start - 1.0, start, start + rng.uniform(0, 80)])
        elapsed = now - start + io_time
        stretch = 1.0 if elapsed <= 0 else min(1.0, (done + io_time) / elapsed)
        share = received / (now - start) if now - start > 0 else 0.0
        for name, value in (("stretch", stretch), ("bandwidth", share)):
            p = get_policy(name)
            assert p.time_dependent and p.key_at is not None
            assert p.key(r, now) == p.key_at(now)(r) == (value, r.requested_at, r.rank)
