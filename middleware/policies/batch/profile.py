"""The resource profile behind every reservation plan.

A :class:`Profile` is a step function over time of the free compute nodes and
free HPS bytes, built from a snapshot (free now, released at each running
job's expected end) and then debited by each reservation the policy makes.
Segment ``i`` covers ``[times[i], times[i+1])``; the last one runs forever.

:meth:`Profile.earliest_fit` finds the earliest start, not before a given
time, of an interval of a given length where nodes and bytes suffice
throughout.  It skips past each blocking segment, so one search costs time
linear in the number of breakpoints.  :meth:`Profile.place` searches and holds
in one call, the way the backfilling policies use it.

A profile whose free counts never fall over time (``rising``: built from a
snapshot, whose running jobs only release, and since then only held from its
start, as the jobs a pass starts now are) answers both queries in O(log n):
where a job fits it fits for good, so the earliest fit is the first segment
with enough nodes and enough bytes (a bisection of each column) and a fit is
read from its first segment.  The same answers, float for float, as the walk
(``tests/middleware/policies/batch/test_fast_paths.py``).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from typing import NoReturn

from iolab.middleware.policies.batch.snapshot import HPS, Snapshot


_expected_end = operator.attrgetter("expected_end")  # the sort key, without a Python call per job
_first, _third, _fourth = operator.itemgetter(0), operator.itemgetter(2), operator.itemgetter(3)  # of a release


def _refuse(start: float, duration: float, nodes: int, hps: float = 0.0) -> NoReturn:
    """A reservation that does not fit (at ``inf``: a job that never fits) is a bug in its policy."""
    raise RuntimeError(f"reservation of {nodes} nodes / {hps:.6g} B at {start} for {duration} s does not fit")


def first_with_room(room: list, eps: float, need: float, lo: int = 0) -> int:
    """The first index ``i >= lo`` with ``room[i] + eps >= need`` in a column that never falls
    (``len(room)`` if none): a bisection for ``need - eps``, then past the rounding (``x + eps`` is
    not ``x >= need - eps`` for every float), one run of equal values a step.  The bisection of
    ``[x + eps for x in room]`` for ``need`` (``x + eps`` never falls either), without building it."""
    i = bisect.bisect_left(room, need - eps, lo)
    while i > lo and room[i - 1] + eps >= need:  # an earlier value holds it too: back to its first
        i = bisect.bisect_left(room, room[i - 1], lo, i - 1)
    n = len(room)
    while i < n and not room[i] + eps >= need:  # this value does not: past its last
        i = bisect.bisect_right(room, room[i], i)
    return i


_EXACT = 2 ** 53  # integers below this are floats, and so are their sums and differences below it


_insort, _bisect_left = bisect.insort, bisect.bisect_left


class KeptReleases(list):
    """The running jobs' releases, sorted (:attr:`Snapshot.releases`), and the free counts they make,
    kept as releases come and go instead of accumulated at every decision.

    A list of ``(expected end, start order, nodes, HPS bytes)`` tuples in sorted order, as a runtime
    hands them to the policies, whose :meth:`hold` and :meth:`drop` also keep the profile's columns:
    ``times`` (each distinct end, ascending), ``nodes`` and ``hps`` (the free counts now, then after
    each of ``times``).  A release that comes in holds its nodes and bytes until its end (the
    segments before it lose them: a job starts, or its release moves there); one that leaves gives
    them back (the job ended, or its release moved).  The columns' first entries are then the free
    counts a runtime keeps, and :meth:`Profile.from_snapshot` takes copies of the columns when they
    are the snapshot's: the same free counts, no job past its end, and ``exact``: every byte count an
    integer, and the free bytes plus every release's bytes below 2**53, so that the kept sums, made
    in another order than the accumulation over the sorted releases, are the same floats (each sum
    of such integers is exact).  Otherwise it accumulates the releases as before, and a release
    with a fractional byte count turns the columns off for good.
    """

    __slots__ = ("times", "counts", "nodes", "hps", "exact", "_bytes")

    def __init__(self, free_nodes: int, hps_free: float, columns: bool = True) -> None:
        """``columns=False``: keep the sorted releases only (a policy that never builds a profile from
        them, as EASY's shadow rule: :attr:`BatchPolicy.reads_profile`); a profile built from them then
        accumulates the releases, the same floats (see the class)."""
        super().__init__()
        self.times: list[float] = []  # distinct ends
        self.counts: list[int] = []  # releases at each of them
        self.nodes: list[int] = [free_nodes]  # free now, then after each end
        self.hps: list[float] = [float(hps_free)]
        self._bytes = 0  # the releases' bytes (an int: exact)
        self.exact = columns and self.hps[0].is_integer() and abs(self.hps[0]) < _EXACT

    def hold(self, key: tuple) -> None:
        """A release ``(end, order, nodes, bytes)`` comes in: its nodes and bytes are held until ``end``."""
        _insort(self, key)  # (bound once: the kernel's quick path holds and drops a release per job)
        if not self.exact:
            return
        end, _, n, b = key
        times = self.times
        i = bisect.bisect_left(times, end)
        if i < len(times) and times[i] == end:
            self.counts[i] += 1
        else:
            times.insert(i, end)
            self.counts.insert(i, 1)
            self.nodes.insert(i + 1, self.nodes[i])  # a breakpoint: the counts it falls in on both sides
            self.hps.insert(i + 1, self.hps[i])
        self._shift(i + 1, -n, -b)

    def drop(self, key: tuple) -> None:
        """The release ``key`` leaves: its nodes and bytes are free from now on."""
        del self[_bisect_left(self, key)]
        if not self.exact:
            return
        end, _, n, b = key
        i = bisect.bisect_left(self.times, end)
        self._shift(i + 1, n, b)
        self.counts[i] -= 1
        if not self.counts[i]:  # the segment it started has the counts of the one before it
            del self.times[i], self.counts[i], self.nodes[i + 1], self.hps[i + 1]

    def _shift(self, k: int, n: int, b: float) -> None:
        """Segments ``0 .. k - 1`` gain ``n`` nodes and ``b`` bytes (negative: a release came in and holds them)."""
        b = float(b)
        if not b.is_integer():
            self.exact = False  # the accumulation's floats from now on
            return
        self._bytes -= int(b)  # b < 0: a release came in
        col = self.nodes
        col[:k] = [x + n for x in col[:k]]
        if b:
            col = self.hps
            col[:k] = [x + b for x in col[:k]]
            if abs(col[0]) + abs(self._bytes) >= _EXACT:
                self.exact = False

    def columns(self, free_nodes: int, hps_free: float, now: float, grace: float):
        """``(times, nodes, hps)`` of the profile at ``now`` (copies), or None unless the kept columns
        are the accumulation's (see the class).  The jobs past their end release at ``now + grace``
        (as :meth:`Profile.from_snapshot` says) in one segment, when that is before the next end (or
        at it); otherwise None."""
        if not (self.exact and self.nodes[0] == free_nodes and self.hps[0] == hps_free):
            return None
        if not (self and self[0][0] <= now):
            times = [now]
            times += self.times
            return times, list(self.nodes), list(self.hps)
        ends = self.times
        m = bisect.bisect_right(ends, now)  # the distinct ends of the jobs past theirs
        late = now + grace
        times = [now, late]
        nodes, hps = [free_nodes], [self.hps[0]]
        if m < len(ends) and ends[m] <= late:
            if ends[m] < late:
                return None  # a release between now and the overran jobs' stand-in end
            m += 1  # the next end is the stand-in end: one segment, after both
        times += ends[m:]
        nodes += self.nodes[m:]
        hps += self.hps[m:]
        return times, nodes, hps


class Profile:
    __slots__ = ("times", "nodes", "hps", "eps", "rising")

    def __init__(self, start: float, nodes: int, hps: float = 0.0, eps: float = 0.0):
        self.times: list[float] = [start]
        self.nodes: list[int] = [nodes]
        self.hps: list[float] = [hps]
        self.eps = eps  # byte tolerance for float sums
        # the free nodes and bytes never fall from one segment to the next (kept by every edit: see _held)
        self.rising = True

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> "Profile":
        """Free now, plus each running job's nodes (and HPS bytes) back at its expected end
        (``now + overrun_grace`` for a job past it).

        One pass over the running jobs sorted by end, accumulating the releases: the same
        numbers, float for float, as adding each release over ``[end, inf)`` in that order
        (what :meth:`add` would do, in time quadratic in the running jobs).  Only when an
        overrun's stand-in end falls after a later expected end do the two orders differ;
        then the releases are added one by one, as before.  A snapshot that carries its
        ``releases`` (kept sorted by the runtime) is read as it is, without the sort.

        The profile is ``rising``: its running jobs only release (the kept releases are
        non-negative, as :class:`Snapshot` says; the running jobs' counts are checked).
        """
        now = snap.now
        eps = 1e-9 * max(1.0, snap.hps_capacity)
        prof = cls(now, snap.free_nodes, float(snap.hps_free or 0.0), eps)
        grace_end = now + snap.overrun_grace
        rel = snap.releases  # (end, start order, nodes, HPS bytes), kept sorted by the runtime
        if type(rel) is KeptReleases:
            cols = rel.columns(prof.nodes[0], prof.hps[0], now, snap.overrun_grace)
            if cols is not None:
                prof.times, prof.nodes, prof.hps = cols
                return prof
        if rel is not None and not (rel and rel[0][0] <= now):  # no overrun: read them as they are
            # the running sums computed in C, the same additions in the same order as _accumulate's; of
            # releases at one instant only the sum after the last is a segment (as _accumulate merges them)
            ends = list(map(_first, rel))
            nodes = itertools.accumulate(map(_third, rel), initial=prof.nodes[0])
            hps = itertools.accumulate(map(_fourth, rel), initial=prof.hps[0])
            keep = [True]  # segment 0 (now), then whether each release is the last at its instant
            keep += map(operator.ne, ends, itertools.islice(ends, 1, None))
            keep.append(True)
            if all(keep):
                prof.times += ends
                prof.nodes, prof.hps = list(nodes), list(hps)
            else:
                prof.times += itertools.compress(ends, itertools.islice(keep, 1, None))
                prof.nodes = list(itertools.compress(nodes, keep))
                prof.hps = list(itertools.compress(hps, keep))
            return prof
        if rel is not None:
            ends = [r[0] for r in rel]
            counts = [(r[2], r[3]) for r in rel]
        else:
            running = sorted(snap.running, key=_expected_end)
            ends = [r.expected_end for r in running]
            counts = [(r.nodes, r.storage if r.tier == HPS else 0.0) for r in running]
            if any(k < 0 or b < 0.0 for k, b in counts):
                prof.rising = False
        if ends and ends[0] <= now:  # an overran job (sorted: the first end is the earliest)
            ends = [e if e > now else grace_end for e in ends]
            if any(a > b for a, b in zip(ends, ends[1:])):  # an overrun's stand-in end is out of order
                for (k, b), end in zip(counts, ends):
                    prof.add(end, math.inf, -k, -b)
                return prof
        return prof._accumulate((end, k, b) for (k, b), end in zip(counts, ends))

    def _accumulate(self, releases) -> "Profile":
        """Add ``(time, nodes, HPS bytes)`` releases given in time order, each over ``[time, inf)``."""
        times, nodes, hps = self.times, self.nodes, self.hps
        n, h = nodes[0], hps[0]
        for end, k, b in releases:
            n += k
            h += b
            if end == times[-1]:
                nodes[-1], hps[-1] = n, h
            else:
                times.append(end)
                nodes.append(n)
                hps.append(h)
        return self

    def copy(self) -> "Profile":
        p = Profile.__new__(Profile)
        p.times, p.nodes, p.hps, p.eps = list(self.times), list(self.nodes), list(self.hps), self.eps
        p.rising = self.rising
        return p

    # -- editing ------------------------------------------------------------
    def _split(self, t: float) -> int:
        """Index of the segment starting exactly at ``t`` (created if needed)."""
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            raise ValueError(f"time {t} is before the profile's start {self.times[0]}")
        if self.times[i] == t:
            return i
        self._cut(i + 1, t)
        return i + 1

    def _cut(self, i: int, t: float) -> None:
        """A breakpoint at ``t`` as segment ``i``, inside segment ``i - 1``: the same counts on
        both sides of it."""
        self.times.insert(i, t)
        self.nodes.insert(i, self.nodes[i - 1])
        self.hps.insert(i, self.hps[i - 1])

    def _debit(self, i: int, k: int, nodes: int, hps: float) -> None:
        """Segments ``i`` to ``k - 1`` lose ``nodes`` and ``hps`` bytes (no bytes: the byte
        column as it is, since ``x - 0.0`` is ``x``).

        The counts still never fall (``rising``) after a hold from the first segment (the
        last segment held, ``x - a``, is at most ``x``, at most the next one: float
        subtraction of a non-negative amount is monotone) or a release to the end (every
        value from ``i`` on rises by the same amount); any other edit may make them fall."""
        if self.rising and not ((i == 0 and nodes >= 0 and hps >= 0.0)
                                or (k == len(self.times) and nodes <= 0 and hps <= 0.0)):
            self.rising = False
        free = self.nodes
        free[i:k] = [x - nodes for x in free[i:k]]
        if hps != 0.0:
            room = self.hps
            room[i:k] = [x - hps for x in room[i:k]]

    def add(self, start: float, end: float, nodes: int, hps: float = 0.0) -> None:
        """Lower the free counts by ``nodes`` and ``hps`` over ``[start, end)``.

        Negative amounts free resources: ``add(t, inf, -n)`` means *n nodes
        become free at t*.  Unlike :meth:`reserve` this checks nothing.
        """
        if end <= start:
            return
        i = self._split(start)
        j = len(self.times) if math.isinf(end) else self._split(end)
        self._debit(i, j, nodes, hps)

    def reserve(self, start: float, duration: float, nodes: int, hps: float = 0.0) -> None:
        """Hold ``nodes`` and ``hps`` bytes over ``[start, start + duration)``."""
        if not self.fits(start, duration, nodes, hps):
            _refuse(start, duration, nodes, hps)
        self.add(start, start + duration, nodes, hps)

    # -- queries --------------------------------------------------------------
    def fits(self, start: float, duration: float, nodes: int, hps: float = 0.0) -> bool:
        """Whether ``nodes`` and ``hps`` bytes are free throughout ``[start, start + duration)``."""
        times, free, room, eps = self.times, self.nodes, self.hps, self.eps
        k = bisect.bisect_right(times, start) - 1
        if k < 0:
            return False
        if self.rising:  # the later segments have at least as many nodes and bytes as segment k
            return free[k] >= nodes and room[k] + eps >= hps
        end = start + duration
        n = len(times)
        while True:
            if free[k] < nodes or not room[k] + eps >= hps:  # segment k lacks nodes or bytes
                return False
            k += 1
            if k >= n or times[k] >= end:
                return True

    def earliest_fit(self, nodes: int, duration: float, hps: float = 0.0, not_before: float | None = None) -> float:
        """Earliest ``t >= not_before`` where the job fits for ``duration``; ``inf`` if never."""
        return self._search(nodes, duration, hps, not_before)[0]

    def place(self, nodes: int, duration: float, hps: float = 0.0, not_before: float | None = None,
              required: bool = False) -> float:
        """:meth:`earliest_fit` and :meth:`add` over ``[t, t + duration)`` in one: the earliest start, held for
        ``duration``; ``inf``, and nothing held, if the job never fits (``required``: refused
        instead, as :meth:`reserve` refuses, a bug in the policy that asks).

        The same lists, float for float, as the two calls (a :meth:`reserve` without its
        check, since the job fits by construction): the search's segment indices
        are reused for the two splits instead of bisecting again."""
        t, i, k = self._search(nodes, duration, hps, not_before)
        end = t + duration
        if end <= t:  # never fits (inf), or holds nothing (as add)
            if required and t == math.inf:
                _refuse(t, duration, nodes, hps)
            return t
        return self.hold_found(t, i, k, duration, nodes, hps)

    def hold_found(self, t: float, i: int, k: int, duration: float, nodes: int, hps: float = 0.0) -> float:
        """Hold ``nodes`` and ``hps`` bytes over ``[t, t + duration)``, where ``(t, i, k)`` is what
        :meth:`_search` found for them on this profile, unedited since: the second half of
        :meth:`place` (nothing held if ``t + duration <= t``, as :meth:`add`).  Returns ``t``."""
        end = t + duration
        if end <= t:
            return t
        times = self.times
        if times[i] != t:  # split the segment the start falls in (as _split(t))
            i += 1
            k += 1
            self._cut(i, t)
        if end == math.inf:
            k = len(times)
        elif k == len(times) or times[k] != end:  # times[k-1] < end < times[k]: split (as _split(end))
            self._cut(k, end)
        self._debit(i, k, nodes, hps)
        return t

    def _search(self, nodes: int, duration: float, hps: float, not_before: float | None) -> tuple[float, int, int]:
        """``(t, i, k)``: the earliest start ``t`` (``inf`` if never), the segment ``i`` it
        falls in, and the first segment ``k`` at or after its end (``len(times)`` if none).

        It skips past each blocking segment, so one search costs time linear in the
        number of breakpoints."""
        times, free, room, eps = self.times, self.nodes, self.hps, self.eps
        t = times[0] if not_before is None else max(not_before, times[0])
        i = bisect.bisect_right(times, t) - 1
        n = len(times)
        if self.rising:  # the first segment from i on with the nodes and the bytes: they stay free after it
            j = i
            if free[j] < nodes:
                j = bisect.bisect_left(free, nodes, j)
            if j < n and not room[j] + eps >= hps:
                j = first_with_room(room, eps, hps, j)  # the walk's test, x + eps >= hps
            if j >= n:
                return math.inf, n, n
            if j != i:
                i, t = j, times[j]
            return t, i, bisect.bisect_left(times, t + duration, i + 1)
        while True:
            j = i  # no start in a segment that lacks nodes or bytes (as in fits): the next one
            while free[j] < nodes or not room[j] + eps >= hps:
                j += 1
                if j >= n:
                    return math.inf, n, n
            if j != i:
                i = j
                t = times[i]
            end = t + duration
            k = i + 1  # the segments the interval [t, end) reaches after i
            while k < n and times[k] < end:
                if free[k] < nodes or not room[k] + eps >= hps:
                    break
                k += 1
            else:
                return t, i, k
            i = k + 1  # past the blocking segment
            if i >= n:
                break
            t = times[i]
        return math.inf, n, n

    def free_at(self, t: float) -> tuple[int, float]:
        i = bisect.bisect_right(self.times, t) - 1
        return self.nodes[i], self.hps[i]
