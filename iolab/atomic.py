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
writers still running alone.
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "atomic_write_text", "remove_stale_temporaries"]


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
def atomic_path(path: str | Path) -> Iterator[Path]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
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
