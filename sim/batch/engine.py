"""The batch engine: jobs arrive, a batch policy starts them, they run their steps.

Model (lackner2019 §III-A, §IV-B):

- ``nodes`` homogeneous compute nodes; a job holds its nodes from its start
  (the start of its stage-in on HPS) to the end of its last step (its
  stage-out on HPS), as the schedulers' plans assume;
- three links, each shared fairly among its streams (``iolab.sim.fairshare``):
  compute nodes <-> LPS at R_lps, compute nodes <-> HPS at R_hps, LPS <-> HPS
  at R_stage; they do not interfere with each other;
- the HPS has a capacity; a job on HPS holds its requested ``storage`` bytes
  from its start to its end; the policy never starts a job that would
  overcommit it (checked here too: it would be a policy bug).

The policy (any ``iolab.middleware.policies.batch`` scheduler, the very objects a
real-clock batch loop calls) decides once per instant at which something
changed (a submission or a job end), on a :class:`Snapshot` of the queue,
the running jobs with their planned ends, the free nodes and HPS bytes.
Every decision's plan can be recorded (``record_plans``): soysal2019's
walltime-quality and node-allocation-prediction studies need plans over time.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

from iolab.middleware.policies.batch import HPS, LPS, BatchPolicy, Decision, QueuedJob, RunningJob, Snapshot, TierRates

from ..fairshare import FairShareLink
from .steps import COMPUTE, job_steps

_SUBMIT, _STEP_END, _LINK = 0, 1, 2


@dataclass
class JobState:
    index: int
    job: object
    queued: QueuedJob
    tier: str = ""
    start: float = math.nan
    end: float = math.nan
    expected_end: float = math.nan
    storage: float = 0.0
    steps: tuple = ()
    step: int = -1
    step_start: float = 0.0


@dataclass
class BatchRecord:
    """What a batch run produced (turned into a trace by ``iolab.sim.batch.run``)."""

    jobs: list[JobState]
    phases: list[tuple] = field(default_factory=list)
    allocations: list[tuple] = field(default_factory=list)
    plans: list[tuple] = field(default_factory=list)  # (time, job, planned start, tier, reserved)
    decisions: int = 0
    events: int = 0


class BatchEngine:
    def __init__(self, jobs, policy: BatchPolicy, *, total_nodes: int, hps_capacity: float,
                 rates: TierRates, memory_per_node: float, rows: bool = True,
                 record_plans: bool = False, on_decision: Callable[[Decision], None] | None = None):
        self.policy = policy
        self.total_nodes = total_nodes
        self.hps_capacity = hps_capacity
        self.rates = rates
        self.memory = memory_per_node
        self.rows = rows
        self.record_plans = record_plans
        self.on_decision = on_decision
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
        self.state = [JobState(k, jobs[i], QueuedJob.from_job(jobs[i])) for k, i in enumerate(order)]
        # every job checked once here; the decisions then use Snapshot.trusted (no O(queue) re-check)
        Snapshot.check_jobs([s.queued for s in self.state], total_nodes)
        self.by_id = {s.queued.id: s for s in self.state}
        self.links = {LPS: FairShareLink(rates.lps), HPS: FairShareLink(rates.hps),
                      "stage": FairShareLink(rates.stage)}
        self.queue: dict[str, JobState] = {}  # insertion order = submit order
        self.running: dict[str, JobState] = {}
        self.free_nodes = total_nodes
        self.hps_free = hps_capacity
        self.rec = BatchRecord(self.state)
        self._heap: list[tuple] = []
        self._seq = itertools.count()
        self._touched_links: set[str] = set()

    # -- helpers ------------------------------------------------------------
    def _push(self, t: float, ev: int, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), ev, arg))

    def _begin_step(self, s: JobState, t: float) -> None:
        s.step += 1
        while s.step < len(s.steps):
            st = s.steps[s.step]
            s.step_start = t
            if st.kind == COMPUTE:
                if st.amount > 0:
                    self._push(t + st.amount, _STEP_END, s.index)
                    return
                self._phase(s, st, t)
                s.step += 1
                continue
            self.links[st.link].add(s.index, st.amount, t)
            self._touched_links.add(st.link)
            return
        self._finish(s, t)

    def _phase(self, s: JobState, st, t: float) -> None:
        if self.rows:
            self.rec.phases.append((s.queued.id, s.step, st.kind if st.kind != COMPUTE else "compute",
                                    s.step_start, t, 0.0 if st.kind == COMPUTE else st.amount, -1,
                                    "stage" if st.link == "stage" else s.tier))

    def _finish(self, s: JobState, t: float) -> None:
        s.end = t
        del self.running[s.queued.id]
        self.free_nodes += s.queued.nodes
        if s.tier == HPS:
            self.hps_free += s.storage
            if self.rows:
                self.rec.allocations.append((s.queued.id, "hps", s.storage, s.start, t, "allocated"))
        self._changed = True

    def _start(self, s: JobState, tier: str, expected_end: float, t: float) -> None:
        q = s.queued
        if q.nodes > self.free_nodes:
            raise RuntimeError(f"policy {self.policy.name} started {q.id} on {q.nodes} nodes; {self.free_nodes} free")
        storage = q.storage if tier == HPS else 0.0
        if storage > self.hps_free * (1 + 1e-12) + 1e-6:
            raise RuntimeError(f"policy {self.policy.name} overcommits HPS with {q.id}: {storage} > {self.hps_free}")
        del self.queue[q.id]
        self.running[q.id] = s
        self.free_nodes -= q.nodes
        self.hps_free -= storage
        s.tier, s.start, s.expected_end, s.storage = tier, t, expected_end, storage
        s.steps = job_steps(s.job, tier, self.rates.lps, self.memory).steps
        self._begin_step(s, t)

    def _decide(self, t: float) -> None:
        if not self.queue:
            return
        if not self.record_plans and self.free_nodes < min(s.queued.nodes for s in self.queue.values()):
            return  # no waiting job fits in the free nodes: nothing can start (any policy)
        snap = Snapshot.trusted(
            now=t, total_nodes=self.total_nodes, free_nodes=self.free_nodes,
            queue=tuple(s.queued for s in self.queue.values()),
            running=tuple(RunningJob(s.queued.id, s.queued.nodes, s.expected_end, s.tier, s.storage)
                          for s in self.running.values()),
            hps_capacity=self.hps_capacity, hps_free=min(max(self.hps_free, 0.0), self.hps_capacity),
            rates=self.rates,
        )
        d = self.policy.decide(snap)
        self.rec.decisions += 1
        if self.record_plans:
            self.rec.plans.extend((t, e.job, e.start, e.tier, e.reserved) for e in d.plan)
        if self.on_decision is not None:
            self.on_decision(d)
        for st in d.starts:
            self._start(self.by_id[st.job], st.tier, st.expected_end, t)

    # -- main loop --------------------------------------------------------
    def run(self) -> BatchRecord:
        for s in self.state:
            self._push(s.queued.submit, _SUBMIT, s.index)
        heap = self._heap
        events = 0
        while heap:
            t = heap[0][0]
            self._changed = False
            while heap and heap[0][0] == t:
                _, _, ev, arg = heapq.heappop(heap)
                events += 1
                if ev == _SUBMIT:
                    s = self.state[arg]
                    self.queue[s.queued.id] = s
                    self._changed = True
                elif ev == _STEP_END:
                    s = self.state[arg]
                    self._phase(s, s.steps[s.step], t)
                    self._begin_step(s, t)
                else:
                    name, version = arg
                    link = self.links[name]
                    if version != link.version:
                        continue
                    for idx in link.pop_finished(t):
                        s = self.state[idx]
                        self._phase(s, s.steps[s.step], t)
                        self._begin_step(s, t)
                    self._touched_links.add(name)
            while self._changed:  # a job that ends inside its start (runtime 0) frees nodes now:
                self._changed = False  # decide again at this instant until nothing more ends
                self._decide(t)
            for name in sorted(self._touched_links):
                link = self.links[name]
                nxt = link.next_completion()
                if nxt < math.inf:
                    self._push(max(nxt, t), _LINK, (name, link.version))
            self._touched_links.clear()
        self.rec.events = events
        if self.queue:
            raise RuntimeError(f"{len(self.queue)} job(s) never started (policy {self.policy.name}); "
                               f"first: {next(iter(self.queue))}")
        return self.rec
