"""The storage manager as a named Ray actor, behind a plain Python API.

:class:`StorageManager` is what the batch loop holds; its methods mirror
:class:`~iolab.middleware.storage.StorageState` (arguments checked on the caller's
side, the actor's own exceptions re-raised).  The actor is *async*: an HPS
allocation that waits for space awaits a future resolved by a later
``free``; a staging copy runs in a worker thread (``asyncio.to_thread``)
paced by the ``stage`` token bucket, so many copies share the link while the
actor keeps answering.  Jobs reach it through :mod:`iolab.middleware.storage_client`
(pacing of their reads and writes, quota reservations, phase reports).  A
thread measures the HPS directories every ``sample_every`` seconds
(:meth:`~iolab.middleware.storage.StorageState.sample`); a stage-in reserves its
bytes in the job's quota before it copies.

    mgr = StorageManager.create(lps_root, hps_root, capacity, rates={...}, name=..., namespace=...)
    a = mgr.allocate("j1", 10**6)             # blocks while it waits (allocate_async: an ObjectRef)
    d = mgr.open_dir("hps", "j1")
    mgr.stage("j1", "stage-in", [files...], d + "/input")
    mgr.free("j1")                            # directory removed, bytes returned
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

from iolab.middleware.actor_handle import ActorHandle, call
from iolab.middleware.storage import HPS, LOOKAHEAD, LPS, STAGE, TIERS, StorageState, booking_time, check_job_name, copy_paced

SAMPLE_EVERY = 0.5  # seconds between two measures of the HPS directories

__all__ = ["StorageManager"]
DIRECTIONS = ("stage-in", "stage-out")


class _StorageActor:
    def __init__(self, kwargs: dict[str, Any]):
        self.chunk = int(kwargs.pop("chunk", 256 * 1024))
        self.sample_every = float(kwargs.pop("sample_every", SAMPLE_EVERY))
        self.state = StorageState(**kwargs)
        self.lock = threading.Lock()  # the state is touched by the loop and by copy threads
        self._sampling = threading.Event()
        if self.sample_every > 0:
            threading.Thread(target=self._sample_loop, name="hps-usage", daemon=True).start()
        self.waiters: dict[str, asyncio.Future] = {}
        self.phases: list[list] = []  # job, phase, kind, start, end, bytes (wall clock)
        self.finished: dict[str, tuple[bool, str, float]] = {}

    async def ping(self) -> float:
        return time.time()

    def _sample_loop(self) -> None:
        while not self._sampling.wait(self.sample_every):
            with self.lock:
                self.state.sample(time.time())

    # -- allocations ---------------------------------------------------------------------------
    async def allocate(self, job: str, nbytes: int, parts: list | None = None) -> dict:
        with self.lock:
            a = self.state.allocate(job, nbytes, time.time(), parts)
        if a.status != "waiting":
            return a.__dict__
        fut = asyncio.get_running_loop().create_future()
        self.waiters[job] = fut
        return await fut

    def _wake(self, granted) -> None:
        for a in granted:
            fut = self.waiters.pop(a.job, None)
            if fut is not None and not fut.done():
                fut.set_result(a.__dict__)

    async def free(self, job: str) -> int:
        with self.lock:
            nbytes, granted = self.state.free(job, time.time())
        fut = self.waiters.pop(job, None)
        if fut is not None and not fut.done():
            fut.set_result({"job": job, "status": "refused", "nbytes": 0, "parts": (), "reason": "freed while waiting"})
        self._wake(granted)
        return nbytes

    async def open_dir(self, tier: str, job: str) -> str:
        with self.lock:
            return str(self.state.open_dir(tier, job))

    # -- staging ---------------------------------------------------------------------------------
    async def stage(self, job: str, direction: str, sources: list[str], dest: str) -> dict:
        """Copy ``sources`` into ``dest`` over the staging link; the destination must be inside a tier
        (HPS for a stage-in, LPS for a stage-out) and the job must hold its HPS allocation."""
        check_job_name(job)
        tier = HPS if direction == "stage-in" else LPS
        with self.lock:
            if job not in self.state.live:
                raise RuntimeError(f"job {job!r} stages without an HPS allocation")
            target = self.state.inside(tier, dest)
            for s in sources:
                self.state.inside(LPS if tier == HPS else HPS, s)
            key = f"{direction} into {target}"
            if tier == HPS:  # the copies count against the job's quota before they are written
                self.state.reserve(job, key, sum(os.path.getsize(s) for s in sources), [str(target)], time.time())

        def pace(n: int) -> float:
            with self.lock:
                return self.state.acquire(STAGE, n, time.time(), job)

        start = time.time()
        try:
            nbytes, files = await asyncio.to_thread(copy_paced, sources, target, pace, self.chunk)
        finally:
            with self.lock:
                self.state.settle(job, key)
        end = time.time()
        rec = {"job": job, "direction": direction, "start": start, "end": end, "bytes": nbytes, "files": files}
        with self.lock:
            self.state.staged.append(rec)
        return rec

    # -- the jobs' side ------------------------------------------------------------------------------
    async def book(self, link: str, nbytes: int, stream: str | None = None,
                   at: float | None = None) -> tuple[float, float]:
        """Book ``nbytes`` of ``stream`` (a job) on ``link``: the interval of wall times that carries them
        (as the arbiter's; a job alone on its tier may move them up to ``LOOKAHEAD`` early).  ``at``:
        when the writer asked (its wall clock): the booking counts from then (:func:`booking_time`)."""
        now = booking_time(time.time(), at)
        with self.lock:
            return self.state.book(link, nbytes, now, stream, LOOKAHEAD)

    async def reserve(self, job: str, key: str, nbytes: int, paths: list[str]) -> int:
        with self.lock:
            return self.state.reserve(job, key, nbytes, paths, time.time())

    async def settle(self, job: str, key: str) -> None:
        with self.lock:
            self.state.settle(job, key)

    async def room(self, job: str) -> int:
        with self.lock:
            return self.state.room(job)

    async def sample(self) -> list:
        with self.lock:
            return self.state.sample(time.time())

    async def report(self, job: str, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        self.phases.append([job, int(phase), kind, float(start), float(end), int(nbytes)])

    async def finish(self, job: str, ok: bool, message: str) -> None:
        self.finished[job] = (bool(ok), str(message), time.time())

    # -- hooks ----------------------------------------------------------------------------------------
    async def suspend(self, job: str, at: float | None = None) -> None:
        """``job``'s processes stopped at wall time ``at`` (default: now)."""
        with self.lock:
            self.state.suspend(job, time.time() if at is None else at)

    async def resume(self, job: str, at: float | None = None) -> None:
        """``job``'s processes continued at wall time ``at`` (default: now)."""
        with self.lock:
            self.state.resume(job, time.time() if at is None else at)

    # -- inspection -----------------------------------------------------------------------------------
    async def counters(self) -> dict:
        with self.lock:
            return self.state.counters(time.time())

    async def status(self) -> dict:
        with self.lock:
            return self.state.status()

    async def records(self) -> dict:
        with self.lock:
            return {**self.state.records(), "phases": [list(p) for p in self.phases],
                    "finished": {k: list(v) for k, v in self.finished.items()}}


class StorageManager(ActorHandle):
    """Handle on a running storage manager actor (picklable: holds only the handle)."""

    @classmethod
    def create(cls, lps_root: str, hps_root: str, hps_capacity: int, *, disks: list | None = None,
               strategy: str = "best-bandwidth", split_threshold: int | None = None, rng: int = 0,
               on_full: str = "wait", rates: dict[str, float | None] | None = None, laws: dict | None = None,
               chunk: int = 256 * 1024,
               name: str = "iolab-storage", namespace: str = "iolab",
               sample_every: float = SAMPLE_EVERY) -> "StorageManager":
        kwargs = dict(lps_root=str(lps_root), hps_root=str(hps_root), hps_capacity=int(hps_capacity),
                      disks=[dict(d) for d in disks] if disks else None, strategy=strategy,
                      split_threshold=split_threshold, rng=rng, on_full=on_full, rates=rates, laws=laws)
        StorageState(**kwargs)  # validate on the caller's side (creates the roots)
        return cls._spawn(_StorageActor, {**kwargs, "chunk": int(chunk), "sample_every": float(sample_every)},
                          name, namespace)

    # -- calls ----------------------------------------------------------------------------------------
    def allocate_async(self, job: str, nbytes: int, parts: list | None = None):
        """``parts``: the ``(disk id, bytes)`` the caller placed the bytes on (else the manager places them)."""
        check_job_name(job)
        if int(nbytes) < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        return self._h.allocate.remote(job, int(nbytes), [(str(d), int(b)) for d, b in parts] if parts else None)

    def allocate(self, job: str, nbytes: int, timeout: float | None = None, parts: list | None = None) -> dict:
        return call(self.allocate_async(job, nbytes, parts), timeout=timeout)

    def free(self, job: str) -> int:
        return call(self._h.free.remote(check_job_name(job)), timeout=120)

    def open_dir(self, tier: str, job: str) -> str:
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}")
        return call(self._h.open_dir.remote(tier, check_job_name(job)), timeout=60)

    def stage_async(self, job: str, direction: str, sources: list[str], dest: str):
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        return self._h.stage.remote(check_job_name(job), direction, [str(s) for s in sources], str(dest))

    def stage(self, job: str, direction: str, sources: list[str], dest: str) -> dict:
        return call(self.stage_async(job, direction, sources, dest))

    def acquire(self, link: str, nbytes: int, stream: str | None = None) -> float:
        return max(0.0, call(self._h.book.remote(link, int(nbytes), stream))[1] - time.time())

    def room(self, job: str) -> int:
        return call(self._h.room.remote(check_job_name(job)), timeout=60)

    def sample(self) -> list:
        """Measure the HPS directories now (rows: job, time, allocated, apparent, blocks)."""
        return call(self._h.sample.remote(), timeout=60)

    def quota_refusal(self, job: str) -> str:
        """Why the last write of ``job`` was refused for its quota (``""``: never)."""
        rows = [r for r in self.records().get("quota", []) if r[0] == job]
        return rows[-1][5] if rows else ""

    def suspend(self, job: str, at: float | None = None) -> None:
        call(self._h.suspend.remote(check_job_name(job), at))

    def resume(self, job: str, at: float | None = None) -> None:
        call(self._h.resume.remote(check_job_name(job), at))

    def status(self) -> dict:
        return call(self._h.status.remote(), timeout=60)

    def records(self) -> dict:
        return call(self._h.records.remote(), timeout=60)


def result(ref: Any) -> Any:
    """The value of a finished ObjectRef from ``*_async`` (the actor's own exception re-raised)."""
    return call(ref, timeout=60)

