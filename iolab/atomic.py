"""Files that are never seen half-written: write a temporary file, then rename it.

    with atomic_path(path) as tmp:     # tmp: a new empty file beside ``path``
        h5py.File(tmp, "w") ...          # write it by any means
    # here ``path`` is the complete new file; on an exception it is untouched
    # and the temporary file is gone

The temporary file lives in the target's folder (so the rename is atomic),
gets the permissions any new file would get under the current umask (not
``mkstemp``'s 0600), and is flushed to disk before the rename.

Its name is ``.NAME.<pid>-<random>.tmp``: the writer's process id is in it.  A
writer killed mid-write (SIGKILL: no ``except`` runs) leaves its temporary
file behind; the next write of the same target removes every such leftover
whose writer is gone (:func:`remove_stale_temporaries`), and leaves those of
writers still running alone.  A SIGTERM while the temporary file is written (where SIGTERM
still has its default action) raises ``KeyboardInterrupt`` instead of ending the process at
once, so the temporary file is removed on that exit too.

Devices: a target that is a character device or a FIFO (``-o /dev/null``, ``/dev/stdout``) is
written *into*, never replaced: the content is built in a temporary file under ``$TMPDIR``
and then copied into it.  A block device (a disk) is never an output.

:func:`check_output` is the one check every command makes of each output before its work
starts: not a folder (or, for an output folder, not a file), not one of the command's input
files, not a block device or socket, and a folder it can create files in.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from iolab.errors import IolabError

__all__ = ["OutputError", "atomic_path", "atomic_write_text", "check_output", "remove_stale_temporaries"]


class OutputError(IolabError):
    """An output a command cannot or must not write (exit 2), found before its work starts."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary files an interrupted write of ``path`` left beside it; return them.

    Three names are known: ``.NAME.<pid>-<random>.tmp`` (:func:`atomic_path`),
    ``.NAME.tmp<pid>`` (the checkpoint writer, :mod:`iolab.apps.checkpoint`) and
    ``.NAME.<8 random>.tmp`` (:func:`atomic_path` before it named its pid: always
    stale).  A file whose writer process still runs (this one included: another thread may be
    writing it) is kept.
    """
    path = Path(path)
    name = re.escape(path.name)
    pattern = re.compile(rf"\.{name}\.(?:(\d+)-[^/]*\.tmp|tmp(\d+)|[a-z0-9_]{{8}}\.tmp)\Z")
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except FileNotFoundError:
        return removed
    me = os.getpid()
    for e in entries:
        m = pattern.match(e.name)
        if m is None or not e.is_file(follow_symlinks=False):
            continue
        pid = int(m.group(1) or m.group(2) or 0)  # 0: the older name without a pid, always stale
        if pid == me or _alive(pid):
            continue
        try:
            os.unlink(e.path)
            removed.append(Path(e.path))
        except FileNotFoundError:
            pass
    return removed


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within: SIGTERM raises ``KeyboardInterrupt`` where it would end the process at once (its default
    action, in the main thread); a handler someone installed is left alone."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stream_target(path: Path) -> bool:
    """Whether ``path`` (following links) is a character device or a FIFO: written into, not replaced."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    path = Path(path)
    if _stream_target(path):  # a device or FIFO: build the content aside, then write it in
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")
        os.close(fd)
        try:
            with _sigterm_raises():
                yield Path(tmp)
                with open(tmp, "rb") as src, open(path, "wb") as dst:  # O_TRUNC does nothing to a device
                    shutil.copyfileobj(src, dst, 1 << 20)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    with _sigterm_raises():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            yield Path(tmp)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str | Path, inputs: Iterable[str | Path] = (), *, option: str = "output",
                 folder: bool = False, devices: bool = True) -> Path:
    """Refuse, before any work, an output the command cannot or must not write (:class:`OutputError`, exit 2,
    naming ``option`` and the path): an existing folder given as a file (or a file given as a folder), one of
    ``inputs`` (the command's input files: writing would replace what it reads), a block device or a socket,
    or a place where no file can be created (a missing parent under a file, a read-only file system, ``/proc``).
    A character device or FIFO is accepted as a file output, written into (:func:`atomic_path`), unless
    ``devices`` is false (an output with a lock file and a work folder beside it).  Returns the path."""
    path = Path(path)

    def refuse(reason: str):
        raise OutputError(f"{option} {path}: {reason}")

    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a link loop, a name too long, a component that is a file
        refuse(f"not a usable path ({exc.strerror or exc})")
    if st is not None:
        mode = st.st_mode
        if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            refuse("is a block device or a socket; never written as an output")
        if folder and not stat.S_ISDIR(mode):
            refuse("exists and is not a folder")
        if not folder and stat.S_ISDIR(mode):
            refuse("is a folder; name a file")
        if not folder and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            if not devices:
                refuse("is a device or FIFO; this output keeps a lock file and a work folder beside it: name a file")
            return path  # written into, as it is
        for i in inputs:
            if _same_file(path, Path(i)):
                refuse(f"is the input {i}: writing it would replace what the command reads; choose another output")
    # the nearest folder that exists must be one this process can create files in
    where = path if folder and st is not None else path.parent
    while True:
        try:
            wst = where.stat()
            break
        except FileNotFoundError:
            if where.parent == where:
                break
            where = where.parent
        except OSError as exc:
            refuse(f"cannot be created under {where} ({exc.strerror or exc})")
    if not stat.S_ISDIR(wst.st_mode):
        refuse(f"cannot be created: {where} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".iolab-write-check.", dir=where)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        refuse(f"cannot write in {where} ({exc.strerror or exc})")
    return path
