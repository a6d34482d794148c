"""The I/O nodes of a real batch run, without Ray: one arbiter per I/O node, the parts of every
job's I/O phases, each I/O node's token bucket and the strict checks per I/O node.

:class:`IONodesState` is the state of the run's I/O-node actor (:mod:`iolab.middleware.io_node_actor`;
tests drive it directly).  The batch model (docs/storage.md, "I/O nodes"): a job whose compute nodes
sit on I/O nodes n1 < n2 < ... has one *part* per I/O node; the ranks on I/O node n form the part,
and each I/O phase of the job (input read, checkpoint writes, output write; never staging) is one
request per part to that I/O node's :class:`~iolab.middleware.policies.IONodeArbiter`, with the
spec's ``io_node.policy`` (the same policy objects the I/O level and the simulator use).  Parts are
granted and released independently; the phase ends when its last part ends.

Every method takes ``now`` in wall seconds and gives the policies spec seconds
(``(now - t0) / time_scale``).  Life of a part::

    add_job(job, parts, kinds, amounts, now)   # the job launches: its parts, their bytes per phase
    request(job, node, phase, kind, nbytes, now)   # the part's lowest rank asks
    dispatch(now) -> [(job, node, phase)]      # grants decided now, by the policy objects
    book(job, node, nbytes, now)               # a rank's bytes on the I/O node's link (granted parts only)
    part_done(job, node, phase, rank, now)     # every rank of the part; the last one releases the grant
    drop(job, now)                             # the job ended (crashed, killed): everything cancelled
    suspend(job, now) / resume(job, now)       # the load controller (below)

**Suspension** (the simulator's rule): suspending a job sets its waiting requests aside and
*releases* its granted parts (a grant row ends at the suspension); at resume every part still in
its phase asks again, for the bytes it has not booked yet, and its ranks' next bookings wait for
the new grant.  A part whose ranks finish while it waits for that grant is simply withdrawn.

**Strict mode** (``strict``): a small checker with its own books per I/O node (who waits, who holds
a grant) sees every request, dispatch and release and raises
:class:`~iolab.invariants.InvariantViolation` with the I/O level's rule names: ``exclusive-io``
(under a list policy at most one granted part per I/O node), ``grant-not-waiting`` (a grant only to
a waiting, not suspended, request), ``idle-while-waiting`` (a free I/O node leaves a request
waiting), ``release-not-granted`` and ``bytes-conserved`` (a part asks for the bytes its ranks
state).  The first violation is kept (``violation``) and every later call raises it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolab.invariants import InvariantViolation, strict_default
from iolab.middleware.policies import IONodeArbiter, get_policy
from iolab.middleware.policies.io_apps import COMPUTE, IOApp
from iolab.middleware.policies.io_order import IORequest

from iolab.middleware.bucket import TokenBucket

WAITING, GRANTED, HELD = "waiting", "granted", "held"


class JobGone(RuntimeError):
    """The job's parts were dropped (it crashed or was killed) or the run was stopped."""


@dataclass
class _Part:
    job: str
    node: int
    app: IOApp              # the part as the policies see it (spec bytes and seconds)
    ranks: frozenset[int]   # the job's MPI ranks on this I/O node
    nbytes: tuple[int, ...]  # real bytes of each app phase of the part (0 for compute)
    start: float            # spec seconds: the job's launch
    io_recv: float = 0.0    # spec seconds transferred so far (the policies' io_received)
    phase: int = -1         # phase of the current request
    state: str = ""         # "" | waiting | granted | held
    req: IORequest | None = None
    requested: float = math.nan  # wall: the current request
    granted: float = math.nan    # wall: the current grant
    booked: int = 0              # bytes booked on the I/O node in the current phase
    done: set[int] = field(default_factory=set)  # ranks done with the current phase
    grants: list[tuple] = field(default_factory=list)  # (phase, request, grant, release), wall
    ends: list[tuple] = field(default_factory=list)    # (phase, end, bytes), wall: each phase's part end


class _PartChecker:
    """Strict mode's books per I/O node, kept apart from the arbiters' (a bug there shows as a broken rule)."""

    def __init__(self, io_nodes: int, exclusive: bool):
        self.exclusive = exclusive
        self.waiting: list[dict[str, int]] = [{} for _ in range(io_nodes)]  # job -> phase
        self.active: list[dict[str, int]] = [{} for _ in range(io_nodes)]
        self.suspended: set[str] = set()

    def request(self, node: int, job: str, phase: int, t: float) -> None:
        if job in self.waiting[node] or job in self.active[node]:
            raise InvariantViolation("phase-order", t, f"job {job}", f"asks I/O node {node} for phase {phase} "
                                     "while it already has a request there")
        self.waiting[node][job] = phase

    def withdraw(self, node: int, job: str) -> None:
        self.waiting[node].pop(job, None)

    def dispatched(self, node: int, granted: list[IORequest], t: float) -> None:
        active = self.active[node]
        for req in granted:
            job = req.app
            if self.waiting[node].get(job) != req.phase or job in self.suspended:
                why = "it is suspended" if job in self.suspended else f"it has no waiting request for phase {req.phase}"
                raise InvariantViolation("grant-not-waiting", t, f"I/O node {node}",
                                         f"grants job {job} phase {req.phase}, but {why}")
            if self.exclusive and active:
                raise InvariantViolation("exclusive-io", t, f"I/O node {node}",
                                         f"grants job {job} while {', '.join(sorted(active))} transfers")
            del self.waiting[node][job]
            active[job] = req.phase
        left = [j for j in self.waiting[node] if j not in self.suspended]
        if left and (not self.exclusive or not active):
            raise InvariantViolation("idle-while-waiting", t, f"I/O node {node}",
                                     f"grants nothing to {', '.join(sorted(left))} although "
                                     f"{'no transfer holds it' if self.exclusive else 'shared grants every request'}")

    def release(self, node: int, job: str, phase: int, t: float) -> None:
        if self.active[node].get(job) != phase:
            raise InvariantViolation("release-not-granted", t, f"job {job}",
                                     f"ends its transfer of phase {phase} on I/O node {node} without a grant")
        del self.active[node][job]

    def drop(self, job: str) -> None:
        for books in self.waiting + self.active:
            books.pop(job, None)
        self.suspended.discard(job)


class IONodesState:
    """The I/O nodes of one batch run (see the module doc).

    ``rate``: every I/O node's bandwidth, spec bytes/s (the policies' T_i(b)); ``cap``: its wall
    rate in real bytes/s for the token buckets (None: not paced); ``law``: its interference law
    over the parts transferring there (each part is one stream)."""

    def __init__(self, io_nodes: int, *, policy: str, rate: float, cap: float | None = None, law=None,
                 time_scale: float = 1.0, bytes_scale: float = 1.0, strict: bool | None = None):
        if not io_nodes >= 1:
            raise ValueError(f"io_nodes must be >= 1, got {io_nodes!r}")
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate!r}")
        self.policy = get_policy(policy)
        self.rate = float(rate)
        self.time_scale, self.bytes_scale = float(time_scale), float(bytes_scale)
        self.arbiters = [IONodeArbiter(self.policy, n) for n in range(io_nodes)]
        self.buckets = [TokenBucket(cap, law) for _ in range(io_nodes)]
        self.check = _PartChecker(io_nodes, self.policy.exclusive) if strict_default(strict) else None
        self.parts: dict[tuple[str, int], _Part] = {}
        self.jobs: dict[str, list[int]] = {}  # job -> its I/O nodes
        self.ranks: dict[str, int] = {}  # job -> its rank among the jobs (the policies' tie-break)
        self.gone: dict[str, str] = {}  # dropped jobs -> why
        self.suspended: dict[str, float] = {}  # job -> wall time of its suspension
        self.actions: list[tuple] = []  # (job, suspend, resume), wall
        self.violation: InvariantViolation | None = None
        self.t0: float | None = None

    # -- clock ---------------------------------------------------------------------------------
    def start(self, t0: float) -> None:
        self.t0 = float(t0)

    def spec_time(self, wall: float) -> float:
        if self.t0 is None:
            raise RuntimeError("the run has not started (start(t0) first)")
        return (wall - self.t0) / self.time_scale

    def _checked(self, fn, *args):
        if self.violation is not None:
            raise self.violation
        try:
            return fn(*args)
        except InvariantViolation as exc:
            self.violation = exc
            raise

    # -- jobs and parts ------------------------------------------------------------------------
    def add_job(self, job: str, parts: dict[int, dict], kinds: list[str], amounts: list[float], now: float) -> None:
        """The job launches.  ``parts[node] = {"ranks": [...], "nodes": q, "bytes": [real bytes per phase]}``;
        ``kinds``/``amounts``: the job's app phases (compute seconds, spec bytes of the whole job)."""
        if job in self.jobs:
            raise ValueError(f"job {job!r} is already registered")
        if not parts:
            raise ValueError(f"job {job!r} has no part")
        self.ranks[job] = len(self.ranks)
        t = self.spec_time(now)
        total = sum(len(p["ranks"]) for p in parts.values())
        for node, p in sorted(parts.items()):
            if not 0 <= node < len(self.arbiters):
                raise ValueError(f"job {job!r}: I/O node {node} does not exist ({len(self.arbiters)} I/O nodes)")
            if len(p["bytes"]) != len(kinds):
                raise ValueError(f"job {job!r}: {len(p['bytes'])} byte counts for {len(kinds)} phases")
            share = len(p["ranks"]) / total
            mine = [x if k == COMPUTE else x * share for k, x in zip(kinds, amounts)]
            app = IOApp(id=job, rank=self.ranks[job], nodes=int(p["nodes"]), release=t, kinds=tuple(kinds),
                        amounts=tuple(mine), bandwidth=self.rate, io_node=node)
            self.parts[(job, node)] = _Part(job, node, app, frozenset(int(r) for r in p["ranks"]),
                                            tuple(int(b) for b in p["bytes"]), t)
        self.jobs[job] = sorted(parts)

    def part(self, job: str, node: int) -> _Part:
        if job in self.gone:
            raise JobGone(f"job {job!r} is gone: {self.gone[job]}")
        try:
            return self.parts[(job, node)]
        except KeyError:
            raise ValueError(f"job {job!r} has no part on I/O node {node}") from None

    # -- requests, grants, releases --------------------------------------------------------------
    def request(self, job: str, node: int, phase: int, kind: str, nbytes: int, now: float) -> bool:
        """The part's lowest rank asks for phase ``phase``; True if there is nothing to arbitrate
        (a part of 0 bytes: not recorded)."""
        return self._checked(self._request, job, node, phase, kind, nbytes, now)

    def _request(self, job: str, node: int, phase: int, kind: str, nbytes: int, now: float) -> bool:
        p = self.part(job, node)
        t = self.spec_time(now)
        if p.state:
            raise RuntimeError(f"job {job!r} already has an I/O request on I/O node {node} (phase {p.phase})")
        a = p.app
        if not 0 <= phase < a.phases or a.kinds[phase] != kind:
            raise ValueError(f"job {job!r}: phase {phase} is not a {kind} phase of the job")
        if self.check is not None and int(nbytes) != p.nbytes[phase]:
            raise InvariantViolation("bytes-conserved", t, f"job {job}", f"its part on I/O node {node} asks to "
                                     f"move {nbytes} B in phase {phase}, its ranks state {p.nbytes[phase]} B")
        if p.nbytes[phase] <= 0:
            return True
        p.phase, p.booked, p.done = phase, 0, set()
        self._ask(p, now, a.amounts[phase])
        return False

    def _ask(self, p: _Part, now: float, volume: float) -> None:
        """Submit the part's request for its current phase (``volume`` spec bytes), or hold it while
        its job is suspended."""
        t = self.spec_time(now)
        req = p.app.request(p.phase, t, p.start, p.io_recv)
        if volume != req.volume:  # a re-request after a suspension: the bytes left
            left = volume / self.rate
            req = req._replace(volume=volume, io_time=left)
        p.req, p.requested, p.granted = req, now, math.nan
        if p.job in self.suspended:
            p.state = HELD
            return
        p.state = WAITING
        if self.check is not None:
            self.check.request(p.node, p.job, p.phase, t)
        self.arbiters[p.node].submit(req)

    def dispatch(self, now: float) -> list[tuple[str, int, int]]:
        """Grant what the policy allows now on every I/O node: ``[(job, node, phase)]``."""
        return self._checked(self._dispatch, now)

    def _dispatch(self, now: float) -> list[tuple[str, int, int]]:
        if self.t0 is None:
            return []
        t = self.spec_time(now)
        out = []
        for n, arb in enumerate(self.arbiters):
            granted = arb.dispatch(t)
            if self.check is not None:
                self.check.dispatched(n, granted, t)
            for req in granted:
                p = self.parts[(req.app, n)]
                p.state, p.granted = GRANTED, now
                out.append((p.job, n, p.phase))
        return out

    def holds(self, job: str, node: int, phase: int) -> bool:
        """The part holds its grant for ``phase`` (raises JobGone for a dropped job)."""
        p = self.part(job, node)
        return p.state == GRANTED and p.phase == phase

    def finished(self, job: str, node: int, phase: int) -> bool:
        """The part is done with ``phase`` (every rank came, its grant released)."""
        p = self.part(job, node)
        return any(e[0] == phase for e in p.ends)

    def book(self, job: str, node: int, nbytes: int, now: float) -> tuple[float, float] | None:
        """The interval of wall times in which the I/O node's link carries ``nbytes`` of a rank of the part,
        or None while the part holds no grant (suspended and asking again: the caller waits for it)."""
        if self.violation is not None:
            raise self.violation
        p = self.part(job, node)
        if nbytes > 0 and p.state != GRANTED:
            return None
        p.booked += int(nbytes)
        return self.buckets[node].book(int(nbytes), now, job)  # the part is the stream

    def part_done(self, job: str, node: int, phase: int, rank: int, now: float) -> bool:
        """Rank ``rank`` of the part has carried its bytes of ``phase``; True when the part ended (its last
        rank: the grant is released, or a request still waiting after a resume is withdrawn)."""
        return self._checked(self._part_done, job, node, phase, rank, now)

    def _part_done(self, job: str, node: int, phase: int, rank: int, now: float) -> bool:
        p = self.part(job, node)
        if rank not in p.ranks:
            raise ValueError(f"job {job!r}: rank {rank} is not in its part on I/O node {node}")
        if p.phase != phase or not p.state:
            raise RuntimeError(f"job {job!r}: rank {rank} ends phase {phase} on I/O node {node}, "
                               f"whose part is in phase {p.phase}")
        p.done.add(rank)
        if p.done != p.ranks:
            return False
        if p.state == GRANTED:
            self._release(p, now)
        else:  # asking again after a resume, with nothing left to move
            self._withdraw(p)
        p.ends.append((phase, now, p.nbytes[phase]))
        p.state, p.req = "", None
        return True

    def _release(self, p: _Part, now: float) -> None:
        t = self.spec_time(now)
        self.arbiters[p.node].release(p.job)
        if self.check is not None:
            self.check.release(p.node, p.job, p.phase, t)
        p.io_recv += t - self.spec_time(p.granted)
        p.grants.append((p.phase, p.requested, p.granted, now))
        p.granted = math.nan

    def _withdraw(self, p: _Part) -> None:
        if p.state == WAITING:
            self.arbiters[p.node].cancel(p.job)
            if self.check is not None:
                self.check.withdraw(p.node, p.job)

    # -- endings -----------------------------------------------------------------------------------
    def drop(self, job: str, reason: str, now: float) -> bool:
        """The job ended (crashed, killed, or done): whatever its parts wait for or hold is cancelled,
        a held grant's row ends now.  Returns False for an unknown or already dropped job."""
        if job not in self.jobs or job in self.gone:
            return False
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            self.arbiters[n].cancel(job)
            if p.state == GRANTED:
                p.grants.append((p.phase, p.requested, p.granted, now))
            p.state, p.req, p.granted = "", None, math.nan
        if self.check is not None:
            self.check.drop(job)
        self.gone[job] = reason
        if job in self.suspended:
            self.actions.append((job, self.suspended.pop(job), now))
        return True

    # -- the load controller -----------------------------------------------------------------------
    def suspend(self, job: str, now: float) -> None:
        """The job's processes are stopped: waiting requests are set aside, granted parts released."""
        self._checked(self._suspend, job, now)

    def _suspend(self, job: str, now: float) -> None:
        if job not in self.jobs or job in self.gone or job in self.suspended:
            return
        self.suspended[job] = now
        if self.check is not None:
            self.check.suspended.add(job)
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            if p.state == WAITING:
                self._withdraw(p)
                p.state = HELD
            elif p.state == GRANTED:
                self._release(p, now)
                p.state = HELD  # asks again at resume for what it has not booked

    def resume(self, job: str, now: float) -> None:
        self._checked(self._resume, job, now)

    def _resume(self, job: str, now: float) -> None:
        if job not in self.suspended:
            return
        self.actions.append((job, self.suspended.pop(job), now))
        if self.check is not None:
            self.check.suspended.discard(job)
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            if p.state == HELD:
                left = max(0, p.nbytes[p.phase] - p.booked)
                p.state = ""
                self._ask(p, now, p.app.amounts[p.phase] * left / p.nbytes[p.phase])

    # -- records -----------------------------------------------------------------------------------
    def records(self) -> dict:
        """In spec seconds: ``grants`` (job, app phase, I/O node, request, grant, release) and ``ends``
        (job, app phase, I/O node, part end, real bytes); plain lists (cross Ray cheaply)."""
        if self.t0 is None:
            return {"grants": [], "ends": [], "actions": []}
        s = self.spec_time
        grants, ends = [], []
        for (job, n), p in self.parts.items():
            grants.extend((job, ph, n, s(rq), s(gr), s(rl)) for ph, rq, gr, rl in p.grants)
            ends.extend((job, ph, n, s(end), b) for ph, end, b in p.ends)
        return {"grants": grants, "ends": ends, "actions": [(j, s(a), s(b)) for j, a, b in self.actions],
                "bytes_booked": [b.booked for b in self.buckets]}

    def snapshot(self) -> dict:
        """Per I/O node: the jobs holding a grant and the jobs waiting (live views, tests)."""
        out = []
        for n, arb in enumerate(self.arbiters):
            out.append({"node": n, "grant": sorted(arb.active), "waiting": sorted(r.app for r in arb.waiting),
                        "held": sorted(j for (j, m), p in self.parts.items() if m == n and p.state == HELD)})
        return {"io_nodes": out, "suspended": sorted(self.suspended)}
