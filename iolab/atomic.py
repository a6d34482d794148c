"""Files that are never seen half-written: write a temporary file, then rename it.

    with atomic_path(path) as tmp:     # tmp: a new empty file beside ``path``
        h5py.File(tmp, "w") ...          # write it by any means
    # here ``path`` is the complete new file; on an exception it is untouched
    # and the temporary file is gone

The temporary file lives in the target's folder (so the rename is atomic),
gets the permissions any new file would get under the current umask (not
``mkstemp``'s 0600), and is flushed to disk before the rename.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
