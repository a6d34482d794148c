"""The token bucket under an interference law, on virtual time (the caller passes ``now``)."""

from __future__ import annotations

import pytest

from iolab.middleware.bucket import TokenBucket
from iolab.middleware.policies.interference import InterferenceLaw


def drive(bucket, writers, chunk=1000, per_writer=200_000):
    """Pipelined writers (as the clients): each books its next chunk when its current interval starts."""
    nxt = {w: 0.0 for w in writers}  # when each writer books next
    moved = {w: 0 for w in writers}
    end = 0.0
    while any(moved[w] < per_writer for w in writers):
        w = min((w for w in writers if moved[w] < per_writer), key=lambda w: (nxt[w], w))
        start, stop = bucket.book(chunk, nxt[w], w)
        moved[w] += chunk
        nxt[w] = start
        end = max(end, stop)
    return end


@pytest.mark.parametrize("law", [InterferenceLaw.parametric(0.5, 1), InterferenceLaw.table({3: 0.5}),
                                 InterferenceLaw.preset("lustre-plafrim-b")], ids=lambda law: law.describe())
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_k_streams_get_rate_times_f_of_k(law, k):
    b = TokenBucket(1e6, law)
    end = drive(b, [f"s{i}" for i in range(k)])
    assert k * 200_000 / end == pytest.approx(1e6 * law.factor(k), rel=0.01)


def test_a_stream_stops_counting_after_its_grace():
    b = TokenBucket(1e6, InterferenceLaw.table({2: 0.5}), grace=0.1)
    b.book(1000, 0.0, "a")  # [0, 0.001]
    s, e = b.book(1000, 0.0, "b")  # two streams: 500 B/ms... half the rate
    assert e - s == pytest.approx(0.002)
    assert b.active(0.05) == 2
    s, e = b.book(1000, 0.5, "b")  # a ended more than grace ago: b is alone
    assert e - s == pytest.approx(0.001) and b.active(0.5) == 1


def test_no_law_or_no_stream_is_the_plain_bucket():
    for b, stream in ((TokenBucket(1e6), "a"), (TokenBucket(1e6, InterferenceLaw.table({2: 0.5})), None)):
        b.book(1000, 0.0, stream)
        s, e = b.book(1000, 0.0, None if stream is None else "b")
        assert (s, e) == pytest.approx((0.001, 0.002))


def test_the_arbiter_paces_shared_apps_under_the_platforms_law():
    """``shared`` on a real I/O node: the arbiter's bucket counts apps (every rank of one app is one stream)."""
    from iolab.middleware.policies.io_apps import IOApp
    from iolab.middleware.arbiter_state import ArbiterState

    apps = [IOApp(id=a, rank=i, nodes=1, release=0.0, kinds=["write"], amounts=[1.0], bandwidth=1.0)
            for i, a in enumerate("ABC")]
    law = InterferenceLaw.table({3: 0.5})
    st = ArbiterState(apps, policy="shared", bandwidth=1.0, cap=1e6, law=law, strict=True)
    for a in "ABC":
        for r in (0, 1):
            st.arrive(a, r, 2, 0.0)
    st.start(0.0)
    assert st.gates(0.0) == ["A", "B", "C"]
    # two ranks of each app book 1000 B in turn, pipelined; 3 apps: half the rate in total
    now, end = 0.0, 0.0
    for _ in range(100):
        for a in "ABC":
            for _rank in range(2):
                start, end = st.book(a, 1000, now)
        now = start
    assert 600_000 / end == pytest.approx(0.5e6, rel=0.01)
    # without the law: the whole cap
    plain = ArbiterState(apps, policy="shared", bandwidth=1.0, cap=1e6, strict=True)
    for a in "ABC":
        for r in (0, 1):
            plain.arrive(a, r, 2, 0.0)
    plain.start(0.0)
    plain.gates(0.0)
    assert plain.book("A", 1000, 0.0) == pytest.approx((0.0, 0.001))


@pytest.mark.parametrize("law", [None, InterferenceLaw.table({2: 0.5})], ids=["plain", "law"])
def test_a_stream_alone_may_move_its_bytes_a_lead_early_and_never_with_others(law):
    lead = 0.05
    b = TokenBucket(1e6, law, grace=0.01)
    assert b.book(1000, 0.0, "a", lead) == pytest.approx((-0.05, 0.001))  # alone: the interval is [0, 0.001]
    assert b.book(1000, 0.0, "a", lead) == pytest.approx((0.001 - 0.05, 0.002))  # still alone, after its own
    start, end = b.book(1000, 0.0, "b", lead)  # a second stream: no lead for it
    assert start == pytest.approx(0.002) and end - start == pytest.approx(0.001 / (law.factor(2) if law else 1))
    start, _ = b.book(1000, 0.001, "a", lead)  # nor for a, while b transfers
    assert start == pytest.approx(end)
    # the lead moves no interval: the link's bookings follow one another at the rate (times f(k))
    plain = TokenBucket(1e6, law, grace=0.01)
    for now, who in [(0.0, "a"), (0.0, "a"), (0.0, "b"), (0.001, "a")]:
        plain.book(1000, now, who)
    assert plain.next_free == pytest.approx(b.next_free)
    # once b is done (past its grace), a is alone again
    assert b.book(1000, 1.0, "a", lead)[0] == pytest.approx(1.0 - lead)
    assert b.book(1000, 1.0, None, lead)[0] == pytest.approx(1.001)  # an unnamed booking never leads


def test_a_booking_counts_from_when_the_writer_asked_within_a_bound():
    from iolab.middleware.storage import MAX_BACKDATE, booking_time

    assert booking_time(10.0, None) == 10.0
    assert booking_time(10.0, 9.997) == 9.997  # the call took 3 ms to arrive: the link counts from the ask
    assert booking_time(10.0, 10.2) == 10.0  # a clock ahead: never later than now
    assert booking_time(10.0, 3.0) == 10.0 - MAX_BACKDATE  # a call stuck long: at most MAX_BACKDATE back
