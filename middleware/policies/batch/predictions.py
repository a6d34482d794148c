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

__all__ = ["PlanTracker"]


class PlanTracker:
    __slots__ = ("last", "rows")

    def __init__(self) -> None:
        self.last: dict[str, tuple[float, int, float]] = {}  # job -> (planned start, node mask, since) of its last row
        self.rows: list[tuple[str, float, float, int]] = []

    def observe(self, t: float, plan, masks) -> None:
        """The pass at ``t`` planned ``plan``'s entries on ``masks`` (aligned; 0: no set)."""
        last, rows = self.last, self.rows
        for e, m in zip(plan, masks):
            prev = last.get(e.job)
            if prev is None or prev[0] != e.start or prev[1] != m:
                last[e.job] = (e.start, m, t)
                rows.append((e.job, t, e.start, m))

    def stable_since(self, job: str) -> tuple[float, int, float] | None:
        """(planned start, node mask, time since which both are unchanged) of a waiting job."""
        return self.last.get(job)

    def forget(self, job: str) -> None:
        """``job`` started or left the queue: no more plans for it."""
        self.last.pop(job, None)
