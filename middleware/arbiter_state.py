"""The arbiter's state, without Ray: apps, start gates, I/O grants, leases, caps, records.

:class:`ArbiterState` is the CLARISSE-like control plane of one run as a plain
state machine (the Ray actor in :mod:`iolab.middleware.arbiter_actor` wraps it; tests
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
    finish(app, ok, message, now)   # -> "ok" / "failed"; the next pack may start; the last of a
                                    #    run whose apps all ended ok closes the kernel (strict: every app ended)
    fail(app, reason, now)          # crash seen by the orchestrator: grant cancelled
    expire(now) -> [app]            # grants whose lease ran out: cancelled, app failed

Like :class:`~iolab.middleware.policies.IONodeArbiter`, mutators only record and
``dispatch`` decides, so everything that happens at one instant competes.

The I/O level's books are the I/O kernel the simulator drives too
(:class:`~iolab.middleware.policies.io_kernel.IOKernel`, ``kernel``: the apps, their pack
turns, the requests, grants and releases on every I/O node's arbiter, the requests set aside
while an app is suspended, and with ``strict`` the checker's calls, in spec seconds).  This
state adds the clock (wall seconds to spec seconds), the start gates (every rank arrived),
the leases, the I/O nodes' token buckets and the wall-clock records of the trace.

Under a sharing policy other than ``shared`` (docs/sharing.md) each I/O node's bucket paces every
granted app on a lane of its own at its share of the node (:meth:`TokenBucket.share`): the policy is
asked whenever the set of apps holding a grant on that node changes (checked at every dispatch, which
follows every change), with each app's :class:`~iolab.middleware.policies.io_order.Stream` (the bytes it
has booked since its grant as ``moved``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolab.invariants import InvariantViolation
from iolab.middleware.policies import IONodeArbiter
from iolab.middleware.policies.io_guard import io_policy
from iolab.middleware.policies.io_order import Stream
from iolab.middleware.policies.io_apps import COMPUTE, IOApp, node_packs
from iolab.middleware.policies.io_driver import IODriver
from iolab.middleware.policies.io_kernel import IOKernel

from iolab.middleware.bucket import TokenBucket

STATUSES = ("pending", "ready", "running", "ok", "failed", "killed")
ENDED = ("ok", "failed", "killed")


class AppFailed(RuntimeError):
    """The app may not go on: it failed, its lease expired, or the run was stopped."""


@dataclass
class _App:
    info: IOApp
    status: str = "pending"
    size: int = 0
    arrived: set[int] = field(default_factory=set)
    start: float = math.nan  # wall
    end: float = math.nan  # wall
    message: str = ""
    last_seen: float = -math.inf
    phase: int = -1  # phase of the current request / grant
    requested: float = math.nan  # wall
    granted: float = math.nan  # wall
    suspended: float = math.nan  # wall
    phases: list[tuple] = field(default_factory=list)  # (index, kind, start, end, volume), wall
    grants: list[tuple] = field(default_factory=list)  # (phase, request, grant, release), wall
    actions: list[tuple] = field(default_factory=list)  # (suspend, resume), wall
    booked: int = 0  # real bytes booked since the current grant


class ArbiterState:
    """One run's control plane (see the module doc)."""

    def __init__(self, apps: list[IOApp], *, policy: str, bandwidth: float, io_nodes: int = 1,
                 packs: list[list[list[int]]] | None = None, packed: bool | None = None,
                 directories: list[str] | None = None, lease: float = math.inf, cap: float | None = None,
                 time_scale: float = 1.0, unit_bytes: int = 1, strict: bool = False, law=None):
        if not apps:
            raise ValueError("an arbiter needs at least one app")
        if not bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
        if not time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        if not lease > 0:
            raise ValueError(f"lease must be > 0 seconds, got {lease!r}")
        self.policy = io_policy(policy, rate=float(bandwidth), law=law)
        self.bandwidth = float(bandwidth)
        self.time_scale = float(time_scale)
        self.unit_bytes = int(unit_bytes)
        self.lease = float(lease)
        self.apps: dict[str, _App] = {}
        for rank, a in enumerate(apps):
            if a.id in self.apps:
                raise ValueError(f"duplicate app id {a.id!r}")
            if a.rank != rank:
                raise ValueError(f"app {a.id!r} has rank {a.rank} at position {rank} (ranks are positions)")
            if not 0 <= a.io_node < io_nodes:
                raise ValueError(f"app {a.id!r}: I/O node {a.io_node} does not exist ({io_nodes} I/O nodes)")
            if a.bandwidth != self.bandwidth:
                raise ValueError(f"app {a.id!r} was built for bandwidth {a.bandwidth:g}, the arbiter has "
                                 f"{self.bandwidth:g}")
            self.apps[a.id] = _App(a)
        self.buckets = [TokenBucket(cap, law) for _ in range(io_nodes)]  # law: the platform's interference
        self._lanes: list[tuple] = [()] * io_nodes  # per I/O node: the grants its lanes were last shared for
        if directories is not None and len(directories) != io_nodes:
            raise ValueError(f"{len(directories)} directories for {io_nodes} I/O nodes")
        self.directories = [str(d) for d in directories] if directories is not None else ["."] * io_nodes
        # packs[node] = sequence of packs (lists of app ranks); default: one pack per node, no barrier
        if packs is None:
            packs = node_packs(list(apps), io_nodes)
        self.packed = any(len(seq) > 1 for seq in packs) if packed is None else bool(packed)
        # phase reports arrive fire-and-forget: the checker checks their content and count, not their order
        self.kernel = IOKernel(list(apps), self.policy, io_nodes, packs, self.packed, strict=strict, ordered=False)
        self.sharing = self.kernel.allows.asks_shares  # lanes from its shares (io_fast_paths.py)
        # what happens at an instant; the apps walk their own phases, this state is the effectors
        self.driver = IODriver(self.kernel, self, walks=False)
        self._now = math.nan  # the wall time of the dispatch under way, and its grants
        self._granted: list[tuple[str, dict]] = []
        self.violation: InvariantViolation | None = None
        self.t0: float | None = None

    @property
    def nodes(self) -> list[IONodeArbiter]:
        """Every I/O node's arbiter (the kernel's)."""
        return self.kernel.arbiters

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
        due = self.kernel.due(a.info.rank)
        return self.wall_time(due) if due < math.inf else math.inf

    def gates(self, now: float) -> list[str]:
        """Open the gates that are due: those apps start now; returns their ids."""
        if self.t0 is None:
            return []
        t = self.spec_time(now)
        opened = []
        for a in self.apps.values():
            if a.status == "ready" and self.kernel.due(a.info.rank) <= t:
                self._checked(self.driver.start, a.info.rank, t)
                a.status = "running"
                a.start = now
                a.last_seen = now
                opened.append(a.info.id)
        return opened

    def _ended(self, a: _App, now: float) -> None:
        """After an app ends (in any way): the next pack of its node may open."""
        t = self.spec_time(now) if self.t0 is not None else 0.0
        self._checked(self.driver.end, a.info.rank, t, a.status == "ok")

    # -- strict mode ---------------------------------------------------------------------------
    def _checked(self, hook, *args):
        """Call the kernel (which calls its checker in strict mode); a violation is kept
        (``violation``) and raised."""
        try:
            return hook(*args)
        except InvariantViolation as exc:
            self.violation = self.violation or exc
            raise

    # -- I/O ---------------------------------------------------------------------------------
    def request(self, app: str, phase: int, kind: str, nbytes: int, now: float) -> bool:
        """Rank 0 asks for its I/O phase ``phase``.  Returns True if there is nothing to
        arbitrate (an empty phase: granted at once, not recorded as a grant)."""
        a = self._running(app)
        # the kernel refuses a second request and a phase the spec does not have
        req = self._checked(self.kernel.request, a.info.rank, phase, self.spec_time(now), int(nbytes),
                            self.unit_bytes, kind)
        a.last_seen = now
        if req is None:
            return True
        a.phase, a.requested, a.granted = phase, now, math.nan
        return False

    def dispatch(self, now: float) -> list[tuple[str, dict]]:
        """Grant what the policy allows now on every I/O node; ``[(app, grant info)]``."""
        if self.t0 is None:
            return []
        self._now, self._granted = now, []
        t = self.spec_time(now)
        self._checked(self.driver.dispatch, t)  # every I/O node touched since its last dispatch
        if self.sharing:
            self._checked(self._share, t)
        return self._granted

    # -- the driver's effectors (:class:`~iolab.middleware.policies.io_driver.AppEffects`) ---------
    def granted(self, node: int, granted: list, t: float) -> None:
        """``node``'s grants at ``t``: each app's grant is timed on the wall clock and its lease starts."""
        now = self._now
        for req in granted:
            a = self.apps[req.app]
            a.granted = now
            a.last_seen = now
            a.booked = 0
            self._granted.append((req.app, self.grant_info(req.app)))

    def due(self, ranks: list[int], t: float) -> None:
        """The apps of a pack that opened start at their gates (:meth:`gates`, when due)."""

    def ended(self, rank: int, t: float) -> None:
        """The app's status and wall end are this state's, set before."""

    def compute(self, rank: int, phase: int, t: float) -> None:
        raise RuntimeError("a real run's apps walk their own phases")

    asked = delay = compute

    def _share(self, t: float) -> None:
        """Every I/O node whose granted apps changed since it last shared: the policy's shares, as lanes."""
        for n, node in enumerate(self.nodes):
            grants = tuple((app, self.apps[app].granted) for app in node.active)  # in grant order
            if grants == self._lanes[n]:
                continue
            self._lanes[n] = grants
            streams = [self.stream(app, t) for app, _ in grants]
            shares = self.policy.shares(streams, t) if streams else []
            self.buckets[n].share({app: float(x) for (app, _), x in zip(grants, shares)})

    def stream(self, app: str, t: float) -> Stream:
        """The grant ``app`` holds as a sharing policy sees it at spec time ``t`` (its fields as the
        simulator fills them: an app is its own job, with no user; ``moved``: the bytes booked so far)."""
        a = self.apps[app]
        i = a.info
        volume = i.amounts[a.phase]
        return Stream(i.id, i.id, i.rank, i.nodes, volume, min(volume, a.booked / self.unit_bytes),
                      self.spec_time(a.granted), "")

    def grant_info(self, app: str) -> dict:
        a = self._app(app)
        return {"directory": self.directories[a.info.io_node], "granted_at": a.granted, "lease": self.lease,
                "io_node": a.info.io_node, "phase": a.phase}

    def release(self, app: str, phase: int, now: float) -> None:
        a = self._running(app)
        self._checked(self.kernel.release, a.info.rank, phase, self.spec_time(now))
        self._close_grant(a, now)

    def _close_grant(self, a: _App, now: float) -> None:
        if not math.isnan(a.granted):
            a.grants.append((a.phase, a.requested, a.granted, now))
        a.phase, a.requested, a.granted = -1, math.nan, math.nan

    def acquire(self, app: str, nbytes: int, now: float) -> float:
        """Seconds a rank of ``app`` waits before moving ``nbytes`` (its I/O node's cap)."""
        return self.book(app, nbytes, now)[1] - now

    def book(self, app: str, nbytes: int, now: float) -> tuple[float, float]:
        """The interval in which ``app``'s I/O node's link carries ``nbytes`` of a rank of ``app``
        (:meth:`TokenBucket.book`)."""
        a = self._running(app)
        a.last_seen = now
        a.booked += int(nbytes)
        return self.buckets[a.info.io_node].book(int(nbytes), now, app)  # the app is the stream

    def heartbeat(self, app: str, now: float) -> None:
        self._running(app).last_seen = now

    # -- records -------------------------------------------------------------------------------
    def report(self, app: str, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        a = self._app(app)
        if not 0 <= phase < len(a.info.kinds):
            raise ValueError(f"app {app!r}: no phase {phase}")
        volume = 0.0 if kind == COMPUTE else a.info.amounts[phase]
        if self.t0 is not None:
            self._checked(self.kernel.recorded, a.info.rank, phase, kind, volume, self.spec_time(end))
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
        if all(x.status == "ok" for x in self.apps.values()):
            # the run ended well: the kernel's last check, the simulator's at its last event (a run that
            # failed or was stopped has said why already)
            self._checked(self.driver.close, self.spec_time(now))

    def fail(self, app: str, reason: str, now: float, status: str = "failed") -> bool:
        """Cancel everything ``app`` holds or waits for; it is ``status`` from now on.
        Returns False if it had already ended."""
        a = self._app(app)
        if a.status in ENDED:
            return False
        self._close_grant(a, now)
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
        self.driver.suspend(a.info.rank, self.spec_time(now))

    def resume(self, app: str, now: float) -> None:
        a = self._running(app)
        if math.isnan(a.suspended):
            return
        a.actions.append((a.suspended, now))
        a.suspended = math.nan
        self.driver.resume(a.info.rank, self.spec_time(now))
        a.last_seen = now

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
            work_total += a.info.min_time
            if a.status == "ok":
                done += n
                work += a.info.min_time
            else:
                done += len(a.phases)
                work += sum(a.info.cf[p[0]] for p in a.phases)
        return {"phases_done": int(done), "phases_total": int(total), "work_done": work,
                "work_total": work_total,
                "running": sum(a.status == "running" for a in self.apps.values()),
                "ended": sum(a.status in ENDED for a in self.apps.values()),
                "apps": len(self.apps), "t0": self.t0}

    def snapshot(self, now: float) -> dict:
        """What a live view shows now (plain data, crosses Ray cheaply): per I/O node the apps
        holding a grant and the waiting apps in the policy's grant order; per app its status,
        phase and progress; the apps the load controller has suspended (``suspended``)."""
        t = self.spec_time(now) if self.t0 is not None else 0.0
        nodes = []
        for n, node in enumerate(self.nodes):
            waiting = node.waiting_in_order(t)
            held = sorted(self.kernel.apps[r].id for r in self.kernel.held if self.kernel.apps[r].io_node == n)
            nodes.append({"node": n, "grant": sorted(node.active), "waiting": [r.app for r in waiting],
                          "held": held})
        apps = []
        for i, a in self.apps.items():
            kinds = a.info.kinds
            current = a.phase if not math.isnan(a.requested) else len(a.phases)
            apps.append({"id": i, "status": a.status, "io_node": a.info.io_node,
                         "phases_done": len(kinds) if a.status == "ok" else len(a.phases),
                         "phases_total": len(kinds),
                         "phase": kinds[current] if 0 <= current < len(kinds) and a.status == "running" else "",
                         "waiting": not math.isnan(a.requested) and math.isnan(a.granted),
                         "transferring": not math.isnan(a.granted),
                         "suspended": not math.isnan(a.suspended)})
        return {"time": t, "policy": self.policy.name, "io_nodes": nodes, "apps": apps,
                "suspended": sorted(i for i, a in self.apps.items() if not math.isnan(a.suspended))}

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
                         "min_time": i.min_time, "io_volume": i.io_volume, "compute_time": i.compute_time})
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

