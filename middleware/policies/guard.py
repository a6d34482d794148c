"""Guards around the policies users write: every answer checked, every exception traced to the user's line.

A built-in policy is trusted (strict mode's checkers watch it in tests); a user's policy is not: the
runtimes call it through a guard, in every run, strict or not.  A guard

- calls the user's method, and turns an exception raised inside it into
  :class:`iolab.invariants.PolicyRaised`, naming the policy, the time and the user's own frames
  (:func:`~.loader.user_frames`);
- accepts the answer's plain forms (a batch scheduler may return a :class:`~.batch.snapshot.Decision`,
  a list of :class:`~.batch.snapshot.Start`, of job ids, or of ``(job id, tier)`` pairs) and checks it
  against what the policy was shown, before the runtime acts on it: a broken answer stops the run with an
  :class:`iolab.invariants.InvariantViolation` naming the rule, the policy and the time.

The rules a guard applies to a batch scheduler's answer (``rule`` of the violation):

- ``malformed-decision``: not one of the forms above; a start whose fields have the wrong types, whose
  expected end is not a finite time at or after now, or whose node ids are not distinct ids of the machine;
  a ``wake_at`` that is not a finite time after now; a plan that is not a sequence of
  :class:`~.batch.snapshot.PlanEntry`;
- ``unknown-job``: a job the workload does not have;
- ``start-before-submit``: a job not submitted yet;
- ``start-not-queued``: a job that is running or ended, or started twice in one decision;
- ``tier-illegal``: a tier that is neither ``lps`` nor ``hps``;
- ``start-mismatch``: a start whose node count or HPS bytes are not the job's;
- ``node-double-booked``: starts that need more nodes than are free, or node ids that are not free;
- ``hps-overcommit``: HPS starts whose bytes exceed the free HPS bytes;
- ``reject-not-queued``: a rejected job that is not waiting, or is also started or rejected twice in the decision;
- ``kill-not-running``: a killed job that does not hold its nodes, or is killed twice in the decision.

Strict mode's checker (:mod:`.batch.checker`) applies its own books on top, to built-in and user policies
alike.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from iolab.invariants import InvariantViolation, PolicyRaised

from iolab.middleware.policies.batch.snapshot import HPS, LPS, TIERS, BatchPolicy, Decision, PlanEntry, Snapshot, Start
from iolab.middleware.policies.controller.handler import RESUME, SUSPEND, Action, JobStateHandler
from iolab.middleware.policies.loader import PolicySource, user_frames

__all__ = ["GuardedAllocator", "GuardedController", "GuardedPlacement", "GuardedScheduler", "call_user",
           "controller_policy"]

_TOL = 1e-9
MAX_STALLED_CYCLES = 1000  # controller cycles in a row with every job suspended before the run is stopped


def call_user(label: str, t: float, method: Callable, *args):
    """``method(*args)`` of a user's policy; what it raises becomes :class:`PolicyRaised` (a violation the
    guards raise themselves passes as it is)."""
    try:
        return method(*args)
    except InvariantViolation:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's code: any exception is the policy's failure
        raise PolicyRaised(label, t, user_frames(exc)) from None


class GuardedScheduler(BatchPolicy):
    """A user's batch scheduler (any object with ``decide(snapshot)``) as the kernel calls it.

    ``known(job_id)``: the state of a job of the workload (``future``, ``queued``, ``running``, ...; None if
    the workload has no such job), bound by the kernel so that an answer naming a job not waiting says why."""

    # the kernel's speed promises are a built-in's to make (batch/fast_paths.py reads them): a user's policy
    # is asked at every change and reads snapshots built afresh (its queue and running jobs), never the
    # kernel's kept profile
    reads_profile = False
    stateful = True
    reads_node_ids = True  # a user may read snapshot.free_node_ids: the kernel keeps the ids

    def __init__(self, user: Any, label: str):
        super().__init__()
        self.user = user
        self.label = label
        self.name = label
        self.known: Callable[[str], str | None] = lambda job: None
        self.backfill_depth = None
        self.sees_every_change = bool(getattr(user, "sees_every_change", False))
        if hasattr(user, "job_state"):  # the user's scheduler reads the states the kernel binds to the guard
            user.job_state = lambda job: self.known(job)

    def __repr__(self) -> str:
        return f"GuardedScheduler({self.label})"

    def _decide(self, snap: Snapshot) -> Decision:
        now = snap.now
        out = call_user(self.label, now, self.user.decide, snap)
        d = self._decision(out, snap)
        self._check(d, snap)
        return d

    def _bad(self, rule: str, t: float, subject: str, detail: str) -> InvariantViolation:
        return InvariantViolation(rule, t, subject, f"policy {self.label}: {detail}")

    def _decision(self, out: Any, snap: Snapshot) -> Decision:
        """The answer as a :class:`Decision` (its plain forms accepted)."""
        now = snap.now
        if out is None:
            return Decision(now)
        if isinstance(out, Decision):
            if out.now != now:
                raise self._bad("malformed-decision", now, self.label, f"a decision dated {out.now} at {now}")
            for name in ("starts", "rejects", "kills"):
                if not isinstance(getattr(out, name), tuple):
                    raise self._bad("malformed-decision", now, self.label, f"Decision.{name} must be a tuple")
            return out
        if isinstance(out, (str, bytes, dict, Start)) or not hasattr(out, "__iter__"):
            raise self._bad("malformed-decision", now, self.label, f"decide returned {_show(out)}; return a "
                            "Decision, a list of Start (snapshot.start(job)), of job ids, or of (job id, tier)")
        starts = []
        for item in out:
            if isinstance(item, Start):
                starts.append(item)
            elif isinstance(item, str):
                starts.append(self._start_of(snap, item, LPS))
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], str):
                starts.append(self._start_of(snap, item[0], item[1]))
            else:
                raise self._bad("malformed-decision", now, self.label, f"decide returned a list holding "
                                f"{_show(item)}; its items must be Start, job ids or (job id, tier)")
        return Decision(now, tuple(starts))

    def _start_of(self, snap: Snapshot, job: str, tier: str) -> Start:
        q = snap.job(job)
        if q is None:
            self._not_waiting(job, snap.now)
        if tier not in TIERS:
            raise self._bad("tier-illegal", snap.now, job, f"tier {tier!r}; legal: {', '.join(TIERS)}")
        return snap.start(q, tier)

    def _not_waiting(self, job: str, t: float) -> None:
        state = self.known(job)
        if state is None:
            raise self._bad("unknown-job", t, job, "the workload has no such job")
        if state == "future":
            raise self._bad("start-before-submit", t, job, "the job is not submitted yet")
        raise self._bad("start-not-queued", t, job, f"the job is {state}, not waiting")

    def _check(self, d: Decision, snap: Snapshot) -> None:
        now = snap.now
        free = snap.free_nodes
        hps = snap.hps_free if snap.hps_free is not None else snap.hps_capacity
        free_ids = snap.free_ids
        taken = 0
        seen: set[str] = set()
        for st in d.starts:
            if not isinstance(st, Start) or not isinstance(st.job, str):
                raise self._bad("malformed-decision", now, self.label, f"a start {_show(st)}")
            job = st.job
            q = snap.job(job)
            if q is None:
                self._not_waiting(job, now)
            if job in seen:
                raise self._bad("start-not-queued", now, job, "started twice in one decision")
            seen.add(job)
            if st.tier not in TIERS:
                raise self._bad("tier-illegal", now, job, f"tier {st.tier!r}; legal: {', '.join(TIERS)}")
            want = q.storage if st.tier == HPS else 0.0
            if st.nodes != q.nodes or not isinstance(st.storage, (int, float)) \
                    or abs(st.storage - want) > _TOL * max(1.0, want):
                raise self._bad("start-mismatch", now, job, f"a start of {st.nodes} nodes and {st.storage} HPS "
                                f"bytes; the job needs {q.nodes} nodes and {want} bytes on {st.tier}")
            end = st.expected_end
            if not isinstance(end, (int, float)) or not math.isfinite(end) or end < now:
                raise self._bad("malformed-decision", now, job, f"expected end {end!r}: a finite time at or after "
                                f"now (snapshot.start(job) computes it)")
            free -= q.nodes
            if free < 0:
                raise self._bad("node-double-booked", now, job, f"the decision's starts need {snap.free_nodes - free} "
                                f"nodes; {snap.free_nodes} are free")
            if want > 0:
                hps -= want
                if hps < -(_TOL * max(1.0, want) + 1e-6):
                    raise self._bad("hps-overcommit", now, job, f"the decision's HPS starts need "
                                    f"{snap.hps_free - hps:.6g} bytes; {snap.hps_free:.6g} are free")
            if st.node_ids is not None:
                taken = self._check_ids(st, q.nodes, snap, free_ids, taken)
        if d.rejects or d.kills:
            self._check_ends(d, snap, seen)
        w = d.wake_at
        if w is not None and not (isinstance(w, (int, float)) and math.isfinite(w) and w > now):
            raise self._bad("malformed-decision", now, self.label, f"wake_at {w!r}: a finite time after now ({now})")
        if d.plan and (not isinstance(d.plan, tuple) or not all(isinstance(e, PlanEntry) for e in d.plan)):
            raise self._bad("malformed-decision", now, self.label, "Decision.plan must be a tuple of PlanEntry")

    def _check_ends(self, d: Decision, snap: Snapshot, started: set[str]) -> None:
        """The decision's rejects (waiting jobs, not started in it) and kills (running jobs), each once."""
        now = snap.now
        seen: set[str] = set()
        for job in d.rejects:
            if not isinstance(job, str):
                raise self._bad("malformed-decision", now, self.label, f"a reject {_show(job)}: a job id")
            if job in started or job in seen:
                raise self._bad("reject-not-queued", now, job, "rejected twice, or started and rejected, in one "
                                "decision")
            if snap.job(job) is None:
                state = self.known(job)
                raise self._bad("unknown-job" if state is None else "reject-not-queued", now, job,
                                "the workload has no such job" if state is None else f"rejected, but it is {state}, "
                                "not waiting")
            seen.add(job)
        running = {r.id for r in snap.running}
        seen = set()
        for job in d.kills:
            if not isinstance(job, str):
                raise self._bad("malformed-decision", now, self.label, f"a kill {_show(job)}: a job id")
            if job not in running or job in seen:
                state = self.known(job)
                if state is None:
                    raise self._bad("unknown-job", now, job, "the workload has no such job")
                raise self._bad("kill-not-running", now, job, "killed twice in one decision" if job in seen
                                else f"killed, but it is {state}, not holding nodes")
            seen.add(job)

    def _check_ids(self, st: Start, n: int, snap: Snapshot, free_ids: int | None, taken: int) -> int:
        now = snap.now
        ids = st.node_ids
        if not isinstance(ids, tuple) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise self._bad("malformed-decision", now, st.job, f"node_ids {_show(ids)}: a tuple of node ids")
        mask = 0
        for i in ids:
            if not 0 <= i < snap.total_nodes:
                raise self._bad("malformed-decision", now, st.job, f"node id {i}: the machine has nodes 0-"
                                f"{snap.total_nodes - 1}")
            mask |= 1 << i
        if len(ids) != n or mask.bit_count() != n:
            raise self._bad("start-mismatch", now, st.job, f"{len(ids)} node ids ({mask.bit_count()} distinct) for a "
                            f"job of {n} nodes")
        free = free_ids if free_ids is not None else (1 << snap.free_nodes) - 1
        busy = mask & ~(free & ~taken)
        if busy:
            first = (busy & -busy).bit_length() - 1
            why = "given to another start of this decision" if (mask & taken) else "not free"
            raise self._bad("node-double-booked", now, st.job, f"node {first} is {why}")
        return taken | mask


def _show(value: Any, n: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "..."



# ---------------------------------------------------------------- placement, allocation

class GuardedPlacement:
    """A user's placement policy (``choose(sizes, disks, rng)``) as the storage allocator calls it.  Rules:
    ``malformed-decision`` (not one disk index per part, an index outside the disks, or a refusal from a
    policy whose ``refuses`` is False)."""

    def __init__(self, user: Any, label: str):
        self.user = user
        self.name = label
        self.refuses = bool(getattr(user, "refuses", True))

    def __repr__(self) -> str:
        return f"GuardedPlacement({self.name})"

    def choose(self, sizes, state, rng):
        out = call_user(self.name, math.nan, self.user.choose, tuple(sizes), state, rng)
        if out is None:
            if not self.refuses:
                raise InvariantViolation("malformed-decision", math.nan, self.name, f"policy {self.name} refused a "
                                         "request but says it never refuses (refuses = False)")
            return None
        try:
            disks = [int(i) for i in out]
        except (TypeError, ValueError):
            raise InvariantViolation("malformed-decision", math.nan, self.name, f"policy {self.name}: choose "
                                     f"returned {_show(out)}; a disk index per part, or None") from None
        if len(disks) != len(sizes) or any(not 0 <= i < len(state) for i in disks) \
                or any(isinstance(i, bool) or (isinstance(i, float) and i != int(i)) for i in out):
            raise InvariantViolation("malformed-decision", math.nan, self.name, f"policy {self.name}: choose "
                                     f"returned {_show(out)} for {len(sizes)} part(s) on {len(state)} disks")
        return disks


class GuardedAllocator:
    """A user's node allocator (``allocate(job, free, view)``) as the kernel calls it, through the same
    mask entries as the built-in ``io-aware`` (``choose``, ``take``, ``release``).  Rules:
    ``malformed-decision`` (not a sequence of node ids), ``start-mismatch`` (not as many distinct ids as the
    job needs), ``node-double-booked`` (an id that is not free)."""

    def __init__(self, user: Any, label: str):
        self.user = user
        self.name = label
        self.view: Callable[[], Any] = lambda: None  # the kernel binds it (its time and I/O nodes)

    def __repr__(self) -> str:
        return f"GuardedAllocator({self.name})"

    def choose(self, free_ids: int, n: int, load: float, job=None) -> int:
        view = self.view()
        now = getattr(view, "now", math.nan)
        free = []
        m = free_ids
        while m:
            low = m & -m
            free.append(low.bit_length() - 1)
            m ^= low
        out = call_user(self.name, now, self.user.allocate, job, tuple(free), view)
        jid = getattr(job, "id", "?")
        try:
            ids = [int(i) for i in out]
        except (TypeError, ValueError):
            raise InvariantViolation("malformed-decision", now, jid, f"policy {self.name}: allocate returned "
                                     f"{_show(out)}; a sequence of node ids") from None
        mask = 0
        for i in ids:
            if i < 0:
                raise InvariantViolation("malformed-decision", now, jid, f"policy {self.name}: node id {i}")
            mask |= 1 << i
        if len(ids) != n or mask.bit_count() != n:
            raise InvariantViolation("start-mismatch", now, jid, f"policy {self.name}: {len(ids)} node ids "
                                     f"({mask.bit_count()} distinct) for a job of {n} nodes")
        busy = mask & ~free_ids
        if busy:
            raise InvariantViolation("node-double-booked", now, jid, f"policy {self.name}: node "
                                     f"{(busy & -busy).bit_length() - 1} is not free")
        return mask

    def take(self, job: str, mask: int, load: float) -> None:
        """(the user's allocator keeps its own books, if any)"""

    def release(self, job: str) -> None:
        ended = getattr(self.user, "ended", None)
        if callable(ended):
            call_user(self.name, math.nan, ended, job)


# ---------------------------------------------------------------- the load controller

class GuardedController:
    """A user's load controller policy (``cycle(now, jobs, loaded)``) as the controller calls it.  It keeps
    the books of who is suspended (``suspended``, ``forget``, ``release_all``), so that a user's class need
    only decide.  Rules: ``malformed-decision`` (not a list of actions, an unknown kind), ``suspend-illegal``
    (a job that does not hold its nodes, or is suspended already), ``resume-illegal`` (a job the controller
    did not suspend), ``never-resumed`` (every job that holds nodes has been suspended for
    :data:`MAX_STALLED_CYCLES` cycles in a row: nothing can progress, and the run would never end)."""

    def __init__(self, user: Any, label: str):
        self.user = user
        self.name = label
        self.held: dict[str, str] = {}  # job -> the volume it was suspended for, in suspension order
        self.stalled = 0  # cycles in a row that ended with every job holding nodes suspended

    def __repr__(self) -> str:
        return f"GuardedController({self.name})"

    def suspended(self) -> list[str]:
        return list(self.held)

    def forget(self, job: str) -> None:
        self.held.pop(job, None)
        hook = getattr(self.user, "forget", None)
        if callable(hook):
            call_user(self.name, math.nan, hook, job)

    def release_all(self, reason: str = "controller stops") -> list:
        from_ = [(job, vol) for job, vol in self.held.items()]
        self.held.clear()
        return [Action(RESUME, job, vol, reason) for job, vol in from_]

    def cycle(self, now: float, jobs, loaded) -> list:
        for job in [j for j in self.held if j not in jobs]:
            self.forget(job)  # ended while suspended (killed, walltime)
        out = call_user(self.name, now, self.user.cycle, now, jobs, dict(loaded))
        if out is None:
            return []
        if isinstance(out, (str, bytes, Action)) or not hasattr(out, "__iter__"):
            raise InvariantViolation("malformed-decision", now, self.name, f"policy {self.name}: cycle returned "
                                     f"{_show(out)}; a list of Action")
        actions = []
        for a in out:
            if not isinstance(a, Action) or a.kind not in (SUSPEND, RESUME) or not isinstance(a.job, str):
                raise InvariantViolation("malformed-decision", now, self.name, f"policy {self.name}: {_show(a)} is "
                                         "not an Action(SUSPEND or RESUME, job, volume, reason)")
            if a.kind == SUSPEND:
                if a.job not in jobs or a.job in self.held:
                    why = "is suspended already" if a.job in self.held else "does not hold its nodes"
                    raise InvariantViolation("suspend-illegal", now, a.job, f"policy {self.name}: the job {why}")
                self.held[a.job] = a.volume
            else:
                if a.job not in self.held:
                    raise InvariantViolation("resume-illegal", now, a.job, f"policy {self.name}: the controller did "
                                             "not suspend this job")
                del self.held[a.job]
            actions.append(a)
        if jobs and all(j in self.held for j in jobs):
            self.stalled += 1
            if self.stalled > MAX_STALLED_CYCLES:
                raise InvariantViolation("never-resumed", now, self.name, f"policy {self.name}: every job that holds "
                                         f"nodes ({', '.join(sorted(jobs)[:5])}) has been suspended for "
                                         f"{MAX_STALLED_CYCLES} cycles in a row; nothing can progress")
        else:
            self.stalled = 0
        return actions


def controller_policy(value: Any, omega: float, recent: float):
    """The load controller's decision from a spec's ``controller.policy``: the paper's job state handler
    (``newest-first``, the default), or a user's (a PolicyRef or a PolicySource) behind its guard."""
    if value is None or value == "newest-first":
        return JobStateHandler(omega, recent)
    src = value if isinstance(value, PolicySource) else PolicySource.of(value, "controller")
    return GuardedController(src.load(), src.label)
