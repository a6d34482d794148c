"""Batsim's side of Batsim's protocol, as a batch scheduler: an external decision process (a pybatsim scheduler,
or any program that speaks Batsim 4's JSON protocol) decides iolab's jobs through the public policy API.

The kernel asks :class:`BatsimScheduler` at every change (``sees_every_change``); it tells the scheduler what
changed since it last asked, as Batsim would, in one message:

- ``JOB_COMPLETED`` for a job it started that ended (``COMPLETED_SUCCESSFULLY``, ``COMPLETED_FAILED`` for a
  failed real job, ``COMPLETED_WALLTIME_REACHED`` for one the run killed at its time limit: the state the kernel
  binds to ``job_state``), ``JOB_KILLED`` once every job of a ``KILL_JOB`` has ended;
- ``REQUESTED_CALL`` for each ``CALL_ME_LATER`` due;
- ``JOB_SUBMITTED`` for each new waiting job (``WORKLOAD!ID``, ``res``, ``walltime``: the one the kernel plans
  with, ``profile``; iolab's fields: the ``storage``, ``input``, ``output`` and ``data`` bytes the user stated,
  ``user``), then ``NOTIFY no_more_static_job_to_submit`` after the last one.

Nothing new: no message.  The reply's ``EXECUTE_JOB`` (``alloc``: the nodes, as an interval set; an optional
``tier``) become the decision's starts on those nodes, ``REJECT_JOB`` its rejects, ``KILL_JOB`` its kills,
``CALL_ME_LATER`` its ``wake_at``; each is checked here against the snapshot with the event and field named
(then by the guard, then in strict mode by the checker).  They apply at the instant of the message answered:
iolab models no decision time (a scheduler's later ``now``, pybatsim's ``consume_time``, changes nothing).

Pure: no socket.  ``exchange(text, now, about) -> reply text`` is the transport, given by whoever builds it
(``iolab.batsim``); ``begin()`` sends ``SIMULATION_BEGINS``, ``end(t)`` ``SIMULATION_ENDS``.
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import Any, Callable, Sequence

from iolab.invariants import InvariantViolation
from iolab.workloads.batsim import to_batsim_workload

from iolab.middleware.policies.batch.snapshot import BatchScheduler, Decision, Snapshot
from iolab.middleware.policies.batsim.intervals import format_ids
from iolab.middleware.policies.batsim.messages import Reply, event, message, read_reply, simulation_begins

Exchange = Callable[[str, float, str], str]
ENDED_STATES = {"done": ("COMPLETED_SUCCESSFULLY", 0), "failed": ("COMPLETED_FAILED", 1),
                "killed": ("COMPLETED_WALLTIME_REACHED", -1)}


class BatsimScheduler(BatchScheduler):
    """An external scheduler behind Batsim's protocol.  ``jobs``: the workload (``iolab.specs.batch.Job``: their
    runtimes make the profiles, as a Batsim workload's would); ``nodes``: the compute nodes; ``workload``: the
    workload's name (job ids are ``workload!id``); ``iolab``: what iolab adds to SIMULATION_BEGINS (tiers, rates,
    I/O nodes)."""

    sees_every_change = True
    job_state: Callable[[str], str | None] | None = None  # bound by the run (the guard)

    def __init__(self, exchange: Exchange, jobs: Sequence[Any], *, nodes: int, workload: str = "w0",
                 iolab: dict[str, Any] | None = None, sched_config: str = "", name: str = "batsim"):
        self.exchange = exchange
        self.name = name
        self.workload = workload
        self.nodes = nodes
        doc = to_batsim_workload(list(jobs), nodes)
        self.profiles = doc["profiles"]
        self.profile_of = {j["id"]: j["profile"] for j in doc["jobs"]}
        self.runtime = {str(j.id): float(j.runtime) for j in jobs}
        self.total = len(self.runtime)
        self.iolab = iolab or {}
        self.sched_config = sched_config
        self.told: set[str] = set()  # jobs told submitted
        self.running: dict[str, tuple[float, tuple[int, ...]]] = {}  # started, end not told: (start, node ids)
        self.killing: list[tuple[list[str], set[str], dict]] = []  # per KILL_JOB: its ids, those running, progress
        self.killed: set[str] = set()
        self.calls: list[float] = []  # CALL_ME_LATER times not called yet (a heap)
        self.notified = False
        self.messages = self.events_out = self.events_in = 0
        self.kinds_out: Counter = Counter()
        self.last_now = 0.0

    # -- the protocol's ends -----------------------------------------------------------------------
    def begin(self) -> None:
        """SIMULATION_BEGINS at time 0 (before any job is submitted: a reply may only ask to be called)."""
        begins = simulation_begins(self.nodes, self.workload, self.profiles, self.iolab, self.sched_config)
        reply = self._send(0.0, [begins])
        first = (reply.executes or reply.rejects or reply.kills or [None])[0]
        if first is not None:
            raise InvariantViolation("start-before-submit", 0.0, f"event {first[0]} of the reply to SIMULATION_BEGINS",
                                     "no job is submitted yet")
        for t in reply.calls:
            heapq.heappush(self.calls, t)

    def end(self, t: float) -> None:
        """SIMULATION_ENDS at ``t`` (every job ended); the reply's events, if any, come too late to apply."""
        self._send(max(t, self.last_now), [event(max(t, self.last_now), "SIMULATION_ENDS", {})])

    # -- the decision point ----------------------------------------------------------------------
    def decide(self, snap: Snapshot) -> Decision:
        now = snap.now
        events = self._news(snap)
        if not events:
            return Decision(now, wake_at=self.calls[0] if self.calls else None)
        reply = self._send(now, events)
        return self._apply(reply, snap)

    def _news(self, snap: Snapshot) -> list[dict[str, Any]]:
        """The events since the last message: ends, kill acknowledgements, calls due, submissions."""
        now, wl = snap.now, self.workload
        events: list[dict[str, Any]] = []
        running_now = {r.id for r in snap.running}
        for jid in [j for j in self.running if j not in running_now]:
            start, ids = self.running.pop(jid)
            if jid in self.killed:
                continue  # its KILL_JOB is acknowledged below
            state = self.job_state(jid) if callable(self.job_state) else "done"
            final, code = ENDED_STATES.get(state, ("COMPLETED_FAILED", 1))
            events.append(event(now, "JOB_COMPLETED", {"job_id": f"{wl}!{jid}", "job_state": final,
                                                       "return_code": code, "alloc": format_ids(ids)}))
        for k in [k for k in self.killing if not (k[1] & running_now)]:
            self.killing.remove(k)
            events.append(event(now, "JOB_KILLED", {"job_ids": k[0], "job_progress": k[2]}))
        while self.calls and self.calls[0] <= now:
            t = heapq.heappop(self.calls)
            events.append(event(t, "REQUESTED_CALL", {}))
        new = []
        for q in reversed(snap.queue):  # the jobs told of come first: queue order is submission order
            if q.id in self.told:
                break
            new.append(q)
        for q in reversed(new):
            self.told.add(q.id)
            bid = f"{wl}!{q.id}"
            job = {"id": bid, "subtime": q.submit, "res": q.nodes, "walltime": q.walltime,
                   "profile": self.profile_of.get(q.id, "")}
            job.update({k: v for k, v in (("storage", q.storage), ("input", q.input), ("output", q.output),
                                          ("data", q.data)) if v > 0})
            if q.user:
                job["user"] = q.user
            events.append(event(now, "JOB_SUBMITTED", {"job_id": bid, "job": job}))
        if new and len(self.told) == self.total and not self.notified:
            self.notified = True
            events.append(event(now, "NOTIFY", {"type": "no_more_static_job_to_submit"}))
        events.sort(key=lambda e: e["timestamp"])  # (stable: a due call's time is at or before now)
        return events

    def _send(self, now: float, events: list[dict[str, Any]]) -> Reply:
        self.messages += 1
        self.events_out += len(events)
        self.last_now = now
        kinds = Counter(e["type"] for e in events)
        self.kinds_out.update(kinds)
        about = f"the message of t={now:.6g} (" + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ")"
        reply = read_reply(self.exchange(message(now, events), now, about), now, about)
        self.events_in += reply.events
        return reply

    # -- the reply, applied ------------------------------------------------------------------------
    def _local(self, bid: str, where: str, now: float) -> str:
        wl, sep, jid = bid.partition("!")
        if not sep or wl != self.workload or jid not in self.runtime:
            raise InvariantViolation("unknown-job", now, where, f"{bid!r}: the workload has no such job (ids are "
                                     f"{self.workload}!ID)")
        return jid

    def _not_waiting(self, jid: str, bid: str, where: str, what: str, now: float) -> InvariantViolation:
        state = self.job_state(jid) if callable(self.job_state) else None
        if state == "future" or (state is None and jid not in self.told):
            return InvariantViolation("start-before-submit", now, where, f"{what} {bid}: not submitted yet")
        rule = "reject-not-queued" if what == "reject" else "start-not-queued"
        return InvariantViolation(rule, now, where, f"{what} {bid}: it is {state or 'not waiting'}, not waiting")

    def _apply(self, reply: Reply, snap: Snapshot) -> Decision:
        now = snap.now
        starts, rejects, kills = [], [], []
        taken: dict[int, str] = {}
        free = set(snap.free_node_ids) if reply.executes else set()
        for i, bid, ids, tier in reply.executes:
            where = f"EXECUTE_JOB.data.job_id (event {i})"
            jid = self._local(bid, where, now)
            q = snap.job(jid)
            if q is None or jid in taken.values():
                raise (self._not_waiting(jid, bid, where, "start", now) if q is None else
                       InvariantViolation("start-not-queued", now, where, f"{bid} is executed twice in this reply"))
            where = f"EXECUTE_JOB.data.alloc (event {i})"
            if len(ids) != q.nodes:
                raise InvariantViolation("start-mismatch", now, where, f"{format_ids(ids)!r} holds {len(ids)} "
                                         f"resource(s); {bid} asked for res={q.nodes} (iolab runs a job on exactly "
                                         "the nodes it asked for)")
            for x in ids:
                if x >= self.nodes:
                    raise InvariantViolation("malformed-decision", now, where, f"resource {x} of {bid}: the "
                                             f"compute resources are 0-{self.nodes - 1}")
                if x in taken:
                    raise InvariantViolation("node-double-booked", now, where, f"resource {x} of {bid} is also in "
                                             f"the alloc of {self.workload}!{taken[x]} in this reply")
                if x not in free:
                    holder = next((j for j, (_, held) in self.running.items() if x in held), None)
                    raise InvariantViolation("node-double-booked", now, where, f"resource {x} of {bid} is held by "
                                             + (f"{self.workload}!{holder}" if holder else "a running job"))
                taken[x] = jid
            starts.append(snap.start(q, tier, ids))
        started = {s.job for s in starts}
        for i, bid in reply.rejects:
            where = f"REJECT_JOB.data.job_id (event {i})"
            jid = self._local(bid, where, now)
            if snap.job(jid) is None or jid in started or jid in rejects:
                raise self._not_waiting(jid, bid, where, "reject", now) if snap.job(jid) is None else \
                    InvariantViolation("reject-not-queued", now, where, f"{bid} is also executed or rejected in "
                                       "this reply")
            rejects.append(jid)
        for i, bids in reply.kills:
            where = f"KILL_JOB.data.job_ids (event {i})"
            pending, progress = set(), {}
            for bid in bids:
                jid = self._local(bid, where, now)
                if jid in self.killed or jid in started:
                    continue  # its kill was asked before (Batsim discards it), or it has not run yet this instant
                if jid in self.running:
                    start, _ = self.running[jid]
                    run = self.runtime[jid]
                    done = (now - start) / run if run > 0 else 1.0
                    progress[bid] = {"profile": self.profile_of.get(jid, ""), "progress": min(max(done, 0.0), 1.0)}
                    pending.add(jid)
                    self.killed.add(jid)
                    kills.append(jid)
                elif (self.job_state(jid) if callable(self.job_state) else None) not in ENDED_STATES:
                    state = self.job_state(jid) if callable(self.job_state) else "not running"
                    raise InvariantViolation("kill-not-running", now, where, f"{bid} is {state}: Batsim kills a "
                                             "job being executed or already complete")
            self.killing.append((list(bids), pending, progress))
        for s in starts:
            self.running[s.job] = (now, s.node_ids or ())
        for t in reply.calls:
            heapq.heappush(self.calls, t)
        return Decision(now, tuple(starts), rejects=tuple(rejects), kills=tuple(kills),
                        wake_at=self.calls[0] if self.calls else None)

    def stats(self) -> dict[str, Any]:
        """What crossed the socket: messages (each a request and its reply), events each way, by type."""
        return {"messages": self.messages, "events_sent": self.events_out, "events_received": self.events_in,
                "sent_by_type": dict(self.kinds_out)}


__all__ = ["BatsimScheduler", "ENDED_STATES", "Exchange"]
