"""The Data Extractor's measurements of a volume (dheenadayalan2017 §4.1), on this machine.

- :func:`benchmark_write`: write the benchmark unit (``p`` bytes) to the volume
  with ``fsync`` and time it: the response time the controller predicts.
- :func:`device_of` / :func:`diskstats`: the block device behind a directory
  (``st_dev`` -> ``/proc/diskstats``) and its counters (sectors written,
  writes completed, in-flight I/O).  tmpfs, overlay and other virtual file
  systems have no such device (major 0): :func:`device_of` says so (``None``)
  and the caller uses what is measurable instead (the storage manager's byte
  counters).
- :func:`open_files`: a process tree's open files under a directory
  (``/proc/PID/fd``: path, size, mtime), §4.1's allFileDetails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["benchmark_write", "device_of", "diskstats", "open_files"]


def benchmark_write(directory: str, nbytes: int, name: str = ".iolab-benchmark") -> float:
    """Seconds to write ``nbytes`` to ``directory`` and fsync them (the file is removed after)."""
    path = os.path.join(directory, name)
    block = b"\0" * min(max(int(nbytes), 1), 1 << 20)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        left = int(nbytes)
        while left > 0:
            left -= os.write(fd, block[:left])
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - t0
    os.unlink(path)
    return elapsed


def device_of(directory: str) -> str | None:
    """The ``/proc/diskstats`` name of the block device holding ``directory``, or None (tmpfs,
    overlay, any file system without a block device here)."""
    dev = os.stat(directory).st_dev
    major, minor = os.major(dev), os.minor(dev)
    if major == 0:
        return None
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) >= 14 and int(f[0]) == major and int(f[1]) == minor:
            return f[2]
    return None


def diskstats(device: str) -> dict[str, int] | None:
    """Counters of ``device``: reads/writes completed, sectors read/written, in-flight I/O."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) >= 14 and f[2] == device:
            return {"reads": int(f[3]), "sectors_read": int(f[5]), "writes": int(f[7]),
                    "sectors_written": int(f[9]), "in_flight": int(f[11])}
    return None


def open_files(pids: list[int], directory: str) -> list[tuple[str, int, float]]:
    """(path, size, mtime) of every regular file the processes ``pids`` hold open under ``directory``."""
    root = os.path.realpath(directory) + os.sep
    seen: dict[str, tuple[str, int, float]] = {}
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
                if not target.startswith(root) or target in seen:
                    continue
                st = os.stat(target)
            except OSError:
                continue
            seen[target] = (target, st.st_size, st.st_mtime)
    return sorted(seen.values())
