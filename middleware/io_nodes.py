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

What a list policy ranks (the part's volume and contention-free time, the job's time left and in all,
its start, its I/O seconds so far) is built by :class:`~iolab.middleware.policies.batch.io_parts.JobIOFacts`
from the job's steps, as in the simulator (:mod:`iolab.sim.batch.io_nodes`).

**Sharing** (docs/sharing.md): under a sharing policy other than ``shared`` each I/O node's bucket paces
every granted part on a lane of its own at its share of the node (:meth:`TokenBucket.share`), the
policy asked whenever the parts holding a grant there change (at every dispatch, which follows every
change), with each part's :class:`~iolab.middleware.policies.io_order.Stream` (``job@io<node>``; the
job's nodes and user; the spec bytes of its request, and of what its ranks booked since the grant): the
simulator's caps (:mod:`iolab.sim.batch.io_nodes`).

**Strict mode** (``strict``): the simulator's checker,
:class:`~iolab.middleware.policies.batch.io_node_checks.IONodeChecker` (its own books per I/O node),
sees every request, dispatch, release, withdrawal and phase end and raises
:class:`~iolab.invariants.InvariantViolation` with the I/O level's rule names (``exclusive-io``,
``grant-not-waiting``, ``idle-while-waiting``, ``release-not-granted``, ``bytes-conserved``,
``unfinished`` at :meth:`IONodesState.close`); besides, a part must ask for the real bytes its ranks
state (``bytes-conserved``).  The first violation is kept (``violation``) and every later call raises it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolab.invariants import InvariantViolation, strict_default
from iolab.middleware.policies import IONodeArbiter
from iolab.middleware.policies.io_guard import equal_sharing, io_policy
from iolab.middleware.policies.batch.io_node_checks import IONodeChecker
from iolab.middleware.policies.batch.io_parts import JobIOFacts, through_io_nodes
from iolab.middleware.policies.io_order import IORequest, Stream

from iolab.middleware.bucket import TokenBucket

WAITING, GRANTED, HELD = "waiting", "granted", "held"


class JobGone(RuntimeError):
    """The job's parts were dropped (it crashed or was killed) or the run was stopped."""


@dataclass
class _Part:
    job: str
    node: int
    ranks: frozenset[int]   # the job's MPI ranks on this I/O node
    nbytes: tuple[int, ...]  # real bytes of each app phase of the part (0 for compute)
    volume: tuple[float, ...]  # spec bytes of each app phase of the part (0 for compute)
    phase: int = -1         # app phase of the current request
    state: str = ""         # "" | waiting | granted | held
    req: IORequest | None = None
    asked: float = 0.0           # spec bytes of the current request (all, or what was left at a resume)
    requested: float = math.nan  # wall: the current request
    granted: float = math.nan    # wall: the current grant
    booked: int = 0              # real bytes booked on the I/O node in the current phase
    booked_at_grant: int = 0     # ... when the current grant came
    done: set[int] = field(default_factory=set)  # ranks done with the current phase
    grants: list[tuple] = field(default_factory=list)  # (phase, request, grant, release), wall
    ends: list[tuple] = field(default_factory=list)    # (phase, end, bytes), wall: each phase's part end


class IONodesState:
    """The I/O nodes of one batch run (see the module doc).

    ``rate``: every I/O node's bandwidth, spec bytes/s; ``rates``: the tiers' and staging's (``lps``,
    ``hps``, ``stage``; with ``rate``, the contention-free times the policies rank); ``cap``: the I/O
    node's wall rate in real bytes/s for the token buckets (None: not paced); ``law``: its
    interference law over the parts transferring there (each part is one stream)."""

    def __init__(self, io_nodes: int, *, policy: str, rate: float, rates: dict[str, float],
                 cap: float | None = None, law=None, time_scale: float = 1.0, bytes_scale: float = 1.0,
                 strict: bool | None = None):
        if not io_nodes >= 1:
            raise ValueError(f"io_nodes must be >= 1, got {io_nodes!r}")
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate!r}")
        self.policy = io_policy(policy, rate=float(rate), law=law)
        self.sharing = not self.policy.exclusive and not equal_sharing(self.policy)  # lanes from its shares
        self.rate = float(rate)
        self.rates = {k: float(v) for k, v in rates.items()}
        self.time_scale, self.bytes_scale = float(time_scale), float(bytes_scale)
        self.arbiters = [IONodeArbiter(self.policy, n) for n in range(io_nodes)]
        self.buckets = [TokenBucket(cap, law) for _ in range(io_nodes)]
        self._lanes: list[tuple] = [()] * io_nodes  # per I/O node: the grants its lanes were last shared for
        self.check = IONodeChecker(io_nodes, self.policy.exclusive) if strict_default(strict) else None
        self.parts: dict[tuple[str, int], _Part] = {}
        self.jobs: dict[str, list[int]] = {}  # job -> its I/O nodes
        self.facts: dict[str, JobIOFacts] = {}  # job -> what its requests tell the policies
        self.steps: dict[str, tuple[int, ...]] = {}  # job -> the step index of each app phase
        self.starts: dict[str, float] = {}  # job -> its start (spec s)
        self.sizes: dict[str, tuple[int, str]] = {}  # job -> (its compute nodes, its user)
        self.io_time: dict[str, float] = {}  # job -> spec seconds of its I/O phases so far
        self.phase_asked: dict[tuple[str, int], float] = {}  # (job, app phase) -> its first request (wall)
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
    def add_job(self, job: str, rank: int, parts: dict[int, dict], steps: list, index: list[int], start: float,
                now: float, nodes: int = 0, user: str = "") -> None:
        """The job launches.  ``parts[node] = {"ranks": [...], "bytes": [real bytes per app phase]}``;
        ``steps``: the job's steps (:func:`iolab.workloads.steps.job_steps`), ``index[i]`` the step of app
        phase ``i``; ``rank``: the job's position in the workload (the policies' tie-break); ``start``:
        its start, spec seconds; ``nodes`` and ``user``: the job's (what a sharing policy sees; 0 nodes:
        its ranks).  A part's spec bytes are the phase's x its ranks / the job's ranks."""
        if job in self.jobs:
            raise ValueError(f"job {job!r} is already registered")
        if not parts:
            raise ValueError(f"job {job!r} has no part")
        total = sum(len(p["ranks"]) for p in parts.values())
        for node, p in sorted(parts.items()):
            if not 0 <= node < len(self.arbiters):
                raise ValueError(f"job {job!r}: I/O node {node} does not exist ({len(self.arbiters)} I/O nodes)")
            if len(p["bytes"]) != len(index):
                raise ValueError(f"job {job!r}: {len(p['bytes'])} byte counts for {len(index)} phases")
            share = len(p["ranks"]) / total
            volume = tuple(float(steps[i].amount) * share if through_io_nodes(steps[i].link) else 0.0 for i in index)
            self.parts[(job, node)] = _Part(job, node, frozenset(int(r) for r in p["ranks"]),
                                            tuple(int(b) for b in p["bytes"]), volume)
        self.jobs[job] = sorted(parts)
        self.facts[job] = JobIOFacts(job, int(rank), list(steps), self.rates, self.rate)
        self.steps[job] = tuple(int(i) for i in index)
        self.starts[job] = float(start)
        self.sizes[job] = (int(nodes) or total, str(user))
        self.io_time[job] = 0.0

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
        steps = self.facts[job]
        if not 0 <= phase < len(p.nbytes) or p.volume[phase] <= 0 and p.nbytes[phase] > 0:
            raise ValueError(f"job {job!r}: phase {phase} is not an I/O phase of the job on its tier")
        step = self.steps[job][phase]
        if steps.links[step] not in ("lps", "hps") or kind not in ("read", "write"):
            raise ValueError(f"job {job!r}: phase {phase} is not a {kind} phase on its tier")
        if self.check is not None and int(nbytes) != p.nbytes[phase]:
            raise InvariantViolation("bytes-conserved", t, f"job {job}", f"its part on I/O node {node} asks to "
                                     f"move {nbytes} B in phase {phase}, its ranks state {p.nbytes[phase]} B")
        if p.nbytes[phase] <= 0:
            return True
        p.phase, p.booked, p.done = phase, 0, set()
        self.phase_asked.setdefault((job, phase), now)
        self._ask(p, now, p.volume[phase])
        return False

    def _ask(self, p: _Part, now: float, volume: float) -> None:
        """Submit the part's request for its current phase (``volume`` spec bytes), or hold it while
        its job is suspended."""
        t = self.spec_time(now)
        step = self.steps[p.job][p.phase]
        req = self.facts[p.job].request(step, step, volume, t, self.starts[p.job], self.io_time[p.job])
        p.req, p.asked, p.requested, p.granted = req, volume, now, math.nan
        if p.job in self.suspended:
            p.state = HELD
            return
        p.state = WAITING
        if self.check is not None:
            self.check.requested(p.node, p.job, step, volume, t)
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
                self.check.dispatched(n, [r.app for r in granted], t)
            for req in granted:
                p = self.parts[(req.app, n)]
                p.state, p.granted, p.booked_at_grant = GRANTED, now, p.booked
                out.append((p.job, n, p.phase))
        if self.sharing:
            self._share(t)
        return out

    def _share(self, t: float) -> None:
        """Every I/O node whose granted parts changed since it last shared: the policy's shares, as lanes."""
        for n, arb in enumerate(self.arbiters):
            grants = tuple((job, self.parts[(job, n)].granted) for job in arb.active)  # in grant order
            if grants == self._lanes[n]:
                continue
            self._lanes[n] = grants
            streams = [self.stream(job, n, t) for job, _ in grants]
            shares = self.policy.shares(streams, t) if streams else []
            self.buckets[n].share({job: float(x) for (job, _), x in zip(grants, shares)})

    def stream(self, job: str, node: int, t: float) -> Stream:
        """The grant ``job``'s part on ``node`` holds, as a sharing policy sees it at spec time ``t`` (the
        simulator's fields, :mod:`iolab.sim.batch.io_nodes`): spec bytes asked and booked since the grant."""
        p = self.parts[(job, node)]
        nodes, user = self.sizes[job]
        real = p.nbytes[p.phase] - p.booked_at_grant  # the real bytes this grant is for
        moved = p.asked * min(1.0, (p.booked - p.booked_at_grant) / real) if real > 0 else p.asked
        return Stream(f"{job}@io{node}", job, self.facts[job].rank, nodes, p.asked, moved, self.spec_time(p.granted),
                      user)

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
            self._release(p, now, finished=True)
        else:  # asking again after a resume, with nothing left to move
            self._withdraw(p, now)
        p.ends.append((phase, now, p.nbytes[phase]))
        p.state, p.req = "", None
        parts = [self.parts[(job, n)] for n in self.jobs[job]]
        if all(any(e[0] == phase for e in q.ends) for q in parts if q.nbytes[phase] > 0):  # the phase's last part
            t = self.spec_time(now)
            step = self.steps[job][phase]
            if self.check is not None:
                self.check.phase_done(job, step, sum(q.volume[phase] for q in parts if q.nbytes[phase] > 0),
                                      [q.node for q in parts if q.nbytes[phase] > 0], t)
            self.io_time[job] += t - self.spec_time(self.phase_asked.pop((job, phase), now))
        return True

    def _release(self, p: _Part, now: float, finished: bool) -> None:
        """The part gives its grant back: its phase is over (``finished``), or its job is suspended or gone."""
        t = self.spec_time(now)
        self.arbiters[p.node].release(p.job)
        if self.check is not None:
            left = max(0, p.nbytes[p.phase] - p.booked_at_grant)  # real bytes the grant was for
            moved = p.asked if finished or not left else p.asked * min(1.0, (p.booked - p.booked_at_grant) / left)
            self.check.released(p.node, p.job, self.steps[p.job][p.phase], moved, finished,
                                p.volume[p.phase], t)
        p.grants.append((p.phase, p.requested, p.granted, now))
        p.granted = math.nan

    def _withdraw(self, p: _Part, now: float) -> None:
        if p.state == WAITING:
            self.arbiters[p.node].cancel(p.job)
            if self.check is not None:
                self.check.cancelled(p.node, p.job, self.spec_time(now))

    # -- endings -----------------------------------------------------------------------------------
    def drop(self, job: str, reason: str, now: float) -> bool:
        """The job ended (crashed, killed, or done): whatever its parts wait for or hold is cancelled,
        a held grant's row ends now.  Returns False for an unknown or already dropped job."""
        return self._checked(self._drop, job, reason, now)

    def _drop(self, job: str, reason: str, now: float) -> bool:
        if job not in self.jobs or job in self.gone:
            return False
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            if p.state == GRANTED:
                self._release(p, now, finished=False)
            elif p.state == WAITING:
                self._withdraw(p, now)
            p.state, p.req, p.granted = "", None, math.nan
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
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            if p.state == WAITING:
                self._withdraw(p, now)
                p.state = HELD
            elif p.state == GRANTED:
                self._release(p, now, finished=False)
                p.state = HELD  # asks again at resume for what it has not booked

    def resume(self, job: str, now: float) -> None:
        self._checked(self._resume, job, now)

    def _resume(self, job: str, now: float) -> None:
        if job not in self.suspended:
            return
        self.actions.append((job, self.suspended.pop(job), now))
        for n in self.jobs[job]:
            p = self.parts[(job, n)]
            if p.state == HELD:
                left = max(0, p.nbytes[p.phase] - p.booked)
                p.state = ""
                self._ask(p, now, p.volume[p.phase] * left / p.nbytes[p.phase])

    def close(self, now: float) -> None:
        """The run is over: strict mode checks that no part waits or holds a grant."""
        if self.check is not None and self.t0 is not None:
            self._checked(self.check.close, self.spec_time(now))

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

    def snapshot(self, now: float | None = None) -> dict:
        """What a live view shows (plain data): per I/O node the jobs whose part holds a grant
        (``grant``), the jobs whose part waits, in the policy's grant order at ``now`` (wall; arrival
        order under ``shared``) (``waiting``), and the suspended jobs whose part will ask again at
        resume (``held``); the policy's name; the suspended jobs."""
        t = self.spec_time(now) if now is not None and self.t0 is not None else 0.0
        out = []
        for n, arb in enumerate(self.arbiters):
            waiting = arb.waiting_in_order(t)
            out.append({"node": n, "grant": sorted(arb.active), "waiting": [r.app for r in waiting],
                        "held": sorted(j for (j, m), p in self.parts.items() if m == n and p.state == HELD)})
        return {"policy": self.policy.name, "io_nodes": out, "suspended": sorted(self.suspended)}
