"""Compute-only batch schedulers: FCFS, EASY and conservative backfilling.

All three plan every waiting job on the compute nodes for its requested
walltime (LPS tier; HPS is the business of :mod:`.sas`).

- **FCFS** (soysal2019 §3.4.1): jobs start in submit order; a job is planned
  at the earliest slot not before the planned start of the job ahead of it,
  so nobody overtakes.  When a job ends early, the plan is rebuilt in the
  same order: jobs only move to earlier slots and keep their relative order.
- **EASY** (Lifka 1995, the backfilling lackner2019 and the KTH log use): the
  first job that cannot start gets a reservation; a later job starts now only
  if it fits around that reservation (it never delays the head).  The other
  waiting jobs get a projected start (``reserved=False``).
- **Conservative** (soysal2019 §3.4.1, Mu'alem & Feitelson 2001): every job
  gets a reservation, in submit order, at the earliest slot that delays no
  earlier job; holes may be filled by later jobs.  The plan is rebuilt from
  scratch on every decision: removing every job and re-inserting them one by
  one in submit order is soysal2019's *schedule compression* when a job ends
  early, and when nothing ended early the rebuilt plan is exactly the
  previous reservations plus the new arrivals (each new job was submitted
  last, so it is inserted last).
"""

from __future__ import annotations

from .profile import Profile
from .snapshot import LPS, BatchPolicy, Decision, PlanEntry, QueuedJob, Snapshot, Start


def _entry(job: QueuedJob, start: float, reserved: bool = True) -> PlanEntry:
    return PlanEntry(job=job.id, start=start, end=start + job.walltime, nodes=job.nodes,
                     tier=LPS, storage=0.0, reserved=reserved)


def _decision(snap: Snapshot, plan: list[PlanEntry]) -> Decision:
    starts = tuple(Start(job=e.job, tier=e.tier, nodes=e.nodes, expected_end=e.end, storage=e.storage)
                   for e in plan if e.start == snap.now)
    return Decision(now=snap.now, starts=starts, plan=tuple(plan))


class FCFS(BatchPolicy):
    """``project=False`` plans only the jobs that start now (nobody overtakes,
    so the first job that cannot start ends the decision)."""

    name = "fcfs"

    def __init__(self, project: bool = True) -> None:
        super().__init__()
        self.project = project

    def _decide(self, snap: Snapshot) -> Decision:
        prof = Profile.from_snapshot(snap)
        plan: list[PlanEntry] = []
        floor = snap.now
        for job in snap.queue:
            t = prof.earliest_fit(job.nodes, job.walltime, not_before=floor)
            if t > snap.now and not self.project:
                break
            prof.reserve(t, job.walltime, job.nodes)
            plan.append(_entry(job, t))
            floor = t
        return _decision(snap, plan)


class Conservative(BatchPolicy):
    name = "conservative"

    def _decide(self, snap: Snapshot) -> Decision:
        prof = Profile.from_snapshot(snap)
        plan: list[PlanEntry] = []
        for job in snap.queue:
            t = prof.earliest_fit(job.nodes, job.walltime, not_before=snap.now)
            prof.reserve(t, job.walltime, job.nodes)
            plan.append(_entry(job, t))
        return _decision(snap, plan)


class EASY(BatchPolicy):
    """``project=False`` leaves the projected (unreserved) jobs out of the plan."""

    name = "easy"

    def __init__(self, project: bool = True) -> None:
        super().__init__()
        self.project = project

    def _decide(self, snap: Snapshot) -> Decision:
        prof = Profile.from_snapshot(snap)
        decided: dict[str, PlanEntry] = {}
        head = None
        for job in snap.queue:
            if head is not None:  # after the head, only "does it fit now?" matters: no search ahead
                if prof.fits(snap.now, job.walltime, job.nodes):  # backfilled around the head's reservation
                    prof.reserve(snap.now, job.walltime, job.nodes)
                    decided[job.id] = _entry(job, snap.now)
                continue
            t = prof.earliest_fit(job.nodes, job.walltime, not_before=snap.now)
            prof.reserve(t, job.walltime, job.nodes)
            decided[job.id] = _entry(job, t)
            if t != snap.now:  # the head job: the only reservation
                head = job.id
        # Project the others, in submit order, for the record.
        plan = []
        for job in snap.queue:
            e = decided.get(job.id)
            if e is None and not self.project:
                continue
            if e is None:
                t = prof.earliest_fit(job.nodes, job.walltime, not_before=snap.now)
                prof.reserve(t, job.walltime, job.nodes)
                e = _entry(job, t, reserved=False)
            plan.append(e)
        return _decision(snap, plan)
