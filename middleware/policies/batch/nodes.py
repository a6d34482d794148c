"""Concrete compute-node ids: the deterministic allocator and the planned node sets.

A node set is a Python ``int`` used as a bit mask: bit ``i`` set = node ``i``
(cheap to copy, compare and hash; 1 152 nodes fit in 18 machine words).

**Allocator** (:func:`lowest`): a job starting now takes the ``k`` lowest free
node ids.  It is deterministic and needs no state beyond the free mask.

**Planned node sets** (:func:`plan_node_sets`): a count-based plan (every
entry a start, an end and a node count, as the schedulers of this package
produce) is turned into node sets by replaying it in order of planned start
(ties: plan order) with the same rule, lowest free ids first, where a node is
free at ``t`` if nothing running or planned holds it at ``t``.  Because
the jobs are intervals and the nodes interchangeable, a plan whose counts fit
at every instant always gets node sets this way (interval-graph colouring),
and the jobs of the plan that start *now* get exactly the ids the allocator
hands them at their start.  Backfilling a job into a hole can thus change
the set of a job planned later at an unchanged time: soysal2019's Fig. 2.

:func:`ranges` writes a set compactly (``"0-3,8"``), :func:`parse_ranges`
reads it back.
"""

from __future__ import annotations

import heapq
import itertools
import math

__all__ = ["NodeSetReplay", "count", "ids", "lowest", "mask_of", "parse_ranges", "plan_node_sets", "ranges",
           "replay_in_start_order"]


def count(mask: int) -> int:
    return mask.bit_count()


def lowest(free: int, k: int) -> int:
    """The ``k`` lowest set bits of ``free`` (a mask); ``ValueError`` if fewer are set."""
    if k <= 0:
        return 0
    have = free.bit_count()
    if have <= k:
        if have < k:
            raise ValueError(f"{k} nodes wanted, {have} free")
        return free
    low = free & -free
    run = (low << k) - low  # k ids in a row from the lowest free one: the common case
    if free & run == run:
        return run
    lo, hi = k, free.bit_length()
    while lo < hi:  # smallest width w whose low w bits of free hold k set bits
        mid = (lo + hi) // 2
        if (free & ((1 << mid) - 1)).bit_count() >= k:
            hi = mid
        else:
            lo = mid + 1
    return free & ((1 << lo) - 1)


def ids(mask: int) -> list[int]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


def mask_of(node_ids) -> int:
    m = 0
    for i in node_ids:
        m |= 1 << int(i)
    return m


def ranges(mask: int) -> str:
    """``0b100001111`` -> ``"0-3,8"``; the empty set -> ``""``."""
    parts = []
    while mask:  # one run of ones a turn, the lowest: adding its lowest bit carries through it
        low = mask & -mask
        rest = (mask + low) & mask  # the mask without that run
        lo = low.bit_length() - 1
        hi = (mask ^ rest).bit_length() - 1
        parts.append(f"{lo}-{hi}" if hi > lo else str(lo))
        mask = rest
    return ",".join(parts)


def parse_ranges(text: str) -> int:
    """Inverse of :func:`ranges`."""
    m = 0
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b) if b else int(a)
        if hi < lo:
            raise ValueError(f"bad node range {part!r}")
        m |= ((1 << (hi - lo + 1)) - 1) << lo
    return m


def plan_node_sets(now: float, free: int, running, plan, overrun_grace: float = 1.0) -> dict[str, int]:
    """Node set of every entry of ``plan`` (objects with ``job``, ``start``, ``end``, ``nodes``).

    ``free``: the mask of the nodes free now; ``running``: ``(expected_end, mask)`` of the jobs
    holding nodes (one past its expected end is taken to end ``overrun_grace`` after ``now``, as
    :class:`~.profile.Profile` does).  Entries that never start (``start`` infinite) get no set.
    """
    replay = NodeSetReplay(now, free, running, overrun_grace)
    return replay.place(plan, {})


class NodeSetReplay:
    """:func:`plan_node_sets` as a replay that can be continued: after placing a plan it holds
    the state the next entries would see (free mask, releases, the latest start placed), so
    entries that start no earlier than that latest start are placed exactly as if they had
    been at the end of the plan all along (the kernel's arrival-only decisions)."""

    __slots__ = ("heap", "free", "seq", "latest")

    def __init__(self, now: float, free: int, running, overrun_grace: float = 1.0):
        self.heap = [(e if e > now else now + overrun_grace, i, m) for i, (e, m) in enumerate(running)]
        heapq.heapify(self.heap)
        self.free, self.seq, self.latest = free, len(self.heap), -math.inf

    def copy(self) -> "NodeSetReplay":
        c = NodeSetReplay.__new__(NodeSetReplay)
        c.heap, c.free, c.seq, c.latest = list(self.heap), self.free, self.seq, self.latest
        return c

    def take(self, start: float, end: float, nodes: int) -> int:
        """Place one entry at ``start`` (no earlier than the last one placed): the nodes released
        by then come back, it takes the ``nodes`` lowest free ids until ``end``; returns them."""
        heap, free = self.heap, self.free
        while heap and heap[0][0] <= start:
            free |= heapq.heappop(heap)[2]
        low = free & -free
        ids = (low << nodes) - low  # lowest()'s common case inline: a run from the lowest free id
        if not ids or free & ids != ids:
            ids = lowest(free, nodes)
        self.free = free ^ ids
        heapq.heappush(heap, (end, self.seq, ids))
        self.seq += 1
        self.latest = start
        return ids

    def place_in_order(self, plan) -> list[int]:
        """The sets of ``plan``'s entries, already in order of start and none before the latest
        start placed (``ValueError`` otherwise), as a list."""
        out: list[int] = []
        for e in plan:
            if e.start < self.latest or e.start == math.inf:
                raise ValueError(f"plan not in order of start (or never starting) at {e.job!r}")
            out.append(self.take(e.start, e.end, e.nodes))
        return out

    def place(self, plan, out: dict[str, int]) -> dict[str, int]:
        """Add the set of every entry of ``plan`` to ``out`` (in order of start, ties in plan
        order) and return it."""
        starts = [e.start for e in plan]
        for i in sorted(range(len(plan)), key=starts.__getitem__):  # stable: ties keep plan order
            e = plan[i]
            if e.start == math.inf:
                break
            out[e.job] = self.take(e.start, e.end, e.nodes)
        return out


def _xor_into(diff: dict[float, int], keys: list[float], tau: float, ids: int) -> None:
    """``diff[tau] ^= ids``, a time whose difference vanishes leaving ``diff``; a time that
    enters it goes on the ``keys`` heap (which may hold times no longer in ``diff``)."""
    v = diff.get(tau, 0) ^ ids
    if v:
        if tau not in diff:
            heapq.heappush(keys, tau)
        diff[tau] = v
    else:
        del diff[tau]


def replay_in_start_order(now: float, free: int, running, plan, memo, overrun_grace: float = 1.0):
    """:func:`plan_node_sets` for a plan already in order of start (FCFS's: nobody overtakes),
    re-placing only until the replay joins the previous pass's.

    Returns ``(sets, fresh, memo)``: ``sets`` the node set of every entry (a list aligned with
    ``plan``), ``fresh`` the ``(lo, hi)`` index ranges of the entries placed in this pass (the
    others have the entry and the set they had in the previous pass), ``memo`` what the next
    pass needs (``None`` the first time).

    The replay's future depends only on which ids are released at each time after the
    current start (the free ids follow: every id not down is free or held).  ``X`` holds,
    per time after the current start, the XOR of the ids this replay releases then with the
    ids the previous replay released then, at the same entry: the running jobs of both
    passes, the sets of the entries that left the plan since (a prefix of the old plan),
    then entry by entry this set against the old one (ids released at one time are
    disjoint, so XOR is their difference).  Where an entry has its old start, ``X`` is empty
    and the rest of the plan is the old rest, the old sets and the old final state hold.
    ``tests/middleware/policies/batch/test_fast_paths.py`` compares it with :func:`plan_node_sets` on random
    decision sequences.
    """
    grace_end = now + overrun_grace
    rel: dict[float, int] = {}
    held = 0
    for e, msk in running:
        tau = e if e > now else grace_end
        rel[tau] = rel.get(tau, 0) | msk
        held |= msk
    every = free | held
    replay = NodeSetReplay(now, free, running, overrun_grace)
    n_plan = len(plan)
    m = a = 0
    if memo is not None and memo[1] == every and plan:
        old_rel, _, old_plan, old_sets, old_final = memo
        first = plan[0].job
        n_old = len(old_plan)
        while a < n_old and old_plan[a].job != first:
            a += 1
        m = n_old - a
        if m > n_plan:
            m = 0  # jobs left from the end of the old plan: its final state is not ours
    sets: list[int] = []
    i = 0
    if m:
        X: dict[float, int] = {}
        keys: list[float] = []
        for tau, ids in itertools.chain(rel.items(), old_rel.items()):
            _xor_into(X, keys, tau, ids)
        for j in range(a):
            _xor_into(X, keys, old_plan[j].end, old_sets[j])
        next_diff = 0  # no convergence test before this entry: the rest differs from the old rest there
        while i < m:
            e = plan[i]
            old = old_plan[a + i]
            if old.job != e.job:
                break  # not the old order any more: place the rest plainly
            start = e.start
            if start < replay.latest:
                raise ValueError(f"plan not in order of start at {e.job!r}")
            ids = replay.take(start, e.end, e.nodes)
            sets.append(ids)
            old_ids = old_sets[a + i]
            if e.end != old.end or ids != old_ids:
                _xor_into(X, keys, e.end, ids)
                _xor_into(X, keys, old.end, old_ids)
            i += 1
            if old.start != start or i < next_diff:
                continue
            while X and keys and keys[0] <= start:  # ids released by now are free in both replays
                X.pop(heapq.heappop(keys), None)
            if X:
                continue
            if plan[i:m] == old_plan[a + i:]:  # joined the old replay, and the rest is the old rest
                sets.extend(old_sets[a + i:])
                replay = old_final.copy()
                if m < n_plan:
                    sets.extend(replay.place_in_order(plan[m:]))
                return sets, ((0, i), (m, n_plan)), (rel, every, plan, sets, replay)
            next_diff = i
            while plan[next_diff] == old_plan[a + next_diff]:
                next_diff += 1
    sets.extend(replay.place_in_order(plan[i:]))
    return sets, ((0, n_plan),), (rel, every, plan, sets, replay)
