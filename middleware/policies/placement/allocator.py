"""StorAlloc's request handling: split, place, commit all-or-nothing, requeue.

One storage request = ``(job, size, now)`` (monniot2023 §4.2: capacity,
duration, submission time; the duration is the caller's business: it calls
:meth:`StorageAllocator.release` when the allocation ends).

1. **Split** (Table 2): a request larger than ``split_threshold`` (default
   200 GB) becomes ``ceil(size / threshold)`` parts of equal size (they
   differ by at most one byte and sum exactly to the request).
2. **Place**: the strategy picks a disk per part, or refuses.
3. **Commit**: every part is checked against the disk it was given; all
   land, or none does.  Outcomes:

   - ``allocated``: every part landed;
   - ``refused``: the strategy found no room *at request time* (only the
     refusing strategies, round-robin and best-bandwidth);
   - ``failed``: the strategy accepted the request but a part does not fit
     on the disk it chose (random and worst-fit place without checking:
     monniot2023 §4.2 and Fig. 7's "failure of an allocation that was
     accepted by the scheduler");
   - ``retry``: refused, but requeue is on and retries remain: the caller
     asks again at ``retry_at`` (Table 2: 5 retries, one every 5 min).

   A refused or failed request leaves nothing behind; the job falls back to
   the parallel file system (LPS).

Every event goes to an allocation log (``job, disk, bytes, alloc, free,
status``: the trace schema's per-allocation table) that the metrics of
:mod:`iolab.metrics.batch` read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Any

import numpy as np

from iolab.middleware.policies.guard import GuardedPlacement
from iolab.middleware.policies.loader import load_policy
from iolab.specs.batch import MAX_SPLIT_PARTS
from iolab.middleware.policies.placement.disks import DiskInfo, DiskState
from iolab.middleware.policies.placement.strategies import Strategy, get_strategy

GB = 10**9
ALLOCATED, REFUSED, FAILED, RETRY = "allocated", "refused", "failed", "retry"
# Statuses of log records: a part that landed, the request-level events.
LOG_STATUSES = ("allocated", "refused", "failed", "split", "requeued")
MAX_PARTS = MAX_SPLIT_PARTS  # a threshold this small is a unit mistake, not a placement (refused with the spec)


def split_sizes(size: int, threshold: int | None) -> list[int]:
    """monniot2023's split: ``ceil(size/threshold)`` equal parts summing to ``size``.

    >>> split_sizes(500, 200)
    [167, 167, 166]
    """
    size = int(size)
    if size <= 0:
        raise ValueError(f"request size must be > 0 bytes, got {size}")
    if threshold is None or size <= threshold:
        return [size]
    threshold = int(threshold)
    if threshold <= 0:
        raise ValueError("split threshold must be > 0")
    n = -(-size // threshold)
    if n > MAX_PARTS:
        raise ValueError(f"splitting {size} B at {threshold} B would make {n} parts (more than {MAX_PARTS})")
    q, r = divmod(size, n)
    return [q + 1] * r + [q] * (n - r)


@dataclass(frozen=True, slots=True)
class AllocationRecord:
    """One row of the allocation log.

    ``disk`` is a disk id for an ``allocated`` part (``free`` is ``None``
    while it lives) and ``""`` for request-level events (``split``,
    ``requeued``: ``free`` is the retry time, ``refused``, ``failed``:
    ``bytes`` is then the whole request).
    """

    job: str
    disk: str
    bytes: int
    alloc: float
    free: float | None
    status: str


@dataclass(frozen=True, slots=True)
class Outcome:
    job: str
    status: str  # allocated | refused | failed | retry
    size: int
    parts: tuple[tuple[str, int], ...] = ()  # (disk id, bytes) of each landed part
    retry_at: float | None = None
    attempt: int = 0  # 0 for the first try
    reason: str = ""

    @property
    def split(self) -> bool:
        return len(self.parts) > 1


class StorageAllocator:
    """All-or-nothing disk placement of storage requests.  No clock: pass ``now``."""

    def __init__(self, disks: Iterable[DiskInfo | Mapping[str, Any]], strategy: str | Strategy = "best-bandwidth",
                 *, split_threshold: float | None = None, requeue_retries: int = 0,
                 requeue_period: float = 300.0, rng: np.random.Generator | int = 0):
        self.state = DiskState(disks)
        self.strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
        self.split_threshold = None if split_threshold is None else int(split_threshold)
        if self.split_threshold is not None and self.split_threshold <= 0:
            raise ValueError("split_threshold must be > 0 (or None to disable splitting)")
        if requeue_retries < 0 or not (requeue_period > 0 and math.isfinite(requeue_period)):
            raise ValueError("requeue_retries must be >= 0 and requeue_period > 0")
        if requeue_retries and not self.strategy.refuses:
            raise ValueError(f"requeue only applies to strategies that refuse requests; "
                             f"{self.strategy.name} never refuses (monniot2023 §4.2)")
        self.requeue_retries = int(requeue_retries)
        self.requeue_period = float(requeue_period)
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self._attempts: dict[str, int] = {}
        self._log: list[AllocationRecord] = []
        self._open: dict[str, list[int]] = {}  # job -> indices of its live part records

    @classmethod
    def from_spec(cls, hps: Any, placement: Any, rng: np.random.Generator | int = 0) -> "StorageAllocator":
        """From ``iolab.specs.batch`` HPSTier (with servers) and PlacementSpec."""
        strategy = placement.strategy
        if getattr(strategy, "kind", None) == "python":  # a user's policy, behind its guard
            strategy = GuardedPlacement(load_policy(strategy, "placement"), str(strategy))
        return cls(hps.layout(), strategy,
                   split_threshold=placement.split.threshold if placement.split.enabled else None,
                   requeue_retries=placement.requeue.retries if placement.requeue.enabled else 0,
                   requeue_period=placement.requeue.period, rng=rng)

    # -- requests -------------------------------------------------------------
    def request(self, job: str, size: float, now: float) -> Outcome:
        """Try to allocate ``size`` bytes for ``job`` now (a first try or a retry)."""
        if job in self.state.live:
            raise RuntimeError(f"job {job!r} already holds an allocation")
        attempt = self._attempts.get(job, 0)
        sizes = split_sizes(int(round(size)), self.split_threshold)
        total = sum(sizes)
        if len(sizes) > 1 and attempt == 0:
            self._log.append(AllocationRecord(job, "", total, now, None, "split"))
        choice = self.strategy.choose(sizes, self.state, self.rng)
        if choice is None:
            if attempt < self.requeue_retries:
                self._attempts[job] = attempt + 1
                at = now + self.requeue_period
                self._log.append(AllocationRecord(job, "", total, now, at, "requeued"))
                return Outcome(job, RETRY, total, retry_at=at, attempt=attempt, reason="no room now; retry later")
            self._attempts.pop(job, None)
            self._log.append(AllocationRecord(job, "", total, now, None, "refused"))
            return Outcome(job, REFUSED, total, attempt=attempt, reason="no disk has room for every part")
        self._attempts.pop(job, None)
        return self._land(job, list(zip(choice, sizes)), total, now, attempt)

    def commit(self, job: str, parts: Iterable[tuple[str, int]], now: float) -> Outcome:
        """Record a placement decided elsewhere (the batch kernel's allocator, in spec bytes; this one
        holds the same disks in real bytes): ``parts`` are ``(disk id, bytes)``, committed all or
        nothing like :meth:`request`'s own choice (``failed`` if a part does not fit)."""
        if job in self.state.live:
            raise RuntimeError(f"job {job!r} already holds an allocation")
        try:
            placed = [(self.state.index[d], int(b)) for d, b in parts]
        except KeyError as exc:
            raise ValueError(f"job {job!r}: unknown disk {exc.args[0]!r}") from None
        return self._land(job, placed, sum(b for _, b in placed), now, 0)

    def _land(self, job: str, parts: list[tuple[int, int]], total: int, now: float, attempt: int) -> Outcome:
        """Commit ``(disk index, bytes)`` parts all or nothing, and log them."""
        bad = self.state.fits(parts)
        if bad is not None:
            self._log.append(AllocationRecord(job, self.state.disks[bad].id, total, now, None, "failed"))
            return Outcome(job, FAILED, total, attempt=attempt,
                           reason=f"disk {self.state.disks[bad].id} has {self.state.free(bad)} B free")
        self.state.commit(job, parts)
        idx = []
        for disk, b in parts:
            idx.append(len(self._log))
            self._log.append(AllocationRecord(job, self.state.disks[disk].id, b, now, None, "allocated"))
        self._open[job] = idx
        return Outcome(job, ALLOCATED, total, tuple((self.state.disks[d].id, b) for d, b in parts), attempt=attempt)

    def release(self, job: str, now: float) -> tuple[tuple[str, int], ...]:
        """Free every part of ``job``'s allocation (the allocation's end, by the caller's clock)."""
        parts = self.state.release(job)
        for i in self._open.pop(job):
            self._log[i] = replace(self._log[i], free=now)
        return tuple((self.state.disks[d].id, b) for d, b in parts)

    def cancel(self, job: str) -> None:
        """Forget a pending requeue (the job gave up or started on LPS)."""
        self._attempts.pop(job, None)

    # -- inspection -----------------------------------------------------------
    def log(self) -> tuple[AllocationRecord, ...]:
        return tuple(self._log)

    @property
    def disks(self) -> tuple[DiskInfo, ...]:
        return self.state.disks

    def free_bytes(self) -> int:
        return self.state.capacity - self.state.total_used
