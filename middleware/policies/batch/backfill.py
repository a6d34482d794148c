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
- **Conservative** (Mu'alem & Feitelson 2001, ``conservative``): every job
  gets a reservation at arrival, at the earliest slot that delays no earlier
  reservation; holes may be filled by later jobs.  At every decision the
  jobs are re-inserted *in order of their current reservation*, each at the
  earliest slot: a reservation never moves later (a job that moved earlier
  only takes room before its old start, which is before the old starts of
  the jobs after it), unless a running job overran its estimate.
- **Conservative with re-insertion** (soysal2019 §3.4.1's *schedule
  compression*, ``conservative-reinsert``): every job is removed and re-inserted one by one
  in *submit* order at every decision, which can move a reservation later
  when an earlier-submitted job takes a hole that a later one held.  When
  nothing ended early the rebuilt plan is exactly the previous reservations
  plus the new arrivals.
"""

from __future__ import annotations

import bisect
import heapq
import math
from itertools import islice

from iolab.middleware.policies.batch.profile import Profile
from iolab.middleware.policies.batch.snapshot import HPS, LPS, BatchPolicy, Decision, PlanEntry, QueuedJob, Snapshot, Start

_new_tuple = tuple.__new__


def _entry(job: QueuedJob, start: float, reserved: bool = True) -> PlanEntry:
    """The LPS plan entry of ``job`` starting at ``start`` (built as a plain tuple of PlanEntry's
    fields in order: one per waiting job per decision, and the NamedTuple's own __new__ is a call)."""
    return _new_tuple(PlanEntry, (job.id, start, start + job.walltime, job.nodes, LPS, 0.0, reserved))


def _start_now(job: QueuedJob, now: float) -> Start:
    """The start of ``_entry(job, now)`` (what :func:`_decision` makes of that entry)."""
    return Start(job.id, LPS, job.nodes, now + job.walltime, 0.0)


def _placed(job: QueuedJob, start: float, need: tuple[str, float, float]) -> PlanEntry:
    tier, duration, hps = need
    return PlanEntry(job.id, start, start + duration, job.nodes, tier, hps, True)


class _TierByRequest:
    """``hps_requests``: a job that asks for HPS (``storage`` > 0, and no more than the tier
    holds) runs on HPS, its reservation lasting stage-in + run at R_hps + stage-out
    (:meth:`TierRates.duration`) and holding its storage throughout, as SAS's HPS option does;
    every other job, and every job without ``hps_requests``, runs on LPS for its walltime."""

    hps_requests = False

    def _need(self, job: QueuedJob, snap: Snapshot) -> tuple[str, float, float]:
        if self.hps_requests and 0.0 < job.storage <= snap.hps_capacity:
            if snap.rates is None:
                raise ValueError("hps_requests needs the tier rates in the snapshot")
            return HPS, snap.rates.duration(job, HPS), job.storage
        return LPS, job.walltime, 0.0

    def _place(self, prof: Profile, job: QueuedJob, snap: Snapshot, floor: float,
               required: bool = False) -> tuple[float, tuple]:
        """Hold the job at its earliest start not before ``floor``; that start (``inf``, and
        nothing held, if never; ``required``: refused) and the need it is for.  A job whose HPS
        space can never be found in this plan (early copies hold bytes outside the free count
        until their jobs start) runs on LPS, as SAS would place it."""
        need = self._need(job, snap)
        hps = need[0] == HPS
        t = prof.place(job.nodes, need[1], need[2], floor, required and not hps)
        if t == math.inf and hps:
            need = (LPS, job.walltime, 0.0)
            t = prof.place(job.nodes, need[1], 0.0, floor, required)
        return t, need

    def _hold(self, prof: Profile, jobs, snap: Snapshot, behind: int = -1) -> list[PlanEntry]:
        """Each job, in this order, held at its earliest start not before now: the plan
        entries.  A job that never fits is an error.  Without ``hps_requests`` every need
        is (LPS, walltime, no bytes), and the loop says so instead of asking per job.

        With a backfill depth D (Slurm's ``bf_max_job_test``) the jobs are held in this order
        until the first one held later than now (the head) and D more after it (started now or
        reserved); the rest are not held: they have no reservation and do not start.  ``behind``:
        how many jobs were already held after the head (-1: no head yet), for a plan continued."""
        plan: list[PlanEntry] = []
        now = snap.now
        depth = self.backfill_depth
        if depth is not None:  # behind: jobs held after the head (-1: no head yet)
            for job in jobs:
                if behind == depth:
                    break
                t, need = self._place(prof, job, snap, now, required=True)
                plan.append(_placed(job, t, need))
                if behind >= 0 or t != now:
                    behind += 1
            return plan
        if not self.hps_requests:
            place, append = prof.place, plan.append
            for job in jobs:
                append(_entry(job, place(job.nodes, job.walltime, 0.0, now, True)))  # as _placed for (LPS, walltime, 0)
            return plan
        for job in jobs:
            t, need = self._place(prof, job, snap, now, required=True)
            plan.append(_placed(job, t, need))
        return plan


def _shadow(mine: list[tuple[float, int]], releases, k: int, avail: int, need: int) -> tuple[float, int]:
    """EASY's shadow time: the first release time at which ``avail`` free nodes plus those released by
    then reach ``need``, every release at that instant counted, and the nodes free then, ``(shadow,
    avail)`` (``avail`` stays below ``need`` if they never reach it).  The releases are ``mine``, sorted
    ``(time, nodes)``, merged with ``releases[k:]``, sorted ``(time, order, nodes, HPS bytes)`` (the
    kernel's, :attr:`Snapshot.releases`); read in time order only up to the shadow time.  The order among
    equal times does not matter: every release at the shadow time is counted."""
    shadow = math.nan
    i, m, n = 0, len(mine), len(releases)
    while True:
        if i < m and (k >= n or mine[i][0] <= releases[k][0]):
            end, nodes = mine[i]
            i += 1
        elif k < n:
            r = releases[k]
            end, nodes = r[0], r[2]
            k += 1
        else:
            break
        if avail >= need and end != shadow:
            break  # every release at the shadow time counted
        avail += nodes
        shadow = end
    return shadow, avail


def shadow_rule(now: float, free: int, queue, releases, grace: float, depth: int | None):
    """EASY's decision when only the starts and the head's reservation are planned, by the textbook
    rule: ``(starts, k, head, shadow)`` (the jobs that start now in queue order, the first ``k`` of
    them ahead of the head; the head, None if every job starts; its shadow time), or ``None`` where
    the profile search must decide (the head can never fit: that path raises what it raises then; a
    job to plan has no positive walltime).  ``queue``: the waiting jobs in queue order (any
    iterable); ``releases``: the running jobs' ``(expected end, order, nodes, HPS bytes)``, sorted.

    Before any reservation the free nodes never decrease over time (running jobs and the
    jobs started now only release theirs), so a job fits now for its whole walltime iff its
    nodes are free now: the jobs in queue order while they fit start.  The first that does
    not (the head) is reserved at the *shadow time*, the earliest planned end at which its
    nodes are free (every release at that instant counted; a job past its expected end releases
    at ``now + grace``), leaving ``extra`` nodes free there.  A later job then fits now iff its
    nodes are free now and it ends by the shadow time or uses at most the extra nodes (which it
    then holds at the shadow time): the profile's free count only rises between now and the
    shadow time and only rises after it, so ``fits(now, walltime, nodes)`` reads exactly those two
    values.  The same floats (``now + walltime``, the overrun stand-in ``now + grace``), so the
    same plan as the profile search; ``tests/middleware/policies/batch/test_fast_paths.py`` checks both on random
    snapshots.  The releases are read only up to the shadow time.
    """
    it = iter(queue)
    starts: list = []
    mine: list[tuple[float, int]] = []  # (end, nodes) of the jobs started now
    head = None
    for job in it:  # in queue order while they fit
        nodes = job.nodes
        if nodes > free:
            head = job
            break
        w = job.walltime
        if not w > 0:
            return None  # a zero-length reservation holds nothing on the profile: left to it
        starts.append(job)
        mine.append((now + w, nodes))
        free -= nodes
    if head is None:
        return starts, len(starts), None, math.nan
    if not head.walltime > 0:
        return None
    k = len(starts)
    late = 0
    if releases and releases[0][0] <= now:  # past their expected end: released at now + grace
        late = bisect.bisect_right(releases, (now, math.inf))
        mine.append((now + grace, sum(r[2] for r in releases[:late])))
    if len(mine) > 1:
        mine.sort()
    shadow, avail = _shadow(mine, releases, late, free, head.nodes)
    if avail < head.nodes:
        return None  # never: the machine is too small for the head
    extra = avail - head.nodes
    for job in (it if depth is None else islice(it, depth)):
        nodes = job.nodes
        if nodes > free:
            if free == 0:
                break  # nothing more can start now
            continue
        w = job.walltime
        if not w > 0:
            return None
        if now + w > shadow:  # still running at the shadow time: only on the extra nodes
            if nodes > extra:
                continue
            extra -= nodes
        starts.append(job)
        free -= nodes
    return starts, k, head, shadow


def _decision(snap: Snapshot, plan: list[PlanEntry]) -> Decision:
    """The decision of ``plan``: its reserved entries at now start (a projection is not a decision)."""
    now = snap.now
    starts = tuple([Start(e.job, e.tier, e.nodes, e.end, e.storage) for e in plan if e.start == now and e.reserved])
    return Decision(now=snap.now, starts=starts, plan=tuple(plan))


class FCFS(_TierByRequest, BatchPolicy):
    """``project=False`` plans only the jobs that start now (nobody overtakes,
    so the first job that cannot start ends the decision).

    With ``project`` (plan tracking reads every waiting job's start) a decision
    re-plans only until its plan joins the previous one (:func:`fcfs_replan`).
    """

    name = "fcfs"
    plans_in_start_order = True  # planned starts never decrease along the plan (nobody overtakes)
    quick_reads_releases = False  # the quick entry starts the jobs while their nodes are free now

    def __init__(self, project: bool = True, hps_requests: bool = False) -> None:
        super().__init__()
        self.project = project
        self.hps_requests = hps_requests
        self._swept: tuple | None = None  # (releases, available nodes, queue, plan, sweep state) of the last plan

    @property
    def reads_profile(self) -> bool:
        """Deciding only its starts on node counts, it takes the jobs in queue order while their nodes
        are free now (every release is after now): no profile, no releases."""
        return self.project or self.hps_requests

    @property
    def reads_fitting_prefix(self) -> bool:
        """A decision reads the queue only up to the first job whose nodes are not free (the jobs ahead of
        it start): no plan beyond the starts, LPS only, every release after now (a runtime's snapshot
        holding only that prefix gets the same decision)."""
        return not self.project and not self.hps_requests

    def _decide(self, snap: Snapshot) -> Decision:
        if self.hps_requests:  # two resources: the profile search (the sweep counts nodes only)
            return self._decide_on_profile(snap)
        if self.project and self.backfill_depth is not None:
            snap = self._within_depth(snap)
        if not self.project and snap.overrun_grace > 0:
            # only the starts are planned, and every release is after now (a job past its expected
            # end releases at now + overrun_grace): the jobs in queue order while their nodes are free
            now = snap.now
            return _fcfs_decision(snap, [_entry(job, now) for job in fitting_prefix(snap.free_nodes, snap.queue)])
        if not self.project:
            new = fcfs_sweep(snap, False)
            if new is None:
                return self._decide_on_profile(snap)
            return _fcfs_decision(snap, [_entry(job, t) for job, t in zip(snap.queue, new[0])])
        heap = _release_heap(snap)
        releases, avail = release_counts(heap, snap.free_nodes)
        out = fcfs_replan(snap, heap, releases, avail, self._swept)
        if out is None:  # some job never fits (nodes down): the profile search says so (it raises)
            self._swept = None
            return self._decide_on_profile(snap)
        plan, state = out
        self._swept = (releases, avail, snap.queue, plan, state)
        return _fcfs_decision(snap, plan)

    @property
    def quick(self) -> bool:
        """Whether :meth:`quick_starts` decides (deciding its starts only, on node counts)."""
        return self.reads_fitting_prefix

    def quick_starts(self, now: float, free: int, queue, releases, grace: float) -> list | None:
        """The jobs that start now (each on LPS until ``now + walltime``), in queue order, as
        :meth:`decide` starts them without projections, for a runtime that keeps its queue
        (:attr:`quick`): the jobs in queue order while their nodes are free (:func:`fitting_prefix`;
        every release is after now, ``grace`` > 0).  No snapshot, no plan, no decision object; the
        releases are not read."""
        if not grace > 0:
            return None
        self._plan = ()  # no plan made (the runtime reads none)
        return fitting_prefix(free, queue)

    def _within_depth(self, snap: Snapshot) -> Snapshot:
        """``snap`` with its queue cut after the jobs that start now (in queue order while their nodes
        are free: every release is after now), the first that does not (the head) and the backfill
        depth's D jobs behind it.  Nobody overtakes, so the plan of this prefix is the prefix of the
        whole plan: the starts are the same, the jobs cut have no planned start."""
        free, k, queue = snap.free_nodes, 0, snap.queue
        for job in queue:
            if job.nodes > free:
                break
            free -= job.nodes
            k += 1
        n = k + 1 + self.backfill_depth
        if n >= len(queue):
            return snap
        return Snapshot.trusted(now=snap.now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes,
                                queue=queue[:n], running=snap.running, hps_capacity=snap.hps_capacity,
                                hps_free=snap.hps_free, rates=snap.rates, overrun_grace=snap.overrun_grace,
                                releases=snap.releases)

    def _decide_on_profile(self, snap: Snapshot) -> Decision:
        """The same plan by the general profile search (what :func:`fcfs_starts` shortcuts); with a
        backfill depth, the jobs that start now, the head and the D jobs behind it."""
        prof = Profile.from_snapshot(snap)
        plan: list[PlanEntry] = []
        floor = snap.now
        depth = self.backfill_depth if self.project else None
        behind = -1  # jobs planned behind the head (-1: no head yet)
        for job in snap.queue:
            if behind == depth:
                break
            t, need = self._place(prof, job, snap, floor, required=self.project)  # never fits: a bug when projecting
            if t > snap.now and not self.project:
                break
            if behind >= 0 or t > snap.now:
                behind += 1
            plan.append(_placed(job, t, need))
            floor = t
        return _decision(snap, plan)


def fitting_prefix(free: int, queue) -> list:
    """The jobs of ``queue`` (in queue order, any iterable) that start now under FCFS when every
    release is after now: in queue order while their nodes are free (each takes its own).  Reads the
    queue up to the first job that does not fit."""
    out = []
    for job in queue:
        n = job.nodes
        if n > free:
            break
        out.append(job)
        free -= n
    return out


def _fcfs_decision(snap: Snapshot, plan: list[PlanEntry]) -> Decision:
    """:func:`_decision` for a plan in start order: its starts are the entries at ``now``, a prefix."""
    now = snap.now
    starts = []
    for e in plan:
        if e.start != now:
            break
        starts.append(Start(job=e.job, tier=e.tier, nodes=e.nodes, expected_end=e.end, storage=e.storage))
    return Decision(now=now, starts=tuple(starts), plan=tuple(plan))


def release_counts(heap: list[tuple[float, int]], free: int) -> tuple[dict[float, int], int]:
    """The running jobs' node releases (time -> nodes, from :func:`_release_heap`) and the nodes
    not down (free + running)."""
    rel: dict[float, int] = {}
    busy = 0
    for e, k in heap:
        rel[e] = rel.get(e, 0) + k
        busy += k
    return rel, free + busy


def fcfs_replan(snap: Snapshot, heap: list, releases: dict[float, int], avail: int, memo):
    """FCFS's plan (``(plan, sweep state)``, ``None`` if a job never fits), re-planning only
    until it joins the previous plan ``memo`` (``(releases, avail, queue, plan, state)``);
    ``heap`` (consumed), ``releases`` and ``avail``: this snapshot's :func:`_release_heap` and
    :func:`release_counts`.

    The release sweep's future depends only on its time ``t`` and on how many nodes are
    released at each time after ``t`` (the free count at ``t`` follows: the nodes not down
    are the same).  The previous plan's sweep, at the same job, had its own releases; ``D``
    holds the difference (time -> nodes, this sweep minus that one) at times after ``t``:
    the running jobs' releases of both, the placements of the jobs that left the queue
    since (started or cancelled: a prefix of the old queue), and, job by job, this plan's
    placement against the old one.  Where a job gets its old start and ``D`` is empty, the
    two sweeps are in the same state; the jobs after it being the same, they get their old
    entries, and the jobs queued since the old plan continue its final sweep state.  Exact,
    not a heuristic: ``tests/middleware/policies/batch/test_fast_paths.py`` compares it with a fresh sweep on
    random decision sequences.
    """
    queue = snap.queue
    now = snap.now
    old_q = ()
    m = 0  # jobs of the old queue still queued, in the same order: queue[:m] == old_q[a:]
    if memo is not None and memo[1] == avail and queue:
        old_rel, _, old_q, old_plan, old_state = memo
        first = queue[0]
        a, n_old = 0, len(old_q)
        while a < n_old and old_q[a] is not first:
            a += 1
        m = n_old - a
        if m and queue[:m] != old_q[a:]:
            m = 0  # a job left from the middle (cancelled): plan afresh
    if not m:
        swept = fcfs_continue(queue, heap, snap.free_nodes, now, now, True)
        return None if swept is None else ([_entry(job, t) for job, t in zip(queue, swept[0])], swept[1])
    D: dict[float, int] = {}
    keys: list[float] = []
    for tau, k in releases.items():
        _add_into(D, keys, tau, k)
    for tau, k in old_rel.items():
        _add_into(D, keys, tau, -k)
    for e in old_plan[:a]:
        _add_into(D, keys, e.end, -e.nodes)
    free, t = snap.free_nodes, now
    plan: list[PlanEntry] = []
    for i in range(m):
        job = queue[i]
        n = job.nodes
        step = _next_start(heap, free, t, n)
        if step is None:
            return None
        free, t = step
        free -= n
        end = t + job.walltime
        heapq.heappush(heap, (end, n))
        plan.append(PlanEntry(job.id, t, end, n, LPS, 0.0, True))
        old = old_plan[a + i]
        if end != old.end:  # this placement against the old one (same job, same walltime)
            _add_into(D, keys, end, n)
            _add_into(D, keys, old.end, -n)
        if old.start != t:
            continue
        while D and keys and keys[0] <= t:  # releases at or before t are free in both sweeps
            D.pop(heapq.heappop(keys), None)
        if not D:  # joined the old sweep: the rest of it holds
            plan.extend(old_plan[a + i + 1:])
            heap, free, t = list(old_state[0]), old_state[1], old_state[2]
            break
    rest = queue[m:]
    if rest:  # jobs queued since the old plan, behind the last one
        swept = fcfs_continue(rest, heap, free, max(t, now), now, True)
        if swept is None:
            return None
        plan.extend(_entry(job, s) for job, s in zip(rest, swept[0]))
        return plan, swept[1]
    return plan, (tuple(heap), free, t)


def fcfs_starts(snap: Snapshot, project: bool = True) -> list[float] | None:
    """FCFS's planned starts, in queue order, by a sweep over the node releases.

    In FCFS nobody overtakes, so when job *k* is placed every reservation already
    made starts at or before the start of job *k - 1*: from there on the free node
    count only grows (releases of running and planned jobs).  The earliest fit of
    job *k* is then the first release time, not before the previous start, at which
    enough nodes are free, and it fits for good from there.  A heap of release times
    finds it in O(log n) per job, where the profile search walks and splits
    breakpoints (O(n) per job, O(n²) per decision on a long queue).  The times are
    the profile's own floats (``expected_end``, ``now + overrun_grace``,
    ``start + walltime``), so the plans agree to the bit
    (``tests/middleware/policies/batch/test_fast_paths.py``).  ``None`` if a job never fits (nodes down).
    """
    swept = fcfs_sweep(snap, project)
    return None if swept is None else swept[0]


def fcfs_sweep(snap: Snapshot, project: bool = True):
    """:func:`fcfs_starts` and the sweep's state after the last job (releases heap, free
    nodes, last start), from which :func:`fcfs_continue` places jobs queued behind them."""
    return fcfs_continue(snap.queue, _release_heap(snap), snap.free_nodes, snap.now, snap.now, project)


def _release_heap(snap: Snapshot) -> list[tuple[float, int]]:
    """The running jobs' ``(release time, nodes)`` as a heap (a job past its expected end
    releases at ``now + overrun_grace``)."""
    now, grace_end = snap.now, snap.now + snap.overrun_grace
    heap = [(r.expected_end if r.expected_end > now else grace_end, r.nodes) for r in snap.running]
    heapq.heapify(heap)
    return heap


def _next_start(heap: list, free: int, t: float, n: int) -> tuple[int, float] | None:
    """The sweep's step: releases popped from ``heap`` until ``n`` nodes are free; ``(free, t)``
    then (``t`` the last release popped, if later), ``None`` if they never are."""
    while free < n:
        if not heap:
            return None
        end, k = heapq.heappop(heap)
        free += k
        if end > t:
            t = end
    return free, t


def _add_into(diff: dict[float, int], keys: list[float], tau: float, k: int) -> None:
    """``diff[tau] += k``, a time whose difference vanishes leaving ``diff``; a time that enters
    it goes on the ``keys`` heap (which may hold times no longer in ``diff``)."""
    v = diff.get(tau, 0) + k
    if v:
        if tau not in diff:
            heapq.heappush(keys, tau)
        diff[tau] = v
    else:
        del diff[tau]


def fcfs_continue(queue, heap: list, free: int, t: float, now: float, project: bool):
    """Place ``queue`` after a sweep that stopped at ``(heap, free, t)``; ``(starts, state)``
    or ``None`` if a job never fits.  ``heap`` is consumed."""
    push = heapq.heappush
    starts: list[float] = []
    for job in queue:
        n = job.nodes
        step = _next_start(heap, free, t, n)
        if step is None:
            return None
        free, t = step
        if t > now and not project:
            break
        starts.append(t)
        free -= n
        push(heap, (t + job.walltime, n))
    return starts, (tuple(heap), free, t)


class _KeepsReservations:
    """The arrival-only pass of both conservative variants.

    When nothing but arrivals happened since the last decision (the same running jobs with
    the same expected ends, none past it, the same free nodes and HPS bytes, the old queue
    unchanged at the head of the new one, every old reservation still in the future), the
    old jobs keep their reservations: re-inserting them, in reservation order or in submit
    order, finds each at its old start, because the only change since is that time passed
    towards starts that nobody reached.  The new jobs are then inserted, in submit order, into
    the profile the last decision left (with a backfill depth the old plan holds no job at now,
    so its first job is the head: the new jobs are held only while the head has fewer than D
    followers; the old queue's jobs past the depth stay unheld, as deciding afresh leaves them).
    Only for plans without HPS bytes, whose profile's
    byte column stays exactly the free bytes whatever the order of the takes (node counts are
    integers); ``tests/middleware/policies/batch/test_fast_paths.py`` compares it with deciding from scratch on
    random decision sequences.
    """

    def _arrivals_only(self, snap: Snapshot):
        """``(profile copy, old plan, old queue length)`` to continue from, or ``None``."""
        memo = self._kept
        if memo is None:
            return None
        running, free, hps_free, queue, plan, prof, first = memo
        now = snap.now
        k = len(queue)
        if (first > now and free == snap.free_nodes and hps_free == snap.hps_free and running == snap.running
                and snap.queue[:k] == queue and all(r.expected_end > now for r in running)):
            return prof.copy(), plan, k
        return None

    def _keep(self, snap: Snapshot, plan: list[PlanEntry], prof: Profile) -> None:
        lps_only = all(e.storage == 0.0 for e in plan)
        first = min((e.start for e in plan), default=math.inf)
        self._kept = (snap.running, snap.free_nodes, snap.hps_free, snap.queue, plan, prof, first) if lps_only else None

    def _continue(self, snap: Snapshot, kept) -> Decision:
        prof, old, k = kept
        plan = list(old)
        plan += self._hold(prof, snap.queue[k:], snap, len(old) - 1)
        self._keep(snap, plan, prof)
        return plan


class Conservative(_KeepsReservations, _TierByRequest, BatchPolicy):
    """Mu'alem-Feitelson conservative backfilling: reservations kept between decisions."""

    name = "conservative"
    stateful = True  # its reservations carry over: it must see every decision (no skipping when nothing fits)

    def __init__(self, hps_requests: bool = False) -> None:
        super().__init__()
        self.hps_requests = hps_requests
        self._reserved: dict[str, float] = {}  # job -> its reservation's start at the last decision
        self._kept = None  # the last decision's inputs, plan and profile (_KeepsReservations)

    def _decide(self, snap: Snapshot) -> Decision:
        kept = self._arrivals_only(snap)
        if kept is not None:
            plan = self._continue(snap, kept)
            for e in plan[len(kept[1]):]:  # the new jobs' (the old plan holds every old job without a depth)
                if e.start != snap.now:
                    self._reserved[e.job] = e.start
            return _decision(snap, plan)
        prof = Profile.from_snapshot(snap)
        old = self._reserved
        pos = {job.id: i for i, job in enumerate(snap.queue)}
        known = sorted((j for j in snap.queue if j.id in old), key=lambda j: old[j.id])  # stable: ties in queue order
        plan = self._hold(prof, known + [j for j in snap.queue if j.id not in old], snap)
        plan.sort(key=lambda e: pos[e.job])  # the plan in queue order, like the others'
        self._reserved = {e.job: e.start for e in plan if e.start != snap.now}
        self._keep(snap, plan, prof)
        return _decision(snap, plan)


class ConservativeReinsert(_KeepsReservations, _TierByRequest, BatchPolicy):
    """soysal2019's conservative backfilling: all jobs re-inserted in submit order each decision."""

    name = "conservative-reinsert"

    def __init__(self, hps_requests: bool = False) -> None:
        super().__init__()
        self.hps_requests = hps_requests
        self._kept = None  # the last decision's inputs, plan and profile (_KeepsReservations)

    def _decide(self, snap: Snapshot) -> Decision:
        kept = self._arrivals_only(snap)
        if kept is not None:
            return _decision(snap, self._continue(snap, kept))
        prof = Profile.from_snapshot(snap)
        plan = self._hold(prof, snap.queue, snap)
        self._keep(snap, plan, prof)
        return _decision(snap, plan)


class EASY(BatchPolicy):
    """``project=False`` leaves the projected (unreserved) jobs out of the plan."""

    name = "easy"

    def __init__(self, project: bool = True) -> None:
        super().__init__()
        self.project = project

    @property
    def reads_profile(self) -> bool:
        """Without projections the shadow rule decides, reading the sorted releases only (the profile
        search only where that rule leaves the decision to it)."""
        return self.project

    def _decide(self, snap: Snapshot) -> Decision:
        if not self.project and float(snap.hps_free or 0.0) >= 0:
            d = self._decide_by_shadow(snap)
            if d is not None:
                return d
        return self._decide_on_profile(snap)

    def _decide_by_shadow(self, snap: Snapshot) -> Decision | None:
        """The decision :meth:`_decide_on_profile` makes when only the starts and the head's
        reservation are planned (``project`` off), without building the profile: the textbook
        rule (:func:`shadow_rule`), which that search amounts to here.  ``None`` (the profile path
        decides) where that rule leaves the decision to it."""
        now, queue = snap.now, snap.queue
        releases = snap.releases
        if releases is None:  # the running jobs' releases in the order a kept list holds them
            releases = sorted([(r.expected_end, i, r.nodes, 0.0) for i, r in enumerate(snap.running)])
        out = shadow_rule(now, snap.free_nodes, queue, releases, snap.overrun_grace, self.backfill_depth)
        if out is None:
            return None
        starts, k, head, shadow = out
        plan = [_entry(job, now) for job in starts[:k]]
        if head is None:
            return Decision(now, tuple([_start_now(job, now) for job in starts]), tuple(plan))
        plan.append(_entry(head, shadow))
        plan += [_entry(job, now) for job in starts[k:]]
        if shadow == now:  # a walltime lost in now's rounding: the head's entry reads as a start, as _decision says
            return _decision(snap, plan)
        return Decision(now, tuple([_start_now(job, now) for job in starts]), tuple(plan))

    def quick_starts(self, now: float, free: int, queue, releases, grace: float) -> list | None:
        """The jobs that start now (each on LPS until ``now + walltime``), in the decision's order, by the
        rule :meth:`_decide_by_shadow` decides by, for a runtime that keeps its queue and releases
        (:attr:`quick`): no snapshot, no plan, no decision object.  ``queue``: the waiting jobs in queue
        order (an iterable); ``releases``: the running jobs' releases sorted as
        :attr:`Snapshot.releases` says.  ``None``: decide on a snapshot (:meth:`decide`)."""
        out = shadow_rule(now, free, queue, releases, grace, self.backfill_depth)
        if out is None:
            return None
        self._plan = ()  # no plan made (the runtime reads none)
        starts, k, head, shadow = out
        if shadow == now:  # the head's reservation is now: it starts too, in plan order
            starts.insert(k, head)
        return starts

    @property
    def quick(self) -> bool:
        """Whether :meth:`quick_starts` decides (what the shadow rule decides: no projections)."""
        return not self.project

    def _decide_on_profile(self, snap: Snapshot) -> Decision:
        prof = Profile.from_snapshot(snap)
        decided: dict[str, PlanEntry] = {}
        head = None
        free_now = prof.nodes  # free_now[0]: the nodes free at now (segment 0 starts at now)
        tries = -1 if self.backfill_depth is None else self.backfill_depth  # jobs behind the head left to try
        for job in snap.queue:
            if head is not None:  # after the head, only "does it fit now?" matters: no search ahead
                if not tries:
                    break  # the backfill depth is reached: the rest wait for the next decision
                tries -= 1
                if job.nodes > free_now[0]:  # what fits() would find first, without the call
                    if free_now[0] == 0:
                        break  # nothing more can start now
                    continue
                if prof.fits(snap.now, job.walltime, job.nodes):  # backfilled around the head's reservation
                    prof.reserve(snap.now, job.walltime, job.nodes)
                    decided[job.id] = _entry(job, snap.now)
                continue
            t = prof.place(job.nodes, job.walltime, not_before=snap.now, required=True)
            decided[job.id] = _entry(job, t)
            if t != snap.now:  # the head job: the only reservation
                head = job.id
                k = len(decided) - 1  # its place in the queue (every job ahead of it starts now)
        # Project the others, in submit order, for the record (with a depth only the first D behind the
        # head: the others have no planned start, as in Slurm).
        plan = []
        last = len(snap.queue) if self.backfill_depth is None or head is None else k + 1 + self.backfill_depth
        for i, job in enumerate(snap.queue):
            e = decided.get(job.id)
            if e is None and (not self.project or i >= last):
                continue
            if e is None:
                t = prof.place(job.nodes, job.walltime, not_before=snap.now, required=True)
                e = _entry(job, t, reserved=False)
            plan.append(e)
        return _decision(snap, plan)
