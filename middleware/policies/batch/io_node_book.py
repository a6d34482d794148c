"""The books of a batch platform's I/O nodes, kept once for both runtimes.

On a platform with I/O nodes (``platform.io_nodes``; docs/simulator.md and docs/storage.md, "I/O nodes") a
job's read and write phases on its tier go through the I/O nodes of its compute nodes
(:mod:`.io_parts`).  :class:`IONodeBook` holds what both runtimes decide and record about them:

- **jobs** (:class:`IOJob`): what a list policy ranks about a job (its :class:`~.io_parts.JobIOFacts`,
  its start, the I/O seconds it has had so far), what a sharing policy sees (its nodes, its user), how
  many of its compute nodes sit on each I/O node (the split), and whether it is suspended;
- **phases and parts** (:class:`IOPhase`, :class:`IOPart`): a phase of V bytes has one part per I/O node
  of the job, V x (the job's nodes there) / (its nodes) (:func:`~.io_parts.split_volume`), the one split
  rule of both runtimes; each part is a request to its I/O node's
  :class:`~iolab.middleware.policies.arbiter.IONodeArbiter` (the spec's policy, the I/O level's objects),
  granted and released on its own; the phase ends with its last part;
- **requests, grants, releases, withdrawals**: :meth:`IONodeBook.request` records, :meth:`~IONodeBook.dispatch`
  decides for the I/O nodes touched since it last ran (a runtime dispatches once per instant, or after
  every call), :meth:`~IONodeBook.release` and :meth:`~IONodeBook.withdraw` give a part's grant or request
  back; every one of them goes to strict mode's :class:`~.io_node_checker.IONodeChecker` too;
- **suspension** (the load controller's): :meth:`~IONodeBook.suspend` releases a job's granted parts and
  withdraws its waiting ones, all *held*; a part that asks while its job is suspended is held too;
  :meth:`~IONodeBook.resume` makes every held part ask again, for the bytes it has left;
- **I/O time**: a job's seconds in phases through I/O nodes, from a phase's first request to its last
  part's end (what a list policy is told as ``io_received``);
- **sharing**: under a sharing policy other than ``shared``, each I/O node's share per granted part
  (:meth:`~IONodeBook.shares`), asked again only when the parts holding a grant there change;
- **rows**: one grant row per grant (job, the phase's step index, I/O node, request, grant, release) and,
  per phase that ended, its parts' I/O nodes, bytes and ends.

Pure, every call given ``t`` in spec seconds.  What moves the bytes is each runtime's own: the simulator's
max-min fair rates (:mod:`iolab.sim.batch.io_node_layer`), the real run's ranks and token buckets
(:mod:`iolab.middleware.io_node_state`); each tells the book what a part moved when it gives a grant back.
"""

from __future__ import annotations

import math
from typing import Callable

from iolab.middleware.policies.arbiter import IONodeArbiter
from iolab.middleware.policies.batch.io_node_checker import IONodeChecker
from iolab.middleware.policies.batch.io_parts import JobIOFacts, split_volume
from iolab.middleware.policies.io_fast_paths import io_fast_paths
from iolab.middleware.policies.io_guard import io_policy
from iolab.middleware.policies.io_order import IORequest, Stream

__all__ = ["GRANTED", "HELD", "WAITING", "IOJob", "IONodeBook", "IOPart", "IOPhase"]

WAITING, GRANTED, HELD = "waiting", "granted", "held"


class IOJob:
    """A job as its I/O nodes see it; ``counts``: its compute nodes per I/O node."""

    __slots__ = ("id", "facts", "start", "counts", "nodes", "user", "io_time", "suspended", "phase")

    def __init__(self, facts: JobIOFacts, start: float, counts: dict[int, int], nodes: int, user: str):
        self.id, self.facts, self.start, self.counts = facts.id, facts, start, counts
        self.nodes, self.user = nodes, user
        self.io_time = 0.0  # spec seconds of its phases through I/O nodes so far
        self.suspended = False
        self.phase: IOPhase | None = None  # its phase through I/O nodes, if it is in one


class IOPart:
    """A job's part of one phase on one I/O node; times in spec seconds (NaN: not yet, or not now)."""

    __slots__ = ("job", "node", "step", "volume", "asked", "state", "requested", "granted", "req", "end")

    def __init__(self, job: IOJob, node: int, step: int, volume: float):
        self.job, self.node, self.step, self.volume = job, node, step, volume
        self.asked = 0.0  # bytes of the current request (all, or what was left at a resume)
        self.state = ""  # "" (not asking, or over) | waiting | granted | held
        self.requested = math.nan
        self.granted = math.nan
        self.req: IORequest | None = None
        self.end = math.nan


class IOPhase:
    """A job's phase through its I/O nodes: ``parts`` by I/O node, in increasing order."""

    __slots__ = ("job", "step", "volume", "parts", "asked")

    def __init__(self, job: IOJob, step: int, volume: float, parts: dict[int, IOPart], asked: float):
        self.job, self.step, self.volume, self.parts = job, step, volume, parts
        self.asked = asked  # its first request (a suspension does not reset it)


class IONodeBook:
    """The I/O nodes of one batch run (see the module doc): ``io_nodes`` of them, each at ``rate`` (spec
    bytes/s, the contention-free times' and a sharing's) with the interference ``law``, under ``policy``
    (a spec's ``io_node.policy`` value, or a policy object); ``arbiter``: the class of each I/O node's
    arbiter."""

    def __init__(self, io_nodes: int, policy, rate: float, law=None, *, strict: bool = False,
                 arbiter=IONodeArbiter):
        self.policy = io_policy(policy, rate=rate, law=law)
        self.allows = io_fast_paths(self.policy)  # what the policy allows (io_fast_paths.py), read once
        self.sharing = self.allows.asks_shares  # asked its shares
        self.rate, self.law = rate, law
        self.arbiters = [arbiter(self.policy, node=j, allows=self.allows) for j in range(io_nodes)]
        self.checker = IONodeChecker(io_nodes, self.allows.exclusive) if strict else None
        self.jobs: dict[str, IOJob] = {}
        self.pending: set[int] = set()  # I/O nodes to dispatch
        self.grants: list[tuple] = []  # the grant rows (job, step, I/O node, request, grant, release)
        self.ended: dict[tuple[str, int], list[tuple[int, float, float]]] = {}  # (job, step) -> (node, bytes, end)
        self._shares: dict[int, tuple[tuple, list[IOPart], list[float]]] = {}  # node -> (grants, parts, shares)

    # -- jobs and phases ---------------------------------------------------------------------------------
    def add_job(self, facts: JobIOFacts, start: float, counts: dict[int, int], nodes: int, user: str) -> IOJob:
        job = self.jobs[facts.id] = IOJob(facts, start, counts, nodes, user)
        return job

    def open(self, job: IOJob, step: int, volume: float, t: float, phase=IOPhase, part=IOPart) -> IOPhase:
        """Job ``job`` starts its phase of step ``step``, ``volume`` bytes, split into parts (``phase`` and
        ``part``: the classes to build, a runtime's subclasses with its own fields)."""
        parts = {j: part(job, j, step, v) for j, v in split_volume(volume, job.counts)}
        ph = job.phase = phase(job, step, volume, parts, t)
        return ph

    def request(self, part: IOPart, volume: float, t: float) -> None:
        """``part`` asks its I/O node for ``volume`` bytes (held while its job is suspended)."""
        job = part.job
        req = job.facts.request(part.step, part.step, volume, t, job.start, job.io_time)
        part.req, part.asked, part.requested, part.granted = req, volume, t, math.nan
        if job.suspended:
            part.state = HELD
            return
        part.state = WAITING
        if self.checker is not None:
            self.checker.requested(part.node, job.id, part.step, volume, t)
        self.arbiters[part.node].submit(req)
        self.pending.add(part.node)

    def dispatch(self, t: float) -> list[IOPart]:
        """Grant what the policy allows now on every I/O node touched since the last dispatch: the parts
        granted, in I/O node order."""
        out = []
        for j in sorted(self.pending):
            granted = self.arbiters[j].dispatch(t)
            if self.checker is not None:
                self.checker.dispatched(j, [r.app for r in granted], t)
            for req in granted:
                part = self.jobs[req.app].phase.parts[j]
                part.state, part.granted = GRANTED, t
                out.append(part)
        self.pending.clear()
        return out

    def release(self, part: IOPart, t: float, moved: float, finished: bool) -> None:
        """``part`` gives its grant back after moving ``moved`` bytes on it: its phase is over there
        (``finished``), or its job is suspended or gone."""
        self.arbiters[part.node].release(part.job.id)
        if self.checker is not None:
            self.checker.released(part.node, part.job.id, part.step, moved, finished, part.volume, t)
        self.grants.append((part.job.id, part.step, part.node, part.requested, part.granted, t))
        part.granted = math.nan
        part.state = ""
        self.pending.add(part.node)

    def withdraw(self, part: IOPart, t: float) -> None:
        """``part``'s waiting request is taken back."""
        self.arbiters[part.node].cancel(part.job.id)
        if self.checker is not None:
            self.checker.cancelled(part.node, part.job.id, t)
        part.state = ""
        self.pending.add(part.node)

    def phase_done(self, ph: IOPhase, t: float) -> None:
        """``ph``'s last part ended at ``t``: the job's I/O time, strict mode's check of the phase's bytes,
        its parts' rows (a part that never asked ends with the phase)."""
        job = ph.job
        job.io_time = job.io_time + t - ph.asked
        if self.checker is not None:
            self.checker.phase_done(job.id, ph.step, ph.volume, list(ph.parts), t)
        self.ended[(job.id, ph.step)] = [(p.node, p.volume, p.end if p.end == p.end else t)
                                         for p in ph.parts.values()]
        if job.phase is ph:
            job.phase = None

    # -- suspension and endings -------------------------------------------------------------------------
    def suspend(self, job: IOJob, t: float, progress: Callable[[IOPart], tuple[float, bool]]) -> list[IOPart]:
        """``job`` is stopped: each granted part gives its grant back (``progress(part)``: the bytes it moved
        on it and whether that was all of the part), each waiting one is withdrawn; those not over are held
        until :meth:`resume`.  Returns the parts that gave a grant back."""
        job.suspended = True
        return self._let_go(job, t, progress, HELD)

    def resume(self, job: IOJob, t: float, left: Callable[[IOPart], float]) -> list[IOPart]:
        """``job`` goes on: every held part asks again, for ``left(part)`` bytes.  Returns those parts."""
        job.suspended = False
        ph = job.phase
        asked = [p for p in ph.parts.values() if p.state == HELD] if ph is not None else []
        for part in asked:
            self.request(part, left(part), t)
        return asked

    def drop(self, job: IOJob, t: float, progress: Callable[[IOPart], tuple[float, bool]]) -> list[IOPart]:
        """``job`` ended in its phase (crashed or killed): what its parts hold or wait for is given back
        (a grant's row ends now), and nothing of them asks again."""
        out = self._let_go(job, t, progress, "")
        for part in job.phase.parts.values() if job.phase is not None else ():
            part.state = ""
        return out

    def _let_go(self, job: IOJob, t: float, progress, then: str) -> list[IOPart]:
        ph = job.phase
        if ph is None:
            return []
        out = []
        for part in ph.parts.values():
            if part.state == GRANTED:
                moved, finished = progress(part)
                self.release(part, t, moved, finished)
                if not finished:
                    part.state = then
                out.append(part)
            elif part.state == WAITING:
                self.withdraw(part, t)
                part.state = then
        return out

    def close(self, t: float) -> None:
        """The run is over: strict mode checks that nothing waits or holds a grant."""
        if self.checker is not None:
            self.checker.close(t)

    # -- sharing ---------------------------------------------------------------------------------------
    def shares(self, node: int, t: float, moved: Callable[[IOPart], float]) -> tuple[list[IOPart], list[float]]:
        """The parts holding a grant on I/O node ``node`` (in grant order) and the policy's share of the node
        for each, asked again only when they changed since the last call; ``moved(part)``: the bytes a part
        has moved on its grant (what the policy is shown, :class:`~.io_order.Stream`)."""
        active = self.arbiters[node].active
        key = tuple((app, self.jobs[app].phase.parts[node].granted) for app in active)
        kept = self._shares.get(node)
        if kept is None or kept[0] != key:
            parts = [self.jobs[app].phase.parts[node] for app in active]
            streams = [self.stream(p, moved(p)) for p in parts]
            kept = self._shares[node] = (key, parts, list(self.policy.shares(streams, t)) if streams else [])
        return kept[1], kept[2]

    @staticmethod
    def stream(part: IOPart, moved: float) -> Stream:
        """The grant ``part`` holds, as a sharing policy sees it (``job@io<node>``; the job's nodes and
        user; the bytes of its request and those it has moved since the grant)."""
        job = part.job
        return Stream(f"{job.id}@io{part.node}", job.id, job.facts.rank, job.nodes, part.asked, moved,
                      part.granted, job.user)

    # -- inspection ------------------------------------------------------------------------------------
    def held(self, node: int) -> list[str]:
        """The suspended jobs whose part on ``node`` will ask again at resume."""
        out = []
        for job in self.jobs.values():
            p = job.phase.parts.get(node) if job.phase is not None else None
            if p is not None and p.state == HELD:
                out.append(job.id)
        return sorted(out)
