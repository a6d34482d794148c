"""``iolab storage probe``'s measurement: k concurrent fsync'd writers on a directory, k = 1..K.

For each ``k``: ``k`` writer processes, released together, each write ``size`` bytes to its own
file in the directory (1 MiB blocks, ``O_DIRECT`` when asked and the file system allows it, then
``fsync``); the aggregate throughput is ``k x size / (last end - first start)``.  While they
write, the probe writes a small unit (``unit`` bytes, fsync'd; :func:`benchmark_write`) a few
times and keeps the median: the response time a loaded volume gives (dheenadayalan2017).

The seam: a :class:`Writers` object runs the k writers and the unit.  :class:`ProcessWriters` is
the real one; a test passes writers throttled by a known law and checks the fit recovers it.
"""

from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import statistics
import time
from dataclasses import dataclass
from typing import Protocol

from iolab.middleware.volume_probe import benchmark_write

BLOCK = 1 << 20
__all__ = ["ProbeResult", "ProcessWriters", "Writers", "direct_supported", "probe"]


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
    fd = os.open(path, flags, 0o600)
    try:
        left = size
        while left > 0:
            n = os.write(fd, buf if left >= BLOCK or direct else buf[:left])
            left -= n
        os.fsync(fd)
    finally:
        os.close(fd)
    out.put((t0, time.time(), size - left))


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
        procs = [ctx.Process(target=_write, args=(p, self.size, self.direct, go, out), daemon=True) for p in paths]
        for p in procs:
            p.start()
        time.sleep(0.2)  # every writer waits at the gate
        go.set()
        responses = []
        try:
            time.sleep(0.05)
            for _ in range(self.repeats):
                if not any(p.is_alive() for p in procs):
                    break
                responses.append(benchmark_write(self.directory, self.unit, ".iolab-probe-unit"))
            rows = [out.get(timeout=3600) for _ in procs]
            for p in procs:
                p.join()
            bad = [p.exitcode for p in procs if p.exitcode]
            if bad:
                raise RuntimeError(f"a probe writer failed (exit code {bad[0]}) in {self.directory}")
        finally:
            for p in procs:
                if p.is_alive():
                    p.kill()
            for path in paths:
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
