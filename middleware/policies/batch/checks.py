"""Strict mode of the batch level: every decision and state change of a
:class:`~.kernel.BatchKernel` checked (Batsim's validating machine).

Rules (the ``rule`` of the :class:`~iolab.invariants.InvariantViolation` raised):

- ``submit-early``: a job queued before its submission time;
- ``decision-time``: a decision dated another instant than the snapshot's;
- ``start-not-queued``: a start of a job that is not waiting (unknown, running,
  ended, or twice in one decision);
- ``start-before-submit``: a start before the job's submission;
- ``tier-illegal``: a start on a tier that is neither ``lps`` nor ``hps``;
- ``start-mismatch``: a start whose nodes or HPS bytes are not the job's;
- ``node-double-booked``: a decision's starts need more nodes than are free,
  or the nodes held plus the free ones are not the machine;
- ``hps-overcommit``: HPS bytes held beyond the capacity (in total), or the
  held and free bytes do not add up to it;
- ``disk-overcommit``: a disk holds more bytes than its capacity, or its bytes
  are not the sum of the live parts on it;
- ``bytes-conserved``: a placed HPS job whose parts do not add up to its bytes, or a
  staging that moves other bytes than the job's input (stage-in) or output
  (stage-out), or stages without holding HPS space;
- ``job-state``: a transition the state machine does not have (e.g. a job that
  ends twice, or stages out before it ran).

Each check is O(running jobs + disks) per state change: strict runs are for
tests and for debugging a policy, not for whole-trace studies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iolab.invariants import InvariantViolation

from .snapshot import HPS, TIERS, Decision, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import BatchKernel, JobState

TOL = 1e-9
# state -> the states a runtime may move a job to with BatchKernel.enter
_NEXT = {"stage-in": {"running", "stage-out"}, "running": {"stage-out"}, "allocating": set(), "stage-out": set()}


class BatchChecker:
    def __init__(self, kernel: "BatchKernel"):
        self.k = kernel

    # -- the policy's answer -----------------------------------------------------------------
    def submit(self, s: "JobState", t: float) -> None:
        if s.state != "future":
            raise InvariantViolation("job-state", t, s.queued.id, f"submitted again ({s.state})")
        if t < s.queued.submit - TOL:
            raise InvariantViolation("submit-early", t, s.queued.id, f"queued before its submission at {s.queued.submit}")

    def decision(self, snap: Snapshot, d: Decision) -> None:
        t = snap.now
        if d.now != t:
            raise InvariantViolation("decision-time", t, self.k.policy.name, f"decision dated {d.now}")
        seen: set[str] = set()
        nodes = 0
        hps = 0.0
        for st in d.starts:
            s = self.k.by_id.get(st.job)
            if s is None or st.job in seen or s.state != "queued":
                why = "unknown job" if s is None else ("twice in one decision" if st.job in seen else f"job is {s.state}")
                raise InvariantViolation("start-not-queued", t, st.job, f"policy {self.k.policy.name}: {why}")
            seen.add(st.job)
            q = s.queued
            if t < q.submit - TOL:
                raise InvariantViolation("start-before-submit", t, st.job, f"submitted at {q.submit}")
            if st.tier not in TIERS:
                raise InvariantViolation("tier-illegal", t, st.job, f"tier {st.tier!r}; legal: {', '.join(TIERS)}")
            want = q.storage if st.tier == HPS else 0.0
            if st.nodes != q.nodes or abs(st.storage - want) > TOL * max(1.0, want):
                raise InvariantViolation("start-mismatch", t, st.job, f"start of {st.nodes} nodes, {st.storage} B; "
                                         f"the job needs {q.nodes} nodes, {want} B")
            nodes += q.nodes
            hps += want
            if nodes > snap.free_nodes:
                raise InvariantViolation("node-double-booked", t, st.job, f"policy {self.k.policy.name} started "
                                         f"{st.job} on {q.nodes} nodes; {snap.free_nodes - nodes + q.nodes} free")
            if hps > snap.hps_free * (1 + TOL) + 1e-6:
                raise InvariantViolation("hps-overcommit", t, st.job, f"policy {self.k.policy.name} overcommits HPS "
                                         f"with {st.job}: {want} > {snap.hps_free - hps + want}")

    # -- state changes -------------------------------------------------------------------------
    def started(self, s: "JobState", t: float) -> None:
        self.placed(s, t)
        self.accounts(t, s.queued.id)

    def placed(self, s: "JobState", t: float) -> None:
        if s.state in ("stage-in",) and s.tier == HPS:
            total = sum(b for _, b in s.parts)
            if abs(total - round(s.storage)) > 0.5 + TOL * s.storage:
                raise InvariantViolation("bytes-conserved", t, s.queued.id,
                                         f"placed {total} B on {len(s.parts)} part(s) for {s.storage} B")
        self.disks(t, s.queued.id)

    def staged(self, s: "JobState", direction: str, nbytes: float, t: float, tol: float) -> None:
        want = s.job.input if direction == "stage-in" else s.job.output
        if s.tier != HPS or not s.parts or s.state != direction:
            raise InvariantViolation("bytes-conserved", t, s.queued.id, f"{direction} of {nbytes} B while "
                                     f"{s.state} on {s.tier or 'no tier'} with {len(s.parts)} HPS part(s)")
        if abs(nbytes - want) > tol + TOL * want:
            raise InvariantViolation("bytes-conserved", t, s.queued.id, f"{direction} moved {nbytes} B; the job's "
                                     f"{'input' if direction == 'stage-in' else 'output'} is {want} B")

    def transition(self, s: "JobState", state: str, t: float) -> None:
        if state not in _NEXT.get(s.state, ()):
            raise InvariantViolation("job-state", t, s.queued.id, f"{s.state} -> {state}")

    def finish(self, s: "JobState", state: str, t: float) -> None:
        if s.queued.id not in self.k.running or s.state not in ("allocating", "stage-in", "running", "stage-out",
                                                                 "suspended"):
            raise InvariantViolation("job-state", t, s.queued.id, f"{s.state} -> {state}")
        if state == "done" and s.state in ("allocating", "stage-in"):
            raise InvariantViolation("job-state", t, s.queued.id, f"done from {s.state} (it never ran)")
        if t < s.start - TOL:
            raise InvariantViolation("job-state", t, s.queued.id, f"ends before its start at {s.start}")

    # -- the books -----------------------------------------------------------------------------
    def accounts(self, t: float, subject: str) -> None:
        k = self.k
        held = sum(s.queued.nodes for s in k.running.values())
        if k.free_nodes < 0 or held + k.free_nodes != k.total_nodes:
            raise InvariantViolation("node-double-booked", t, subject, f"{held} nodes held + {k.free_nodes} free "
                                     f"!= {k.total_nodes}")
        bytes_held = sum(s.storage for s in k.running.values())
        if bytes_held > k.hps_capacity * (1 + TOL) + 1e-6 or abs(bytes_held + k.hps_free - k.hps_capacity) > \
                TOL * max(1.0, k.hps_capacity) + 1e-3:
            raise InvariantViolation("hps-overcommit", t, subject, f"{bytes_held} B held + {k.hps_free} B free, "
                                     f"capacity {k.hps_capacity} B")

    def disks(self, t: float, subject: str) -> None:
        a = self.k.allocator
        if a is None:
            return
        st = a.state
        used = [0] * len(st)
        for parts in st.live.values():
            for disk, b in parts:
                used[disk] += b
        for i, d in enumerate(st.disks):
            if st.used[i] > d.capacity or used[i] != st.used[i]:
                raise InvariantViolation("disk-overcommit", t, subject, f"disk {d.id}: {st.used[i]} B used "
                                         f"({used[i]} B in live parts), capacity {d.capacity} B")
