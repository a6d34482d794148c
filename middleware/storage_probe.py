"""``iolab storage probe``'s measurement: k concurrent fsync'd writers on a directory, k = 1..K.

For each ``k``: ``k`` writer processes, released together, each write ``size`` bytes to its own
file in the directory (1 MiB blocks, ``O_DIRECT`` when asked and the file system allows it, then
``fsync``); the aggregate throughput is ``k x size / (last end - first start)``.  As they are
released, the probe writes a small unit (``unit`` bytes, fsync'd; :func:`benchmark_write`), and
again while they still write, up to ``repeats`` times, and keeps the median: the response time a
loaded volume gives (dheenadayalan2017).  The first unit starts with the writers, so a response is
measured even when they end at once.

A writer that fails (no space left, a directory it cannot write) sends its error and exits; the
probe stops at once (:class:`WriterFailed`), ends the other writers and removes every file it made.
:func:`probe_plan` says, before anything is written, whether the run would fit the free space and
whether it measures the device at all (direct I/O, or buffered sizes past the page cache, on a file
system with a device).

The seam: a :class:`Writers` object runs the k writers and the unit.  :class:`ProcessWriters` is
the real one; a test passes writers throttled by a known law and checks the fit recovers it.
"""

from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import queue
import statistics
import time
from dataclasses import dataclass
from typing import Protocol

from iolab.middleware.volume_probe import benchmark_write

BLOCK = 1 << 20
__all__ = ["ProbeResult", "ProcessWriters", "WriterFailed", "Writers", "direct_supported", "filesystem_of",
           "page_cache_bytes", "probe", "probe_plan"]
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs", "shm", "hugetlbfs"})


class WriterFailed(RuntimeError):
    """A probe writer failed: its error (``OSError`` text), the others ended and the files removed."""


class Writers(Protocol):
    def run(self, k: int) -> tuple[list[tuple[float, float, int]], list[float]]:
        """Run ``k`` writers at once: each one's ``(start, end, bytes)``, and the unit's response times
        measured meanwhile (seconds; may be empty)."""


@dataclass(frozen=True)
class ProbeResult:
    k: int
    aggregate: float  # bytes/s of the k writers together
    response: float  # median seconds of the small fsync'd unit while they wrote (nan: none)
    seconds: float  # wall span of the k writers


def direct_supported(directory: str) -> bool:
    """Whether a file in ``directory`` can be opened with ``O_DIRECT`` and take an aligned write."""
    if not hasattr(os, "O_DIRECT"):
        return False
    path = os.path.join(directory, ".iolab-probe-direct")
    buf = mmap.mmap(-1, 4096)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
        try:
            os.write(fd, buf)
        finally:
            os.close(fd)
        return True
    except OSError:
        return False
    finally:
        buf.close()
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _write(path: str, size: int, direct: bool, go, out) -> None:
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(4096) * (BLOCK // 4096))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0)
    go.wait()
    t0 = time.time()
    try:
        fd = os.open(path, flags, 0o600)
        try:
            left = size
            while left > 0:
                n = os.write(fd, buf if left >= BLOCK or direct else buf[:left])
                left -= n
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # said to the parent, which stops the probe at once
        out.put(("error", f"{exc.strerror or exc} ({os.path.basename(path)})"))
        out.close()
        out.join_thread()  # the message is in the pipe before the process ends
        os._exit(1)
    out.put((t0, time.time(), size - left))


def filesystem_of(directory: str) -> str:
    """The type of the file system holding ``directory`` (``/proc/self/mountinfo``; "" if unknown)."""
    path = os.path.realpath(directory)
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
    except OSError:
        return ""
    return kind


def page_cache_bytes() -> int:
    """Bytes the page cache may hold: ``MemAvailable`` of ``/proc/meminfo`` (0 if unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass(frozen=True)
class ProbePlan:
    needed: int  # bytes on disk at once at the largest k (its k files and the unit)
    free: int  # bytes free to this user in the directory
    filesystem: str
    device: bool  # whether the probe measures the device (else ``why`` says what it measures)
    why: str


def probe_plan(directory: str, size: int, unit: int, k_max: int, direct: bool) -> ProbePlan:
    """What a probe of ``directory`` needs and what it measures, before it writes anything."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    needed = k_max * size + unit
    fs = filesystem_of(directory)
    cache = page_cache_bytes()
    if fs in MEMORY_FILESYSTEMS:
        why = f"{fs} keeps files in memory: the probe measures memory copies, not a storage device"
    elif not direct and needed <= cache:
        why = (f"buffered writes of {needed:,} bytes at most fit in the page cache ({cache:,} bytes available): "
               "the cache may absorb them (fsync reaches the device, or only a host's cache under a virtual "
               "disk); use --direct, or --size above the cache over K")
    else:
        why = ""
    return ProbePlan(needed, free, fs, not why, why)


class ProcessWriters:
    """The real writers: processes writing real files in ``directory`` (removed after each k)."""

    def __init__(self, directory: str, size: int, direct: bool = False, unit: int = 1 << 20, repeats: int = 3):
        self.directory, self.size, self.direct = str(directory), int(size), bool(direct)
        self.unit, self.repeats = int(unit), int(repeats)
        if self.direct:
            self.size = -(-self.size // BLOCK) * BLOCK  # whole aligned blocks

    def run(self, k: int):
        ctx = mp.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        paths = [os.path.join(self.directory, f".iolab-probe-{k}-{i}") for i in range(k)]
        unit_path = os.path.join(self.directory, ".iolab-probe-unit")
        procs = [ctx.Process(target=_write, args=(p, self.size, self.direct, go, out), daemon=True) for p in paths]
        for p in procs:
            p.start()
        time.sleep(0.2)  # every writer waits at the gate
        go.set()
        responses: list[float] = []
        rows: list[tuple[float, float, int]] = []
        try:
            for i in range(self.repeats):  # the first with the writers' start; the others while they write
                if i and not any(p.is_alive() for p in procs):
                    break
                try:
                    responses.append(benchmark_write(self.directory, self.unit, ".iolab-probe-unit"))
                except OSError as exc:
                    raise WriterFailed(f"the probe's unit write failed in {self.directory}: "
                                       f"{exc.strerror or exc}") from None
            while len(rows) < k:
                try:
                    got = out.get(timeout=0.2)
                except queue.Empty:
                    dead = [p for p in procs if not p.is_alive() and p.exitcode]
                    if not dead:
                        continue
                    try:  # its last word, if it said one
                        got = out.get(timeout=0.5)
                    except queue.Empty:  # died without a word (killed): stop now
                        raise WriterFailed(f"a probe writer ended with exit code {dead[0].exitcode} in "
                                           f"{self.directory}") from None
                if got[0] == "error":
                    raise WriterFailed(f"a probe writer failed in {self.directory}: {got[1]}")
                rows.append(got)
            for p in procs:
                p.join()
        finally:
            for p in procs:
                if p.is_alive():
                    p.kill()
            for p in procs:
                p.join(timeout=5)
            for path in paths + [unit_path]:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        return rows, responses


def probe(writers: Writers, max_k: int) -> list[ProbeResult]:
    out = []
    for k in range(1, max_k + 1):
        rows, responses = writers.run(k)
        if len(rows) != k:
            raise RuntimeError(f"{len(rows)} writer results for k = {k}")
        t0, t1 = min(r[0] for r in rows), max(r[1] for r in rows)
        span = max(t1 - t0, 1e-9)
        out.append(ProbeResult(k, sum(r[2] for r in rows) / span,
                               statistics.median(responses) if responses else float("nan"), span))
    return out
