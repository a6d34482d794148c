"""The batch simulator: the batch kernel advanced on simulated time, bytes moved on shared links.

Model (lackner2019 §III-A, §IV-B):

- ``nodes`` homogeneous compute nodes; a job holds its nodes from its start
  (the start of its stage-in on HPS) to the end of its last step (its
  stage-out on HPS), as the schedulers' plans assume;
- three links, each shared fairly among its streams (``iolab.sim.fairshare``):
  compute nodes <-> LPS at R_lps, compute nodes <-> HPS at R_hps, LPS <-> HPS
  at R_stage; they do not interfere with each other;
- the HPS has a capacity; a job on HPS holds its requested ``storage`` bytes
  from its start to its end, placed on the HPS disks (if the platform has
  them) by the spec's ``placement``.

Everything decision-relevant (queue, job states, snapshot, policy, nodes, HPS
bytes, disk placement, strict checks) is the kernel's,
:class:`iolab.middleware.policies.batch.kernel.BatchKernel`, the very object the
real run (``iolab.emulator.batch.run``) drives; what happens at an instant
(decide, start, retry, end, kill, suspend, resume) is the driver's,
:class:`iolab.middleware.policies.batch.driver.BatchDriver`, and which instant
comes next is its loop's, :class:`~iolab.middleware.policies.batch.driver.BatchLoop`,
the real run's too.  This module runs the loop without a clock (simulated time)
and adds the effectors of a job's steps (:mod:`iolab.workloads.steps`) on the
links: :meth:`BatchEngine.begin`, ``halt``, ``pause``, ``unpause``, and a
timed step's end or a link's completion (``_go_on``).  Every decision's
plan can be recorded (``record_plans``): soysal2019's walltime-quality and
node-allocation-prediction studies need plans over time.
"""

from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

from iolab.middleware.policies.batch import HPS, LPS, BatchPolicy, Decision, TierRates
from iolab.invariants import strict_default
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.kernel import (ALLOCATING, RUNNING, STAGE_IN, STAGE_OUT, SUSPENDED, BatchKernel,
                                                    JobState)
from iolab.middleware.policies.batch.driver import _STEP_END, PROGRESS_EVERY, BatchDriver, BatchLoop

from iolab.sim.fairshare import FairShareLink
from iolab.middleware.policies.batch.io_parts import TIER_LINKS
from iolab.workloads.steps import COMPUTE, FIXED, OVERHEADS, step_lists

_STATE_OF = {"stage-in": STAGE_IN, "stage-out": STAGE_OUT}  # other steps: running


class PhaseColumns:
    """The phase rows of a batch run, column by column: times and volumes as arrays of doubles, no
    tuple and no boxed float per row (~48 B a row, where a tuple of boxed floats is ~170 B).  Columns in
    the trace schema's order; ``io_node`` is None (no column: -1 in ``rows()``) unless the platform has I/O
    nodes, where a tier phase that went through them has a row per part (``BatchEngine._part_rows``);
    ``columns()`` is what ``TraceBuilder.extend_columns`` takes, ``rows()`` (and iteration) the same rows as
    tuples."""

    __slots__ = ("job", "index", "kind", "start", "end", "volume", "tier", "io_node")

    def __init__(self) -> None:
        self.job: list[str] = []
        self.index: list[int] = []
        self.kind: list[str] = []
        self.start = array("d")
        self.end = array("d")
        self.volume = array("d")
        self.tier: list[str] = []
        self.io_node: list[int] | None = None

    def append(self, job: str, index: int, kind: str, start: float, end: float, volume: float, tier: str) -> None:
        self.job.append(job)
        self.index.append(index)
        self.kind.append(kind)
        self.start.append(start)
        self.end.append(end)
        self.volume.append(volume)
        self.tier.append(tier)

    def __len__(self) -> int:
        return len(self.job)

    def __iter__(self):
        return iter(self.rows())

    def columns(self) -> dict[str, Any]:
        cols = {"job": self.job, "index": self.index, "kind": self.kind, "start": self.start, "end": self.end,
                "volume": self.volume, "tier": self.tier}
        if self.io_node is not None:
            cols["io_node"] = self.io_node
        return cols

    def rows(self) -> list[tuple]:
        return list(zip(self.job, self.index, self.kind, self.start, self.end, self.volume,
                        [-1] * len(self) if self.io_node is None else self.io_node, self.tier))


@dataclass
class BatchRecord:
    """What a batch run produced (turned into a trace by ``iolab.sim.batch.run``)."""

    jobs: list[JobState]
    phases: PhaseColumns = field(default_factory=PhaseColumns)
    allocations: list[tuple] = field(default_factory=list)
    plans: list[tuple] = field(default_factory=list)  # (time, job, planned start, tier, reserved)
    predictions: Any = ()  # PlanRows (job, time, planned start, node mask): changes only
    advance: dict = field(default_factory=dict)  # advance stage-in counters (kernel.advance_stats)
    decisions: int = 0
    events: int = 0
    controller: object = None  # the load controller driver, if any (its samples and actions)
    io_time: Any = ()  # seconds each job spent in I/O phases (read, write, staging), by job index
    grants: list[tuple] = field(default_factory=list)  # I/O nodes' grants (job, phase, io_node, request, grant, release)


PHASE_MODES = ("all", "jobs", "none")  # what a run keeps of its phases (BatchEngine.around)


class BatchEngine(BatchLoop):
    """Runs a :class:`BatchKernel` on simulated time (the batch loop, :class:`BatchLoop`, without a
    clock).  Built from the kernel's arguments (``BatchEngine(jobs, policy, total_nodes=..., ...)``) or
    around a kernel (:meth:`around`)."""

    def __init__(self, jobs, policy: BatchPolicy, *, total_nodes: int, hps_capacity: float,
                 rates: TierRates, memory_per_node: float, rows: bool = True,
                 record_plans: bool = False, on_decision: Callable[[Decision], None] | None = None,
                 allocator=None, strict: bool | None = None, overheads=None, phases: str | None = None):
        kernel = BatchKernel(jobs, policy, total_nodes=total_nodes, hps_capacity=hps_capacity, rates=rates,
                             allocator=allocator, observer=BatchChecker() if strict_default(strict) else None,
                             record_plans=record_plans,
                             on_decision=on_decision)
        self._setup(kernel, memory_per_node, rows, overheads, phases)

    @classmethod
    def around(cls, kernel: BatchKernel, *, memory_per_node: float, rows: bool = True,
               overheads=None, phases: str | None = None, laws: dict | None = None) -> "BatchEngine":
        """``overheads``: the platform's :class:`iolab.specs.batch.Overheads` (launch, exit and
        per-phase costs as timed steps, :func:`iolab.workloads.steps.with_overheads`), or None.
        ``phases``: ``all`` (a row per phase), ``jobs`` (no phase rows; each job's I/O time is kept,
        :attr:`BatchRecord.io_time`) or ``none``; default ``all`` with ``rows``, else ``none``
        (``rows`` False also leaves out the allocation rows).  ``laws``: the interference law of each
        link that has a lossy one (``lps``, ``hps``, ``stage``; a link not named shares its rate without loss)."""
        self = cls.__new__(cls)
        self._setup(kernel, memory_per_node, rows, overheads, phases, laws)
        return self

    def _setup(self, kernel: BatchKernel, memory_per_node: float, rows: bool, overheads=None,
               phases: str | None = None, laws: dict | None = None) -> None:
        if phases is None:
            phases = "all" if rows else "none"
        if phases not in PHASE_MODES:
            raise ValueError(f"phases must be one of {', '.join(PHASE_MODES)}, got {phases!r}")
        self._all_rows = phases == "all"
        self._io_time = array("d", bytes(8 * len(kernel.jobs)))  # seconds in I/O phases, per job index
        self.kernel = kernel
        self.overheads = overheads
        self.policy = kernel.policy
        self.state = kernel.jobs
        self.rates = kernel.rates
        self.memory = memory_per_node
        self.rows = rows
        self._step_list = step_lists(self.rates.lps, memory_per_node, overheads)  # a job's steps: f(job, tier)
        d = getattr(overheads, "delivered", None)  # the links deliver these shares; the plans use the rates
        share = (d.lps, d.hps, d.stage) if d is not None else (1.0, 1.0, 1.0)
        law = (laws or {}).get
        self.links = {LPS: FairShareLink(self.rates.lps * share[0], law(LPS)),
                      HPS: FairShareLink(self.rates.hps * share[1], law(HPS)),
                      "stage": FairShareLink(self.rates.stage * share[2], law("stage"))}
        self.rec = BatchRecord(self.state)
        ph = self.rec.phases  # its columns' appends, bound once (a row per phase)
        self._row_appends = (ph.job.append, ph.index.append, ph.kind.append, ph.start.append, ph.end.append,
                             ph.volume.append, ph.tier.append)
        self._paused: dict[int, float] = {}  # suspended job index -> seconds or bytes left of its step
        self.controller = None  # a load controller driver (iolab.sim.batch.load_controller), if the spec has one
        # the platform's I/O nodes (iolab.sim.batch.io_node_layer): they stand in for the tier links, if any
        self.io_nodes = None
        self._parts_ended: dict | None = None  # the I/O nodes' book of the parts of each phase ended (their rows)
        # on_progress(t, submitted, total): called every PROGRESS_EVERY events (a front end throttles and prints)
        self.on_progress: Callable[[float, int, int], None] | None = None
        self.driver = BatchDriver(kernel, self)  # the instants; it answers the policy's kills

    # -- the effectors (iolab.middleware.policies.batch.driver.JobEffects) ----------------------------
    def begin(self, s: JobState, t: float) -> None:
        """A job the kernel started (or placed after a retry) begins its steps on its tier."""
        if s.state == ALLOCATING:
            return  # the loop asks the disks again at its retry
        k = self.kernel
        steps = s.steps = self._step_list(s.job, s.tier)
        early = k.early_staged.get(s.queued.id, 0.0) if k.early_staged else 0.0
        if early > 0:  # advance stage-in: only the rest of the input crosses the link now
            steps = s.steps = tuple(st._replace(amount=st.amount - early) if st.kind == "stage-in" else st
                                    for st in steps)
        if len(steps) == 1 and not self._all_rows and steps[0].amount > 0 and s.state == RUNNING:
            # _go_on's first turn for a job of one compute step (one without I/O: every SWF job), inline,
            # when that turn would leave no phase row (with every row kept it goes through _go_on)
            s.step = 0
            s.step_start = t
            end = t + steps[0].amount
            self._step_end[s.index] = end
            heapq.heappush(self._heap, (end, next(self._seq), _STEP_END, s.index))
        else:
            s.step = -1
            self._go_on(s, t)

    def _go_on(self, s: JobState, t: float, done=None) -> None:
        """``done``, the step of ``s`` that ended at ``t`` (None at the job's start), leaves its phase row
        (``phases: all``) and adds to the job's I/O time; then ``s`` begins its next step at ``t``, and the
        steps of no duration end at once, each with its row.  The hot path: one call per phase."""
        steps = s.steps
        i = s.step
        n = len(steps)
        while True:
            if done is not None:  # the phase row of step i
                kind = done.kind
                if kind not in OVERHEADS:
                    if kind != COMPUTE:
                        self._io_time[s.index] += t - s.step_start
                    if self._all_rows:
                        index = done.index if done.index >= 0 else i
                        volume = 0.0 if kind == COMPUTE else done.amount
                        tier = "stage" if done.link == "stage" else s.tier
                        if self._parts_ended is None:
                            a_job, a_index, a_kind, a_start, a_end, a_volume, a_tier = self._row_appends
                            a_job(s.queued.id)
                            a_index(index)
                            a_kind(kind)
                            a_start(s.step_start)
                            a_end(t)
                            a_volume(volume)
                            a_tier(tier)
                        else:  # on a platform with I/O nodes: a row per part
                            self._part_rows(s.queued.id, index, kind, s.step_start, t, volume, tier)
            i += 1
            if i >= n:
                break
            st = steps[i]
            s.step = i
            if i == 0 or steps[i - 1].kind != FIXED:  # a phase's fixed cost is part of its row
                s.step_start = t
            want = _STATE_OF.get(st.kind, RUNNING)
            if s.state != want:
                self.kernel.enter(s, want, t)
            link = st.link
            if link:
                self.links[link].add(s.index, st.amount, t)
                self._touched_links.add(link)
                return
            if st.amount > 0:  # compute or an overhead: a timed step
                end = t + st.amount
                self._step_end[s.index] = end
                heapq.heappush(self._heap, (end, next(self._seq), _STEP_END, s.index))
                return
            done = st  # no duration: it ends now
        s.step = n
        # the driver's end (BatchDriver.end) with nothing to halt, its steps all done: the kernel's finish
        # straight away (the hot path: once per job)
        self.kernel.finish(s, t)
        s.steps = ()  # read only while the job runs: 243 306 step lists on SDSC-BLUE otherwise

    def _part_rows(self, job: str, index: int, kind: str, start: float, end: float, volume: float,
                   tier: str) -> None:
        """A phase's rows on a platform with I/O nodes: a tier phase that went through them has a row per
        part (the phase's start, the part's end, bytes and I/O node: the book's, :attr:`IONodeBook.ended`);
        any other phase its one row, ``io_node`` -1."""
        ph = self.rec.phases
        parts = self._parts_ended.get((job, index)) if tier in TIER_LINKS else None  # (io_parts.through_io_nodes)
        for node, nbytes, part_end in parts or ((-1, volume, end),):
            ph.append(job, index, kind, start, part_end, nbytes, tier)
            ph.io_node.append(node)

    def halt(self, s: JobState, t: float, state: str, message: str) -> None:
        """``s`` ends: a step it was cut short in stops where it is (its stream leaves its link, its timed
        step's end is dropped; no phase row for it); a job whose steps are done has nothing to stop."""
        i = s.index
        if s.state == SUSPENDED:
            self._paused.pop(i, None)
            if self.io_nodes is not None:
                self.io_nodes.paused.pop(i, None)
        elif 0 <= s.step < len(s.steps):
            st = s.steps[s.step]
            if st.link:
                self.links[st.link].remove(i, t)
                self._touched_links.add(st.link)
                if self.io_nodes is not None:  # its parts left their I/O nodes: nothing of it resumes
                    self.io_nodes.paused.pop(i, None)
            else:
                self._step_end.pop(i, None)  # its end in the heap is stale now (run() skips it)
        s.steps = ()

    def pause(self, s: JobState, t: float) -> bool:
        """Suspension (the load controller): ``s``'s compute step's clock stops, its stream leaves its link
        (the others share the link's rate)."""
        st = s.steps[s.step]
        if not st.link:  # compute or an overhead
            self._paused[s.index] = self._step_end.pop(s.index) - t
        else:
            self._paused[s.index] = self.links[st.link].remove(s.index, t)
            self._touched_links.add(st.link)
        return True

    def unpause(self, s: JobState, t: float) -> bool:
        """``s`` goes on with what was left of its step (False: it was not paused)."""
        left = self._paused.pop(s.index, None)
        if left is None:
            return False
        st = s.steps[s.step]
        if not st.link:
            self._step_end[s.index] = t + left
            self._push(t + left, _STEP_END, s.index)
        else:
            self.links[st.link].add(s.index, max(left, 0.0), t)
            self._touched_links.add(st.link)
        return True

    # -- the run ------------------------------------------------------------------------------------------
    def run(self) -> BatchRecord:
        t = self.loop()  # the batch loop on simulated time (iolab.middleware.policies.batch.driver)
        self._close()
        if self.kernel.queue:
            self.kernel.stalled(t)  # (raises: no call is left)
        return self.rec

    def _close(self) -> None:
        """The record's totals (at the run's end, or where a broken rule stopped it: :meth:`partial`)."""
        k = self.kernel
        self.rec.events = self.events
        self.rec.io_time = self._io_time
        self.rec.controller = self.controller
        self.rec.decisions = k.decisions
        self.rec.plans = k.plans
        self.rec.predictions = k.prediction_rows()
        self.rec.advance = dict(k.advance_stats)
        self.rec.allocations = k.allocation_rows() if self.rows else []

    def partial(self) -> BatchRecord:
        """What the run did up to where it stopped (a broken rule, a policy that raised): its record, the
        jobs in the states they had then."""
        self._close()
        return self.rec
