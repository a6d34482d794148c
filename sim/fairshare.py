"""A link shared fairly by its streams (processor sharing).

``k`` active streams each progress at ``rate / k``.  The link is advanced
lazily: :meth:`advance` brings every stream's remaining amount up to ``now``,
:meth:`next_completion` says when the first one will finish if nothing
changes.  Used for ``shared`` I/O nodes, and for the tier links of the batch
level (lackner2019 §III-A: each link is shared fairly among its streams).
"""

from __future__ import annotations

import math


class FairShareLink:
    def __init__(self, rate: float, law=None):
        if rate <= 0:
            raise ValueError(f"a link's rate must be > 0, got {rate}")
        self.rate = rate
        self.law = law  # an interference law (``factor(k)``), or None: no loss
        self.remaining: dict[object, float] = {}
        self.last = 0.0
        self.version = 0  # bumps on every change; stale completion events are ignored

    def __len__(self) -> int:
        return len(self.remaining)

    def total_rate(self, k: int) -> float:
        """The link's rate with ``k`` streams on it (shared equally): ``rate x law.factor(k)``."""
        return self.rate if self.law is None else self.rate * self.law.factor(k)

    def advance(self, now: float) -> None:
        rem = self.remaining
        if rem and now > self.last:
            k = len(rem)
            done = (now - self.last) * self.total_rate(k) / k
            self.remaining = {key: r - done for key, r in rem.items()}
        self.last = now

    def add(self, key: object, amount: float, now: float) -> None:
        self.advance(now)
        if key in self.remaining:
            raise RuntimeError(f"stream {key!r} is already on the link")
        self.remaining[key] = amount
        self.version += 1

    def remove(self, key: object, now: float) -> float:
        self.advance(now)
        self.version += 1
        return self.remaining.pop(key)

    def next_completion(self) -> float:
        """Absolute time the first stream ends if nothing changes (inf if idle)."""
        if not self.remaining:
            return math.inf
        k = len(self.remaining)
        return self.last + max(min(self.remaining.values()), 0.0) * k / self.total_rate(k)

    def pop_finished(self, now: float, rel_tol: float = 1e-9) -> list[object]:
        """Streams finished at ``now`` (the least one, and any within tolerance)."""
        self.advance(now)
        if not self.remaining:
            return []
        rem = self.remaining
        least, most = min(rem.values()), max(rem.values())
        # r <= least + rel_tol * max(1, |r|) or r <= rel_tol, tested only where it can hold: every
        # stream's own bound is at most ``loose`` (the largest |r| bounds each |r|)
        loose = max(least + rel_tol * max(1.0, most, -least), rel_tol)
        out = [k for k, r in rem.items() if r <= loose
               and (r <= least + rel_tol * max(1.0, abs(r)) or r <= rel_tol)]
        for k in out:
            del rem[k]
        self.version += 1
        return out
