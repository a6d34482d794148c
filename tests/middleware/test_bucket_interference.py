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
