"""A link whose streams share its bandwidth as a sharing policy says: weighted processor sharing.

``k`` active streams; stream ``i`` progresses at ``R(k) x share_i``, where ``R(k) = rate x law.factor(k)``
is the link's aggregate rate and ``share_i`` what the policy's ``shares(streams, now)`` answered
(:class:`iolab.middleware.policies.io_order.Sharing`; a sum below 1 leaves the rest of ``R(k)`` unused).
The policy is asked again whenever streams join or leave, once per instant (after every change made at
that instant: the first time the link is read or advanced past it), with every stream's
:class:`~iolab.middleware.policies.io_order.Stream` (its id, job, rank, nodes and user from ``describe(key)``,
its volume, what it has moved and when it was granted), in the order the streams joined.

Between two changes the rates are constant, so each stream's amount left falls linearly; a change costs
O(k) (every stream's amount left brought up to date, the policy's answer turned into rates, the next end
found), against O(log k) for :class:`~iolab.sim.fairshare.FairShareLink`, which ``shared`` keeps (its
shares need no asking).  Used by the I/O level's engines for a non-equal sharing policy; it offers the
link interface the event engine uses (``add``, ``remove``, ``next_completion``, ``pop_finished``,
``version``, ``len``).
"""

from __future__ import annotations

import math
from typing import Callable

from iolab.middleware.policies.io_order import Stream

__all__ = ["WeightedLink"]

_new_stream = tuple.__new__


class _Flow:
    __slots__ = ("key", "info", "amount", "volume", "left", "granted", "rate")

    def __init__(self, key, info: tuple, amount: float, volume: float, granted: float):
        self.key, self.info = key, info
        self.amount = amount  # what it moves on this link in all (its volume, jitter included)
        self.volume = volume  # what the policy is told it moves (the nominal volume)
        self.left = amount
        self.granted = granted
        self.rate = 0.0


class WeightedLink:
    """``rate``: the aggregate rate with one stream; ``law``: an object whose ``factor(k)`` multiplies it
    with ``k`` streams, or None; ``policy``: a sharing policy (``shares(streams, now)``); ``describe(key)``:
    ``(id, job, rank, nodes, user)`` of the stream ``key``."""

    def __init__(self, rate: float, law, policy, describe: Callable[[object], tuple]):
        if not rate > 0:
            raise ValueError(f"a link's rate must be > 0, got {rate}")
        self.rate = rate
        self.law = None if law is None or getattr(law, "lossless", False) else law
        self.policy = policy
        self.describe = describe
        self.last = 0.0
        self.version = 0
        self._flows: dict[object, _Flow] = {}  # in join order
        self._next = math.inf
        self._dirty = False  # streams joined or left at ``last``: the shares are to be asked

    def __len__(self) -> int:
        return len(self._flows)

    def __contains__(self, key: object) -> bool:
        return key in self._flows

    def total_rate(self, k: int) -> float:
        """The link's aggregate rate with ``k`` streams on it."""
        return self.rate if self.law is None else self.rate * self.law.factor(k)

    def rates(self) -> dict[object, float]:
        """Every stream's rate now, in join order."""
        if self._dirty:
            self._reshare()
        return {key: f.rate for key, f in self._flows.items()}

    def remaining_of(self, key: object, default=None):
        f = self._flows.get(key)
        return default if f is None else f.left

    def advance(self, now: float) -> None:
        dt = now - self.last
        if dt > 0:
            if self._dirty:
                self._reshare()
            for f in self._flows.values():
                f.left -= f.rate * dt
            self.last = now

    def add(self, key: object, amount: float, now: float, volume: float | None = None,
            granted: float | None = None) -> None:
        """``key`` joins with ``amount`` to move (``volume``: what the policy is told, default ``amount``;
        ``granted``: when its transfer was granted, default ``now``)."""
        self.advance(now)
        if key in self._flows:
            raise RuntimeError(f"stream {key!r} is already on the link")
        self._flows[key] = _Flow(key, self.describe(key), amount, amount if volume is None else volume,
                                 now if granted is None else granted)
        self._changed()

    def remove(self, key: object, now: float) -> float:
        """Take ``key`` off the link; returns what it had left."""
        self.advance(now)
        f = self._flows.pop(key)
        self._changed()
        return f.left

    def next_completion(self) -> float:
        """Absolute time the first stream ends if nothing changes (inf if idle)."""
        if self._dirty:
            self._reshare()
        return self._next

    def pop_finished(self, now: float, rel_tol: float = 1e-9) -> list[object]:
        """Streams finished at ``now``: the one due first, and every one whose amount left is within
        ``rel_tol`` of its amount (or of 1), in the order they joined."""
        self.advance(now)
        if self._dirty:  # streams joined at ``now``: the rates tell which one is due first
            self._reshare()
        flows = self._flows
        if not flows:
            return []
        first = min(flows.values(), key=lambda f: f.left / f.rate if f.rate > 0 else math.inf)
        out = [key for key, f in flows.items()
               if f is first or f.left <= rel_tol * max(1.0, f.amount)]
        for key in out:
            del flows[key]
        self._changed()
        return out

    # -- inside -------------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.version += 1
        self._dirty = True

    def _reshare(self) -> None:
        """The policy's shares of the streams on the link at :attr:`last`, as rates; the next end."""
        self._dirty = False
        now = self.last
        flows = list(self._flows.values())
        if not flows:
            self._next = math.inf
            return
        streams = [_new_stream(Stream, (*f.info[:4], f.volume, f.volume * (1.0 - max(f.left, 0.0) / f.amount)
                                        if f.amount > 0 else f.volume, f.granted, f.info[4]))
                   for f in flows]
        shares = self.policy.shares(streams, now)
        total = self.total_rate(len(flows))
        nxt = math.inf
        for f, s in zip(flows, shares):
            f.rate = r = total * s
            if r > 0:
                end = now + max(f.left, 0.0) / r
                if end < nxt:
                    nxt = end
        self._next = nxt
