"""Storage-aware scheduling (lackner2019 Alg. 1 and 2) and random tier assignment.

For each job the scheduler finds two candidate schedules in the current
reservation plan (the running jobs and the jobs started in this pass):

- LPS: the job holds its nodes for its walltime;
- HPS: it holds its nodes *and* ``storage`` HPS bytes for stage-in
  (input / R_stage) + run with its I/O at R_hps + stage-out (output / R_stage).

The turnaround of each is its planned end minus the submit time (Eq. 1 and
its HPS counterpart); HPS is chosen only if strictly shorter (Alg. 2 line 3),
so a job that asks for no storage, or more than the HPS holds, uses LPS.

Alg. 1: in submit order, start jobs whose chosen schedule starts now; the
first one that cannot start is the priority job ``j1``: it gets a
reservation (its chosen schedule).  Then the other waiting jobs are tried in
shortest-job-first order (walltime, then smaller storage, then submit
order); one starts if its chosen schedule starts now and still fits with
``j1``'s reservation in the plan, i.e. does not delay ``j1`` (Alg. 2 l. 8-9).

:class:`RandomTier` is lackner2019's baseline (§V-A): the tier of each job is
a Bernoulli(p) draw (HPS with probability p), made once per job, and the
same backfilling skeleton schedules it on that tier.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

import numpy as np

from iolab.middleware.policies.batch.profile import Profile, first_with_room
from iolab.middleware.policies.batch.snapshot import HPS, LPS, BatchPolicy, Decision, PlanEntry, QueuedJob, Snapshot, Start, TierRates


@dataclass(frozen=True, slots=True)
class Option:
    """A candidate schedule of one job on one tier."""

    tier: str
    start: float
    duration: float
    nodes: int
    storage: float

    @property
    def end(self) -> float:
        return self.start + self.duration

    def turnaround(self, submit: float) -> float:
        return self.end - submit


def tier_options(job: QueuedJob, prof: Profile, rates: TierRates, now: float,
                 hps_capacity: float) -> dict[str, Option]:
    """find-lps-schedule and find-hps-schedule of Alg. 2 (HPS only if possible)."""
    d = rates.duration(job, LPS)
    out = {LPS: Option(LPS, prof.earliest_fit(job.nodes, d, 0.0, now), d, job.nodes, 0.0)}
    if 0 < job.storage <= hps_capacity * (1 + 1e-12):
        dh = rates.duration(job, HPS)
        out[HPS] = Option(HPS, prof.earliest_fit(job.nodes, dh, job.storage, now), dh, job.nodes, job.storage)
    return out


def _durations(job: QueuedJob, snap: Snapshot) -> tuple[float, float | None, float]:
    """``(LPS, HPS, shorter)``: the job's reservation on each tier :func:`tier_options` offers it
    (HPS None if it offers none) and the shorter of the two."""
    d = snap.rates.duration(job, LPS)
    if 0 < job.storage <= snap.hps_capacity * (1 + 1e-12):
        dh = snap.rates.duration(job, HPS)
        return d, dh, min(d, dh)
    return d, None, d


def choose_tier(job: QueuedJob, options: dict[str, Option]) -> Option:
    """Alg. 2 lines 3-7: HPS iff T_hps < T_lps (ties and no request: LPS)."""
    lps = options[LPS]
    hps = options.get(HPS)
    if hps is not None and hps.turnaround(job.submit) < lps.turnaround(job.submit):
        return hps
    return lps


def sjf_key(job: QueuedJob, index: int) -> tuple:
    """Backfilling order of Alg. 1 line 6: shortest job first, ties smaller storage."""
    return (job.walltime, job.storage, job.submit, index)


class _TieredBackfill(BatchPolicy):
    """Alg. 1 skeleton; subclasses say how a job's schedule is chosen.

    ``project=False`` leaves the jobs that neither start nor hold the
    reservation out of the plan (a long queue decides much faster).
    """

    def __init__(self, project: bool = True) -> None:
        super().__init__()
        self.project = project
        self._lengths: dict[str, tuple] = {}  # job id -> _durations (kept by _durations_by_id)
        self._lengths_key: tuple | None = None

    def _choose(self, job: QueuedJob, prof: Profile, snap: Snapshot) -> Option:
        raise NotImplementedError

    def _backfill_options(self, job: QueuedJob, prof: Profile, snap: Snapshot) -> list[Option]:
        """The schedules a backfilled job may start on, in order of preference (Alg. 2: its best one)."""
        return [self._choose(job, prof, snap)]

    def _decide(self, snap: Snapshot) -> Decision:
        if snap.rates is None:
            raise ValueError(f"{self.name} needs the tier rates in the snapshot (Snapshot.rates)")
        self._prepare(snap)
        base = Profile.from_snapshot(snap)  # RQ: running jobs + jobs started in this pass
        chosen: dict[str, tuple[Option, bool]] = {}
        head: QueuedJob | None = None
        with_head: Profile | None = None
        # Alg. 1 lines 1-5: in queue order while jobs start.  Every start holds from now, so the base
        # profile stays rising (Profile.rising: its searches are bisections) through the whole pass.
        head_opt: Option | None = None
        k = 0  # the queue's first k jobs start (and the next is j1)
        for job in snap.queue:
            opt = self._choose(job, base, snap)
            if opt.start == snap.now:
                base.reserve(opt.start, opt.duration, opt.nodes, opt.storage)
                chosen[job.id] = (opt, True)
                k += 1
                continue
            head, head_opt = job, opt
            chosen[job.id] = (opt, True)
            break
        rising = base.rising
        if head_opt is not None and (self.project or not rising):
            with_head = base.copy()
            if math.isfinite(head_opt.start):
                with_head.reserve(head_opt.start, head_opt.duration, head_opt.nodes, head_opt.storage)
        # Alg. 1 lines 6-8: backfill the rest shortest-job-first; never delay j1 (no node free now: none
        # starts, every job needing one).
        if head is not None and base.nodes[0] > 0:
            # sjf_key's tuples built inline and sorted without a key call (the index is unique: the
            # job itself is never compared): a long queue is sorted at every decision.  The rest are
            # the jobs behind j1 (those ahead of it started); without a depth, only those whose nodes
            # are free now (the pass only takes nodes: the others cannot start in it).
            queue = itertools.islice(enumerate(snap.queue), k + 1, None)
            if self.backfill_depth is None:
                free0 = base.nodes[0]
                if rising and head_opt is not None and math.isfinite(head_opt.start):
                    # ... and, of those, only the ones that could be accepted below: a job that needs more
                    # nodes than j1 leaves at its start (the extra nodes, h_nodes before any start; the
                    # pass only lowers them) and both of whose reservations end after j1's start would
                    # delay j1 on either tier (ok_l and ok_h below are false: now + the shorter one is
                    # the earlier of the two ends).  A queue grows with the machine; most of its jobs are
                    # such.  The same decisions, with fewer candidates sorted and looked at.
                    sh0 = head_opt.start
                    extra = base.nodes[bisect.bisect_right(base.times, sh0) - 1] - head_opt.nodes
                    lengths = self._durations_by_id(snap)
                    now = snap.now

                    def shorter(j: QueuedJob) -> float:
                        ds = lengths.get(j.id)
                        if ds is None:
                            ds = lengths[j.id] = _durations(j, snap)
                        return ds[2]

                    rest = [(j.walltime, j.storage, j.submit, i, j) for i, j in queue
                            if j.nodes <= free0 and (j.nodes <= extra or now + shorter(j) <= sh0)]
                else:
                    rest = [(j.walltime, j.storage, j.submit, i, j) for i, j in queue if j.nodes <= free0]
                rest.sort()
            else:
                rest = [(j.walltime, j.storage, j.submit, i, j) for i, j in queue]
                rest.sort()
                del rest[self.backfill_depth:]  # Slurm's bf_max_job_test: the first D in backfill order
            literal = self._inline_literal()
            free_now = base.nodes  # segment 0 starts now: the nodes free now, as the pass takes them
            free_bytes = base.hps
            eps = base.eps
            now = snap.now
            durations = self._durations_by_id(snap)
            # A candidate starts only on an option that starts now and fits with j1's reservation:
            # with_head.fits(now, d, nodes, bytes), which reads with_head's segments 0..j (j: the last
            # one starting before now + d), and it starts now at all iff base.fits(now, d, nodes, bytes)
            # (earliest_fit(..., now) is now iff it fits from now): both are answered without a walk, so
            # that a job neither of whose tiers could be accepted is skipped before its searches, and the
            # searches of a tier that could not be accepted are spared where the choice allows (the same
            # decisions: see _now_options).
            if rising:
                # base rises from segment 0 (its free counts, those of with_head's segment 0), and so does
                # with_head except from j1's reservation on: its segments from j1's start to j1's end rise
                # from the first, whose counts (h_nodes, h_bytes) are kept here as with_head's are (the same
                # subtractions in the same order), and the later ones are base's again.  So segments
                # 0..j of with_head hold at least min(segment 0, that first segment if it starts before
                # now + d), the same answer as the prefix minima of the profile (the walk's).
                sh = head_opt.start if head_opt is not None else math.inf
                if math.isfinite(sh):
                    i = bisect.bisect_right(base.times, sh) - 1
                    h_nodes = base.nodes[i] - head_opt.nodes
                    h_bytes = base.hps[i] - head_opt.storage if head_opt.storage != 0.0 else base.hps[i]
            else:
                # the prefix minima of each profile's free nodes and bytes (rebuilt after a start) answer
                # fits(now, d, ...) for each tier's duration by a bisection
                times = with_head.times
                least_n = list(itertools.accumulate(with_head.nodes, min))
                least_b = list(itertools.accumulate(with_head.hps, min))
                btimes = base.times
                base_n = list(itertools.accumulate(base.nodes, min))
                base_b = list(itertools.accumulate(base.hps, min))
            for entry in rest:
                job = entry[4]
                n = job.nodes
                if n > free_now[0]:
                    # neither tier can start now (a start now needs the nodes free now): no option
                    # is computed, the same decision as computing both and finding neither at now
                    if not free_now[0]:
                        break
                    continue
                ds = durations.get(job.id)
                if ds is None:
                    ds = durations[job.id] = _durations(job, snap)
                end = now + ds[0]
                hd = ds[1]
                if rising:
                    room = free_bytes[0] + eps
                    now_l = room >= 0.0  # the LPS schedule starts now (its nodes are free now)
                    ok_l = now_l and (end <= sh or (n <= h_nodes and h_bytes + eps >= 0.0))  # ... and fits with j1
                    ok_h = now_h = False
                    if hd is not None:
                        endh = now + hd
                        now_h = room >= job.storage
                        ok_h = now_h and (endh <= sh or (n <= h_nodes and h_bytes + eps >= job.storage))
                    if not (ok_l or ok_h):
                        continue
                    if literal:  # SAS._now_options and the acceptance below, written out (the same floats)
                        if hd is None:
                            opt = Option(LPS, now, ds[0], n, 0.0)  # ok_l: it starts now and fits with j1
                        else:
                            if now_h:  # (then now_l too: room >= storage > 0) both start now
                                when_h = now
                            else:  # the HPS schedule starts where the bytes are free (the nodes are, now)
                                i = first_with_room(free_bytes, eps, job.storage)
                                when_h = base.times[i] if i < len(free_bytes) else math.inf
                            if (when_h + hd) - job.submit < end - job.submit:  # HPS is the best schedule
                                if not ok_h:
                                    continue
                                opt = Option(HPS, now, hd, n, job.storage)
                            else:
                                if not ok_l:
                                    continue
                                opt = Option(LPS, now, ds[0], n, 0.0)
                        base.reserve(now, opt.duration, n, opt.storage)
                        if with_head is not None:
                            with_head.reserve(now, opt.duration, n, opt.storage)
                        if sh < opt.end:  # it holds j1's first segment too
                            h_nodes -= n
                            if opt.storage != 0.0:
                                h_bytes -= opt.storage
                        chosen[job.id] = (opt, True)
                        continue
                else:
                    j = bisect.bisect_left(times, end) - 1
                    ok_l = n <= least_n[j] and least_b[j] + eps >= 0.0  # with_head.fits of the LPS schedule
                    ok_h = now_h = False
                    if hd is not None:
                        endh = now + hd
                        j = bisect.bisect_left(times, endh) - 1
                        ok_h = n <= least_n[j] and least_b[j] + eps >= job.storage  # ... of the HPS schedule
                    if not (ok_l or ok_h):
                        continue
                    j = bisect.bisect_left(btimes, end) - 1
                    now_l = n <= base_n[j] and base_b[j] + eps >= 0.0  # the LPS schedule starts now
                    if hd is not None:
                        j = bisect.bisect_left(btimes, endh) - 1
                        now_h = n <= base_n[j] and base_b[j] + eps >= job.storage  # the HPS schedule starts now
                for opt in self._now_options(job, base, snap, ds, (ok_l, ok_h, now_l, now_h)):
                    if ok_h if opt.tier == HPS else ok_l:
                        base.reserve(opt.start, opt.duration, opt.nodes, opt.storage)
                        if with_head is not None:
                            with_head.reserve(opt.start, opt.duration, opt.nodes, opt.storage)
                        if rising:
                            if sh < opt.start + opt.duration:  # it holds j1's first segment too
                                h_nodes -= opt.nodes
                                if opt.storage != 0.0:
                                    h_bytes -= opt.storage
                        else:
                            times, btimes = with_head.times, base.times
                            least_n = list(itertools.accumulate(with_head.nodes, min))
                            least_b = list(itertools.accumulate(with_head.hps, min))
                            base_n = list(itertools.accumulate(base.nodes, min))
                            base_b = list(itertools.accumulate(base.hps, min))
                        chosen[job.id] = (opt, True)
                        break
        # The plan: started jobs, j1's reservation, and a projection of the rest.  With a backfill depth
        # only the first D waiting jobs behind j1 (queue order) are projected: the others have no planned
        # start (Slurm's bf_max_job_test), so neither plan tracking nor the projection grows with the queue.
        proj = with_head if with_head is not None else base
        plan: list[PlanEntry] = []
        starts: list[Start] = []
        last = len(snap.queue) if self.backfill_depth is None else k + 1 + self.backfill_depth  # j1 is queue[k]
        inline = self.project and self._inline_choose()
        if inline:
            durations = self._durations_by_id(snap)
            search, hold, now = proj._search, proj.hold_found, snap.now
        for i, job in enumerate(snap.queue):
            if job.id in chosen:
                opt, reserved = chosen[job.id]
            elif not self.project or i >= last:
                continue
            elif inline:
                # SAS._choose and the reservation written out (tier_options, choose_tier, reserve: the same
                # floats; the chosen schedule is held where its search found it, as Profile.place does)
                ds = durations.get(job.id)
                if ds is None:
                    ds = durations[job.id] = _durations(job, snap)
                d, dh, n = ds[0], ds[1], job.nodes
                found = search(n, d, 0.0, now)
                tier, length, held = LPS, d, 0.0
                if dh is not None:
                    found_h = search(n, dh, job.storage, now)
                    if (found_h[0] + dh) - job.submit < (found[0] + d) - job.submit:
                        found, tier, length, held = found_h, HPS, dh, job.storage
                t = found[0]
                if t != math.inf:
                    hold(t, found[1], found[2], length, n, held)
                plan.append(PlanEntry(job.id, t, t + length, n, tier, held, False))
                continue
            else:
                opt, reserved = self._choose(job, proj, snap), False
                if math.isfinite(opt.start):
                    proj.reserve(opt.start, opt.duration, opt.nodes, opt.storage)
            plan.append(PlanEntry(job=job.id, start=opt.start, end=opt.end, nodes=opt.nodes,
                                  tier=opt.tier, storage=opt.storage, reserved=reserved))
            if opt.start == snap.now and reserved:
                # only Alg. 1/2 start jobs: a projection that happens to fit now (its tier
                # chosen on the projected plan) is not a decision, so the starts never
                # depend on whether the plan is projected
                starts.append(Start(job=job.id, tier=opt.tier, nodes=opt.nodes,
                                    expected_end=opt.end, storage=opt.storage))
        return Decision(now=snap.now, starts=tuple(starts), plan=tuple(plan))

    def _prepare(self, snap: Snapshot) -> None:
        pass

    def _inline_literal(self) -> bool:
        """Whether the backfill pass may decide a candidate as SAS's literal :meth:`_now_options`
        does, written out in the pass (no call, no option list per candidate)."""
        return False

    def _inline_choose(self) -> bool:
        """Whether the projection may choose a job's schedule as SAS's :meth:`_choose` does, written
        out (no option objects; the chosen search's segments reused to hold it)."""
        return False

    def _now_options(self, job: QueuedJob, prof: Profile, snap: Snapshot, durations: tuple,
                     accept: tuple = (True, True, None, None)) -> list[Option]:
        """The schedules of :meth:`_backfill_options` that start now, in their order (``durations``:
        :func:`_durations` of the job; ``accept``: whether an LPS and an HPS schedule starting now
        would fit with j1's reservation, and whether each starts now on ``prof``, which a subclass
        may use to search less)."""
        return [o for o in self._backfill_options(job, prof, snap) if o.start == snap.now]

    def _durations_by_id(self, snap: Snapshot) -> dict[str, tuple]:
        """Each job's reservation lengths (:func:`_durations`), kept while the rates and the HPS
        capacity stay those of the last decision (a run's: the same for every decision)."""
        key = (snap.rates, snap.hps_capacity)
        if self._lengths_key != key:
            self._lengths_key = key
            self._lengths = {}
        return self._lengths


class SAS(_TieredBackfill):
    """lackner2019's storage-aware scheduler.

    ``start_now`` is another reading of Alg. 1 l. 6-8 the paper leaves open: a backfilled job
    whose best schedule starts later (it waits for HPS space) starts now on its other tier if that
    one starts now and does not delay ``j1``.  The literal reading (the default) keeps it waiting."""

    name = "sas"

    def __init__(self, project: bool = True, start_now: bool = False) -> None:
        super().__init__(project)
        self.start_now = start_now

    def _choose(self, job: QueuedJob, prof: Profile, snap: Snapshot) -> Option:
        assert snap.rates is not None
        return choose_tier(job, tier_options(job, prof, snap.rates, snap.now, snap.hps_capacity))

    def _inline_literal(self) -> bool:
        return not self.start_now and type(self)._now_options is SAS._now_options

    def _inline_choose(self) -> bool:
        return type(self)._choose is SAS._choose

    def _now_options(self, job: QueuedJob, prof: Profile, snap: Snapshot, durations: tuple,
                     accept: tuple = (True, True, None, None)) -> list[Option]:
        """The literal reading: the job's best schedule if it starts now.  :func:`tier_options` and
        :func:`choose_tier` written out, with the same floats (end = start + duration, turnaround =
        end - submit, HPS iff strictly shorter), and no option built for a job that does not start.
        ``accept[2:]`` (whether each schedule starts now, if known) spares the searches: a schedule
        that fits from now starts at ``now`` (earliest_fit's answer), one that does not starts later."""
        if self.start_now:
            return super()._now_options(job, prof, snap, durations, accept)
        now = snap.now
        dl, dh, _ = durations
        now_l, now_h = accept[2], accept[3]
        if now_l is None:
            now_l = prof.earliest_fit(job.nodes, dl, 0.0, now) == now
        if dh is None:
            return [Option(LPS, now, dl, job.nodes, 0.0)] if now_l else []
        if now_h is None:
            now_h = prof.earliest_fit(job.nodes, dh, job.storage, now) == now
        if not (now_l or now_h):
            return []  # the best schedule does not start now
        sl = now if now_l else prof.earliest_fit(job.nodes, dl, 0.0, now)
        sh = now if now_h else prof.earliest_fit(job.nodes, dh, job.storage, now)
        if (sh + dh) - job.submit < (sl + dl) - job.submit:  # HPS is the best schedule
            return [Option(HPS, sh, dh, job.nodes, job.storage)] if now_h else []
        return [Option(LPS, sl, dl, job.nodes, 0.0)] if now_l else []

    def _backfill_options(self, job: QueuedJob, prof: Profile, snap: Snapshot) -> list[Option]:
        assert snap.rates is not None
        options = tier_options(job, prof, snap.rates, snap.now, snap.hps_capacity)
        best = choose_tier(job, options)
        if not self.start_now or best.start == snap.now:
            return [best]
        return [best] + [o for o in options.values() if o is not best and o.start == snap.now]


class RandomTier(_TieredBackfill):
    """Random storage assignment with probability ``p`` of HPS (lackner2019 §V-A).

    ``rng`` is a ``numpy.random.Generator`` or a seed.  Each job's tier is
    drawn once, when the job is first seen (queue order), so a given seed
    and submission order give the same assignment in every runtime.  A job
    drawn HPS that asks for no storage, or for more than the HPS holds, runs
    on LPS (it cannot use HPS); the draw is still consumed.
    """

    name = "random-tier"

    def __init__(self, p: float, rng: np.random.Generator | int = 0, project: bool = True):
        super().__init__(project)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = float(p)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self._tier: dict[str, str] = {}

    def tier_of(self, job_id: str) -> str | None:
        """The drawn tier of a job (None if not drawn yet)."""
        return self._tier.get(job_id)

    def _prepare(self, snap: Snapshot) -> None:
        for job in snap.queue:
            if job.id not in self._tier:
                self._tier[job.id] = HPS if self.rng.random() < self.p else LPS

    def _choose(self, job: QueuedJob, prof: Profile, snap: Snapshot) -> Option:
        assert snap.rates is not None
        opts = tier_options(job, prof, snap.rates, snap.now, snap.hps_capacity)
        return opts.get(self._tier[job.id], opts[LPS])

    def __repr__(self) -> str:
        return f"RandomTier(p={self.p})"
