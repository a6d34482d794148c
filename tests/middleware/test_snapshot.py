"""The live view's data: ArbiterState.snapshot on hand-made states (no Ray, no terminal)."""

from __future__ import annotations

from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.arbiter_state import ArbiterState


def three_apps(policy: str, io_time: dict[str, float]) -> ArbiterState:
    """A, B, C on one I/O node, each asking for one write phase of io_time[app] seconds."""
    apps = [IOApp(id=a, rank=i, nodes=1, release=0.0, kinds=["compute", "write"], amounts=[1.0, io_time[a]],
                  bandwidth=1.0) for i, a in enumerate("ABC")]
    st = ArbiterState(apps, policy=policy, bandwidth=1.0, strict=True)
    for a in "ABC":
        st.arrive(a, 0, 1, 0.0)
    st.start(0.0)
    st.gates(0.0)
    for a in "ABC":
        st.report(a, 0, "compute", 0.0, 1.0, 0)
    return st


def test_grant_and_queue_follow_the_policy_order():
    # longest-io: C (3 s) then A (2 s) then B (1 s); A asks first, so A holds the grant
    st = three_apps("longest-io", {"A": 2.0, "B": 1.0, "C": 3.0})
    st.request("A", 1, "write", 2, 1.0)
    assert st.dispatch(1.0)[0][0] == "A"
    st.request("B", 1, "write", 1, 1.1)
    st.request("C", 1, "write", 3, 1.2)
    snap = st.snapshot(1.5)
    assert snap["io_nodes"] == [{"node": 0, "grant": ["A"], "waiting": ["C", "B"], "held": []}]
    by = {a["id"]: a for a in snap["apps"]}
    assert by["A"]["transferring"] and not by["A"]["waiting"] and by["A"]["phase"] == "write"
    assert by["B"]["waiting"] and by["C"]["waiting"]
    assert by["A"]["phases_done"] == 1 and by["A"]["phases_total"] == 2
    assert snap["time"] == 1.5 and snap["policy"] == "longest-io" and snap["suspended"] == []
    # the same requests under shortest-io: B before C
    st = three_apps("shortest-io", {"A": 2.0, "B": 1.0, "C": 3.0})
    st.request("A", 1, "write", 2, 1.0)
    st.dispatch(1.0)
    st.request("C", 1, "write", 3, 1.1)
    st.request("B", 1, "write", 1, 1.2)
    assert st.snapshot(1.5)["io_nodes"][0]["waiting"] == ["B", "C"]


def test_after_release_the_next_in_order_holds_the_grant_and_finished_apps_show_done():
    st = three_apps("fifo", {"A": 1.0, "B": 1.0, "C": 1.0})
    for i, a in enumerate("BAC"):
        st.request(a, 1, "write", 1, 1.0 + i / 10)
    st.dispatch(1.3)
    assert st.snapshot(1.3)["io_nodes"][0]["grant"] == ["B"]
    st.release("B", 1, 2.3)
    st.report("B", 1, "write", 1.3, 2.3, 1)
    st.finish("B", True, "", 2.3)
    st.dispatch(2.3)
    snap = st.snapshot(2.4)
    assert snap["io_nodes"][0] == {"node": 0, "grant": ["A"], "waiting": ["C"], "held": []}
    b = next(a for a in snap["apps"] if a["id"] == "B")
    assert b["status"] == "ok" and b["phases_done"] == 2 and b["phase"] == ""


def test_a_suspended_app_leaves_the_queue_and_is_listed_as_suspended():
    st = three_apps("fifo", {"A": 1.0, "B": 1.0, "C": 1.0})
    for i, a in enumerate("ABC"):
        st.request(a, 1, "write", 1, 1.0 + i / 10)
    st.dispatch(1.3)
    st.suspend("B", 1.4)
    snap = st.snapshot(1.5)
    assert snap["suspended"] == ["B"]
    assert snap["io_nodes"][0]["waiting"] == ["C"] and snap["io_nodes"][0]["held"] == ["B"]
    assert next(a for a in snap["apps"] if a["id"] == "B")["suspended"]
    st.resume("B", 1.6)
    snap = st.snapshot(1.7)
    assert snap["suspended"] == [] and snap["io_nodes"][0]["waiting"] == ["B", "C"]


def test_shared_policy_grants_everyone_and_queues_no_one():
    st = three_apps("shared", {"A": 1.0, "B": 1.0, "C": 1.0})
    for i, a in enumerate("ABC"):
        st.request(a, 1, "write", 1, 1.0 + i / 10)
    st.dispatch(1.3)
    assert st.snapshot(1.3)["io_nodes"][0]["grant"] == ["A", "B", "C"]
    assert st.snapshot(1.3)["io_nodes"][0]["waiting"] == []
