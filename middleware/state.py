"""The arbiter's state, without Ray: apps, start gates, I/O grants, leases, caps, records.

:class:`ArbiterState` is the CLARISSE-like control plane of one run as a plain
state machine (the Ray actor in :mod:`iolab.middleware.arbiter` wraps it; tests
drive it directly).  Every method takes ``now`` in wall seconds; the state
converts to spec seconds (``(now - t0) / time_scale``) for the policies and
the trace, so the policy objects see exactly what the simulator shows them.

Life of an app::

    arrive(app, rank, size, now)    # each rank connects; all arrived -> "ready"
    start(t0)                       # the run's clock starts
    gates(now) -> [app]             # ready apps whose release (or pack turn) has come -> "running"
    request(app, phase, ...)        # rank 0 asks for I/O (recorded, submitted to its I/O node)
    dispatch(now) -> [(app, info)]  # grants decided now, by the shared policy objects
    acquire(app, nbytes, now)       # any rank: seconds to wait under the I/O node's cap
    release(app, phase, now)        # transfer done; the node is free for the next app
    finish(app, ok, message, now)   # -> "ok" / "failed"; the next pack may start
    fail(app, reason, now)          # crash seen by the orchestrator: grant cancelled
    expire(now) -> [app]            # grants whose lease ran out: cancelled, app failed

Like :class:`~iolab.middleware.policies.IONodeArbiter`, mutators only record and
``dispatch`` decides, so everything that happens at one instant competes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolab.middleware.policies import IONodeArbiter, IORequest, get_policy

from .bucket import TokenBucket

STATUSES = ("pending", "ready", "running", "ok", "failed", "killed")
ENDED = ("ok", "failed", "killed")


class AppFailed(RuntimeError):
    """The app may not go on: it failed, its lease expired, or the run was stopped."""


@dataclass
class AppInfo:
    """What the arbiter knows of one app before the run (spec units and seconds)."""

    id: str
    rank: int
    nodes: int
    release: float
    kinds: list[str]
    amounts: list[float]
    io_node: int = 0
    pack: int = 0
    directory: str = "."


@dataclass
class _App:
    info: AppInfo
    bandwidth: float
    status: str = "pending"
    size: int = 0
    arrived: set[int] = field(default_factory=set)
    start: float = math.nan  # wall
    end: float = math.nan  # wall
    message: str = ""
    last_seen: float = -math.inf
    phase: int = -1  # phase of the current request / grant
    requested: float = math.nan
    granted: float = math.nan
    io_received: float = 0.0  # spec seconds of transfers done
    suspended: float = math.nan
    held: IORequest | None = None  # a waiting request set aside while suspended
    phases: list[tuple] = field(default_factory=list)  # (index, kind, start, end, volume), wall
    grants: list[tuple] = field(default_factory=list)  # (phase, request, grant, release), wall
    actions: list[tuple] = field(default_factory=list)  # (suspend, resume), wall

    @property
    def min_time(self) -> float:
        return sum(self.cf(i) for i in range(len(self.info.kinds)))

    def cf(self, i: int) -> float:
        """Contention-free spec seconds of phase ``i``."""
        k, a = self.info.kinds[i], self.info.amounts[i]
        return a if k == "compute" else a / self.bandwidth

    def done_before(self, i: int) -> float:
        return sum(self.cf(j) for j in range(i))


class ArbiterState:
    """One run's control plane (see the module doc)."""

    def __init__(self, apps: list[AppInfo], *, policy: str, bandwidth: float, io_nodes: int = 1,
                 packs: list[list[list[int]]] | None = None, lease: float = math.inf,
                 cap: float | None = None, time_scale: float = 1.0, unit_bytes: int = 1):
        if not apps:
            raise ValueError("an arbiter needs at least one app")
        if not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        if not lease > 0:
            raise ValueError(f"lease must be > 0 seconds, got {lease!r}")
        self.policy = get_policy(policy)
        self.bandwidth = float(bandwidth)
        self.time_scale = float(time_scale)
        self.unit_bytes = int(unit_bytes)
        self.lease = float(lease)
        self.apps: dict[str, _App] = {}
        for a in apps:
            if a.id in self.apps:
                raise ValueError(f"duplicate app id {a.id!r}")
            if not 0 <= a.io_node < io_nodes:
                raise ValueError(f"app {a.id!r}: I/O node {a.io_node} does not exist ({io_nodes} I/O nodes)")
            self.apps[a.id] = _App(a, self.bandwidth)
        self._by_rank = {a.info.rank: a for a in self.apps.values()}
        self.nodes = [IONodeArbiter(self.policy, n) for n in range(io_nodes)]
        self.buckets = [TokenBucket(cap) for _ in range(io_nodes)]
        # packs[node] = sequence of packs (lists of app ranks); default: one pack per node, no barrier
        if packs is None:
            packs = [[[a.info.rank for a in self.apps.values() if a.info.io_node == n]] for n in range(io_nodes)]
        self.packed = any(len(seq) > 1 for seq in packs)
        self._packs = [[list(p) for p in seq if p] for seq in packs]
        self._turn = [0] * io_nodes  # index of the current pack of each node
        self._pack_start = [math.nan] * io_nodes  # wall time the current pack may start
        self.t0: float | None = None

    # -- clock -----------------------------------------------------------------------------
    def spec_time(self, wall: float) -> float:
        if self.t0 is None:
            raise RuntimeError("the run has not started (start(t0) first)")
        return (wall - self.t0) / self.time_scale

    def wall_time(self, spec: float) -> float:
        return self.t0 + spec * self.time_scale

    def start(self, t0: float) -> None:
        if self.t0 is not None:
            raise RuntimeError("the run has already started")
        self.t0 = float(t0)
        for n in range(len(self.nodes)):
            self._pack_start[n] = t0

    def _app(self, app: str) -> _App:
        try:
            return self.apps[app]
        except KeyError:
            raise ValueError(f"unknown app {app!r}; known: {', '.join(self.apps)}") from None

    def _running(self, app: str) -> _App:
        a = self._app(app)
        if a.status != "running":
            why = f": {a.message}" if a.message else ""
            raise AppFailed(f"app {app!r} is {a.status}{why}")
        return a

    # -- start gates -------------------------------------------------------------------------
    def arrive(self, app: str, rank: int, size: int, now: float) -> None:
        """A rank of ``app`` connected and waits at the start gate."""
        a = self._app(app)
        if a.status in ENDED:
            raise AppFailed(f"app {app!r} is {a.status}: {a.message}")
        if not (isinstance(size, int) and size >= 1 and 0 <= rank < size):
            raise ValueError(f"bad rank/size {rank}/{size} for app {app!r}")
        if a.size and a.size != size:
            raise ValueError(f"app {app!r}: ranks disagree on the size ({a.size} vs {size})")
        a.size = size
        a.arrived.add(rank)
        a.last_seen = now
        if len(a.arrived) == size and a.status == "pending":
            a.status = "ready"

    def _gate_due(self, a: _App) -> float:
        """Wall time ``a`` may start (inf if its pack's turn has not come)."""
        n = a.info.io_node
        seq = self._packs[n]
        turn = self._turn[n]
        if turn >= len(seq) or a.info.rank not in seq[turn]:
            return math.inf
        release = self.wall_time(a.info.release)
        if self.packed:  # a pack starts when every app of it is released
            release = max(self.wall_time(self._by_rank[r].info.release) for r in seq[turn])
        return max(release, self._pack_start[n])

    def gates(self, now: float) -> list[str]:
        """Open the gates that are due: those apps start now; returns their ids."""
        if self.t0 is None:
            return []
        opened = []
        for a in self.apps.values():
            if a.status == "ready" and self._gate_due(a) <= now:
                a.status = "running"
                a.start = now
                a.last_seen = now
                opened.append(a.info.id)
        return opened

    def _ended(self, a: _App, now: float) -> None:
        """After an app ends: advance its node's pack if the whole pack has ended."""
        n = a.info.io_node
        seq = self._packs[n]
        while self._turn[n] < len(seq) and all(
                self._by_rank[r].status in ENDED for r in seq[self._turn[n]]):
            self._turn[n] += 1
            self._pack_start[n] = now

    # -- I/O ---------------------------------------------------------------------------------
    def request(self, app: str, phase: int, kind: str, nbytes: int, now: float) -> bool:
        """Rank 0 asks for its I/O phase ``phase``.  Returns True if there is nothing to
        arbitrate (an empty phase: granted at once, not recorded as a grant)."""
        a = self._running(app)
        if a.phase >= 0 and not math.isnan(a.requested):
            raise RuntimeError(f"app {app!r} already has an I/O request (phase {a.phase})")
        if not 0 <= phase < len(a.info.kinds) or a.info.kinds[phase] != kind:
            raise ValueError(f"app {app!r}: phase {phase} is not a {kind} phase of its spec")
        a.last_seen = now
        volume = a.info.amounts[phase]
        if volume <= 0:
            return True
        a.phase, a.requested, a.granted = phase, now, math.nan
        done = a.done_before(phase)
        t = self.spec_time(now)
        req = IORequest(app, a.info.rank, t, volume, volume / self.bandwidth, a.min_time - done,
                        a.min_time, self.spec_time(a.start), done, a.io_received)
        if not math.isnan(a.suspended):
            a.held = req
        else:
            self.nodes[a.info.io_node].submit(req)
        return False

    def dispatch(self, now: float) -> list[tuple[str, dict]]:
        """Grant what the policy allows now on every I/O node; ``[(app, grant info)]``."""
        if self.t0 is None:
            return []
        t = self.spec_time(now)
        out = []
        for node in self.nodes:
            for req in node.dispatch(t):
                a = self.apps[req.app]
                a.granted = now
                a.last_seen = now
                out.append((req.app, self.grant_info(req.app)))
        return out

    def grant_info(self, app: str) -> dict:
        a = self._app(app)
        return {"directory": a.info.directory, "granted_at": a.granted, "lease": self.lease,
                "io_node": a.info.io_node, "phase": a.phase}

    def holds_grant(self, app: str) -> bool:
        a = self._app(app)
        return not math.isnan(a.granted)

    def release(self, app: str, phase: int, now: float) -> None:
        a = self._running(app)
        if a.phase != phase or math.isnan(a.granted):
            raise RuntimeError(f"app {app!r} releases phase {phase} but holds no grant for it")
        self.nodes[a.info.io_node].release(app)
        self._close_grant(a, now)

    def _close_grant(self, a: _App, now: float) -> None:
        if not math.isnan(a.granted):
            a.grants.append((a.phase, a.requested, a.granted, now))
            a.io_received += (now - a.granted) / self.time_scale
        a.phase, a.requested, a.granted = -1, math.nan, math.nan

    def acquire(self, app: str, nbytes: int, now: float) -> float:
        """Seconds a rank of ``app`` waits before moving ``nbytes`` (its I/O node's cap)."""
        a = self._running(app)
        a.last_seen = now
        return self.buckets[a.info.io_node].acquire(int(nbytes), now)

    def heartbeat(self, app: str, now: float) -> None:
        self._running(app).last_seen = now

    # -- records -------------------------------------------------------------------------------
    def report(self, app: str, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        a = self._app(app)
        if not 0 <= phase < len(a.info.kinds):
            raise ValueError(f"app {app!r}: no phase {phase}")
        volume = 0.0 if kind == "compute" else a.info.amounts[phase]
        a.phases.append((phase, kind, float(start), float(end), volume))

    # -- endings --------------------------------------------------------------------------------
    def finish(self, app: str, ok: bool, message: str, now: float) -> None:
        a = self._app(app)
        if a.status in ENDED:
            return
        if not ok:
            self.fail(app, message or "the app reported a failure", now)
            return
        if not math.isnan(a.granted) or not math.isnan(a.requested):
            self.fail(app, "finished while holding an I/O request", now)
            return
        a.status, a.end, a.message = "ok", now, message
        self._ended(a, now)

    def fail(self, app: str, reason: str, now: float, status: str = "failed") -> bool:
        """Cancel everything ``app`` holds or waits for; it is ``status`` from now on.
        Returns False if it had already ended."""
        a = self._app(app)
        if a.status in ENDED:
            return False
        self.nodes[a.info.io_node].cancel(app)
        self._close_grant(a, now)
        a.held = None
        a.status, a.end, a.message = status, now, reason
        self._ended(a, now)
        return True

    def expire(self, now: float) -> list[str]:
        """Fail the apps whose grant saw no news for ``lease`` seconds; returns their ids."""
        out = []
        for a in self.apps.values():
            if (a.status == "running" and not math.isnan(a.granted) and math.isnan(a.suspended)
                    and now - a.last_seen > self.lease):
                self.fail(a.info.id, f"lease expired: no news for {now - a.last_seen:.1f} s "
                          f"(lease {self.lease:g} s) while holding I/O node {a.info.io_node}", now)
                out.append(a.info.id)
        return out

    def stop(self, now: float) -> list[str]:
        """The run is interrupted: every app still going is killed."""
        return [a.info.id for a in self.apps.values()
                if a.status in ("ready", "running") and self.fail(a.info.id, "run interrupted", now, "killed")]

    # -- load-controller hooks ----------------------------------------------------------------
    def suspend(self, app: str, now: float) -> None:
        """Stop arbitrating for ``app``: a waiting request is set aside, its lease paused.
        (The orchestrator stops the processes; a transfer in progress keeps its grant.)"""
        a = self._running(app)
        if not math.isnan(a.suspended):
            return
        a.suspended = now
        if not math.isnan(a.requested) and math.isnan(a.granted):
            a.held = self.nodes[a.info.io_node].cancel(app)

    def resume(self, app: str, now: float) -> None:
        a = self._running(app)
        if math.isnan(a.suspended):
            return
        a.actions.append((a.suspended, now))
        a.suspended = math.nan
        a.last_seen = now
        if a.held is not None:
            self.nodes[a.info.io_node].submit(a.held)
            a.held = None

    # -- inspection -----------------------------------------------------------------------------
    def next_due(self) -> float:
        """Wall time of the next time-driven change (a gate, a lease end); inf if none."""
        due = math.inf
        for a in self.apps.values():
            if a.status == "ready" and self.t0 is not None:
                due = min(due, self._gate_due(a))
            elif a.status == "running" and not math.isnan(a.granted) and math.isnan(a.suspended):
                due = min(due, a.last_seen + self.lease)
        return due

    def status(self) -> dict[str, dict]:
        return {i: {"status": a.status, "message": a.message, "arrived": len(a.arrived), "size": a.size,
                    "phases": len(a.phases), "total": len(a.info.kinds), "waiting": not math.isnan(a.requested)
                    and math.isnan(a.granted), "transferring": not math.isnan(a.granted)}
                for i, a in self.apps.items()}

    def progress(self) -> dict:
        """Phases done / total and contention-free spec seconds done / total."""
        done = total = work = work_total = 0.0
        for a in self.apps.values():
            n = len(a.info.kinds)
            total += n
            work_total += a.min_time
            if a.status == "ok":
                done += n
                work += a.min_time
            else:
                done += len(a.phases)
                work += sum(a.cf(p[0]) for p in a.phases)
        return {"phases_done": int(done), "phases_total": int(total), "work_done": work,
                "work_total": work_total,
                "running": sum(a.status == "running" for a in self.apps.values()),
                "ended": sum(a.status in ENDED for a in self.apps.values()),
                "apps": len(self.apps), "t0": self.t0}

    def records(self) -> dict:
        """Everything the trace needs, in spec seconds (plain lists: crosses Ray cheaply)."""
        if self.t0 is None:
            raise RuntimeError("the run never started")
        s = self.spec_time
        jobs, phases, grants, actions, failures = [], [], [], [], {}
        for a in self.apps.values():
            i = a.info
            end = s(a.end) if a.status == "ok" else math.nan
            jobs.append({"id": i.id, "rank": i.rank, "nodes": i.nodes, "release": i.release,
                         "start": s(a.start) if not math.isnan(a.start) else math.nan, "end": end,
                         "io_node": i.io_node, "pack": i.pack, "status": a.status,
                         "min_time": a.min_time, "io_volume": sum(x for k, x in zip(i.kinds, i.amounts)
                                                                 if k != "compute"),
                         "compute_time": sum(x for k, x in zip(i.kinds, i.amounts) if k == "compute")})
            if a.status in ("failed", "killed"):
                failures[i.id] = {"status": a.status, "time": s(a.end), "reason": a.message}
            for idx, kind, st, en, vol in a.phases:
                phases.append((i.id, idx, kind, s(st), s(en), vol, i.io_node, ""))
            for ph, rq, gr, rl in a.grants:
                grants.append((i.id, ph, i.io_node, s(rq), s(gr), s(rl)))
            for sus, res in a.actions:
                actions.append((i.id, s(sus), s(res)))
        return {"jobs": jobs, "phases": phases, "grants": grants, "actions": actions, "failures": failures,
                "bytes_booked": [b.booked for b in self.buckets]}
