"""Plan tracking for soysal2019's node-allocation prediction (T_NAP, §3.1).

After every scheduling pass the kernel hands :class:`PlanTracker` the planned
start and planned node set (a mask, :mod:`.nodes`) of every waiting job.  Only
*changes* are kept: a row ``(job, time, planned start, node mask)`` is added
when a job's planned start or planned node set differs from its previous
row (its first plan is a change from nothing).  Memory is thus bounded by
the number of changes, not the number of passes times the queue length.

T_NAP of a started job (``tnap``) = its start minus the time of the last row
whose node set differs from the row before it (the first row counts); the
pass that starts a job plans it at ``now`` on the very nodes the allocator
gives it, so a set changed at the start gives T_NAP = 0.  A job started at
its submission is *instant*.  ``iolab.metrics.tnap`` computes the same from
a trace's ``predictions`` table alone.
"""

from __future__ import annotations

from array import array

__all__ = ["PlanRows", "PlanTracker"]


class PlanRows:
    """The rows ``(job, time, planned start, node mask)`` kept as columns: ~24 bytes a row (the
    times as C doubles, job ids and equal masks shared) instead of a ~180-byte tuple of boxed
    values.  A FCFS run over SDSC-BLUE records tens of millions of changes.  Iterating gives
    the rows as tuples; ``len`` their number."""

    __slots__ = ("job", "time", "start", "mask")

    def __init__(self) -> None:
        self.job: list[str] = []
        self.time = array("d")
        self.start = array("d")
        self.mask: list[int] = []

    def __len__(self) -> int:
        return len(self.job)

    def __iter__(self):
        return zip(self.job, self.time, self.start, self.mask)


class PlanTracker:
    __slots__ = ("last", "rows", "_masks")

    def __init__(self) -> None:
        self.last: dict[str, tuple[float, int, float]] = {}  # job -> (planned start, node mask, since) of its last row
        self.rows = PlanRows()
        self._masks: dict[int, int] = {}  # each distinct node set kept once

    def observe(self, t: float, plan, masks) -> None:
        """The pass at ``t`` planned ``plan``'s entries on ``masks`` (aligned; 0: no set)."""
        last, rows = self.last, self.rows
        add_job, add_time, add_start, add_mask = rows.job.append, rows.time.append, rows.start.append, rows.mask.append
        shared = self._masks.setdefault
        for e, m in zip(plan, masks):
            prev = last.get(e.job)
            if prev is None or prev[0] != e.start or prev[1] != m:
                m = shared(m, m)
                last[e.job] = (e.start, m, t)
                add_job(e.job)
                add_time(t)
                add_start(e.start)
                add_mask(m)

    def stable_since(self, job: str) -> tuple[float, int, float] | None:
        """(planned start, node mask, time since which both are unchanged) of a waiting job."""
        return self.last.get(job)

    def forget(self, job: str) -> None:
        """``job`` started or left the queue: no more plans for it."""
        self.last.pop(job, None)
