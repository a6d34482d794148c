"""``slurm``: what a Slurm 22.05 slurmctld (sched/backfill, select/cons_tres) does with rigid whole-node jobs.

Two schedulers share the pending jobs, each in priority order (:mod:`.slurm_priority`):

- **the main scheduler** (job_scheduler.c ``_schedule``) starts jobs in priority order while they fit in
  the idle nodes and stops at the first that does not (its partition is then "failed" for the rest of the
  pass: one partition here).  It runs at every job end (the epilog's completion calls it at once; with
  ``defer``, through the background loop) and, for submissions, from the controller's background loop,
  half a turn (:data:`BACKGROUND_TICK`) after the submission and at most every ``batch_sched_delay`` seconds
  (an ``sbatch`` job never starts in its submission's RPC).
  An event's pass tests at most ``default_queue_depth`` + 1 jobs.
- **the backfill pass** (backfill.c ``_attempt_backfill``), every ``bf_interval`` seconds on the backfill
  thread's own clock (it wakes every ``bf_interval`` whether jobs wait or not: the nodes' pings count
  as work; ``bf_cycle_at`` places the grid, else it starts at the whole second of the first decision):
  the pending jobs in priority order, at most
  ``bf_max_job_test`` of them, each tested on specific nodes: the nodes not reserved over its window,
  :func:`~.slurm_nodes.will_run` on those (the running jobs removed in 30 s-aligned, doubling groups),
  started if it can start now, else reserved on the nodes found, its start and end rounded down to
  ``bf_resolution`` on the wall clock (at least one resolution long), trying later starts at the
  reservations' boundaries when the nodes it needs are reserved; no reservation beyond ``bf_window``.
  A job started by the pass is entered in the map until its end rounded down (whole-node jobs,
  ``_bf_reserve_running``).  Every job considered gets a reservation: conservative backfilling on node
  sets, not EASY on node counts.

A periodic pass at a whole second (a run of Slurm's whole-second records) does not see a job submitted in
that same second (:meth:`SlurmScheduler._before`).

Time limits are whole minutes (a walltime in seconds is rounded up, as ``sbatch -t`` does) and a running
job is expected to end at its start plus its limit.  Node ids are chosen as cons_tres chooses them
(:func:`~.slurm_nodes.best_fit`), so the scheduler keeps the node set of every job it starts.  Pure: it
keeps its own state between calls and asks to be called again (``Decision.wake_at``) for the backfill
cycle and the background loop.  Each rule's Slurm option and default: docs/slurm-scheduler.md.
"""

from __future__ import annotations

import math

from iolab.middleware.policies.batch.slurm_nodes import NodeSpace, best_fit, will_run
from iolab.middleware.policies.batch.slurm_priority import Multifactor, basic_order
from iolab.middleware.policies.batch.snapshot import LPS, BatchPolicy, Decision, PlanEntry, Snapshot
from iolab.specs.slurm_conf import SlurmConf

__all__ = ["BACKGROUND_TICK", "SlurmScheduler", "slurm_limit"]

#: seconds from a submission to the background loop's pass for it: the loop turns once a second
#: (controller.c: ten sleeps of 0.1 s) at a phase nothing reports, so the expected wait, half a turn (the
#: replays: a whole turn put 26 of 60 jobs of the 8-node clusters' first starts a second late, and their
#: followers with them; half a turn 39 and 78 of 90, docs/results.md)
BACKGROUND_TICK = 0.5


def slurm_limit(walltime: float) -> float:
    """The time limit Slurm plans with for a walltime of ``walltime`` seconds: whole minutes, rounded up."""
    return max(math.ceil(walltime / 60.0 - 1e-9), 1) * 60.0


class SlurmScheduler(BatchPolicy):
    """slurmctld's main scheduler and backfill pass (module docstring) under a :class:`SlurmConf`."""

    name = "slurm"
    stateful = True  # its nodes, clocks and reservations carry over: it sees every decision
    reads_node_ids = True  # it chooses node ids (cons_tres's), so the run must give them
    reads_profile = False

    def __init__(self, conf: SlurmConf | None = None):
        super().__init__()
        self.conf = conf = conf if conf is not None else SlurmConf()
        p = conf.SchedulerParameters
        self.backfill = conf.SchedulerType == "sched/backfill"
        self.interval, self.resolution = float(p.bf_interval), float(p.bf_resolution)
        self.window = p.bf_window * 60.0
        self.max_job_test, self.window_linear = p.bf_max_job_test, float(p.bf_window_linear)
        self.sched_delay, self.queue_depth, self.defer = float(p.batch_sched_delay), p.default_queue_depth, p.defer
        self.epoch = conf.epoch
        self.backfill_depth = p.bf_max_job_test
        self._owned: dict[str, tuple[int, float, float, int, str]] = {}  # job -> (nodes, start, end, n, user)
        self._seen: set[str] = set()  # jobs seen waiting
        self._anchor: float | None = None  # a backfill cycle's time (run seconds): the cycles' grid
        self._bf_asked: float | None = None  # the next cycle, asked for while jobs wait
        self._last_bg = -math.inf  # time of the background loop's last main pass
        self._bg_at: float | None = None  # when the background loop's pass for a submission is due
        self._multifactor: Multifactor | None = None
        self._planned: dict[str, tuple[float, float, int]] = {}  # job -> its last reservation (start, end, n)

    def __repr__(self) -> str:
        return f"SlurmScheduler({self.conf!r})"

    # -- the order -----------------------------------------------------------------------------------
    def _order(self, queue, now: float, total: int) -> list:
        c = self.conf
        if c.PriorityType == "priority/basic":
            return basic_order(queue)
        if self._multifactor is None:
            self._multifactor = Multifactor(total, weight_age=c.PriorityWeightAge,
                                            weight_size=c.PriorityWeightJobSize,
                                            weight_fairshare=c.PriorityWeightFairshare, max_age=c.PriorityMaxAge,
                                            favor_small=c.PriorityFavorSmall, half_life=c.PriorityDecayHalfLife,
                                            calc_period=c.PriorityCalcPeriod)
        return self._multifactor.order(queue, now + self.epoch)

    def _floor(self, t: float) -> float:
        """``t`` rounded down to ``bf_resolution`` on the wall clock."""
        r = self.resolution
        return math.floor((t + self.epoch) / r) * r - self.epoch

    # -- a decision ------------------------------------------------------------------------------------
    def _before(self, queue, now: float) -> list:
        """The jobs a periodic pass at ``now`` (the background loop's, the backfill thread's) sees.  On
        whole seconds (a run of Slurm's records, which are whole seconds) a job of the pass's own second
        may have come before or after it; it is taken as after, as the first replays showed (their passes
        ran 0.1-0.2 s into their second): it waits for the next pass.  Between whole seconds (a replay
        with the submissions' and the cycles' exact times) the times decide."""
        wall = now + self.epoch
        if abs(wall - round(wall)) > 1e-6:
            return [q for q in queue if q.submit < now]
        sec = round(wall)
        return [q for q in queue if math.floor(q.submit + self.epoch + 1e-9) < sec]

    def _next_cycle(self, now: float) -> float:
        """The first backfill cycle at or after ``now``: the cycles are every ``bf_interval`` from
        ``bf_cycle_at`` (or from the first decision)."""
        k = math.ceil((now - self._anchor) / self.interval - 1e-9)
        return self._anchor + k * self.interval

    def _decide(self, snap: Snapshot) -> Decision:
        now = snap.now
        total = snap.total_nodes
        if self._anchor is None:
            self._anchor = (self.conf.bf_cycle_at - self.epoch if self.conf.bf_cycle_at is not None
                            else math.floor(now + self.epoch) - self.epoch)  # (a whole wall-clock second)
        running = {r.id for r in snap.running}
        ended = [j for j in self._owned if j not in running]
        for j in ended:
            mask, start, _, n, user = self._owned.pop(j)
            if self._multifactor is not None:
                self._multifactor.used(user, n * (now - start), now + self.epoch)
        queue = snap.queue
        new = [q for q in queue if q.id not in self._seen]
        self._seen.update(q.id for q in new)
        free = snap.free_ids if snap.free_ids is not None else (1 << snap.free_nodes) - 1
        if (new or (ended and self.defer)) and self._bg_at is None:
            # the background loop's next turn (once a second), no sooner than batch_sched_delay after its last pass
            self._bg_at = max(now + BACKGROUND_TICK, self._last_bg + self.sched_delay)
        starts: list = []
        main = bool(ended) and not self.defer
        background = self._bg_at is not None and now >= self._bg_at - 1e-9
        if background:
            main, self._bg_at, self._last_bg = True, None, now
        waiting = list(queue)
        if main and waiting:
            seen = waiting if not background else self._before(waiting, now)
            if len(seen) < len(waiting):  # submitted in the pass's second: the loop's next pass takes them
                self._bg_at = now + max(BACKGROUND_TICK, self.sched_delay)
            free = self._main(snap, self._order(seen, now, total), free, starts)
            waiting = [q for q in waiting if q.id not in {s.job for s in starts}]
        # a cycle is due on the grid, or at the call it asked for (a real run's clock calls a moment late)
        cycle = abs(self._next_cycle(now) - now) < 1e-9 or (self._bf_asked is not None
                                                           and now >= self._bf_asked - 1e-9)
        if cycle:
            self._bf_asked = None
        if self.backfill and waiting and cycle:
            self._backfill(snap, self._order(self._before(waiting, now), now, total), free, starts)
            waiting = [q for q in waiting if q.id not in {s.job for s in starts}]
        wake = []
        if self._bg_at is not None:
            wake.append(self._bg_at)
        if self.backfill and waiting:
            self._bf_asked = self._next_cycle(now + 1e-6)
            wake.append(self._bf_asked)
        wake_at = min((w for w in wake if w > now), default=None)
        started = {s.job for s in starts}
        plan = ()
        if self.project:  # the last backfill pass's reservations of the jobs still waiting
            plan = tuple(PlanEntry(j, st, en, n, LPS, 0.0, True) for j, (st, en, n) in self._planned.items()
                         if j not in started)
        return Decision(now, tuple(starts), plan, wake_at)

    def _begin(self, snap: Snapshot, q, mask: int, starts: list) -> None:
        now = snap.now
        ids = [i for i in range(mask.bit_length()) if mask >> i & 1]
        starts.append(snap.start(q, LPS, node_ids=ids))
        self._owned[q.id] = (mask, now, now + slurm_limit(q.walltime), q.nodes, q.user)
        self._planned.pop(q.id, None)

    def _main(self, snap: Snapshot, order: list, free: int, starts: list) -> int:
        """The main scheduler's pass: the jobs in priority order while they fit; returns the idle nodes."""
        for k, q in enumerate(order):
            if k > self.queue_depth:
                break
            mask = best_fit(free, q.nodes)
            if mask is None:
                break  # its partition failed: nothing behind it starts in this pass
            self._begin(snap, q, mask, starts)
            free &= ~mask
        return free

    def _backfill(self, snap: Snapshot, order: list, free: int, starts: list) -> None:
        """One backfill pass at ``snap.now`` (module docstring)."""
        now = snap.now
        nodes = (1 << snap.total_nodes) - 1
        space = NodeSpace(self._floor(now), self._floor(now + self.window), nodes, self.resolution)
        running = [(end, mask) for mask, _, end, _, _ in self._owned.values()]
        self._planned = {}
        for q in order[:self.max_job_test]:
            limit = slurm_limit(q.walltime)
            start_res = now
            while True:
                end_time = max(start_res, now) + limit
                avail, later = space.avail(nodes, start_res, end_time)
                found = will_run(q.nodes, avail, free, running, now, epoch=self.epoch,
                                 window_linear=self.window_linear) if avail.bit_count() >= q.nodes else None
                if found is None:
                    if later > start_res:
                        start_res = later
                        continue
                    break  # no start within the window: no reservation
                start, mask = found
                start = max(start, start_res)
                if start <= now:  # it starts now, on nodes no reservation holds over its limit
                    self._begin(snap, q, mask, starts)
                    free &= ~mask
                    running.append((now + limit, mask))
                    space.reserve(space.segs[0][0], self._floor(now + limit), mask)
                    break
                if later and start > later:
                    start_res = later
                    continue
                if start > now + self.window:
                    break  # beyond bf_window: no reservation
                s_r, e_r = self._floor(start), self._floor(start + limit)
                if space.overlaps(mask, s_r, e_r):
                    if start > start_res:
                        start_res = start
                        continue
                    break  # (Slurm would retry the same start until its time limit)
                space.reserve(s_r, e_r, mask)
                self._planned[q.id] = (start, start + limit, q.nodes)
                break
