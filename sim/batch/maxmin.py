"""Max-min fair rates of streams over shared links (progressive filling).

Each stream crosses a set of links; each link has a capacity (its aggregate rate, already the
interference law's ``rate x f(k)`` for the streams it carries).  Progressive filling raises every
unfrozen stream's rate at the same pace; when a link has no capacity left, every stream crossing it
is frozen at its current rate; until every stream is frozen.  The result is the max-min fair
allocation: no stream can get more without taking from one that has no more than it.

Cost: each round freezes at least one link, and a round is O(streams x links per stream), so
O(links x streams) in all: meant for the batch simulator's I/O-node mode (machines of tens to
hundreds of nodes, a few streams per I/O node and tier).
"""

from __future__ import annotations

import math
from typing import Hashable, Mapping, Sequence

__all__ = ["max_min_rates"]

_EPS = 1e-12  # relative: a link with less than this share of its capacity left is saturated


def max_min_rates(paths: Sequence[Sequence[Hashable]], caps: Mapping[Hashable, float]) -> list[float]:
    """The max-min fair rate of each stream: ``paths[i]`` names the links stream ``i`` crosses (each
    at most once, at least one), ``caps[link]`` is the link's capacity (> 0)."""
    n = len(paths)
    rates = [0.0] * n
    if not n:
        return rates
    left = {link: float(caps[link]) for p in paths for link in p}
    users: dict[Hashable, list[int]] = {link: [] for link in left}
    for i, p in enumerate(paths):
        if not p:
            raise ValueError(f"stream {i} crosses no link")
        for link in p:
            users[link].append(i)
    active = {link: len(u) for link, u in users.items()}
    frozen = [False] * n
    unfrozen = n
    while unfrozen:
        inc = math.inf
        for link, k in active.items():
            if k:
                inc = min(inc, left[link] / k)
        if inc < 0:
            inc = 0.0
        for i in range(n):
            if not frozen[i]:
                rates[i] += inc
        full = []
        for link, k in active.items():
            if k:
                left[link] -= inc * k
                if left[link] <= _EPS * caps[link]:
                    full.append(link)
        for link in full:
            for i in users[link]:
                if not frozen[i]:
                    frozen[i] = True
                    unfrozen -= 1
                    for other in paths[i]:
                        active[other] -= 1
    return rates
