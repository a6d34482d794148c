"""A bandwidth cap shared by every writer behind one I/O node: a virtual-time token bucket.

Each writer asks before it moves ``n`` bytes; the bucket books the link for
``n / rate`` seconds after whatever is already booked and answers how long the
writer must wait so that its bytes are *paid for* when it writes them::

    bucket = TokenBucket(rate=1e6)        # bytes per second
    bucket.acquire(500_000, now=0.0)      # 0.5: write at 0.5 s
    bucket.acquire(500_000, now=0.0)      # 1.0: another writer, booked after the first
    bucket.acquire(500_000, now=5.0)      # 0.5: the link was idle, nothing carried over

Pay-before-write means a link is never faster than its rate; an idle link
gives no credit (no burst), so a phase of ``V`` bytes lasts at least ``V / rate``.
``rate=None`` means no cap: every answer is 0.  Pure: the caller passes ``now``.
"""

from __future__ import annotations

import math


class TokenBucket:
    def __init__(self, rate: float | None):
        if rate is not None and not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"rate must be a positive number of bytes per second or None, got {rate!r}")
        self.rate = rate
        self.next_free = -math.inf  # when the link is free of every booking
        self.booked = 0  # bytes booked so far
        self.bookings = 0  # acquires of more than 0 bytes so far (the link's operations)

    def acquire(self, nbytes: int, now: float) -> float:
        """Book ``nbytes`` at ``now``; returns the seconds to wait before writing them."""
        return self.book(nbytes, now)[1] - now

    def book(self, nbytes: int, now: float) -> tuple[float, float]:
        """Book ``nbytes`` at ``now``: the interval ``(start, end)`` in which the link carries them
        (``(now, now)`` unpaced or for 0 bytes).  A writer that moves its bytes inside it, and books more
        only after ``end``, is never faster than the rate."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        self.booked += nbytes
        self.bookings += nbytes > 0
        if self.rate is None or nbytes == 0:
            return now, now
        start = max(now, self.next_free)
        self.next_free = start + nbytes / self.rate
        return start, self.next_free

    def backlog(self, now: float) -> float:
        """Seconds of booked bytes the link has not served yet at ``now`` (0 when idle or unpaced)."""
        return max(0.0, self.next_free - now)
