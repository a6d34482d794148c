"""Strict mode of the batch level: a checker that keeps its own books (Batsim's validating machine).

:class:`BatchChecker` is an observer of a :class:`~.kernel.BatchKernel` (the kernel's
``BatchObserver`` protocol): it sees the platform and the workload once (``opened``), then every
decision and every state change as an event, and keeps its own books from them alone: each job's
state, the running set, the free node ids, the free HPS bytes and the bytes on each disk.  It never
reads the kernel.  A decision is checked against these books, and so is what the kernel shows the
policy (the snapshot) and the books the kernel reports after each change: a kernel that frees a
node twice, forgets to free one, loses a node id or miscounts HPS bytes is stopped at that change,
naming the job.

Rules (the ``rule`` of the :class:`~iolab.invariants.InvariantViolation` raised):

- ``submit-early``: a job queued before its submission time;
- ``decision-time``: a decision dated another instant than the snapshot's;
- ``start-not-queued``: a start of a job that is not waiting (unknown, running,
  ended, or twice in one decision);
- ``start-before-submit``: a start before the job's submission;
- ``tier-illegal``: a start on a tier that is neither ``lps`` nor ``hps``;
- ``start-mismatch``: a start whose nodes or HPS bytes are not the job's;
- ``node-double-booked``: a decision's starts need more nodes than are free (as
  the policy was shown, or in the checker's books), or a job starts on node ids
  another job holds;
- ``node-books``: the kernel's free nodes (count or ids) after a change, or in the
  snapshot it shows the policy, differ from the checker's;
- ``hps-overcommit``: a decision's HPS starts exceed the free HPS bytes;
- ``hps-books``: the kernel's free HPS bytes after a change differ from the
  checker's (or its snapshot shows more than the checker has free);
- ``running-set``: the running jobs the snapshot shows differ from the checker's;
- ``disk-overcommit``: a disk holds more bytes than its capacity, or the
  allocator's bytes on a disk differ from the checker's (the parts it placed
  and has not freed);
- ``bytes-conserved``: a placed HPS job whose parts do not add up to its bytes, or a
  staging that moves other bytes than the job's input (stage-in) or output
  (stage-out), or stages without holding HPS space;
- ``job-state``: a transition the state machine does not have (e.g. a job that
  ends twice, or stages out before it ran).

Each check is O(running jobs + disks) per event: strict runs are for tests and for
debugging a policy or the kernel, not for whole-trace studies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from iolab.invariants import InvariantViolation

from iolab.middleware.policies.batch.snapshot import HPS, TIERS, Decision, QueuedJob, Snapshot

TOL = 1e-9
# state -> the states a runtime may move a job to with BatchKernel.enter
_NEXT = {"stage-in": {"running", "stage-out"}, "running": {"stage-out"}, "allocating": set(), "stage-out": set()}
HOLDING = frozenset({"allocating", "stage-in", "running", "stage-out", "suspended"})
ENDED = frozenset({"done", "failed", "killed"})


@dataclass(slots=True)
class _Job:
    """One job in the checker's books."""

    id: str
    submit: float
    nodes: int
    storage: float  # requested HPS bytes (stated)
    input: float  # true bytes a stage-in moves
    output: float  # true bytes a stage-out moves
    state: str = "future"
    tier: str = ""
    start: float = math.nan
    node_ids: int = 0
    held: float = 0.0  # HPS bytes held
    parts: tuple = ()  # (disk id, bytes) placed and not freed
    resume_state: str = ""


def _ids(mask: int) -> str:
    """Node ids of a mask as ranges (``0-3,6``)."""
    out, i = [], 0
    while mask:
        if mask & 1:
            j = i
            while (mask >> 1) & 1:
                mask >>= 1
                j += 1
            out.append(f"{i}-{j}" if j > i else str(i))
        mask >>= 1
        i += 1
    return ",".join(out) or "none"


class BatchChecker:
    """Strict mode's observer of a batch kernel (see the module's rules)."""

    def __init__(self) -> None:
        self.jobs: dict[str, _Job] = {}
        self.running: dict[str, _Job] = {}  # holding nodes, in start order
        self.waiting = 0  # jobs queued
        self.total_nodes = 0
        self.free_nodes = 0
        self.free_ids = 0
        self.hps_capacity = 0.0
        self.hps_free = 0.0
        self.capacity: dict[str, float] = {}  # disk id -> bytes
        self.used: dict[str, float] = {}  # disk id -> bytes placed and not freed
        self.events = 0

    def _job(self, job: str, t: float) -> _Job:
        j = self.jobs.get(job)
        if j is None:
            raise InvariantViolation("job-state", t, job, "a job the workload does not have")
        return j

    # -- the platform and the workload ---------------------------------------------------------
    def opened(self, total_nodes: int, hps_capacity: float, disks: Sequence[tuple[str, float]],
               jobs: Sequence[tuple[QueuedJob, Any]]) -> None:
        self.total_nodes = self.free_nodes = total_nodes
        self.free_ids = (1 << total_nodes) - 1
        self.hps_capacity = self.hps_free = hps_capacity
        self.capacity = dict(disks)
        self.used = {d: 0.0 for d in self.capacity}
        for q, job in jobs:
            self.jobs[q.id] = _Job(q.id, q.submit, q.nodes, q.storage,
                                   float(job.input) if job is not None else q.input,
                                   float(job.output) if job is not None else q.output)

    # -- arrivals and the policy's answer -----------------------------------------------------------
    def submitted(self, job: str, t: float) -> None:
        j = self._job(job, t)
        if j.state != "future":
            raise InvariantViolation("job-state", t, job, f"submitted again ({j.state})")
        if t < j.submit - TOL:
            raise InvariantViolation("submit-early", t, job, f"queued before its submission at {j.submit}")
        j.state = "queued"
        self.waiting += 1

    def decided(self, snap: Snapshot, d: Decision, policy: str) -> None:
        t = snap.now
        if d.now != t:
            raise InvariantViolation("decision-time", t, policy, f"decision dated {d.now}")
        self._shown(snap, policy)
        seen: set[str] = set()
        nodes = 0
        hps = 0.0
        for st in d.starts:
            j = self.jobs.get(st.job)
            if j is None or st.job in seen or j.state != "queued":
                why = ("unknown job" if j is None else "twice in one decision" if st.job in seen
                       else f"job is {j.state}")
                raise InvariantViolation("start-not-queued", t, st.job, f"policy {policy}: {why}")
            seen.add(st.job)
            if t < j.submit - TOL:
                raise InvariantViolation("start-before-submit", t, st.job, f"submitted at {j.submit}")
            if st.tier not in TIERS:
                raise InvariantViolation("tier-illegal", t, st.job, f"tier {st.tier!r}; legal: {', '.join(TIERS)}")
            want = j.storage if st.tier == HPS else 0.0
            if st.nodes != j.nodes or abs(st.storage - want) > TOL * max(1.0, want):
                raise InvariantViolation("start-mismatch", t, st.job, f"start of {st.nodes} nodes, {st.storage} B; "
                                         f"the job needs {j.nodes} nodes, {want} B")
            nodes += j.nodes
            hps += want
            if nodes > self.free_nodes:  # the snapshot shows the same count (_shown)
                raise InvariantViolation("node-double-booked", t, st.job, f"policy {policy} started {st.job} on "
                                         f"{j.nodes} nodes; {self.free_nodes - nodes + j.nodes} free")
            free_hps = min(snap.hps_free, self.hps_free)  # the snapshot may show less: early copies hold some
            if hps > free_hps * (1 + TOL) + 1e-6:
                raise InvariantViolation("hps-overcommit", t, st.job, f"policy {policy} overcommits HPS "
                                         f"with {st.job}: {want} > {free_hps - hps + want}")

    def _shown(self, snap: Snapshot, policy: str) -> None:
        """What the kernel shows the policy agrees with the checker's books."""
        t = snap.now
        if snap.free_nodes != self.free_nodes or snap.total_nodes != self.total_nodes:
            raise InvariantViolation("node-books", t, policy, f"the snapshot shows {snap.free_nodes} of "
                                     f"{snap.total_nodes} nodes free; the checker's books {self.free_nodes} of "
                                     f"{self.total_nodes}")
        if snap.hps_free > self.hps_free * (1 + TOL) + 1e-3:
            raise InvariantViolation("hps-books", t, policy, f"the snapshot shows {snap.hps_free} B of HPS free; "
                                     f"the checker's books {self.hps_free} B")
        if len(snap.queue) != self.waiting:
            raise InvariantViolation("running-set", t, policy, f"the snapshot shows {len(snap.queue)} waiting "
                                     f"jobs; the checker's books {self.waiting}")
        shown = [(r.id, r.nodes, r.tier, r.storage) for r in snap.running]
        mine = [(j.id, j.nodes, j.tier, j.held) for j in self.running.values()]
        if shown != mine:
            a, b = set(shown), set(mine)
            odd = sorted({x[0] for x in a ^ b}) or [x[0] for x, y in zip(shown, mine) if x != y]
            raise InvariantViolation("running-set", t, ",".join(odd[:5]) or policy,
                                     f"the snapshot shows {len(shown)} running jobs, the checker's books "
                                     f"{len(mine)}; they differ in {', '.join(odd[:5])}")

    # -- state changes -------------------------------------------------------------------------
    def started(self, job: str, tier: str, nodes: int, node_ids: int, storage: float, t: float,
                books: tuple) -> None:
        j = self._job(job, t)
        if j.state != "queued":
            raise InvariantViolation("start-not-queued", t, job, f"the kernel started a {j.state} job")
        want = j.storage if tier == HPS else 0.0
        if nodes != j.nodes or node_ids.bit_count() != j.nodes or abs(storage - want) > TOL * max(1.0, want):
            raise InvariantViolation("start-mismatch", t, job, f"the kernel started it on {nodes} nodes (ids "
                                     f"{_ids(node_ids)}), {storage} B; the job needs {j.nodes} nodes, {want} B")
        taken = node_ids & ~self.free_ids
        if taken:
            who = [o.id for o in self.running.values() if o.node_ids & taken]
            raise InvariantViolation("node-double-booked", t, job, f"started on node(s) {_ids(taken)}, held by "
                                     f"{', '.join(who) or 'nobody (never freed)'}")
        j.state = "allocating" if tier == HPS else "running"
        j.tier, j.start, j.node_ids, j.held = tier, t, node_ids, storage
        self.running[job] = j
        self.waiting -= 1
        self.free_nodes -= nodes
        self.free_ids &= ~node_ids
        self.hps_free -= storage
        self._books(job, t, books)

    def placed(self, job: str, parts: tuple, t: float, books: tuple) -> None:
        j = self._job(job, t)
        if j.state != "allocating" or j.tier != HPS:
            raise InvariantViolation("job-state", t, job, f"placed on HPS while {j.state} on {j.tier or 'no tier'}")
        total = sum(b for _, b in parts)
        if abs(total - round(j.held)) > 0.5 + TOL * j.held:
            raise InvariantViolation("bytes-conserved", t, job, f"placed {total} B on {len(parts)} part(s) for "
                                     f"{j.held} B")
        j.parts = tuple((d, b) for d, b in parts if b)
        for d, b in j.parts:
            if d not in self.capacity:
                raise InvariantViolation("disk-overcommit", t, job, f"placed {b} B on disk {d!r}, which the "
                                         f"platform does not have")
            self.used[d] += b
            if self.used[d] > self.capacity[d]:
                raise InvariantViolation("disk-overcommit", t, job, f"disk {d}: {self.used[d]} B placed, capacity "
                                         f"{self.capacity[d]} B")
        j.state = "stage-in"
        self._books(job, t, books)

    def fell_back(self, job: str, t: float, books: tuple) -> None:
        j = self._job(job, t)
        if j.tier != HPS or j.state not in ("allocating", "stage-in"):
            raise InvariantViolation("job-state", t, job, f"falls back to LPS while {j.state} on "
                                     f"{j.tier or 'no tier'}")
        self._free_space(j)
        j.tier, j.state = "lps", "running"
        self._books(job, t, books)

    def entered(self, job: str, state: str, t: float) -> None:
        j = self._job(job, t)
        if state not in _NEXT.get(j.state, ()):
            raise InvariantViolation("job-state", t, job, f"{j.state} -> {state}")
        j.state = state

    def staged(self, job: str, direction: str, nbytes: float, t: float, tol: float) -> None:
        j = self._job(job, t)
        want = j.input if direction == "stage-in" else j.output
        if j.tier != HPS or not j.parts or j.state != direction:
            raise InvariantViolation("bytes-conserved", t, job, f"{direction} of {nbytes} B while {j.state} on "
                                     f"{j.tier or 'no tier'} with {len(j.parts)} HPS part(s)")
        if abs(nbytes - want) > tol + TOL * want:
            raise InvariantViolation("bytes-conserved", t, job, f"{direction} moved {nbytes} B; the job's "
                                     f"{'input' if direction == 'stage-in' else 'output'} is {want} B")

    def suspended(self, job: str, t: float) -> None:
        j = self._job(job, t)
        if j.state != "running":  # a stage copy is not the job's processes: only a running job is stopped
            raise InvariantViolation("job-state", t, job, f"suspend of a {j.state} job")
        j.resume_state, j.state = j.state, "suspended"

    def resumed(self, job: str, t: float) -> None:
        j = self._job(job, t)
        if j.state != "suspended":
            raise InvariantViolation("job-state", t, job, f"resume of a {j.state} job")
        j.state, j.resume_state = j.resume_state, ""

    def ended(self, job: str, state: str, t: float, books: tuple) -> None:
        j = self._job(job, t)
        if job not in self.running or j.state not in HOLDING or state not in ENDED:
            raise InvariantViolation("job-state", t, job, f"{j.state} -> {state}")
        if state == "done" and j.state in ("allocating", "stage-in"):
            raise InvariantViolation("job-state", t, job, f"done from {j.state} (it never ran)")
        if t < j.start - TOL:
            raise InvariantViolation("job-state", t, job, f"ends before its start at {j.start}")
        del self.running[job]
        self.free_nodes += j.nodes
        self.free_ids |= j.node_ids
        self._free_space(j)
        j.state = state
        self._books(job, t, books)

    def withdrawn(self, job: str, t: float) -> None:
        j = self._job(job, t)
        if j.state not in ("future", "queued"):
            raise InvariantViolation("job-state", t, job, f"withdraw of a {j.state} job")
        if j.state == "queued":
            self.waiting -= 1
        j.state = "killed"

    # -- the books -----------------------------------------------------------------------------
    def _free_space(self, j: _Job) -> None:
        self.hps_free += j.held
        for d, b in j.parts:
            self.used[d] -= b
        j.held, j.parts = 0.0, ()

    def _books(self, job: str, t: float, books: tuple) -> None:
        """The kernel's books after ``job``'s change, ``(free nodes, free node ids, free HPS bytes,
        bytes per disk of its allocator or None)``, against the checker's."""
        self.events += 1
        free_nodes, free_ids, hps_free, disk_used = books
        if free_nodes != self.free_nodes or free_ids != self.free_ids:
            raise InvariantViolation("node-books", t, job, f"the kernel has {free_nodes} nodes free (ids "
                                     f"{_ids(free_ids)}); the checker's books {self.free_nodes} "
                                     f"(ids {_ids(self.free_ids)})")
        if abs(hps_free - self.hps_free) > TOL * max(1.0, self.hps_capacity) + 1e-3:
            raise InvariantViolation("hps-books", t, job, f"the kernel has {hps_free} B of HPS free; the "
                                     f"checker's books {self.hps_free} B (capacity {self.hps_capacity} B)")
        if disk_used is not None:
            for (d, used) in disk_used:
                if used > self.capacity.get(d, math.inf) or used != self.used.get(d, 0.0):
                    raise InvariantViolation("disk-overcommit", t, job, f"disk {d}: {used} B used by the "
                                             f"allocator, {self.used.get(d, 0.0)} B in the parts placed and not "
                                             f"freed, capacity {self.capacity.get(d)} B")
