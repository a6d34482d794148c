"""The I/O nodes of a real batch run as one named Ray actor, behind a plain Python API.

:class:`IONodes` is what the batch loop (:mod:`iolab.emulator.batch.run`) holds: it creates the
actor with the run, registers each job's parts when the job launches (``add_job``), drops a job that
ends (``drop``: a crash or a kill cancels what its parts wait for or hold, so no other job hangs),
suspends and resumes jobs for the load controller, and reads the records for the trace.  The
decisions are :class:`~iolab.middleware.io_node_state.IONodesState`'s, made by the policy objects of
``iolab.middleware.policies``.

The jobs' ranks reach the actor through :mod:`iolab.middleware.io_node_client`.  The actor is
*async*, like the I/O level's arbiter (:mod:`iolab.middleware.arbiter_actor`): a part's lowest rank blocks
in ``request`` and its other ranks in ``wait_grant`` on one asyncio future per (job, I/O node,
phase), resolved when the policy grants the part; a booking of a part that lost its grant (its job
was suspended) waits for the grant it asks again for at resume.  Every call that changes the state
dispatches at once (nothing here is driven by time: no start gates, no leases; the batch loop sees a
dead job's processes and drops it).

**Test hook.**  With ``IOLAB_TEST_IO_NODE_FAULT=double-grant`` in the environment of the process that
creates the actor (:data:`FAULT_ENV`), the actor plants a bug in its arbiters: an exclusive I/O node
also grants its next waiting part while one transfers.  Strict mode must then stop the run with
``exclusive-io`` (tests/emulator/batch/test_batch_io_nodes_real.py); nothing else reads it.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from iolab.invariants import InvariantViolation

from iolab.middleware.actor_handle import ActorHandle, call
from iolab.middleware.io_node_state import IONodesState, JobGone
from iolab.middleware.storage import booking_time

__all__ = ["IONodes", "JobGone", "FAULT_ENV"]

FAULT_ENV = "IOLAB_TEST_IO_NODE_FAULT"  # test hook (module doc): "double-grant"
FAULTS = ("double-grant",)


def _plant_double_grant(arb) -> None:
    """The planted bug: an exclusive arbiter grants its next waiting part beside the one transferring."""
    honest = arb.dispatch

    def double(now):
        if arb._exclusive and arb.active and arb._waiting:
            req = arb._queue.pop(now)
            del arb._waiting[req.app]
            arb.active[req.app] = req
            return [req]
        return honest(now)

    arb.dispatch = double


class _IONodesActor:
    def __init__(self, kwargs: dict[str, Any]):
        kwargs = dict(kwargs)
        fault = kwargs.pop("fault", None)
        self.state = IONodesState(**kwargs)
        if fault == "double-grant":  # the test hook (module doc)
            for arb in self.state.arbiters:
                _plant_double_grant(arb)
        self.waiters: dict[tuple[str, int, int], list[asyncio.Future]] = {}

    async def ping(self) -> float:
        return time.time()

    async def nice(self) -> int:
        return os.nice(0)

    def _settle(self, now: float | None = None) -> None:
        """Dispatch at ``now`` (wall seconds; default: the clock's now), the time of the call that changed the
        books, so a request to a free I/O node is granted at the time it was made, as in the simulator."""
        now = time.time() if now is None else now
        try:
            granted = self.state.dispatch(now)
        except InvariantViolation as exc:  # strict mode: every waiting rank is told, the run stops
            for key in list(self.waiters):
                self._fail(key, exc)
            return
        for key in granted:
            for fut in self.waiters.pop(key, []):
                if not fut.done():
                    fut.set_result(now)

    def _fail(self, key, err: Exception) -> None:
        for fut in self.waiters.pop(key, []):
            if not fut.done():
                fut.set_exception(err)

    async def _grant(self, job: str, node: int, phase: int) -> None:
        """Wait until the part holds its grant for ``phase`` (at once if it does)."""
        if self.state.holds(job, node, phase) or self.state.finished(job, node, phase):
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiters.setdefault((job, node, phase), []).append(fut)
        await fut

    # -- the orchestrator's side ------------------------------------------------------------------
    async def start(self, t0: float) -> None:
        self.state.start(t0)

    async def add_job(self, job: str, rank: int, parts: dict, steps: list, index: list, start: float,
                      nodes: int = 0, user: str = "") -> None:
        self.state.add_job(job, rank, {int(n): p for n, p in parts.items()}, steps, index, start, time.time(),
                           nodes, user)

    async def close(self) -> None:
        self.state.close(time.time())

    async def drop(self, job: str, reason: str) -> bool:
        now = time.time()
        dropped = self.state.drop(job, reason, now)
        for key in [k for k in self.waiters if k[0] == job]:
            self._fail(key, JobGone(f"job {job!r} is gone: {reason}"))
        self._settle(now)
        return dropped

    async def suspend(self, job: str, at: float | None = None) -> None:
        """``job``'s processes stopped at wall time ``at`` (default: now)."""
        self.state.suspend(job, time.time() if at is None else at)
        self._settle()

    async def resume(self, job: str, at: float | None = None) -> None:
        """``job``'s processes continued at wall time ``at`` (default: now)."""
        self.state.resume(job, time.time() if at is None else at)
        self._settle()

    async def violation(self) -> InvariantViolation | None:
        return self.state.violation

    async def records(self) -> dict:
        return self.state.records()

    async def snapshot(self) -> dict:
        return self.state.snapshot(time.time())

    # -- the ranks' side ---------------------------------------------------------------------------
    async def request(self, job: str, node: int, phase: int, kind: str, nbytes: int) -> None:
        """The part's lowest rank: ask for ``phase`` and wait for the grant."""
        now = time.time()
        if self.state.request(job, node, phase, kind, nbytes, now):
            return
        self._settle(now)
        await self._grant(job, node, phase)

    async def wait_grant(self, job: str, node: int, phase: int) -> None:
        """Another rank of the part: wait for the part's grant of ``phase``."""
        await self._grant(job, node, phase)

    async def book(self, job: str, node: int, nbytes: int, at: float | None = None) -> tuple[float, float]:
        """Book ``nbytes`` of a rank of the part on the I/O node's link (the interval of wall times that
        carries them); a part without its grant (suspended, asking again) waits for it first."""
        while True:
            r = self.state.book(job, node, nbytes, booking_time(time.time(), at))
            if r is not None:
                return r
            await self._grant(job, node, self.state.part(job, node).phase)
            at = None  # the booking counts from the new grant

    async def part_done(self, job: str, node: int, phase: int, rank: int) -> None:
        now = time.time()
        self.state.part_done(job, node, phase, rank, now)
        self._settle(now)


class IONodes(ActorHandle):
    """Handle on a running I/O-node actor (picklable: holds only the handle)."""

    @classmethod
    def create(cls, io_nodes: int, *, policy: str, rate: float, rates: dict[str, float], cap: float | None = None,
               law=None,
               time_scale: float = 1.0, bytes_scale: float = 1.0, strict: bool = False,
               name: str = "iolab-io-nodes", namespace: str = "iolab") -> "IONodes":
        kwargs = dict(io_nodes=io_nodes, policy=policy, rate=rate, rates=dict(rates), cap=cap, law=law,
                      time_scale=time_scale,
                      bytes_scale=bytes_scale, strict=strict)
        IONodesState(**kwargs)  # validate on the caller's side
        fault = os.environ.get(FAULT_ENV)
        if fault:  # the test hook (module doc), read here so that it reaches an actor on any Ray cluster
            if fault not in FAULTS:
                raise ValueError(f"{FAULT_ENV}={fault!r}: not a known fault (known: {', '.join(FAULTS)})")
            kwargs["fault"] = fault
        return cls._spawn(_IONodesActor, kwargs, name, namespace)

    def start(self, t0: float) -> None:
        call(self._h.start.remote(float(t0)), timeout=60)

    def add_job(self, job: str, rank: int, parts: dict[int, dict], steps: list, index: list[int],
                start: float, nodes: int = 0, user: str = "") -> None:
        """The job launches (:meth:`IONodesState.add_job <iolab.middleware.io_node_state.IONodesState.add_job>`)."""
        call(self._h.add_job.remote(str(job), int(rank), {int(n): p for n, p in parts.items()}, list(steps),
                                    [int(i) for i in index], float(start), int(nodes), str(user)), timeout=60)

    def close(self) -> None:
        """The run is over (strict mode: no part may still wait or hold a grant)."""
        call(self._h.close.remote(), timeout=60)

    def drop(self, job: str, reason: str) -> bool:
        return call(self._h.drop.remote(str(job), str(reason)), timeout=60)

    def suspend(self, job: str, at: float | None = None) -> None:
        call(self._h.suspend.remote(str(job), at), timeout=60)

    def resume(self, job: str, at: float | None = None) -> None:
        call(self._h.resume.remote(str(job), at), timeout=60)

    def violation(self) -> InvariantViolation | None:
        return call(self._h.violation.remote(), timeout=60)

    def records(self) -> dict:
        return call(self._h.records.remote(), timeout=60)

    def snapshot(self) -> dict:
        """Per I/O node who holds a grant and who waits (:meth:`IONodesState.snapshot
        <iolab.middleware.io_node_state.IONodesState.snapshot>`): the live view's."""
        return call(self._h.snapshot.remote(), timeout=60)
