"""One run per output: an exclusive ``flock`` on a lock file beside each output, holding the PID.

    with hold_outputs([out, work]):
        ...   # the run

The lock file of ``PATH`` is ``PATH.lock`` in the same folder (beside a trace file, a work folder or
a campaign's output folder; not inside it, so deleting the folder does not drop the lock).  A second
run asking for a held output is refused at once (:class:`OutputBusy`, exit 2) with the PID of the run
that holds it.  The kernel drops a ``flock`` when its process dies, however it dies, so a lock file
left by a killed run is taken over; its old PID is then reported (:attr:`Held.taken_over`).

A second hold of a path this process already holds is refused too, unless it asks ``reuse_own=True``:
a study's command holds its output folder from start to end (runs, summary, figures) and the campaign
machinery inside it, which holds the same folder when it runs alone, then runs under the outer hold.
"""

from __future__ import annotations

import fcntl
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from iolab.errors import IolabError


class OutputBusy(IolabError):
    """Another live run holds this output (exit 2)."""


def lock_path(path: str | Path) -> Path:
    p = Path(path).absolute()
    return p.parent / f"{p.name}.lock"


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Held:
    """The locks a run holds; ``taken_over``: (lock file, PID of the dead run that left it)."""

    fds: dict[Path, int] = field(default_factory=dict)
    taken_over: list[tuple[Path, int]] = field(default_factory=list)


def acquire(path: str | Path, what: str = "output") -> tuple[int, int | None]:
    """Lock ``path``'s lock file; return its descriptor and the PID a dead run left in it (or None).
    Raises :class:`OutputBusy` naming the holder's PID when a live run holds it."""
    lp = lock_path(path)
    lp.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(20):  # the file may be unlinked by its holder between our open and our flock: retry
        fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(fd)
            os.close(fd)
            who = f"process {pid}" if pid else "another process"
            raise OutputBusy(f"{path}: {what} in use by another run ({who}, lock {lp}); wait for it to end "
                             "or choose another output") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lp).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        old = _pid_in(fd)
        stale = old if old is not None and old != os.getpid() else None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd, stale
    raise OutputBusy(f"{path}: could not lock {lp} (it keeps being replaced)")


def release(path: str | Path, fd: int) -> None:
    """Remove the lock file (while still holding it, so no one locks a file about to vanish) and unlock."""
    try:
        os.unlink(lock_path(path))
    except FileNotFoundError:
        pass
    os.close(fd)


_HELD_HERE: set[Path] = set()  # the paths this process holds now


@contextmanager
def hold_outputs(paths, what: str = "output", note=None, reuse_own: bool = False) -> Iterator[Held]:
    """Lock every path of ``paths`` (None entries skipped) for the duration of the block.
    ``note(message)`` hears of each stale lock taken over (default: stderr).  ``reuse_own``: a path
    this process already holds is left to its outer hold (neither locked again nor released here)."""
    held = Held()
    try:
        for p in dict.fromkeys(Path(x).absolute() for x in paths if x is not None):
            if reuse_own and p in _HELD_HERE:
                continue
            fd, stale = acquire(p, what)
            held.fds[p] = fd
            _HELD_HERE.add(p)
            if stale is not None:
                held.taken_over.append((lock_path(p), stale))
                msg = (f"{p}: took over the lock of process {stale}, which "
                       + ("no longer holds it" if _alive(stale) else "is gone") + " (its run did not end cleanly)")
                if note is not None:
                    note(msg)
                else:
                    print(f"warning: {msg}", file=sys.stderr, flush=True)
        yield held
    finally:
        for p, fd in held.fds.items():
            _HELD_HERE.discard(p)
            release(p, fd)
