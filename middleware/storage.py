"""The storage manager's state: tier directories, HPS capacity in bytes, allocations, pacing.

lackner2019 §III-A: a slow tier with unlimited capacity (LPS, a backend
parallel file system) and a fast tier with limited capacity (HPS, burst
buffers), joined by a staging link.  On a testbed both tiers are real
directories (``lps_root``, ``hps_root``); this class owns them:

- **Directories.**  Each job gets its own directory on its tier,
  ``ROOT/jobs/<job>``, mode 0700.  The job id is checked against a strict
  pattern (letters, digits, ``_.:-``; never ``.``/``..``, never ``/``) and
  the resolved path must stay under the tier root, so a name cannot escape
  through ``..``, ``/`` or a symlink planted in the tree.
- **Capacity in bytes.**  An HPS allocation of ``n`` bytes is granted only if
  it fits; otherwise it *waits* (FIFO, granted when a job frees space) or is
  *refused* (``on_full="refuse"``).  The used bytes never exceed the capacity.
  When the platform describes HPS disks, the allocation is placed on them by
  the shared :class:`~iolab.middleware.policies.placement.StorageAllocator`
  (strategy, split), and the disk ids go to the allocation log; else the HPS
  is one pool (disk ``"hps"``).
- **Freeing.**  ``free(job)`` removes the job's directory and returns its
  bytes, whether the job ended or died; waiting allocations that now fit are
  granted in order.
- **Pacing.**  One token bucket (:class:`iolab.middleware.bucket.TokenBucket`) per
  link, ``lps``, ``hps`` and ``stage``: every writer or copier books its
  chunks in its link's bucket, so the streams of one link share its rate
  (chunk by chunk, in booking order: a fair share).  With a tier's interference
  law (``laws``) the ``k`` jobs writing on it at once get ``rate x f(k)`` in
  total (a booking names its job: the stream).
- **Hooks.**  ``suspend(job)``/``resume(job)`` only record, for the coming
  storage load controller (dheenadayalan2017).
- **Quota on disk.**  A job's HPS directory cannot grow past its allocation:
  every writer (the app's checkpoint files, the stage-in copies) *reserves*
  the bytes of a file before writing it (``reserve``; ``settle`` once the file
  is in place or abandoned).  A reservation is granted only if the bytes
  really in the directory (apparent size of its regular files, those being
  written under a reservation left out) plus the open reservations plus the
  new bytes stay within the allocation; otherwise :class:`QuotaExceeded`
  names the job, the bytes and the allocation, and the refusal is logged
  (``quota``).  ``room(job)`` says how many bytes are still free.
- **Measured bytes.**  ``sample(now)`` walks every HPS job directory and the
  whole HPS root and records the bytes really there, apparent size and
  ``st_blocks * 512`` (``usage`` rows: job, time, allocated, apparent,
  blocks; job ``""`` is the whole tier against its capacity); ``free``
  samples the job's directory once more before removing it.

Pure: no Ray, no clock (pass ``now``); the only side effects are on the
directories it owns.  :func:`copy_paced` does the staging copies.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import stat
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from iolab.middleware.bucket import TokenBucket
from iolab.middleware.policies.placement import StorageAllocator

LPS, HPS, STAGE = "lps", "hps", "stage"
TIERS = (LPS, HPS)
LINKS = (LPS, HPS, STAGE)
POOL = "hps"  # disk id of the single-pool HPS
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")
# A job alone on its tier may write up to LOOKAHEAD wall seconds ahead of the link (TokenBucket's lead:
# its own costs between chunks and at a phase's end overlap the bytes the link carries); a job stops
# counting in its tier's law STREAM_GRACE after its last bytes were carried
LOOKAHEAD = 0.05
STREAM_GRACE = 0.05
MAX_BACKDATE = 0.5  # seconds a booking may count from before its call reached the storage manager


def booking_time(now: float, asked: float | None) -> float:
    """When a writer's booking counts from: ``asked``, the instant the writer asked (its clock), not
    ``now``, when the call reached the manager, so the call's latency does not idle the link; at most
    ``MAX_BACKDATE`` before ``now`` (clocks of two hosts, a call stuck in a queue), never after it."""
    if asked is None:
        return now
    return min(now, max(float(asked), now - MAX_BACKDATE))


__all__ = ["HPS", "LINKS", "LPS", "STAGE", "TIERS", "Allocation", "NameRefused", "QuotaExceeded", "StorageState",
           "check_job_name", "copy_paced", "disk_usage"]


class NameRefused(ValueError):
    """A job name that could leave its tier directory (or is not a plain name)."""


class QuotaExceeded(RuntimeError):
    """A write that would make a job's HPS directory pass its allocation."""


def disk_usage(path: str | os.PathLike, exclude: Iterable[str] = ()) -> tuple[int, int]:
    """``(apparent, blocks)``: bytes of the regular files under ``path`` (``st_size``) and the
    bytes they really occupy (``st_blocks * 512``); symlinks are not followed, files or
    folders in ``exclude`` (absolute paths) are left out, a missing ``path`` is ``(0, 0)``."""
    skip = {os.path.abspath(e) for e in exclude}
    apparent = blocks = 0
    stack = [os.fspath(path)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for e in entries:
                if e.path in skip:
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed while we walk
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(e.path)
                elif stat.S_ISREG(st.st_mode):
                    apparent += st.st_size
                    blocks += st.st_blocks * 512
    return apparent, blocks


def check_job_name(job: object) -> str:
    if not isinstance(job, str) or not JOB_NAME.match(job) or job in (".", ".."):
        raise NameRefused(f"job name {job!r} refused: letters, digits and _ . : - only, "
                          "not starting with a dot or dash, at most 128 characters")
    return job


@dataclass(frozen=True)
class Allocation:
    """What ``allocate`` answers: ``status`` allocated | waiting | refused | failed."""

    job: str
    status: str
    nbytes: int
    parts: tuple[tuple[str, int], ...] = ()
    reason: str = ""


class StorageState:
    """The tiers of one run.  ``rates``: real bytes per second of each link (None: no cap); ``laws``:
    each link's interference law (:mod:`iolab.middleware.policies.interference`; absent: none)."""

    def __init__(self, lps_root: str | os.PathLike, hps_root: str | os.PathLike, hps_capacity: int, *,
                 disks: Sequence[Any] | None = None, strategy: str = "best-bandwidth",
                 split_threshold: int | None = None, rng: int = 0, on_full: str = "wait",
                 rates: dict[str, float | None] | None = None, laws: dict[str, Any] | None = None):
        if on_full not in ("wait", "refuse"):
            raise ValueError(f"on_full must be 'wait' or 'refuse', got {on_full!r}")
        self.roots = {LPS: _root(lps_root), HPS: _root(hps_root)}
        if self.roots[LPS] == self.roots[HPS]:
            raise ValueError("LPS and HPS need distinct directories")
        self.on_full = on_full
        self.allocator = None
        if disks:
            self.allocator = StorageAllocator(disks, strategy, split_threshold=split_threshold, rng=rng)
            cap = self.allocator.state.capacity
            if hps_capacity and abs(int(hps_capacity) - cap) > len(disks):
                raise ValueError(f"hps_capacity {hps_capacity} B differs from the disks' {cap} B")
            hps_capacity = cap
        self.capacity = int(hps_capacity)
        if self.capacity <= 0:
            raise ValueError(f"HPS capacity must be > 0 bytes, got {hps_capacity}")
        rates = rates or {}
        laws = laws or {}
        unknown = set(laws) - set(LINKS)
        if unknown:
            raise ValueError(f"laws for unknown links {sorted(unknown)}; known: {', '.join(LINKS)}")
        self.buckets = {link: TokenBucket(rates.get(link), laws.get(link), STREAM_GRACE) for link in LINKS}
        self.used = 0
        self.live: dict[str, Allocation] = {}
        self.waiting: OrderedDict[str, tuple] = OrderedDict()  # job -> (bytes, parts or None), FIFO
        self.dirs: dict[str, tuple[str, Path]] = {}  # job -> (tier, directory)
        self.log: list[list] = []  # job, disk, bytes, alloc, free, status
        self._open_rows: dict[str, list[int]] = {}
        self.actions: list[list] = []  # job, suspend, resume
        self.suspended: set[str] = set()
        self.staged: list[dict] = []
        self.peak = 0
        self.reservations: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {}  # job -> key -> (bytes, paths)
        self.quota_log: list[list] = []  # job, time, requested, in use, allocation, reason
        self.usage: list[list] = []  # job ("" = the whole HPS), time, allocated, apparent, blocks

    # -- directories -----------------------------------------------------------------------
    def job_dir(self, tier: str, job: str) -> Path:
        """Where ``job``'s directory on ``tier`` is (checked, not created)."""
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}; known: {', '.join(TIERS)}")
        check_job_name(job)
        return self.inside(tier, self.roots[tier] / "jobs" / job)

    def inside(self, tier: str, path: str | os.PathLike) -> Path:
        """``path`` resolved, or ``NameRefused`` if it leaves ``tier``'s root (``..``, symlinks)."""
        root = self.roots[tier]
        p = Path(os.path.abspath(path))
        real = Path(os.path.realpath(p))
        if real != p or not str(real).startswith(str(root) + os.sep):
            raise NameRefused(f"{path} leaves the {tier} root {root} (or goes through a symlink)")
        return p

    def open_dir(self, tier: str, job: str) -> Path:
        """Create ``job``'s directory on ``tier`` (mode 0700); an HPS one needs a live allocation."""
        d = self.job_dir(tier, job)
        if tier == HPS and job not in self.live:
            raise RuntimeError(f"job {job!r} has no HPS allocation")
        held = self.dirs.get(job)
        if held is not None and held[0] != tier:
            raise RuntimeError(f"job {job!r} already has a directory on {held[0]}")
        (self.roots[tier] / "jobs").mkdir(mode=0o700, exist_ok=True)
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                raise NameRefused(f"{d} exists and is not a directory") from None
        os.chmod(d, 0o700)  # the umask may have cleared bits; never wider than 0700
        self.dirs[job] = (tier, d)
        return d

    # -- HPS capacity ------------------------------------------------------------------------
    @property
    def free_bytes(self) -> int:
        return self.capacity - self.used

    def allocate(self, job: str, nbytes: int, now: float, parts: Sequence[tuple[str, int]] | None = None) -> Allocation:
        """Ask for ``nbytes`` of HPS: allocated now, waiting (granted by a later ``free``), or refused.

        ``parts``: the ``(disk id, bytes)`` the caller placed them on (the batch kernel, which
        runs the spec's placement once for both runtimes); they must sum to ``nbytes``.
        Without ``parts`` this state's own allocator places them (strategy, split)."""
        check_job_name(job)
        nbytes = int(nbytes)
        if parts is not None:
            parts = tuple((str(d), int(b)) for d, b in parts)
            if sum(b for _, b in parts) != nbytes:
                raise ValueError(f"job {job!r}: parts sum to {sum(b for _, b in parts)} B, not {nbytes} B")
            if self.allocator is None and any(d != POOL for d, _ in parts):
                raise ValueError(f"job {job!r}: parts on disks, but this HPS is one pool")
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        if job in self.live or job in self.waiting:
            raise RuntimeError(f"job {job!r} already holds or waits for an HPS allocation")
        if nbytes > self.capacity:
            return self._refuse(job, nbytes, now, f"{nbytes} B exceeds the HPS capacity {self.capacity} B")
        if not self.waiting:  # FIFO: nobody jumps the queue
            a = self._try(job, nbytes, now, parts)
            if a is not None:
                return a
        if self.on_full == "refuse":
            return self._refuse(job, nbytes, now, f"{nbytes} B do not fit ({self.free_bytes} B free)")
        self.waiting[job] = (nbytes, parts)
        return Allocation(job, "waiting", nbytes, reason=f"{self.free_bytes} B free")

    def _try(self, job: str, nbytes: int, now: float, placed: tuple | None = None) -> Allocation | None:
        if nbytes > self.free_bytes:
            return None
        if self.allocator is None or nbytes == 0:
            parts = ((POOL, nbytes),)
        else:
            out = (self.allocator.request(job, nbytes, now) if placed is None
                   else self.allocator.commit(job, placed, now))
            if out.status != "allocated":
                return None  # placement found no room on the disks: wait or refuse like a full tier
            parts = out.parts
        self.used += nbytes
        self.peak = max(self.peak, self.used)
        assert self.used <= self.capacity, "HPS overcommitted"
        a = Allocation(job, "allocated", nbytes, tuple(parts))
        self.live[job] = a
        self._open_rows[job] = []
        for disk, b in parts:
            self._open_rows[job].append(len(self.log))
            self.log.append([job, disk, int(b), now, math.nan, "allocated"])
        return a

    def _refuse(self, job: str, nbytes: int, now: float, reason: str) -> Allocation:
        self.log.append([job, "", nbytes, now, math.nan, "refused"])
        return Allocation(job, "refused", nbytes, reason=reason)

    def cancel(self, job: str) -> bool:
        """Withdraw a waiting request; True if there was one."""
        return self.waiting.pop(job, None) is not None

    def free(self, job: str, now: float) -> tuple[int, list[Allocation]]:
        """The job ended or died: remove its directory, return its HPS bytes.

        Returns the bytes returned and the waiting allocations granted now.
        Freeing a job that holds nothing is a no-op (a crash may free twice).
        """
        check_job_name(job)
        self.cancel(job)
        held = self.dirs.pop(job, None)
        if held is not None:
            if held[0] == HPS and job in self.live:  # the job's last measure, at its end
                self.usage.append([job, now, self.live[job].nbytes, *disk_usage(held[1])])
            shutil.rmtree(held[1], ignore_errors=True)
        self.reservations.pop(job, None)
        a = self.live.pop(job, None)
        if a is None:
            return 0, []
        self.used -= a.nbytes
        for i in self._open_rows.pop(job, []):
            self.log[i][4] = now
        if self.allocator is not None and job in self.allocator.state.live:
            self.allocator.release(job, now)
        self.suspended.discard(job)
        return a.nbytes, self._grant_waiting(now)

    def _grant_waiting(self, now: float) -> list[Allocation]:
        granted = []
        while self.waiting:
            job, (nbytes, placed) = next(iter(self.waiting.items()))
            a = self._try(job, nbytes, now, placed)
            if a is None:
                break
            del self.waiting[job]
            granted.append(a)
        return granted

    # -- quota on disk ----------------------------------------------------------------------------
    def in_use(self, job: str) -> int:
        """Bytes ``job`` holds in its HPS directory: on disk (files under reservation left
        out) plus its open reservations."""
        held = self.dirs.get(job)
        if job not in self.live or held is None or held[0] != HPS:
            raise RuntimeError(f"job {job!r} has no HPS directory with an allocation")
        open_ = self.reservations.get(job, {})
        skip = [p for _, paths in open_.values() for p in paths]
        return disk_usage(held[1], skip)[0] + sum(b for b, _ in open_.values())

    def room(self, job: str) -> int:
        """Bytes ``job`` may still write into its HPS directory."""
        return self.live[check_job_name(job)].nbytes - self.in_use(job) if job in self.live else 0

    def reserve(self, job: str, key: str, nbytes: int, paths: Sequence[str], now: float) -> int:
        """Book ``nbytes`` that ``job`` is about to write at ``paths`` (the file and its temporary
        name, or a folder) inside its HPS directory; returns the bytes left.  Raises
        :class:`QuotaExceeded` (and logs it) if they would pass the job's allocation."""
        check_job_name(job)
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        held = self.dirs.get(job)
        paths = tuple(str(self.inside(HPS, p)) for p in paths)
        if held is not None and any(not (p + os.sep).startswith(str(held[1]) + os.sep) for p in paths):
            raise NameRefused(f"job {job!r} reserves outside its directory {held[1]}: {', '.join(paths)}")
        self.reservations.setdefault(job, {}).pop(key, None)
        used = self.in_use(job)
        quota = self.live[job].nbytes
        if used + nbytes > quota:
            reason = (f"quota exceeded: job {job!r} would write {nbytes} B into its HPS directory holding "
                      f"{used} B, past its allocation of {quota} B ({key})")
            self.quota_log.append([job, now, nbytes, used, quota, reason])
            raise QuotaExceeded(reason)
        self.reservations[job][key] = (nbytes, paths)
        return quota - used - nbytes

    def settle(self, job: str, key: str) -> None:
        """The write booked under ``key`` is in place (now counted on disk) or abandoned."""
        self.reservations.get(job, {}).pop(key, None)

    def sample(self, now: float) -> list[list]:
        """Measure every HPS job directory and the whole HPS root; rows appended to ``usage``."""
        rows = [[job, now, self.live[job].nbytes, *disk_usage(d)]
                for job, (tier, d) in sorted(self.dirs.items()) if tier == HPS and job in self.live]
        rows.append(["", now, self.capacity, *disk_usage(self.roots[HPS])])
        self.usage.extend(rows)
        return rows

    # -- pacing --------------------------------------------------------------------------------
    def acquire(self, link: str, nbytes: int, now: float, stream: str | None = None) -> float:
        """Book ``nbytes`` on ``link``; seconds to wait before moving them."""
        return self.book(link, nbytes, now, stream)[1] - now

    def book(self, link: str, nbytes: int, now: float, stream: str | None = None,
             lead: float = 0.0) -> tuple[float, float]:
        """Book ``nbytes`` of ``stream`` (a job) on ``link``: the interval that carries them
        (:meth:`TokenBucket.book`; a job alone on its link may move them ``lead`` seconds early)."""
        if link not in self.buckets:
            raise ValueError(f"unknown link {link!r}; known: {', '.join(LINKS)}")
        return self.buckets[link].book(int(nbytes), now, stream, lead)

    def counters(self, now: float) -> dict[str, dict]:
        """Per link: ``bytes`` and ``bookings`` (operations) booked since the start (real bytes; the
        jobs' paced I/O, so with ``bandwidth_cap`` on), and ``queued``, the seconds of booked transfers
        the link has not served at ``now`` (the grants waiting for it). The load controller samples
        them: its byte and operation rates come from them where a volume has no block device to
        read (tmpfs, overlay), its ``queued`` always; ``streams``, the jobs transferring on the link at
        ``now`` (the ``k`` of its interference law), a tier probe's."""
        return {link: {"bytes": b.booked, "bookings": b.bookings, "queued": b.backlog(now),
                       "streams": b.active(now)}
                for link, b in self.buckets.items()}

    # -- load-controller hooks (record only) ---------------------------------------------------
    def suspend(self, job: str, now: float) -> None:
        check_job_name(job)
        if job in self.suspended:
            raise RuntimeError(f"job {job!r} is already suspended")
        self.suspended.add(job)
        self.actions.append([job, now, math.nan])

    def resume(self, job: str, now: float) -> None:
        if job not in self.suspended:
            raise RuntimeError(f"job {job!r} is not suspended")
        self.suspended.discard(job)
        for row in reversed(self.actions):
            if row[0] == job and math.isnan(row[2]):
                row[2] = now
                break

    # -- inspection ----------------------------------------------------------------------------
    def status(self) -> dict:
        return {"capacity": self.capacity, "used": self.used, "free": self.free_bytes, "peak": self.peak,
                "live": sorted(self.live), "waiting": list(self.waiting), "dirs": sorted(self.dirs),
                "suspended": sorted(self.suspended),
                "booked": {k: b.booked for k, b in self.buckets.items()}}

    def records(self) -> dict:
        return {"allocations": [list(r) for r in self.log], "actions": [list(r) for r in self.actions],
                "staged": [dict(s) for s in self.staged], "quota": [list(r) for r in self.quota_log],
                "usage": [list(r) for r in self.usage]}


def _root(path: str | os.PathLike) -> Path:
    p = Path(os.path.realpath(path))
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def copy_paced(sources: Iterable[str | os.PathLike], dest_dir: str | os.PathLike,
               pace: Callable[[int], float], chunk: int = 256 * 1024) -> tuple[int, list[str]]:
    """Copy files into ``dest_dir`` (created 0700), ``chunk`` bytes at a time.

    Before each chunk ``pace(n)`` books it and answers how long to wait (the
    link's token bucket).  Returns the bytes copied (the sum of the copies'
    sizes on disk) and the new paths.  A file is written under a hidden name
    (mode 0600: tier data is the job's only) and renamed when complete.
    """
    if chunk <= 0:
        raise ValueError("chunk must be > 0")
    dest = Path(dest_dir)
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    total, out = 0, []
    for src in sources:
        src = Path(src)
        target = dest / src.name
        tmp = dest / f".{src.name}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an older temporary file keeps its mode: set it
        with open(src, "rb") as fi, open(fd, "wb") as fo:
            while True:
                block = fi.read(chunk)
                if not block:
                    break
                wait = pace(len(block))
                if wait > 0:
                    time.sleep(wait)
                fo.write(block)
        os.replace(tmp, target)
        total += target.stat().st_size
        out.append(str(target))
    return total, out
