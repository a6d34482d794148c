"""Where and when a whole-node job fits, as Slurm 22.05's select/cons_tres and sched/backfill decide it.

Nodes are ids ``0..N-1`` in Slurm's node order (``n1`` is 0) and node sets are int masks (bit i = node i).
Three rules, each a function of this module:

- :func:`best_fit`: the nodes a job gets among usable ones (cons_tres ``_eval_nodes``, no topology, equal
  node weights): the usable nodes form runs of consecutive ids; the job takes the first run that holds it
  with the fewest nodes (a tight fit), else the largest run (the first of equal ones) and then the next
  best run for what is left, each run from its lowest id.
- :func:`will_run`: when and where a job could start on ``avail`` nodes (cons_common ``_will_run_test``):
  now if its nodes are free; else the running jobs on those nodes are taken away in order of their
  expected end, not one by one but in groups: the first group is every job ending by the first end
  rounded up to a multiple of 30 s on the wall clock plus 30 s, and the window doubles for each next
  group (``bf_window_linear`` adds to it instead).  The start it reports is the end of the last job of
  the group after which the job fits, which may be later than the first instant it fits.
- :class:`NodeSpace`: the backfill pass's map of future node availability (backfill.c ``node_space``):
  segments of time, each with the nodes not reserved in it, split by each reservation added.

Pure: no clock; ``epoch`` is the wall-clock time (seconds since 1970) of a run's time 0, since Slurm rounds
its times on its own clock.
"""

from __future__ import annotations

__all__ = ["NodeSpace", "best_fit", "runs", "will_run"]


def runs(mask: int) -> list[list[int]]:
    """The runs of consecutive set bits of ``mask``, in increasing order, as ``[first id, length]``."""
    out: list[list[int]] = []
    i = 0
    while mask:
        if mask & 1:
            if out and out[-1][0] + out[-1][1] == i:
                out[-1][1] += 1
            else:
                out.append([i, 1])
        mask >>= 1
        i += 1
    return out


def best_fit(usable: int, n: int) -> int | None:
    """The ``n`` nodes cons_tres gives a whole-node job among the ``usable`` ones (mask), None if fewer."""
    if usable.bit_count() < n:
        return None
    rs = runs(usable)
    chosen, rem = 0, n
    while rem > 0:
        best = -1
        for i, (_, length) in enumerate(rs):
            if length == 0:
                continue
            if best < 0:
                best = i
                continue
            blen = rs[best][1]
            if length >= rem and (blen < rem or length < blen):
                best = i  # the first run that holds the rest, then the tightest one
            elif length < rem and blen < rem and length > blen:
                best = i  # nothing holds the rest yet: the largest run
        first, length = rs[best]
        take = min(length, rem)
        chosen |= ((1 << take) - 1) << first
        rem -= take
        rs[best][1] = 0
    return chosen


def will_run(n: int, avail: int, free: int, running, now: float, *, epoch: float = 0.0,
             window_linear: float = 0.0, guess: float = 1.0) -> tuple[float, int] | None:
    """When and on which nodes a job of ``n`` whole nodes could start within ``avail`` (mask): ``(start,
    mask)``, or None if it never fits there.  ``free``: the nodes idle now; ``running``: ``(expected
    end, mask)`` of the running jobs, any order.  A job past its expected end is assumed to end ``guess``
    seconds from ``now`` (Slurm: its end plus KillWait, at least a second from now)."""
    m = best_fit(avail & free, n)
    if m is not None:
        return now, m
    usable = avail & free
    jobs = sorted(running, key=lambda r: r[0])
    barrier = 0.0
    window = 30.0
    i = 0
    more = True
    while more:
        last = None
        nxt = None
        while True:
            if i >= len(jobs):
                more = False
                break
            end, mask = jobs[i]
            i += 1
            if not mask & avail:
                continue  # frees none of the nodes looked at
            if last is None and barrier == 0.0:  # aligned on the wall clock's multiples of 30 s
                barrier = end + (30.0 - (end + epoch) % 30.0)
            last = end
            usable |= mask & avail
            if i >= len(jobs):
                more = False
                break
            nxt = jobs[i][0]  # the next to end, whether it frees any of these nodes or not
            if nxt > barrier + window:
                break
        if last is None:
            break
        while nxt is not None and nxt > barrier + window:
            window = window + window_linear if window_linear > 0 else window * 2
        m = best_fit(usable, n)
        if m is not None:
            return (last if last > now else now + guess), m
    return None


class NodeSpace:
    """The backfill pass's reservations: ordered segments ``[begin, end, nodes not reserved]`` covering
    ``[begin, window end)`` (backfill.c ``node_space``; its merging of equal neighbours, a speed-up, is left
    out: it changes no answer of this class)."""

    def __init__(self, begin: float, end: float, nodes: int, resolution: float):
        self.segs: list[list] = [[begin, end, nodes]]
        self.resolution = resolution

    def reserve(self, start: float, end: float, mask: int) -> None:
        """Take ``mask`` from ``[start, end)`` (``_add_reservation``): at least one resolution long, never
        before the map's beginning; nothing if it starts after the map's end."""
        segs = self.segs
        start = max(start, segs[0][0])
        end = max(end, start + self.resolution)
        i = next((k for k, s in enumerate(segs) if s[1] > start or s[1] == start), None)
        if i is None:
            return
        if segs[i][1] == start:  # a boundary already: the reservation begins with the next segment
            i += 1
        elif segs[i][0] < start:  # split at the start
            s = segs[i]
            segs.insert(i + 1, [start, s[1], s[2]])
            s[1] = start
            i += 1
        while i < len(segs):
            s = segs[i]
            if end < s[1]:  # split at the end
                segs.insert(i + 1, [end, s[1], s[2]])
                s[1] = end
            s[2] &= ~mask
            if end == s[1]:
                break
            i += 1

    def avail(self, nodes: int, start: float, end: float) -> tuple[int, float]:
        """The nodes of ``nodes`` not reserved anywhere in the window ``[start, end]`` (a segment counts
        if it ends after ``start`` and begins at or before ``end``), and ``later``: the end of the first
        segment after ``start`` past which more of ``nodes`` are free, the next start worth trying (0:
        none)."""
        avail, later = nodes, 0.0
        segs = self.segs
        for k, s in enumerate(segs):
            if s[1] > start and k + 1 < len(segs) and not later:
                nxt = nodes & segs[k + 1][2]
                if nxt & ~(avail & s[2]):
                    later = s[1]
            if s[1] <= start:
                continue
            if s[0] <= end:
                avail &= s[2]
            else:
                break
        return avail, later

    def overlaps(self, mask: int, start: float, end: float) -> bool:
        """Whether ``mask`` holds a node reserved in a segment that overlaps ``(start, end)``
        (``_test_resv_overlap``)."""
        return any(s[1] > start and s[0] < end and mask & ~s[2] for s in self.segs)
