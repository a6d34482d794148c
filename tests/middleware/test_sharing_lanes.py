"""A real run's pacing under a sharing policy, without Ray: the token bucket's lanes, and the two states
(the I/O level's arbiter, the batch level's I/O nodes) that give them their shares."""

from __future__ import annotations

import math

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.bucket import TokenBucket
from iolab.middleware.io_node_state import IONodesState
from iolab.middleware.policies.interference import InterferenceLaw
from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.arbiter_state import ArbiterState
from iolab.specs.io_policies import TBFSpec
from iolab.specs.policy_ref import PolicyRef
from iolab.workloads.steps import Step


# ---------------------------------------------------------------- the bucket
def test_each_lane_carries_its_share_whatever_the_others_book():
    b = TokenBucket(100.0)
    b.share({"a": 0.75, "b": 0.25})
    assert b.book(75, 0.0, "a") == (0.0, 1.0)  # 75 B at 75 B/s
    assert b.book(25, 0.0, "b") == (0.0, 1.0)  # at once: b does not queue behind a
    assert b.book(75, 0.2, "a") == (1.0, 2.0)  # a's next interval follows its own last
    b.share({"b": 0.25})  # a left: b keeps its rate (a cap), the rest of the link stays unused
    assert b.book(25, 1.0, "b") == (1.0, 2.0)
    assert b.book(50, 2.0, "c") == (2.0, 2.5)  # a stream without a lane: the common link at the full rate


def test_lanes_take_the_law_of_their_number():
    law = InterferenceLaw("table", points=((1, 1.0), (2, 0.5)))
    b = TokenBucket(100.0, law)
    b.share({"a": 0.5, "b": 0.5})  # two streams: the link carries 50 B/s, 25 each
    assert b.book(25, 0.0, "a") == (0.0, 1.0)


def test_without_a_cap_there_is_nothing_to_pace():
    b = TokenBucket(None)
    b.share({"a": 0.5})
    assert b.book(1000, 3.0, "a") == (3.0, 3.0)


# ---------------------------------------------------------------- the I/O level's arbiter
def apps(nodes=(1, 1)):
    return [IOApp(id=a, rank=i, nodes=n, release=0.0, kinds=["compute", "write"], amounts=[1.0, 2.0], bandwidth=1.0)
            for i, (a, n) in enumerate(zip("AB", nodes))]


def arbiter(policy, nodes=(1, 1), strict=True):
    st = ArbiterState(apps(nodes), policy=policy, bandwidth=1.0, cap=10.0, unit_bytes=5, strict=strict)
    for a in "AB":
        st.arrive(a, 0, 1, 0.0)
    st.start(0.0)
    st.gates(0.0)
    return st


def lane_rates(st, node=0) -> dict:
    return {s: rate for s, (_, rate) in st.buckets[node].lanes.items()}


def test_shared_keeps_the_one_bucket():
    st = arbiter("shared")
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    st.dispatch(1.0)
    assert st.buckets[0].lanes == {}
    assert st.book("A", 5, 1.0) == (1.0, 1.5) and st.book("B", 5, 1.0) == (1.5, 2.0)  # one after the other


def test_tbf_lanes_follow_the_grants_and_stay_caps():
    st = arbiter(TBFSpec(rules=[{"job": "A", "rate": 0.6}], default_rate=0.2))
    st.request("A", 1, "write", 10, 1.0)
    st.request("B", 1, "write", 10, 1.0)
    st.dispatch(1.0)
    assert lane_rates(st) == pytest.approx({"A": 6.0, "B": 2.0})  # of the 10 B/s cap
    assert st.book("A", 6, 1.0) == (1.0, 2.0) and st.book("B", 6, 1.0) == (1.0, 4.0)
    st.release("A", 1, 2.0)
    st.dispatch(2.0)
    assert lane_rates(st) == pytest.approx({"B": 2.0})  # B alone keeps its 0.2: a cap, not a weight


def test_size_fair_lanes_and_what_the_policy_is_shown():
    st = arbiter("size-fair", nodes=(3, 1))
    st.request("A", 1, "write", 10, 2.0)
    st.dispatch(2.0)
    assert lane_rates(st) == pytest.approx({"A": 10.0})
    st.book("A", 5, 2.0)  # 1 unit of its 2
    st.request("B", 1, "write", 10, 3.0)
    st.dispatch(3.0)
    assert lane_rates(st) == pytest.approx({"A": 7.5, "B": 2.5})
    a, b = st.stream("A", 3.0), st.stream("B", 3.0)
    assert (a.id, a.job, a.rank, a.nodes, a.volume, a.moved, a.granted, a.user) == ("A", "A", 0, 3, 2.0, 1.0, 2.0, "")
    assert (b.nodes, b.moved, b.granted) == (1, 0.0, 3.0)


@pytest.mark.parametrize("strict", [True, False])
def test_a_broken_users_sharing_stops_the_arbiter_with_the_rule(tmp_path, strict):
    (tmp_path / "mine.py").write_text("from iolab.policy import Sharing\n\n\nclass Over(Sharing):\n"
                                      "    def shares(self, streams, now):\n        return [0.75] * len(streams)\n")
    st = arbiter(PolicyRef(path=str(tmp_path / "mine.py"), class_="Over"), strict=strict)
    st.request("A", 1, "write", 10, 1.0)
    st.dispatch(1.0)  # one stream: 0.75, fine
    st.request("B", 1, "write", 10, 1.5)
    with pytest.raises(InvariantViolation) as err:
        st.dispatch(1.5)
    assert err.value.rule == "malformed-decision" and "sum to 1.5" in str(err.value)
    assert st.violation is err.value  # kept: every later call of the actor raises it


def test_a_sharing_that_raises_stops_the_arbiter_naming_the_policy(tmp_path):
    (tmp_path / "boom.py").write_text("from iolab.policy import Sharing\n\n\nclass Boom(Sharing):\n"
                                      "    def shares(self, streams, now):\n        return {}[streams[0].id]\n")
    st = arbiter(PolicyRef(path=str(tmp_path / "boom.py"), class_="Boom"))
    st.request("A", 1, "write", 10, 1.0)
    with pytest.raises(InvariantViolation) as err:
        st.dispatch(1.0)
    assert err.value.rule == "policy-raised" and err.value.subject == "boom.py:Boom"
    assert "KeyError" in err.value.detail and "boom.py:6 in shares" in err.value.detail


# ---------------------------------------------------------------- the batch level's I/O nodes
def io_nodes(policy):
    st = IONodesState(1, policy=policy, rate=1.0, rates={"lps": 10.0, "hps": 10.0, "stage": 10.0}, cap=100.0,
                      strict=True)
    st.start(0.0)
    steps = [Step("compute", 1.0), Step("write", 100.0, "lps")]
    for rank, (job, nodes, user) in enumerate((("a", 3, "alice"), ("b", 1, "bob"))):
        st.add_job(job, rank, {0: {"ranks": [0], "bytes": [0, 100]}}, steps, [0, 1], 0.0, 0.0, nodes, user)
    return st


def test_batch_parts_get_lanes_by_their_jobs_size():
    st = io_nodes("size-fair")
    st.request("a", 0, 1, "write", 100, 1.0)
    st.request("b", 0, 1, "write", 100, 1.0)
    st.dispatch(1.0)
    assert {s: r for s, (_, r) in st.buckets[0].lanes.items()} == pytest.approx({"a": 75.0, "b": 25.0})
    st.book("a", 0, 50, 1.0)
    s = st.stream("a", 0, 1.5)
    assert (s.id, s.job, s.rank, s.nodes, s.volume, s.moved, s.granted, s.user) == \
        ("a@io0", "a", 0, 3, 100.0, 50.0, 1.0, "alice")
    assert st.stream("b", 0, 1.5).user == "bob"
    st.part_done("a", 0, 1, 0, 2.0)
    st.dispatch(2.0)
    assert {s: r for s, (_, r) in st.buckets[0].lanes.items()} == pytest.approx({"b": 100.0})  # alone: all of it


def test_batch_tbf_lanes_by_user():
    st = io_nodes(TBFSpec(classify="user", rules=[{"user": "alice", "rate": 0.5}], default_rate=0.1))
    st.request("a", 0, 1, "write", 100, 1.0)
    st.request("b", 0, 1, "write", 100, 1.0)
    st.dispatch(1.0)
    assert {s: r for s, (_, r) in st.buckets[0].lanes.items()} == pytest.approx({"a": 50.0, "b": 10.0})
    assert math.isfinite(st.buckets[0].book(10, 1.0, "b")[1])
