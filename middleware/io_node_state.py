"""The I/O nodes of a real batch run, without Ray: the book of every I/O node, the ranks of every job's
parts, each I/O node's token bucket.

:class:`IONodesState` is the state of the run's I/O-node actor (:mod:`iolab.middleware.io_node_actor`;
tests drive it directly).  The parts, their spec bytes (the phase's x the job's nodes there / its nodes),
requests, grants, releases, suspensions, I/O time, grant rows and strict mode's checks are the book the
simulator keeps too (:class:`~iolab.middleware.policies.batch.io_node_book.IONodeBook`; docs/storage.md,
"I/O nodes"); this state adds what a real run has besides: the wall clock (every method takes ``now`` in
wall seconds and gives the book ``(now - t0) / time_scale``), the job's MPI ranks on each I/O node (a
part's lowest rank asks, its last one done releases) with the real bytes they move, and each I/O node's
token bucket.  Life of a part::

    add_job(job, rank, parts, steps, index, start, now)   # the job launches: its parts' ranks, nodes, bytes
    request(job, node, phase, kind, nbytes, now)   # the part's lowest rank asks
    dispatch(now) -> [(job, node, phase)]      # grants decided now, by the policy objects
    book(job, node, nbytes, now)               # a rank's bytes on the I/O node's link (granted parts only)
    part_done(job, node, phase, rank, now)     # every rank of the part; the last one releases the grant
    drop(job, now)                             # the job ended (crashed, killed): everything cancelled
    suspend(job, now) / resume(job, now)       # the load controller: grants let go, asked again at resume

**Ranks and bytes.**  A part's real bytes are what its ranks move (each rank its ``checkpoint.share`` of
the phase).  With as many ranks on every node they are the part's share of the phase; with more ranks on
some nodes than on others a part's ranks move another share than its nodes hold, and the I/O node's
bucket paces each of their bytes at ``pace`` = (the part's share of the nodes) / (its share of the
ranks), so that the I/O node carries the part for the time of its spec bytes, as in the simulator.  What
a suspended part asks again for, and what a sharing policy is told a part moved, is the share of its
real bytes its ranks booked.  Under a sharing policy each I/O node's bucket gives every granted part a
lane at its share (:meth:`TokenBucket.share`).  Strict mode adds one rule to the book's: a part must
ask for the real bytes its ranks state (``bytes-conserved``); the first violation is kept
(``violation``) and every later call raises it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch.io_node_book import GRANTED, HELD, WAITING, IONodeBook, IOPart
from iolab.middleware.policies.batch.io_parts import JobIOFacts, through_io_nodes
from iolab.middleware.policies.io_order import IORequest, Stream

from iolab.middleware.bucket import TokenBucket

__all__ = ["GRANTED", "HELD", "WAITING", "IONodesState", "JobGone"]


class JobGone(RuntimeError):
    """The job's parts were dropped (it crashed or was killed) or the run was stopped."""


@dataclass
class _Part:
    """A job's ranks on one I/O node, across its phases."""

    job: str
    node: int
    ranks: frozenset[int]   # the job's MPI ranks on this I/O node
    nbytes: tuple[int, ...]  # real bytes of each app phase of the part (0 for compute)
    pace: float = 1.0       # the part's share of the job's nodes / its share of the job's ranks
    phase: int = -1         # app phase of the current request
    io: IOPart | None = None  # the book's part of the current phase (None: not asking)
    booked: int = 0              # real bytes booked on the I/O node in the current phase
    booked_at_grant: int = 0     # ... when the current grant came
    done: set[int] = field(default_factory=set)  # ranks done with the current phase
    ends: list[tuple] = field(default_factory=list)    # (phase, end, bytes), wall: each phase's part end

    @property
    def state(self) -> str:
        return self.io.state if self.io is not None else ""

    @property
    def req(self) -> IORequest | None:
        return self.io.req if self.io is not None else None


class IONodesState:
    """The I/O nodes of one batch run (see the module doc).

    ``rate``: every I/O node's bandwidth, spec bytes/s; ``rates``: the tiers' and staging's (``lps``,
    ``hps``, ``stage``; with ``rate``, the contention-free times the policies rank); ``cap``: the I/O
    node's wall rate in real bytes/s for the token buckets (None: not paced); ``law``: its
    interference law over the parts transferring there (each part is one stream)."""

    def __init__(self, io_nodes: int, *, policy: str, rate: float, rates: dict[str, float],
                 cap: float | None = None, law=None, time_scale: float = 1.0, bytes_scale: float = 1.0,
                 strict: bool = False):
        if not io_nodes >= 1:
            raise ValueError(f"io_nodes must be >= 1, got {io_nodes!r}")
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate!r}")
        self.io_book = IONodeBook(io_nodes, policy, float(rate), law, strict=strict)
        self.policy, self.arbiters, self.check = self.io_book.policy, self.io_book.arbiters, self.io_book.checker
        self.rate = float(rate)
        self.rates = {k: float(v) for k, v in rates.items()}
        self.time_scale, self.bytes_scale = float(time_scale), float(bytes_scale)
        self.buckets = [TokenBucket(cap, law) for _ in range(io_nodes)]
        self._lanes: list[list | None] = [None] * io_nodes  # per I/O node: the shares its lanes were last given
        self.parts: dict[tuple[str, int], _Part] = {}
        self.jobs: dict[str, list[int]] = {}  # job -> its I/O nodes
        self.steps: dict[str, tuple[int, ...]] = {}  # job -> the step index of each app phase
        self.amounts: dict[str, tuple[float, ...]] = {}  # job -> the spec bytes of each of its steps
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
        """The job launches.  ``parts[node] = {"ranks": [...], "bytes": [real bytes per app phase], "nodes":
        the job's compute nodes there}`` (``nodes`` left out: one per rank); ``steps``: the job's steps
        (:func:`iolab.workloads.steps.job_steps`), ``index[i]`` the step of app phase ``i``; ``rank``: the
        job's position in the workload (the policies' tie-break); ``start``: its start, spec seconds;
        ``nodes`` and ``user``: the job's (what a sharing policy sees; 0 nodes: its compute nodes behind
        its I/O nodes)."""
        if job in self.jobs:
            raise ValueError(f"job {job!r} is already registered")
        if not parts:
            raise ValueError(f"job {job!r} has no part")
        ranks = sum(len(p["ranks"]) for p in parts.values())
        counts = {int(n): int(p.get("nodes", len(p["ranks"]))) for n, p in parts.items()}
        total = sum(counts.values())
        for node, p in sorted(parts.items()):
            if not 0 <= node < len(self.arbiters):
                raise ValueError(f"job {job!r}: I/O node {node} does not exist ({len(self.arbiters)} I/O nodes)")
            if len(p["bytes"]) != len(index):
                raise ValueError(f"job {job!r}: {len(p['bytes'])} byte counts for {len(index)} phases")
            if not p["ranks"] or counts[node] < 1:
                raise ValueError(f"job {job!r}: its part on I/O node {node} needs a rank and a compute node")
            pace = (counts[node] / total) / (len(p["ranks"]) / ranks)
            self.parts[(job, node)] = _Part(job, node, frozenset(int(r) for r in p["ranks"]),
                                            tuple(int(b) for b in p["bytes"]), pace)
        self.jobs[job] = sorted(parts)
        self.io_book.add_job(JobIOFacts(job, int(rank), list(steps), self.rates, self.rate), float(start), counts,
                          int(nodes) or total, str(user))
        self.steps[job] = tuple(int(i) for i in index)
        self.amounts[job] = tuple(float(st.amount) for st in steps)

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
        if p.io is not None:
            raise RuntimeError(f"job {job!r} already has an I/O request on I/O node {node} (phase {p.phase})")
        io = self.io_book.jobs[job]
        if not 0 <= phase < len(p.nbytes) or not through_io_nodes(io.facts.links[self.steps[job][phase]]) \
                and p.nbytes[phase] > 0:
            raise ValueError(f"job {job!r}: phase {phase} is not an I/O phase of the job on its tier")
        step = self.steps[job][phase]
        if io.facts.links[step] not in ("lps", "hps") or kind not in ("read", "write"):
            raise ValueError(f"job {job!r}: phase {phase} is not a {kind} phase on its tier")
        if self.check is not None and int(nbytes) != p.nbytes[phase]:
            raise InvariantViolation("bytes-conserved", t, f"job {job}", f"its part on I/O node {node} asks to "
                                     f"move {nbytes} B in phase {phase}, its ranks state {p.nbytes[phase]} B")
        if p.nbytes[phase] <= 0:
            return True
        p.phase, p.booked, p.done = phase, 0, set()
        ph = io.phase
        if ph is None or ph.step != step:  # the phase's first part to ask opens it
            ph = self.io_book.open(io, step, self.amounts[job][step], t)
        p.io = ph.parts[node]
        self.io_book.request(p.io, p.io.volume, t)
        return False

    def dispatch(self, now: float) -> list[tuple[str, int, int]]:
        """Grant what the policy allows now on every I/O node: ``[(job, node, phase)]``."""
        return self._checked(self._dispatch, now)

    def _dispatch(self, now: float) -> list[tuple[str, int, int]]:
        if self.t0 is None:
            return []
        t = self.spec_time(now)
        out = []
        for io in self.io_book.dispatch(t):
            p = self.parts[(io.job.id, io.node)]
            p.booked_at_grant = p.booked
            out.append((p.job, p.node, p.phase))
        if self.io_book.sharing:
            self._share(t)
        return out

    def _share(self, t: float) -> None:
        """Every I/O node whose granted parts changed since it last shared: the policy's shares, as lanes."""
        for n, bucket in enumerate(self.buckets):
            parts, shares = self.io_book.shares(n, t, self._moved)
            if shares is not self._lanes[n]:
                self._lanes[n] = shares
                bucket.share({io.job.id: float(x) for io, x in zip(parts, shares)})

    def _moved(self, io: IOPart) -> float:
        """The spec bytes ``io``'s ranks booked since its grant: the share of the real bytes it was granted for."""
        p = self.parts[(io.job.id, io.node)]
        real = p.nbytes[p.phase] - p.booked_at_grant  # the real bytes this grant is for
        return io.asked * min(1.0, (p.booked - p.booked_at_grant) / real) if real > 0 else io.asked

    def stream(self, job: str, node: int, t: float) -> Stream:
        """The grant ``job``'s part on ``node`` holds, as a sharing policy sees it (the simulator's fields):
        spec bytes asked and booked since the grant."""
        io = self.parts[(job, node)].io
        return self.io_book.stream(io, self._moved(io))

    def holds(self, job: str, node: int, phase: int) -> bool:
        """The part holds its grant for ``phase`` (raises JobGone for a dropped job)."""
        p = self.part(job, node)
        return p.state == GRANTED and p.phase == phase

    def finished(self, job: str, node: int, phase: int) -> bool:
        """The part is done with ``phase`` (every rank came, its grant released)."""
        p = self.part(job, node)
        return any(e[0] == phase for e in p.ends)

    def book(self, job: str, node: int, nbytes: int, now: float) -> tuple[float, float] | None:
        """The interval of wall times in which the I/O node's link carries ``nbytes`` of a rank of the part
        (paced at the part's ``pace``), or None while the part holds no grant (suspended and asking again:
        the caller waits for it)."""
        if self.violation is not None:
            raise self.violation
        p = self.part(job, node)
        if nbytes > 0 and p.state != GRANTED:
            return None
        p.booked += int(nbytes)
        paced = int(nbytes) if p.pace == 1.0 else round(int(nbytes) * p.pace)
        return self.buckets[node].book(paced, now, job)  # the part is the stream

    def part_done(self, job: str, node: int, phase: int, rank: int, now: float) -> bool:
        """Rank ``rank`` of the part has carried its bytes of ``phase``; True when the part ended (its last
        rank: the grant is released, or a request still waiting after a resume is withdrawn)."""
        return self._checked(self._part_done, job, node, phase, rank, now)

    def _part_done(self, job: str, node: int, phase: int, rank: int, now: float) -> bool:
        p = self.part(job, node)
        if rank not in p.ranks:
            raise ValueError(f"job {job!r}: rank {rank} is not in its part on I/O node {node}")
        if p.phase != phase or p.io is None:
            raise RuntimeError(f"job {job!r}: rank {rank} ends phase {phase} on I/O node {node}, "
                               f"whose part is in phase {p.phase}")
        p.done.add(rank)
        if p.done != p.ranks:
            return False
        t = self.spec_time(now)
        io = p.io
        if io.state == GRANTED:
            self.io_book.release(io, t, io.asked, finished=True)
        elif io.state == WAITING:  # asking again after a resume, with nothing left to move
            self.io_book.withdraw(io, t)
        io.state, io.end = "", t
        p.ends.append((phase, now, p.nbytes[phase] * p.pace))
        p.io = None
        ph = io.job.phase
        if all(q.end == q.end or self.parts[(job, q.node)].nbytes[phase] <= 0 for q in ph.parts.values()):
            self.io_book.phase_done(ph, t)  # the phase's last part (one whose ranks move nothing never asks)
        return True

    def _progress(self, io: IOPart) -> tuple[float, bool]:
        """What a granted part of a suspended or dropped job moved (its phase is not over)."""
        return self._moved(io), False

    # -- endings -----------------------------------------------------------------------------------
    def drop(self, job: str, reason: str, now: float) -> bool:
        """The job ended (crashed, killed, or done): whatever its parts wait for or hold is cancelled,
        a held grant's row ends now.  Returns False for an unknown or already dropped job."""
        return self._checked(self._drop, job, reason, now)

    def _drop(self, job: str, reason: str, now: float) -> bool:
        if job not in self.jobs or job in self.gone:
            return False
        self.io_book.drop(self.io_book.jobs[job], self.spec_time(now), self._progress)
        for n in self.jobs[job]:
            self.parts[(job, n)].io = None
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
        self.io_book.suspend(self.io_book.jobs[job], self.spec_time(now), self._progress)

    def resume(self, job: str, now: float) -> None:
        self._checked(self._resume, job, now)

    def _resume(self, job: str, now: float) -> None:
        if job not in self.suspended:
            return
        self.actions.append((job, self.suspended.pop(job), now))
        self.io_book.resume(self.io_book.jobs[job], self.spec_time(now), self._left)

    def _left(self, io: IOPart) -> float:
        """The spec bytes a held part asks again for: those its ranks have not booked."""
        p = self.parts[(io.job.id, io.node)]
        return io.volume * max(0, p.nbytes[p.phase] - p.booked) / p.nbytes[p.phase]

    def close(self, now: float) -> None:
        """The run is over: strict mode checks that no part waits or holds a grant."""
        if self.t0 is not None:
            self._checked(self.io_book.close, self.spec_time(now))

    # -- records -----------------------------------------------------------------------------------
    def records(self) -> dict:
        """In spec seconds: ``grants`` (job, step index, I/O node, request, grant, release) and ``ends``
        (job, app phase, I/O node, part end, the real bytes its I/O node carried); plain lists (cross Ray
        cheaply)."""
        if self.t0 is None:
            return {"grants": [], "ends": [], "actions": []}
        s = self.spec_time
        ends = [(job, ph, n, s(end), b) for (job, n), p in self.parts.items() for ph, end, b in p.ends]
        return {"grants": list(self.io_book.grants), "ends": ends,
                "actions": [(j, s(a), s(b)) for j, a, b in self.actions],
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
                        "held": self.io_book.held(n)})
        return {"policy": self.policy.name, "io_nodes": out, "suspended": sorted(self.suspended)}
