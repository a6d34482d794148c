"""The batch kernel: queue, job state machine, snapshot, policy and node/HPS/disk bookkeeping.

One kernel, two clocks (SimPy's idea: the real-time environment only changes how
time advances).  :class:`BatchKernel` holds every decision-relevant state of a
batch run and reads no clock: each call passes ``t``, spec seconds.

- :class:`~.driver.BatchDriver` says what happens at an instant (decide and begin the
  starts, retry, end, kill, suspend, resume) to the kernel and to the runtime's effectors,
  the same in both runtimes;
- ``iolab.sim.batch.engine`` advances it on simulated time (an event heap) and
  moves each job's bytes on fair-share links;
- ``iolab.emulator.batch.run`` advances it on wall time (``(wall - t0) /
  time_scale``) and adds only the effectors: launch a job's ``mpiexec``, ask the
  storage manager actor for the space the kernel placed and for the staging
  copies, kill, collect the results.

Job life (:class:`JobState`, ``state``)::

    future -> queued -> [allocating ->] stage-in -> running -> stage-out -> done
                                                  \\-> suspended -/     (and back)
    any holding state -> failed | killed

``allocating`` is an HPS job whose disk placement was refused with requeue on:
it holds its nodes and asks again at ``retry_at``.  A job on LPS goes from
``queued`` to ``running``; a job whose placement is refused (or fails) falls
back to LPS at once (monniot2023 §4.2).  ``suspended`` keeps nodes and space
(the load controller, dheenadayalan2017, will drive it).

Decisions: the runtime calls :meth:`BatchKernel.decide` at an instant at which
something changed (a submission, a job end, a fallback: :attr:`BatchKernel.changed`): the policy, built
once from the spec (:meth:`BatchKernel.from_spec`), decides on a
:class:`~.snapshot.Snapshot`; every start takes its nodes and its HPS bytes,
and an HPS start is placed on the disks by the spec's ``placement``
(:class:`~iolab.middleware.policies.placement.StorageAllocator`: strategy,
split, requeue), the same object in both runtimes.  A start that ends at once
(a job of runtime 0) frees its nodes inside the decision and sets ``changed``
again, so the runtime calls ``decide`` again at the same instant until nothing
more changes (:meth:`.driver.BatchDriver.decide`, in both runtimes).  Where a decision is only
its starts and nobody else reads it (EASY and FCFS without projections; no observer, no plans recorded
or tracked), the kernel asks the policy's quick entry (:meth:`~.snapshot.BatchPolicy.quick_starts`)
with its own queue and sorted releases instead: the same starts, without a snapshot, a decision or a
running view per decision.  What a policy allows the kernel to skip is one record, read once when the
kernel is set up (:class:`~.fast_paths.BatchFastPaths`, :attr:`BatchKernel.allows`).

Observers: the kernel tells an ``observer`` (:class:`BatchObserver`) of the platform and the
workload once, then of every decision and state change, with its books after the change.  Strict
mode's :class:`~.checker.BatchChecker` is one: it keeps its own books from these events alone and
raises :class:`iolab.invariants.InvariantViolation`; a kernel with an observer also checks the views
it keeps for the policies against its running jobs.  Without an observer each event costs one ``if``.
"""

from __future__ import annotations

import heapq
import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence


from iolab.invariants import InvariantViolation

from iolab.middleware.policies.batch import get_scheduler
from iolab.middleware.policies.batch.fast_paths import BatchFastPaths, fast_paths, set_projection
from iolab.middleware.policies.batch.io_allocation import IOAwareAllocator, io_load
from iolab.middleware.policies.batch.nodes import NodeSetReplay, lowest, mask_of, replay_in_start_order
from iolab.middleware.policies.batch.predictions import PlanRows, PlanTracker
from iolab.middleware.policies.batch.profile import KeptReleases
from iolab.middleware.policies.batch.snapshot import (HPS, LPS, BatchPolicy, Decision, QueuedJob, RunningJob, Snapshot,
                                                      TierRates, cut_queued)
from iolab.middleware.policies.batch.walltime import UserPredictor, refine
from iolab.middleware.policies.batch.allocation import NodeView
from iolab.middleware.policies.loader import load_policy

if TYPE_CHECKING:
    from iolab.middleware.policies.placement import StorageAllocator

# The guards of a user's scheduler and allocator (and the controller's handler they import) and the HPS disks'
# allocator are imported by the runs that have them: a run of built-in policies on an HPS without disks (every
# SWF trace) loads neither.
GUARD = "iolab.middleware.policies.guard"

# job states
FUTURE, QUEUED, ALLOCATING, STAGE_IN, RUNNING, STAGE_OUT, SUSPENDED = (
    "future", "queued", "allocating", "stage-in", "running", "stage-out", "suspended")
DONE, FAILED, KILLED = "done", "failed", "killed"
HOLDING = frozenset({ALLOCATING, STAGE_IN, RUNNING, STAGE_OUT, SUSPENDED})  # hold nodes (and HPS bytes)
ENDED = frozenset({DONE, FAILED, KILLED})
# The load controller's jobs, in both runtimes: it sees the running and the suspended ones, and stops only a
# running one (a stage copy is the storage manager's, not the job's processes, so no runtime can stop it).
CONTROLLED = frozenset({RUNNING, SUSPENDED})
SUSPENDABLE = frozenset({RUNNING})
STATUS = {DONE: "ok", FAILED: "failed", KILLED: "killed"}  # the trace's status column
POOL = "hps"  # disk id of an HPS without disks (one pool)
MAX_IDLE_WAKES = 10_000  # calls a policy may ask for in a row with jobs waiting and nothing else left
OVERRUN_GRACE = 1.0  # a running job past its expected end is assumed to end this long after now (Snapshot's default)

__all__ = ["ALLOCATING", "DONE", "ENDED", "FAILED", "FUTURE", "HOLDING", "KILLED", "MAX_IDLE_WAKES", "POOL", "QUEUED",
           "RUNNING", "node_allocator_of",
           "STAGE_IN", "STAGE_OUT", "SUSPENDED", "BatchKernel", "BatchObserver", "JobState", "make_policy"]


class BatchObserver(Protocol):
    """What a :class:`BatchKernel` tells its observer (times in spec seconds).  ``books`` is the
    kernel's books after the change: ``(free nodes, free node ids as a mask, free HPS bytes,
    ((disk id, bytes used), ...) of its allocator or None)``."""

    def opened(self, total_nodes: int, hps_capacity: float, disks: Sequence[tuple[str, float]],
               jobs: Sequence[tuple[QueuedJob, Any]]) -> None: ...  # the platform, the jobs (queued, Job)
    def submitted(self, job: str, t: float) -> None: ...
    def decided(self, snap: Snapshot, d: Decision, policy: str) -> None: ...  # what the policy saw and said
    def started(self, job: str, tier: str, nodes: int, node_ids: int, storage: float, t: float,
                books: tuple) -> None: ...
    def placed(self, job: str, parts: tuple, t: float, books: tuple) -> None: ...  # HPS parts: stage-in
    def fell_back(self, job: str, t: float, books: tuple) -> None: ...  # HPS bytes back, runs on LPS
    def entered(self, job: str, state: str, t: float) -> None: ...
    def staged(self, job: str, direction: str, nbytes: float, t: float, tol: float) -> None: ...
    def suspended(self, job: str, t: float) -> None: ...
    def resumed(self, job: str, t: float) -> None: ...
    def ended(self, job: str, state: str, t: float, books: tuple) -> None: ...  # done | failed | killed
    def withdrawn(self, job: str, t: float) -> None: ...  # cancelled before its start


@dataclass(eq=False, slots=True)  # slots: SDSC-BLUE holds 243 306 of them
class JobState:
    """One job of a batch run, as the kernel tracks it (times in spec seconds).

    ``steps``/``step``/``step_start``: the runtime's progress through the job's
    steps (``iolab.workloads.steps``); the kernel does not read them.
    """

    index: int
    job: Any  # the iolab.specs.batch.Job (true runtime and volumes)
    queued: QueuedJob  # what the scheduler sees
    state: str = FUTURE
    tier: str = ""
    start: float = math.nan  # the decision that gave it its nodes
    end: float = math.nan
    expected_end: float = math.nan
    storage: float = 0.0  # HPS bytes held (0 on LPS)
    parts: tuple = ()  # (disk id, bytes) of its HPS allocation
    retry_at: float = math.nan
    fell_back: bool = False  # started on HPS, placement refused: runs on LPS
    status: str = "pending"  # ok | failed | killed once ended
    message: str = ""
    resume_state: str = ""  # the state a suspended job returns to
    suspended_at: float = math.nan  # when the current suspension began (the load controller)
    suspensions: tuple = ()  # (from, to) of every ended suspension (a tuple: no list per job on 243 k jobs)
    steps: tuple = ()
    step: int = -1
    step_start: float = 0.0
    node_ids: int = 0  # mask of the node ids it holds (bit i = node i; see .nodes), 0 before its start

    @property
    def id(self) -> str:
        return self.queued.id


def make_policy(spec, *, record_plans: bool = False) -> BatchPolicy:
    """The spec's batch policy, built once per run; it projects the starts of the jobs it does
    not start only if someone reads them (``record_plans``).  A user's scheduler (``kind: python``) is
    loaded here and called through its guard (:class:`~iolab.middleware.policies.guard.GuardedScheduler`)."""
    s = spec.scheduler
    if getattr(s, "kind", None) == "python":
        from iolab.middleware.policies.guard import GuardedScheduler  # lazy: a user's scheduler only

        return GuardedScheduler(load_policy(s, "scheduler"), str(s))
    policy = get_scheduler(s.kind, p=s.p, rng=spec.seed,  # random-tier makes its generator of the seed
                           hps_requests=getattr(s, "hps_requests", False), start_now=getattr(s, "start_now", False),
                           backfill_depth=getattr(s, "backfill_depth", None), conf=getattr(s, "conf", None))
    set_projection(policy, record_plans=record_plans)
    return policy


def node_allocator_of(spec):
    """The spec's node allocator: None for ``lowest`` (the kernel's masks), the ``io-aware`` one, or a user's
    (``kind: python``) behind its guard."""
    a = getattr(spec, "allocation", None)
    if getattr(a, "kind", None) == "python":
        from iolab.middleware.policies.guard import GuardedAllocator  # lazy: a user's allocator only

        return GuardedAllocator(load_policy(a, "allocation"), str(a))
    return IOAwareAllocator.from_spec(spec)


class BatchKernel:
    """The state of one batch run.  ``make_job(index, job, queued)`` builds each job's record
    (a runtime may extend :class:`JobState` with its effectors' fields).  ``node_ids=False``: no job
    is given node ids (its ``node_ids`` stays 0), for a run in which nothing reads them (the
    simulator's trace without node sets, no I/O nodes); ignored where the kernel itself reads them (a
    strict observer's books, the plan tracker, an io-aware node allocator)."""

    def __init__(self, jobs, policy: BatchPolicy, *, total_nodes: int, hps_capacity: float, rates: TierRates,
                 allocator: StorageAllocator | None = None, observer: BatchObserver | None = None,
                 record_plans: bool = False, on_decision: Callable[[Decision], None] | None = None,
                 make_job: Callable[..., JobState] = JobState, estimate: tuple[str, float] = ("request", 1.0),
                 track_predictions: bool = False, advance: tuple[float, float] | None = None,
                 node_allocator: IOAwareAllocator | None = None, node_ids: bool = True,
                 io_span: int | None = None):
        self.policy = policy
        self.io_span = io_span  # compute nodes per I/O node (None: no I/O nodes): the snapshot's I/O loads
        self.node_allocator = node_allocator  # io-aware node ids (io_allocation.py); None: lowest
        self.total_nodes = total_nodes
        self.hps_capacity = hps_capacity
        self.rates = rates
        self.allocator = allocator
        self.record_plans = record_plans
        self.on_decision = on_decision
        submits = [j.submit for j in jobs]
        order = sorted(range(len(jobs)), key=submits.__getitem__)  # stable: ties in the given order
        queued = cut_queued(jobs)
        if queued is None:  # each job's view read as its state is made (all the views first: 2-3 ms slower on KTH-SP2)
            from_job = QueuedJob.from_job
            self.jobs: list[JobState] = [make_job(k, jobs[i], from_job(jobs[i])) for k, i in enumerate(order)]
        else:
            self.jobs = [make_job(k, jobs[i], queued[i]) for k, i in enumerate(order)]
        queued = [s.queued for s in self.jobs]
        # every job checked once here; the decisions then use Snapshot.trusted (no O(queue) re-check)
        Snapshot.check_jobs(queued, total_nodes)
        self.by_id = dict(zip([q.id for q in queued], self.jobs))
        self.queue: dict[str, JobState] = {}  # insertion order = submit order
        # what the queue holds, in its order (the snapshot's tuple), by id: a start deep in the queue (a
        # backfill) is removed without comparing it with every job ahead of it
        self._queued: dict[str, QueuedJob] = {}
        self._sizes: dict[int, int] = {}  # node count -> waiting jobs of that size (the smallest, in O(sizes))
        self._smallest: int | None = None  # min(self._sizes) while known; None: to be taken again
        self.running: dict[str, JobState] = {}  # every job holding nodes
        # what the policy allows the kernel to skip in this run (fast_paths.py), read once: the kernel
        # reads this record, never the policy's speed flags
        self.allows: BatchFastPaths = fast_paths(
            policy, observed=observer is not None, plans_read=record_plans or track_predictions or advance is not None,
            decisions_read=on_decision is not None)
        allows = self.allows
        # The policy's quick entry (BatchPolicy.quick_starts: the jobs to start, from the queue and the
        # sorted releases, no snapshot and no decision object).  Its policy may still decide on a
        # snapshot (the entry answering None), whose running views are then built afresh.
        self._quick = policy.quick_starts if allows.quick else None
        # what the policies see of each running job, in start order (the snapshot's running tuple), kept
        # as jobs start and end and as a running job's tier, storage or expected end changes (_start,
        # fall_back, resume, extend_estimate, finish): a snapshot copies it instead of building it (None:
        # not kept, the quick entry reads none)
        self._views: dict[str, RunningJob] | None = {} if self._quick is None else None
        # the same jobs' releases sorted by (expected end, start order): Snapshot.releases, kept by _seen and
        # finish (a policy reads the next releases without sorting every running job at every decision)
        # and the free counts they make (profile.py), unless the policy never builds a profile from them
        # (None: not kept, the quick entry reads none and a snapshot then carries none)
        self._releases = (KeptReleases(total_nodes, hps_capacity, allows.reads_profile)
                          if self._quick is None or allows.quick_reads_releases else None)
        self._release_of: dict[str, tuple[float, int, int, float]] = {}
        self._started = 0  # start order of the next job seen running
        self.free_nodes = total_nodes
        self.hps_free = hps_capacity
        self.changed = False  # something happened since the last decision
        self.decisions = 0
        self.plans: list[tuple] = []  # (time, job, planned start, tier, reserved)
        self.allocations: list[tuple] = []  # pool rows (job, disk, bytes, alloc, free, status)
        self.observer = observer
        self._setup_soysal(estimate, track_predictions or advance is not None)
        # node ids given to the jobs as they start (lowest free, or the io-aware allocator's choice)
        self.keep_ids = (node_ids or observer is not None or self.tracker is not None
                         or node_allocator is not None or allows.reads_node_ids)
        # the times the policy asked to be called again at (Decision.wake_at), each once, in a heap
        self.wakes: list[float] = []
        self.last_plan: tuple = ()  # the plan of the last decision made on a snapshot
        self._stalls = 0  # instants in a row with jobs waiting and nothing else left (stalled)
        self._stall_at = -1
        self._every = allows.sees_every_change  # asked with nothing waiting too
        # ends a running job the policy killed (Decision.kills): the runtime stops its effectors (processes,
        # link streams) and calls finish(s, t, KILLED, message); the runtime binds it
        self.on_kill: Callable[[JobState, float, str], None] | None = None
        guard = sys.modules.get(GUARD)  # None: nothing of this run is guarded (no guard was made)
        # a guarded scheduler that names a job not waiting: the guard says why
        if guard is not None and isinstance(policy, guard.GuardedScheduler):
            policy.known = lambda job: s.state if (s := self.by_id.get(job)) is not None else None
        self.now = 0.0  # the time of the last decision
        # a user's allocator reads the time and the I/O nodes
        if guard is not None and isinstance(node_allocator, guard.GuardedAllocator):
            node_allocator.view = lambda: NodeView(self.now, self.total_nodes, self.io_span,
                                                   self.io_node_loads if self.io_span is not None else None)
        self._setup_advance(advance)
        # a decision with no waiting job that fits in the free nodes starts nothing, and is skipped, unless
        # someone reads its plan or its policy keeps state between decisions
        self._may_skip = (not record_plans and self.tracker is None and not allows.stateful
                          and not self._every)
        if observer is not None:
            disks = (tuple((d.id, d.capacity) for d in allocator.state.disks) if allocator is not None
                     else ((POOL, hps_capacity),))
            observer.opened(total_nodes, hps_capacity, disks, [(s.queued, s.job) for s in self.jobs])

    @classmethod
    def from_spec(cls, spec, jobs, *, scheduler: BatchPolicy | None = None, observer: BatchObserver | None = None,
                  record_plans: bool = False, **kw) -> "BatchKernel":
        """The kernel of a ``kind: batch`` spec: its policy (built here, once, unless a
        ``scheduler`` is given), its rates, and its disk placement if the HPS has disks."""
        p = spec.platform
        policy = scheduler if scheduler is not None else make_policy(spec, record_plans=record_plans)
        allocator = None
        if p.hps.servers:
            from iolab.middleware.policies.placement import StorageAllocator  # lazy: an HPS with disks only

            allocator = StorageAllocator.from_spec(p.hps, spec.placement, rng=spec.seed)
        est = getattr(spec, "estimate", None)
        kw.setdefault("estimate", (est.kind, est.lam) if est is not None else ("request", 1.0))
        adv = getattr(spec, "advance_stage_in", None)
        if adv is not None and adv.enabled:
            kw.setdefault("advance", (adv.theta_stable, adv.margin))
        track = kw.setdefault("track_predictions", bool(getattr(spec, "track_predictions", False))
                              or kw.get("advance") is not None)
        # the projected starts are computed if the tracker reads them, not if nobody reads a plan
        set_projection(policy, record_plans=record_plans, tracked=track)
        kw.setdefault("node_allocator", node_allocator_of(spec))
        if p.io_nodes is not None:
            kw.setdefault("io_span", p.io_nodes_span)
        return cls(jobs, policy, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                   rates=TierRates(lps=p.lps.rate, hps=p.hps.rate, stage=p.stage_rate), allocator=allocator,
                   observer=observer, record_plans=record_plans, **kw)

    # -- arrivals and decisions ------------------------------------------------------------
    def submit(self, s: JobState, t: float) -> None:
        if self.observer is not None:
            self.observer.submitted(s.queued.id, t)
        s.state = QUEUED
        if self.predictor is not None:
            self._predict(s)
        q = s.queued  # (after the predictor: it may replace it)
        jid, n, sizes = q.id, q.nodes, self._sizes
        self.queue[jid] = s
        self._queued[jid] = q
        sizes[n] = sizes.get(n, 0) + 1
        smallest = self._smallest
        if smallest is not None and n < smallest:
            self._smallest = n
        self.changed = True
        self._due = None

    def snapshot(self, t: float) -> Snapshot:
        return Snapshot.trusted(
            now=t, total_nodes=self.total_nodes, free_nodes=self.free_nodes,
            queue=self._fitting_prefix() if self.allows.reads_fitting_prefix else tuple(self._queued.values()),
            running=self._running_views(t),
            hps_capacity=self.hps_capacity,
            hps_free=min(max(self.hps_free - self.early_bytes, 0.0), self.hps_capacity),
            rates=self.rates, overrun_grace=OVERRUN_GRACE, releases=self._releases,
            free_ids=self.free_ids if self.keep_ids else None,
            io=(self.io_span, self.io_node_loads) if self.io_span is not None else None)

    def io_node_loads(self) -> list[float]:
        """Each I/O node's I/O load in bytes/s: every running job's stated I/O over its walltime
        (:func:`~.io_allocation.io_load`), shared out over the I/O nodes of its node ids."""
        if isinstance(self.node_allocator, IOAwareAllocator):
            return self.node_allocator.loads()
        span = self.io_span
        out = [0.0] * (-(-self.total_nodes // span))
        for s in self.running.values():
            load = io_load(s.queued)
            m = s.node_ids
            if load <= 0 or not m:
                continue
            per = load / s.queued.nodes
            while m:
                low = m & -m
                out[(low.bit_length() - 1) // span] += per
                m ^= low
        return out

    def _fitting_prefix(self) -> tuple[QueuedJob, ...]:
        """The waiting jobs in queue order while their nodes are free (each takes its own), and the first
        that does not fit: the snapshot's queue of a policy that reads no more (``allows.reads_fitting_prefix``),
        not a copy of a queue that grows without bound under FCFS at a high load."""
        out, free = [], self.free_nodes
        for q in self._queued.values():
            out.append(q)
            if q.nodes > free:
                break
            free -= q.nodes
        return tuple(out)

    def _dequeue(self, q: QueuedJob) -> None:
        self._due = None
        jid, n, sizes = q.id, q.nodes, self._sizes
        del self.queue[jid]
        del self._queued[jid]
        left = sizes[n] - 1
        if left:
            sizes[n] = left
        else:
            del sizes[n]
            if n == self._smallest:
                self._smallest = None

    def _running_views(self, t: float) -> tuple[RunningJob, ...]:
        """The running jobs as the policy sees them, in start order (strict mode checks the kept views
        against views built afresh from the running jobs)."""
        if self._views is None:
            return tuple(map(self._running_view, self.running.values()))
        v = tuple(self._views.values())
        if self.observer is not None:
            if v != tuple(map(self._running_view, self.running.values())):
                raise InvariantViolation("running-view", t, "", "the kernel's kept running jobs differ from its running set")
            if [(e, n, h) for e, _, n, h in self._releases] != [
                    (r.expected_end, r.nodes, r.storage if r.tier == HPS else 0.0)
                    for r in sorted(v, key=lambda r: r.expected_end)]:
                raise InvariantViolation("running-view", t, "", "the kernel's sorted releases differ from its running jobs")
        return v

    @staticmethod
    def _running_view(s: JobState) -> RunningJob:
        """What the policy sees of the running job ``s``."""
        return RunningJob(s.queued.id, s.queued.nodes, s.expected_end, s.tier, s.storage)

    def _seen(self, s: JobState) -> None:
        """``s`` started, or its tier, storage or expected end changed: the policies see it so."""
        jid = s.queued.id
        if self._views is not None:
            self._views[jid] = self._running_view(s)
        if self._releases is None:
            return
        old = self._release_of.get(jid)
        if old is None:
            order = self._started
            self._started += 1
        else:
            order = old[1]
        new = (s.expected_end, order, s.queued.nodes, s.storage if s.tier == HPS else 0.0)
        if new != old:
            if old is not None:
                self._releases.drop(old)
            self._releases.hold(new)
            self._release_of[jid] = new

    def decide(self, t: float) -> list[JobState]:
        """One decision of the policy at ``t``; returns the jobs it started (their state is
        ``stage-in``/``allocating`` on HPS, ``running`` on LPS), in the decision's order."""
        self.changed = False
        self.now = t
        if not self.queue and not self._every:
            return []
        if self._may_skip:
            smallest = self._smallest
            if smallest is None:
                smallest = self._smallest = min(self._sizes)
            if self.free_nodes < smallest:
                return []  # no waiting job fits in the free nodes: nothing can start (any policy)
        quick = self._quick
        if quick is not None:
            jobs = quick(t, self.free_nodes, self._queued.values(), self._releases, OVERRUN_GRACE)
            if jobs is not None:
                self.decisions += 1
                return [self._start_quick(q, t) for q in jobs] if jobs else jobs
        snap = self.snapshot(t)
        d = self.policy.decide(snap)
        self._due = None  # a new plan
        self.decisions += 1
        self.last_plan = d.plan
        if d.wake_at is not None:
            self._wake(d.wake_at, t)
        if self.observer is not None:
            self.observer.decided(snap, d, self.policy.name)
        if self.record_plans:
            self.plans.extend((t, e.job, e.start, e.tier, e.reserved) for e in d.plan)
        if self.tracker is not None:
            self._track(t, d)
        if self.on_decision is not None:
            self.on_decision(d)
        started = []
        for st in d.starts:
            s = self.by_id.get(st.job)
            if s is None:
                raise InvariantViolation("unknown-job", t, st.job, f"policy {self.policy.name} started a job the "
                                         "workload does not have")
            self._start(s, st.tier, st.expected_end, t, st.node_ids)
            started.append(s)
        if started:
            self._stalls = 0
        if d.rejects or d.kills:
            self._ends(d, t)
        return started

    def _ends(self, d: Decision, t: float) -> None:
        """The decision's rejects (withdrawn from the queue) and kills (ended by the runtime's ``on_kill``)."""
        who = self.policy.name
        for job in d.rejects:
            if job not in self.queue:
                raise InvariantViolation("reject-not-queued", t, job, f"policy {who} rejected a job not waiting")
            self.withdraw(job, t, f"rejected by the scheduler {who}")
        for job in d.kills:
            s = self.running.get(job)
            if s is None:
                raise InvariantViolation("kill-not-running", t, job, f"policy {who} killed a job not holding nodes")
            if self.on_kill is None:
                raise InvariantViolation("kill-not-running", t, job, f"policy {who} killed a running job; this "
                                         "runtime cannot kill one")
            self.on_kill(s, t, f"killed by the scheduler {who}")
            self._stalls = 0

    def _wake(self, w: float, t: float) -> None:
        """The policy asked to be called again at ``w`` (Decision.wake_at), even if nothing happens by then."""
        if not (w > t and math.isfinite(w)):
            raise InvariantViolation("malformed-decision", t, self.policy.name, f"wake_at {w!r}: a finite time "
                                     f"after now")
        if w not in self.wakes:
            heapq.heappush(self.wakes, w)

    def wake_due(self, t: float) -> bool:
        """Whether a call the policy asked for is due at ``t`` (each is taken once): the runtime then
        decides at ``t`` as if something had changed."""
        wakes = self.wakes
        due = False
        while wakes and wakes[0] <= t:
            heapq.heappop(wakes)
            due = True
        if due:
            self.changed = True
        return due

    def stalled(self, t: float) -> None:
        """The runtime reached ``t`` with jobs waiting and nothing running or left to arrive: only a call the
        policy asked for (Decision.wake_at) can start them.  Without one, or after :data:`MAX_IDLE_WAKES` such
        calls in a row that started nothing, nothing can change any more: ``never-started``."""
        if self._stall_at != self.decisions:
            self._stall_at = self.decisions
            self._stalls += 1
        if not self.wakes or self._stalls > MAX_IDLE_WAKES:
            asked = (f"asked to be called {MAX_IDLE_WAKES} times in a row without starting any" if self.wakes
                     else "asked for no later call (Decision.wake_at)")
            raise InvariantViolation("never-started", t, self.policy.name,
                                     f"{len(self.queue)} job(s) still wait, nothing runs or arrives any more, and "
                                     f"the policy {asked}; first: {next(iter(self.queue))}")

    def _start(self, s: JobState, tier: str, expected_end: float, t: float, node_ids=None) -> None:
        q = s.queued
        if s.state != QUEUED:
            raise InvariantViolation("start-not-queued", t, q.id, f"policy {self.policy.name} started a {s.state} job")
        if q.nodes > self.free_nodes:
            raise InvariantViolation("node-double-booked", t, q.id, f"policy {self.policy.name} started {q.id} "
                                     f"on {q.nodes} nodes; {self.free_nodes} free")
        storage = q.storage if tier == HPS else 0.0
        if storage > self.hps_free * (1 + 1e-12) + 1e-6:
            raise InvariantViolation("hps-overcommit", t, q.id, f"policy {self.policy.name} overcommits HPS "
                                     f"with {q.id}: {storage} > {self.hps_free}")
        self._dequeue(q)
        self.running[q.id] = s
        self.free_nodes -= q.nodes
        self.hps_free -= storage
        s.tier, s.start, s.expected_end, s.storage = tier, t, expected_end, storage
        self._seen(s)
        self._take_nodes(s, node_ids)
        if self.observer is not None:
            self.observer.started(q.id, tier, q.nodes, s.node_ids, storage, t, self._books())
        if tier == HPS:
            s.state = ALLOCATING
            self._place(s, t)
        else:
            s.state = RUNNING

    def _start_quick(self, q: QueuedJob, t: float) -> JobState:
        """:meth:`_start` of the waiting job ``q`` on LPS until ``t + walltime`` (what a quick entry's
        start means: the plan entry of :func:`~.backfill._entry`), without what a quick entry's kernel
        never has (an observer, a tracker, early copies, HPS bytes, running views); its state."""
        jid = q.id
        s = self.queue.get(jid)
        if s is None or s.state != QUEUED:
            raise InvariantViolation("start-not-queued", t, jid, f"policy {self.policy.name} started a "
                                     f"{'not queued' if s is None else s.state} job")
        n = q.nodes
        if n > self.free_nodes:
            raise InvariantViolation("node-double-booked", t, jid, f"policy {self.policy.name} started {jid} "
                                     f"on {n} nodes; {self.free_nodes} free")
        self._dequeue(q)
        self.running[jid] = s
        self.free_nodes -= n
        end = t + q.walltime  # Start.expected_end: now + walltime
        s.tier = LPS
        s.start = t
        s.expected_end = end
        s.storage = 0.0
        rel = self._releases
        if rel is not None:  # _seen of a job seen for the first time
            key = (end, self._started, n, 0.0)
            self._started += 1
            rel.hold(key)
            self._release_of[jid] = key
        if self.node_allocator is None:
            if self.keep_ids:
                m = lowest(self.free_ids, n)
                self.free_ids &= ~m
                s.node_ids = m
        else:
            self._take_nodes(s)
        s.state = RUNNING
        return s

    def _books(self) -> tuple:
        """The books an observer sees after a change (:class:`BatchObserver`)."""
        a = self.allocator
        used = None if a is None else tuple((d.id, u) for d, u in zip(a.state.disks, a.state.used))
        return self.free_nodes, self.free_ids, self.hps_free, used

    # -- HPS placement ---------------------------------------------------------------------
    def _place(self, s: JobState, t: float) -> None:
        if self.allocator is None or s.storage <= 0:
            s.parts = ((POOL, s.storage),)
            s.state = STAGE_IN
            if self.observer is not None:
                self.observer.placed(s.queued.id, s.parts, t, self._books())
            return
        from iolab.middleware.policies.placement import ALLOCATED, RETRY  # lazy: an HPS with disks only

        out = self.allocator.request(s.queued.id, s.storage, t)
        if out.status == ALLOCATED:
            s.parts = out.parts
            s.state = STAGE_IN
            if self.observer is not None:
                self.observer.placed(s.queued.id, s.parts, t, self._books())
        elif out.status == RETRY:
            s.retry_at = out.retry_at
        else:
            self.fall_back(s, t, f"HPS placement {out.status}: {out.reason}")

    def retry(self, s: JobState, t: float) -> None:
        """Ask the allocator again for a job ``allocating`` since a requeue (at its ``retry_at``)."""
        if s.state != ALLOCATING:
            return
        self._place(s, t)

    def fall_back(self, s: JobState, t: float, reason: str) -> None:
        """``s`` gives its HPS bytes back and runs on LPS from ``t`` (placement refused, by the
        allocator or by the real run's storage manager after the allocator placed it)."""
        self.hps_free += s.storage
        if self.allocator is not None and s.queued.id in self.allocator.state.live:
            self.allocator.release(s.queued.id, t)
        s.tier, s.storage, s.parts, s.fell_back, s.message = LPS, 0.0, (), True, reason
        s.expected_end = t + s.queued.walltime
        self._seen(s)
        s.state = RUNNING
        self.changed = True  # the HPS bytes the policy reserved are back
        if self.observer is not None:
            self.observer.fell_back(s.queued.id, t, self._books())

    # -- the job's progress ------------------------------------------------------------------
    def enter(self, s: JobState, state: str, t: float) -> None:
        """``s`` moves on: ``stage-in`` -> ``running`` -> ``stage-out`` (the runtime's steps)."""
        if self.observer is not None:
            self.observer.entered(s.queued.id, state, t)
        s.state = state

    def staged(self, s: JobState, direction: str, nbytes: float, t: float, tol: float = 0.0) -> None:
        """The runtime moved ``nbytes`` (spec bytes, to within ``tol``) of ``s`` over the staging
        link (``stage-in`` or ``stage-out``); checked in strict mode, nothing changes."""
        if self.observer is not None:
            self.observer.staged(s.queued.id, direction, nbytes, t, tol)

    def suspend(self, s: JobState, t: float) -> None:
        """Stop ``s``'s progress (the load controller, dheenadayalan2017 §4.3); it keeps its
        nodes and its HPS space, as a suspended LSF job keeps its slot."""
        if s.state not in SUSPENDABLE:
            raise InvariantViolation("job-state", t, s.queued.id, f"suspend of a {s.state} job")
        s.resume_state, s.state = s.state, SUSPENDED
        s.suspended_at = t
        if self.observer is not None:
            self.observer.suspended(s.queued.id, t)

    def resume(self, s: JobState, t: float) -> None:
        """``s`` goes on where it stopped; its expected end moves by the time it was stopped
        (the policies' reservations see the later end)."""
        if s.state != SUSPENDED:
            raise InvariantViolation("job-state", t, s.queued.id, f"resume of a {s.state} job")
        if t < s.suspended_at:
            raise InvariantViolation("job-state", t, s.queued.id, f"resumed before its suspension at {s.suspended_at}")
        s.state, s.resume_state = s.resume_state, ""
        s.suspensions += ((s.suspended_at, t),)
        s.expected_end += t - s.suspended_at
        self._seen(s)
        s.suspended_at = math.nan
        self.changed = True  # a reservation behind it moved
        if self.observer is not None:
            self.observer.resumed(s.queued.id, t)

    def finish(self, s: JobState, t: float, state: str = DONE, message: str = "") -> None:
        """``s`` ended (``done``, ``failed`` or ``killed``): its nodes and HPS bytes return."""
        was = s.state
        if was not in HOLDING:
            raise InvariantViolation("job-state", t, s.queued.id, f"{was} -> {state}")
        s.end = t
        q = s.queued
        jid = q.id
        del self.running[jid]
        if self._views is not None:
            del self._views[jid]
        if self._releases is not None:
            self._releases.drop(self._release_of.pop(jid))
        self.free_nodes += q.nodes
        if s.node_ids or self.node_allocator is not None or self.predictor is not None:  # else nothing to give
            self._give_nodes(s, t)
        if s.tier == HPS:
            self.hps_free += s.storage
            if self.allocator is not None and jid in self.allocator.state.live:
                self.allocator.release(jid, t)
            elif self.allocator is not None and was == ALLOCATING:
                self.allocator.cancel(jid)
            elif s.parts:
                self.allocations.append((jid, POOL, s.storage, s.start, t, "allocated"))
        if was == SUSPENDED:  # ended while stopped (killed): its suspension ends with it
            s.suspensions += ((s.suspended_at, t),)
        s.state, s.status = state, STATUS[state]
        if message:
            s.message = message
        self.changed = True
        if self.observer is not None:
            self.observer.ended(s.queued.id, state, t, self._books())

    # -- node ids, walltime estimates, plan tracking (soysal2019) ---------------------------------
    def _setup_soysal(self, estimate: tuple[str, float], track_predictions: bool) -> None:
        """Node-id bookkeeping, the spec's walltime estimate and the plan tracker."""
        self.free_ids = (1 << self.total_nodes) - 1  # mask of the free node ids
        kind, lam = estimate
        self.estimate = kind
        self.predictor = UserPredictor() if kind == "predictor" else None
        if kind == "refined":
            for s in self.jobs:
                w = refine(float(s.job.walltime), float(s.job.runtime), lam)
                if w != s.queued.walltime:
                    s.queued = s.queued._replace(walltime=w)
        elif kind not in ("request", "predictor"):
            raise ValueError(f"unknown walltime estimate {kind!r}; known: request, refined, predictor")
        self.tracker = PlanTracker() if track_predictions else None
        self._planned: dict[str, int] = {}
        # the last pass's node-set replay, to go on from: (running, free ids, plan, replay after it,
        # sets), or replay_in_start_order's memo for a policy whose plans are in order of start
        self._replayed = None

    def _take_nodes(self, s: JobState, node_ids=None) -> None:
        """``s`` starts: on the node ids its start named (``node_ids``), else its planned node set if the
        tracker planned one and it is free, else (the same ids when the plan was made now) the node
        allocator's choice or the lowest free ids."""
        n = s.queued.nodes
        m = self._planned.pop(s.queued.id, 0)
        if node_ids is not None:  # the policy chose them (a guard checked them against its snapshot)
            m = mask_of(node_ids)
            if m.bit_count() != n or (m & self.free_ids) != m:
                raise InvariantViolation("node-double-booked", s.start, s.queued.id, f"policy {self.policy.name} "
                                         f"started it on nodes {sorted(node_ids)}, not {n} free ones")
            if self.node_allocator is not None:
                self.node_allocator.take(s.queued.id, m, io_load(s.queued))
        elif self.node_allocator is not None:  # io-aware: the I/O nodes' loads choose (plans hold counts)
            load = io_load(s.queued)
            m = self.node_allocator.choose(self.free_ids, n, load, s.queued)
            self.node_allocator.take(s.queued.id, m, load)
        elif not self.keep_ids:
            m = 0
        elif not m or (m & self.free_ids) != m or m.bit_count() != n:
            m = lowest(self.free_ids, n)
        self.free_ids &= ~m
        s.node_ids = m
        if self.tracker is not None:
            self.tracker.forget(s.queued.id)
            self._due = None
        if self.early:
            self._advance_started(s)

    def _give_nodes(self, s: JobState, t: float) -> None:
        """``s`` ended: its node ids return; the predictor learns its sigma."""
        self.free_ids |= s.node_ids
        if self.node_allocator is not None:
            self.node_allocator.release(s.queued.id)
        if self.predictor is not None and s.job is not None and s.start == s.start:
            self.predictor.completed(s.job.user, t - s.start, float(s.job.walltime))

    def _predict(self, s: JobState) -> None:
        w = self.predictor.predict(s.job.user, float(s.job.walltime))
        w = max(w, min(1.0, float(s.job.walltime)))  # sigma 0 (a job of runtime 0): at least 1 s
        if w != s.queued.walltime:
            s.queued = s.queued._replace(walltime=w)

    def estimate_due(self, s: JobState) -> float:
        """When the runtime must call :meth:`extend_estimate` for the running job ``s``
        (its predicted end, while the prediction is below the request); ``inf`` if never."""
        if self.predictor is None or s.state in ENDED or s.queued.walltime >= float(s.job.walltime):
            return math.inf
        return s.expected_end

    def extend_estimate(self, s: JobState, t: float) -> bool:
        """``s`` is still running at its predicted end: the prediction is doubled, capped at the
        request (soysal2019 §3.4.2); the plan changes.  Returns whether it changed."""
        if s.state in ENDED or s.state in (FUTURE, QUEUED) or t < s.expected_end:
            return False
        w = UserPredictor.extend(s.queued.walltime, float(s.job.walltime))
        if w <= s.queued.walltime:
            return False
        s.expected_end += w - s.queued.walltime
        self._seen(s)
        s.queued = s.queued._replace(walltime=w)
        self.changed = True
        return True

    def _track(self, t: float, d: Decision) -> None:
        running = [(r.expected_end, r.node_ids) for r in self.running.values()]
        plan = d.plan
        if self.allows.plans_in_start_order:
            # FCFS: re-place only until the replay joins the last one (replay_in_start_order);
            # the entries it did not re-place have their old start and set: nothing to record
            sets, fresh, self._replayed = replay_in_start_order(t, self.free_ids, running, plan, self._replayed)
            planned = {}
            for i, st in enumerate(d.starts):  # a plan in start order starts with the jobs starting now
                if plan[i].job != st.job:
                    raise InvariantViolation("plan-order", t, st.job, f"policy {self.policy.name} starts "
                                             f"{st.job} but plans {plan[i].job} first")
                planned[st.job] = sets[i]
            self._planned = planned
            for lo, hi in fresh:
                if lo < hi:
                    self.tracker.observe(t, plan[lo:hi], sets[lo:hi])
        else:
            new = plan
            memo = self._replayed
            if (memo is not None and memo[0] == running and memo[1] == self.free_ids
                    and plan[:len(memo[2])] == memo[2] and all(e > t for e, _ in running)
                    and all(e.start >= memo[3].latest for e in plan[len(memo[2]):])):
                # Only jobs were added at the end of an unchanged plan (an arrival-only decision):
                # the earlier entries' sets are the ones replayed last time, and the replay goes on
                # from where it stopped (NodeSetReplay); none of them can change, so the tracker
                # is shown the new entries only (it keeps changes only).
                new = plan[len(memo[2]):]
                replay = memo[3].copy()
                sets = replay.place(new, dict(memo[4]))
            else:
                replay = NodeSetReplay(t, self.free_ids, running)
                sets = replay.place(plan, {})
            self._replayed = (running, self.free_ids, plan, replay, sets)
            self._planned = {e.job: sets[e.job] for e in d.starts if e.job in sets}
            self.tracker.observe(t, new, [sets.get(e.job, 0) for e in new])
        if self.advance is not None:
            self._advance_pass(t, d)

    def prediction_rows(self) -> PlanRows:
        """The predictions table (job, time, planned start, node mask), changes only, as columns
        (iterating gives the rows)."""
        return self.tracker.rows if self.tracker is not None else PlanRows()

    # -- advance stage-in (beyond soysal2019) ---------------------------------------------------------
    def _setup_advance(self, advance: tuple[float, float] | None) -> None:
        self.advance = advance  # (theta_stable, margin) or None
        self.early: dict[str, tuple[float, float, int]] = {}  # job -> (copy began, planned start, node mask)
        self.early_bytes = 0.0  # HPS bytes held by early copies (outside hps_free: the policies see less)
        self.advance_stats = {"early_copies": 0, "hidden_seconds": 0.0, "early_bytes": 0.0,
                              "wasted_bytes": 0.0, "wasted_link_seconds": 0.0, "wasted_copies": 0}
        self.early_staged: dict[str, float] = {}  # job -> bytes already on HPS at its start
        self._due: float | None = None  # advance_due's answer until the plan, queue or copies change

    def _copied(self, began: float, t: float, nbytes: float) -> tuple[float, float]:
        """Bytes an early copy begun at ``began`` moved by ``t`` and the link seconds it took
        (modelled at R_stage alone)."""
        secs = min(max(t - began, 0.0), nbytes / self.rates.stage)
        return min(nbytes, secs * self.rates.stage), secs

    def _advance_pass(self, t: float, d: Decision) -> None:
        """After a tracked pass: drop the early copies whose planned node set changed (wasted; a
        start that moves keeps its copy, the space is simply held longer), begin those of the
        waiting jobs the plan puts on HPS (storage and input > 0) whose planned start and node set are
        unchanged for theta_stable and whose start is within input / R_stage + margin."""
        theta, margin = self.advance
        plan = {e.job: e for e in d.plan}
        for job, (began, start, mask) in list(self.early.items()):
            e = plan.get(job)
            if e is None or job not in self.queue:
                continue  # started in this pass (_advance_started settled it)
            last = self.tracker.stable_since(job)
            if last is None or last[1] != mask:  # the data sits where the job will not run
                self._waste(job, t)
        for e in d.plan:
            if e.job in self.early or e.start <= t:
                continue
            s = self.queue.get(e.job)
            if s is None or e.tier != HPS:
                continue  # gone, or planned on LPS: no data to stage
            q = s.queued
            if q.storage <= 0 or q.input <= 0:
                continue
            last = self.tracker.stable_since(e.job)
            if last is None or t - last[2] < theta or e.start - t > q.input / self.rates.stage + margin:
                continue
            if self.early_bytes + q.storage + (self.hps_capacity - self.hps_free) > self.hps_capacity * (1 + 1e-12):
                continue  # the capacity check: running jobs and early copies together
            self.early[e.job] = (t, last[0], last[1])
            self.early_bytes += q.storage
            self.advance_stats["early_copies"] += 1
            self._due = None

    def advance_due(self) -> float:
        """The next time a waiting job becomes eligible for an early copy under the current plan
        (``inf`` if none): the runtime calls :meth:`advance_check` then (no decision is needed,
        nothing changed).

        It depends on the plan, the queue, the tracker and the early copies only, not on the
        time: kept until one of them changes (the simulator asks after every instant, and on
        all of KTH a scan of the plan per instant was a third of an advance run).  Strict mode
        computes it afresh every time and checks the kept answer."""
        if self.advance is None:
            return math.inf
        due = self._due
        if due is None:
            due = self._due = self._advance_due()
        elif self.observer is not None and due != self._advance_due():
            raise InvariantViolation("advance-due-kept", math.nan, "the kernel",
                                     f"kept {due}, the plan says {self._advance_due()}")
        return due

    def _advance_due(self) -> float:
        theta, margin = self.advance
        due = math.inf
        for e in self.last_plan:
            s = self.queue.get(e.job)
            if (s is None or e.tier != HPS or e.job in self.early or s.queued.storage <= 0
                    or s.queued.input <= 0):
                continue
            last = self.tracker.stable_since(e.job)
            if last is None or math.isinf(e.start):
                continue
            due = min(due, max(last[2] + theta, e.start - s.queued.input / self.rates.stage - margin))
        return due

    def advance_check(self, t: float) -> None:
        """Begin the early copies due at ``t`` under the last plan (see :meth:`advance_due`)."""
        if self.advance is not None and self.queue:
            self._advance_pass(t, Decision(now=t, plan=self.last_plan))

    def _waste(self, job: str, t: float) -> None:
        began, _, _ = self.early.pop(job)
        self._due = None
        q = self.by_id[job].queued
        self.early_bytes -= q.storage
        moved, secs = self._copied(began, t, q.input)
        self.advance_stats["wasted_bytes"] += moved
        self.advance_stats["wasted_link_seconds"] += secs
        self.advance_stats["wasted_copies"] += 1
        self.changed = True  # the space is back

    def _advance_started(self, s: JobState) -> None:
        """``s`` starts: its early copy is used if it starts on HPS on the planned nodes, else wasted."""
        job = s.queued.id
        if job not in self.early:
            return
        began, _, mask = self.early[job]
        if s.tier != HPS or s.node_ids != mask:
            self._waste(job, s.start)
            return
        del self.early[job]
        self._due = None
        self.early_bytes -= s.queued.storage
        moved, secs = self._copied(began, s.start, s.job.input)
        self.early_staged[job] = moved
        self.advance_stats["hidden_seconds"] += secs
        self.advance_stats["early_bytes"] += moved

    def cancel_early(self, job: str, t: float) -> bool:
        """A waiting job was cancelled or died before its start: its early copy is dropped (and
        counted wasted), its space returns.  Returns whether it had one."""
        if job not in self.early:
            return False
        self._waste(job, t)
        return True

    def withdraw(self, job: str, t: float, message: str = "cancelled before its start") -> None:
        """A waiting job is cancelled before its start (or rejected by the policy): it leaves the queue
        (``killed``, with ``message``), its early copy (if any) is dropped and counted wasted."""
        s = self.by_id[job]
        if s.state not in (FUTURE, QUEUED):
            raise InvariantViolation("job-state", t, job, f"withdraw of a {s.state} job")
        self.cancel_early(job, t)
        if job in self.queue:
            self._dequeue(s.queued)
        if self.tracker is not None:
            self.tracker.forget(job)
        # no end: it never ran (a trace's end is the end of a run)
        s.state, s.status, s.message = KILLED, STATUS[KILLED], f"{message} (t={t:.6g})"
        self.changed = True
        if self.observer is not None:
            self.observer.withdrawn(job, t)

    # -- inspection ----------------------------------------------------------------------------
    def allocation_rows(self) -> list[tuple]:
        """The allocations table (job, disk, bytes, alloc, free, status): the allocator's log
        when the HPS has disks, else one pool row per HPS job (at its end)."""
        if self.allocator is None:
            return list(self.allocations)
        return [(r.job, r.disk, float(r.bytes), r.alloc, math.nan if r.free is None else r.free, r.status)
                for r in self.allocator.log()]

    def never_started(self) -> list[str]:
        return [s.queued.id for s in self.jobs if s.state in (FUTURE, QUEUED)]
