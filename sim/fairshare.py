"""A link shared fairly by its streams (processor sharing), in O(log k) per event.

``k`` active streams each progress at ``R(k) / k``, where ``R(k)`` is the link's aggregate rate with
``k`` streams (:meth:`FairShareLink.total_rate`: the constant ``rate`` here; a subclass or a ``law``
makes it fall with ``k``).  Used for ``shared`` I/O nodes, and for the tier links of the batch level
(lackner2019 §III-A: each link is shared fairly among its streams).

Virtual time.  Between two changes every stream progresses by the same amount, so one number, the
*virtual progress* ``V`` (the amount any stream present all along has moved since ``V = 0``), says how
far every stream has come: a stream of ``s`` units added when the progress is ``V0`` ends when
``V = V0 + s``, and has ``V0 + s - V`` units left.  The link keeps ``V0 + s`` of each stream in a heap:

- :meth:`advance` moves ``V`` by ``(now - last) * R(k) / k``: O(1), whatever ``k``;
- :meth:`add` pushes ``V + s``; :meth:`remove` (a suspended stream) forgets the stream (its heap entry
  is dropped lazily, when it reaches the top): O(log k);
- :meth:`next_completion` reads the heap's top: ``last + (top - V) * k / R(k)``;
- :meth:`pop_finished` pops the streams within tolerance of the least, O(log k) each.

Subtracting the progress from every stream at every event would cost O(k) per event; it computes the
same schedule, but not with the same float operations: ``V0 + s - V`` rounds differently from ``s - d1 -
d2 - ...``, so the last digits of a reference that does so can differ (docs/simulator.md, "Links").  ``V`` is brought back to 0 when the link empties, and rebased (every entry less ``V``: the
heap's order is kept) once it exceeds ``2**16`` times the smallest stream added since the last rebase,
so that a remaining amount is never the difference of two numbers much larger than itself (its rounding
stays below ``2**-36`` of the smallest stream).
"""

from __future__ import annotations

import heapq
import math
from itertools import count

_REBASE = float(2 ** 16)
_heappush, _heappop = heapq.heappush, heapq.heappop


class FairShareLink:
    """``rate``: the aggregate rate (units per second) with one stream; ``law``: an object whose
    ``factor(k)`` multiplies it with ``k`` streams (an interference law), or None (no loss)."""

    __slots__ = ("rate", "law", "last", "version", "_v", "_heap", "_entry", "_seq", "_small", "_plain")

    def __init__(self, rate: float, law=None):
        if not rate > 0:
            raise ValueError(f"a link's rate must be > 0, got {rate}")
        self.rate = rate
        self.law = law
        self.last = 0.0  # the time up to which the progress is counted
        self.version = 0  # bumps on every change; stale completion events are ignored
        self._v = 0.0  # virtual progress: what a stream present all along has moved
        self._heap: list[tuple[float, int, object]] = []  # (V0 + s, join order, key), stale entries included
        self._entry: dict[object, tuple[float, int]] = {}  # live streams: key -> (V0 + s, join order)
        self._seq = count()
        self._small = math.inf  # the smallest stream added since V was last brought back to 0
        # the rate is the constant ``rate`` (no law, total_rate not overridden): the hot paths skip the call
        self._plain = ((law is None or getattr(law, "lossless", False))
                       and type(self).total_rate is FairShareLink.total_rate)

    def __len__(self) -> int:
        return len(self._entry)

    def __contains__(self, key: object) -> bool:
        return key in self._entry

    def total_rate(self, k: int) -> float:
        """The link's aggregate rate with ``k`` streams on it (shared equally)."""
        return self.rate if self.law is None else self.rate * self.law.factor(k)

    @property
    def remaining(self) -> dict[object, float]:
        """Every stream's amount left as of :attr:`last`, in join order (a copy: O(k))."""
        v = self._v
        return {key: e - v for key, (e, _) in sorted(self._entry.items(), key=lambda kv: kv[1][1])}

    def remaining_of(self, key: object, default=None):
        """The amount ``key`` has left as of :attr:`last` (``default`` if it is not on the link)."""
        e = self._entry.get(key)
        return default if e is None else e[0] - self._v

    def advance(self, now: float) -> None:
        if now > self.last:
            k = len(self._entry)
            if k:
                self._v += (now - self.last) * (self.rate if self._plain else self.total_rate(k)) / k
        self.last = now

    def add(self, key: object, amount: float, now: float) -> None:
        self.advance(now)
        entry = self._entry
        if key in entry:
            raise RuntimeError(f"stream {key!r} is already on the link")
        if not entry:  # empty: start the progress again from 0 (every heap entry is stale)
            self._v = 0.0
            self._heap.clear()
            self._small = math.inf
        elif self._v > _REBASE * self._small:
            self._rebase()
            entry = self._entry
        if 0 < amount < self._small:
            self._small = amount
        end, order = self._v + amount, next(self._seq)
        entry[key] = (end, order)
        _heappush(self._heap, (end, order, key))
        self.version += 1

    def _rebase(self) -> None:
        """Every live stream's end less V, V back to 0 (the order, and so the heap, unchanged)."""
        v = self._v
        self._entry = {key: (e - v, s) for key, (e, s) in self._entry.items()}
        entry = self._entry
        self._heap = [(e - v, s, key) for e, s, key in self._heap if entry.get(key, (0, -1))[1] == s]
        self._v = 0.0
        self._small = min((e for e, _ in entry.values() if e > 0), default=math.inf)

    def remove(self, key: object, now: float) -> float:
        """Take ``key`` off the link; returns what it had left."""
        self.advance(now)
        e = self._entry.pop(key)
        self.version += 1
        return e[0] - self._v

    def next_completion(self) -> float:
        """Absolute time the first stream ends if nothing changes (inf if idle)."""
        heap, entry = self._heap, self._entry
        while heap:  # the first live entry (stale ones popped)
            top = heap[0]
            e = entry.get(top[2])
            if e is not None and e[1] == top[1]:
                k = len(entry)
                left = top[0] - self._v
                return self.last + (left if left > 0.0 else 0.0) * k / (self.rate if self._plain else self.total_rate(k))
            heapq.heappop(heap)
        return math.inf

    def pop_finished(self, now: float, rel_tol: float = 1e-9) -> list[object]:
        """Streams finished at ``now``: the least one, and every one whose amount left ``r`` is within
        ``rel_tol * max(1, |r|)`` of the least or below ``rel_tol``, in the order they joined."""
        self.advance(now)
        heap, entry = self._heap, self._entry
        v = self._v
        out = []
        least = None
        while heap:
            top = heap[0]
            e = entry.get(top[2])
            if e is None or e[1] != top[1]:  # stale (the stream left or was added again)
                _heappop(heap)
                continue
            r = top[0] - v
            if least is None:
                least = r
            elif not (r <= least + rel_tol * max(1.0, abs(r)) or r <= rel_tol):
                break  # the rule is monotone in r: no later stream qualifies either
            _heappop(heap)
            del entry[top[2]]
            out.append(top)
        if least is None:
            return []
        self.version += 1
        if len(out) == 1:
            return [out[0][2]]
        out.sort(key=lambda e: e[1])
        return [e[2] for e in out]
