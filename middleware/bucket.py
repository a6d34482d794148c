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

**Interference** (``law``, :class:`iolab.middleware.policies.interference.InterferenceLaw`): a
booking names its ``stream`` (a job on a tier, an app on an I/O node); with ``k`` streams
transferring at once the link carries ``rate x law.factor(k)`` in total, so each booking of
``n`` bytes holds it ``n / (rate x f(k))`` seconds.  Bookings are served one after another in
booking order, so the ``k`` streams share that total fairly.  A stream counts as transferring
from its first booking until ``grace`` seconds after the end of its last one (a writer books
its next chunk before its previous one has been carried, so a writer in a phase always has
bytes booked ahead; ``grace`` covers a writer slow to book again).  Without a law, or without
stream names, the rate is the plain ``rate``.

**Lead** (``book(..., lead=L)``): a stream *alone* on the link (no other stream transferring) may
move its bytes up to ``L`` seconds before their interval starts: the answer's first time is then
``start - L``.  A lone writer's own costs (a pause for the CPU, a file's rename, a checkpoint's
manifest at a phase's end) then overlap bytes the link still carries instead of idling it; the
phase still ends no earlier than its bytes at the rate (the writer waits for its last interval's
end).  With other streams there is no lead: their bookings fill a writer's pauses, and a lead
would make a stream that joins wait behind bookings made ahead.

**Lanes** (:meth:`TokenBucket.share`): under a sharing policy other than ``shared`` (docs/sharing.md)
the owner gives each granted stream its share of the link; with ``k`` streams given, stream ``i`` then
books on a lane of its own at ``share_i x rate x f(k)``, one interval after another, whatever the
others book (a share a stream does not use stays unused, as a token bucket's tokens do).  The owner
gives the shares again whenever its set of streams changes; an interval already booked keeps its
times (the next booking of that stream takes the new rate).  A stream without a lane books on the
common link as above.
"""

from __future__ import annotations

import math

GRACE = 0.1  # seconds a stream still counts after the end of its last booking


class TokenBucket:
    def __init__(self, rate: float | None, law=None, grace: float = GRACE):
        if rate is not None and not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"rate must be a positive number of bytes per second or None, got {rate!r}")
        if not grace >= 0:
            raise ValueError(f"grace must be >= 0 seconds, got {grace!r}")
        self.rate = rate
        self.law = None if law is None or getattr(law, "lossless", False) else law
        self.grace = float(grace)
        self.next_free = -math.inf  # when the link is free of every booking
        self.booked = 0  # bytes booked so far
        self.bookings = 0  # acquires of more than 0 bytes so far (the link's operations)
        self.streams: dict[object, float] = {}  # stream -> end of its last booking
        self.lanes: dict[object, list[float]] = {}  # stream -> [end of its last booking, its lane's rate]

    def share(self, shares: dict[object, float]) -> None:
        """Give every stream of ``shares`` (stream -> its fraction of the link's ``rate x f(k)``, ``k`` the
        number of streams given) a lane of its own; a stream left out loses its lane.  Unpaced (``rate``
        None): nothing to do."""
        if self.rate is None:
            return
        total = self.rate * (self.law.factor(len(shares)) if self.law is not None and shares else 1.0)
        old = self.lanes
        self.lanes = {s: [old[s][0] if s in old else -math.inf, total * x] for s, x in shares.items()}

    def acquire(self, nbytes: int, now: float, stream: object = None) -> float:
        """Book ``nbytes`` at ``now``; returns the seconds to wait before writing them."""
        return self.book(nbytes, now, stream)[1] - now

    def active(self, now: float) -> int:
        """Streams transferring at ``now`` (booked bytes not carried yet, or carried within ``grace``)."""
        return sum(end + self.grace > now for end in self.streams.values())

    def book(self, nbytes: int, now: float, stream: object = None, lead: float = 0.0) -> tuple[float, float]:
        """Book ``nbytes`` of ``stream`` at ``now``: the interval ``(start, end)`` in which the link
        carries them (``(now, now)`` unpaced or for 0 bytes).  A writer that moves its bytes inside it,
        and books more only after ``end``, is never faster than the rate (times ``f(k)`` with a law).
        ``lead``: for a named stream alone on the link the answer is ``(start - lead, end)`` (the
        module's doc)."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        self.booked += nbytes
        self.bookings += nbytes > 0
        if self.rate is None or nbytes == 0:
            return now, now
        lane = self.lanes.get(stream) if stream is not None else None
        if lane is not None:  # its own lane, at its share of the link
            start = max(now, lane[0])
            lane[0] = end = start + nbytes / lane[1]
            self.streams[stream] = end
            self.next_free = max(self.next_free, end)
            return start, end
        start = max(now, self.next_free)
        rate = self.rate
        k = 0
        if stream is not None:
            streams = self.streams
            for key in [key for key, end in streams.items() if end + self.grace <= now and key != stream]:
                del streams[key]  # ended: no longer transferring
            streams.setdefault(stream, now)
            k = len(streams)
            if self.law is not None:
                rate *= self.law.factor(k)
        self.next_free = start + nbytes / rate
        if stream is not None:
            self.streams[stream] = self.next_free
        return (start - lead if k == 1 else start), self.next_free

    def backlog(self, now: float) -> float:
        """Seconds of booked bytes the link has not served yet at ``now`` (0 when idle or unpaced)."""
        return max(0.0, self.next_free - now)
