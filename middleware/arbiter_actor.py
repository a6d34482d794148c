"""The I/O arbiter as a named Ray actor, behind a plain Python API.

:class:`Arbiter` is what the orchestrator holds: ``Arbiter.create(...)`` (or
``Arbiter.from_spec``) starts the actor under a name in a namespace, and its
methods mirror :class:`~iolab.middleware.arbiter_state.ArbiterState`.  Arguments are checked
here, on the caller's side; errors raised in the actor come back as the
original exception (``AppFailed``, ``ValueError``, ``RuntimeError``), not as a
Ray error.

The actor (:class:`_ArbiterActor`) is *async*: every app blocked in
``request`` (or at its start gate in ``arrive``) awaits an asyncio future that
the actor resolves when the policy grants it, so many apps wait at once in one
process.  A ticker task wakes at the next time-driven change (a release
time, a lease end) or when a call changed the state, and settles: leases
expire, gates open, grants are dispatched.  All decisions are made by the
state class and the shared policy objects of ``iolab.middleware.policies``.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from typing import Any

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.io_apps import IOApp, io_apps
from iolab.middleware.policies.interference import law_of

from iolab.middleware.actor_handle import ActorHandle, call
from iolab.middleware.arbiter_state import AppFailed, ArbiterState
from iolab.middleware.policies.io_guard import shippable

__all__ = ["AppFailed", "Arbiter"]


class _ArbiterActor:
    """The actor's body (decorated with ``ray.remote`` in :meth:`Arbiter.create`)."""

    def __init__(self, kwargs: dict[str, Any]):
        self.state = ArbiterState(**kwargs)
        self.grant_waiters: dict[str, asyncio.Future] = {}
        self.gate_waiters: dict[str, list[asyncio.Future]] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self.calls = 0

    # -- the ticker ------------------------------------------------------------------------
    def _settle(self, wake: bool = True, now: float | None = None) -> None:
        """Decide at ``now`` (wall seconds; default: the clock's now), the time of the call that changed the
        state, so what it changed and what that decides are one instant (a request to a free I/O node is
        granted at the time it was made, as in the simulator); ``wake``: a call changed the state, so the
        ticker recomputes when it is next due.  The ticker itself settles with ``wake=False``: waking itself
        would make it spin (one core of the machine busy in the arbiter throughout every real run)."""
        try:
            self._decide(time.time() if now is None else now)
        except InvariantViolation as exc:  # strict mode: the run stops; every waiting app is told
            for app in list(self.gate_waiters) + list(self.grant_waiters):
                self._fail_waiters(app, exc)
        if wake and self._wake is not None:
            self._wake.set()

    def _check(self) -> None:
        """Strict mode: after a violation every call raises it (the orchestrator's polls too)."""
        if self.state.violation is not None:
            raise self.state.violation

    def _decide(self, now: float) -> None:
        st = self.state
        self._check()
        for app in st.expire(now):
            self._fail_waiters(app)
        for app in st.gates(now):
            for fut in self.gate_waiters.pop(app, []):
                if not fut.done():
                    fut.set_result(self._start_info(app))
        for app, info in st.dispatch(now):
            fut = self.grant_waiters.pop(app, None)
            if fut is not None and not fut.done():
                fut.set_result(info)

    def _fail_waiters(self, app: str, err: Exception | None = None) -> None:
        if err is None:
            a = self.state.apps[app]
            err = AppFailed(f"app {app!r} is {a.status}: {a.message}")
        for fut in self.gate_waiters.pop(app, []) + [self.grant_waiters.pop(app, None)]:
            if fut is not None and not fut.done():
                fut.set_exception(err)

    async def _ticker(self) -> None:
        while True:
            timeout = min(max(self.state.next_due() - time.time(), 0.0), 1.0)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            self._settle(wake=False)

    def _ensure_ticker(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._ticker())

    def _start_info(self, app: str) -> dict:
        a = self.state.apps[app]
        return {"start": a.start, "t0": self.state.t0, "lease": self.state.lease, "io_node": a.info.io_node,
                "cap": self.state.buckets[a.info.io_node].rate}

    # -- the run ---------------------------------------------------------------------------
    async def ping(self) -> float:
        return time.time()

    async def nice(self) -> int:
        return os.nice(0)

    async def start(self, t0: float) -> None:
        self._ensure_ticker()
        self.state.start(t0)
        self._settle()

    async def arrive(self, app: str, rank: int, size: int) -> dict:
        self._check()
        self._ensure_ticker()
        now = time.time()
        self.state.arrive(app, rank, size, now)
        self._settle(now=now)
        if self.state.apps[app].status == "running":
            return self._start_info(app)
        fut = asyncio.get_running_loop().create_future()
        self.gate_waiters.setdefault(app, []).append(fut)
        return await fut

    async def request(self, app: str, phase: int, kind: str, nbytes: int) -> dict:
        self._check()
        self.calls += 1
        now = time.time()
        if self.state.request(app, phase, kind, nbytes, now):
            return {"directory": self.state.directories[self.state.apps[app].info.io_node], "granted_at": now,
                    "lease": self.state.lease, "io_node": self.state.apps[app].info.io_node, "phase": phase}
        fut = asyncio.get_running_loop().create_future()
        self.grant_waiters[app] = fut
        self._settle(now=now)
        return await fut

    async def release(self, app: str, phase: int) -> None:
        self._check()
        self.calls += 1
        now = time.time()
        self.state.release(app, phase, now)
        self._settle(now=now)

    async def book(self, app: str, nbytes: int) -> tuple[float, float]:
        """Book ``nbytes`` on the app's I/O node's link: the interval ``(start, end)`` of wall times
        (``time.time()``, this host's) in which the link carries them.  Absolute times, not a wait: a
        wait counted from the caller's send let it write early by the call's latency (a phase 27 %
        shorter than the cap allows was seen on a loaded machine)."""
        self._check()
        return self.state.book(app, nbytes, time.time())

    async def heartbeat(self, app: str) -> None:
        self._check()
        self.state.heartbeat(app, time.time())

    async def report(self, app: str, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        self._check()
        self.state.report(app, phase, kind, start, end, nbytes)

    async def finish(self, app: str, ok: bool, message: str) -> None:
        self._check()
        now = time.time()
        self.state.finish(app, ok, message, now)
        self._fail_waiters(app)
        self._settle(now=now)

    async def fail(self, app: str, reason: str) -> bool:
        now = time.time()
        changed = self.state.fail(app, reason, now)
        self._fail_waiters(app)
        self._settle(now=now)
        return changed

    async def stop(self) -> list[str]:
        now = time.time()
        killed = self.state.stop(now)
        for app in killed:
            self._fail_waiters(app)
        self._settle(now=now)
        return killed

    async def suspend(self, app: str) -> None:
        now = time.time()
        self.state.suspend(app, now)
        self._settle(now=now)

    async def resume(self, app: str) -> None:
        now = time.time()
        self.state.resume(app, now)
        self._settle(now=now)

    async def status(self) -> dict:
        self._check()
        return self.state.status()

    async def progress(self) -> dict:
        self._check()
        return {**self.state.progress(), "now": time.time()}

    async def snapshot(self) -> dict:
        self._check()
        return self.state.snapshot(time.time())

    async def records(self) -> dict:
        return self.state.records()


class Arbiter(ActorHandle):
    """Handle on a running arbiter actor (picklable: holds only the actor handle)."""

    # -- creation ------------------------------------------------------------------------------
    @classmethod
    def create(cls, apps: list[IOApp], *, policy: str, bandwidth: float, io_nodes: int = 1,
               packs: list[list[list[int]]] | None = None, packed: bool | None = None,
               directories: list[str] | None = None, lease: float = math.inf, cap: float | None = None,
               time_scale: float = 1.0, unit_bytes: int = 1, strict: bool = False, law=None,
               name: str = "iolab-arbiter", namespace: str = "iolab") -> "Arbiter":
        """``strict`` (the run's, which read ``IOLAB_STRICT`` where it started): the actor checks
        every call with the I/O level's checker; a violation stops the run (every later call,
        the orchestrator's ``status`` and ``progress`` included, raises it)."""
        kwargs = dict(apps=list(apps), policy=shippable(policy), bandwidth=bandwidth, io_nodes=io_nodes, packs=packs,
                      packed=packed, directories=directories, lease=lease, cap=cap, time_scale=time_scale,
                      unit_bytes=unit_bytes, strict=strict, law=law)
        ArbiterState(**kwargs)  # validate here, on the caller's side
        return cls._spawn(_ArbiterActor, kwargs, name, namespace)

    @classmethod
    def from_spec(cls, spec, plan, *, policy: str | None = None, directories: list[str], strict: bool = False,
                  name: str = "iolab-arbiter", namespace: str = "iolab") -> "Arbiter":
        """The arbiter of an experiment: the kernel's view of its apps (``io_apps``) and the plan's packs."""
        s = spec.emulator
        b = spec.platform.bandwidth
        cap = b * s.unit_bytes / s.time_scale if s.bandwidth_cap else None
        return cls.create(io_apps(spec, plan), policy=policy or spec.policy, bandwidth=b,
                          io_nodes=spec.platform.io_nodes, packs=[[list(p) for p in seq] for seq in plan.nodes],
                          packed=plan.packed, directories=directories, lease=s.lease, cap=cap,
                          time_scale=s.time_scale, unit_bytes=s.unit_bytes, strict=strict, name=name,
                          namespace=namespace, law=law_of(spec.platform.interference))

    @classmethod
    def lookup(cls, name: str, namespace: str) -> "Arbiter":
        import ray  # lazy: Ray only when a run looks up its actor

        try:
            return cls(ray.get_actor(name, namespace=namespace), name, namespace)
        except ValueError:
            raise RuntimeError(f"no arbiter actor {name!r} in Ray namespace {namespace!r}") from None

    # -- the orchestrator's side ------------------------------------------------------------
    def start(self, t0: float | None = None) -> float:
        t0 = time.time() if t0 is None else float(t0)
        call(self._h.start.remote(t0))
        return t0

    def fail(self, app: str, reason: str) -> bool:
        return call(self._h.fail.remote(_app(app), str(reason)))

    def stop(self) -> list[str]:
        return call(self._h.stop.remote())

    def suspend(self, app: str) -> None:
        call(self._h.suspend.remote(_app(app)))

    def resume(self, app: str) -> None:
        call(self._h.resume.remote(_app(app)))

    def status(self) -> dict[str, dict]:
        return call(self._h.status.remote(), timeout=60)

    def nice(self) -> int:
        """The actor process's niceness (a run's trace records it: an actor at Ray's default nice 15
        answers late when the apps keep the cores busy)."""
        return call(self._h.nice.remote(), timeout=60)

    def progress(self) -> dict:
        return call(self._h.progress.remote(), timeout=60)

    def snapshot(self) -> dict:
        """What a live view shows (:meth:`ArbiterState.snapshot`)."""
        return call(self._h.snapshot.remote(), timeout=60)

    def records(self) -> dict:
        return call(self._h.records.remote(), timeout=60)

    # -- an app's side (the client uses these through the handle directly) -------------------
    def arrive(self, app: str, rank: int, size: int) -> dict:
        return call(self._h.arrive.remote(_app(app), int(rank), int(size)))

    def request(self, app: str, phase: int, kind: str, nbytes: int) -> dict:
        if kind not in ("write", "read"):
            raise ValueError(f"kind must be 'write' or 'read', got {kind!r}")
        return call(self._h.request.remote(_app(app), int(phase), kind, int(nbytes)))

    def release(self, app: str, phase: int) -> None:
        call(self._h.release.remote(_app(app), int(phase)))

    def acquire(self, app: str, nbytes: int) -> float:
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        return max(0.0, call(self._h.book.remote(_app(app), int(nbytes)))[1] - time.time())

    def finish(self, app: str, ok: bool, message: str = "") -> None:
        call(self._h.finish.remote(_app(app), bool(ok), str(message)))

    def report(self, app: str, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        call(self._h.report.remote(_app(app), int(phase), kind, float(start), float(end), int(nbytes)))


def _app(app: str) -> str:
    if not isinstance(app, str) or not app:
        raise ValueError(f"app must be a non-empty string, got {app!r}")
    return app
