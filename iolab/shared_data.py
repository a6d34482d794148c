"""Where the real input data lives: KTH-SP2 and SDSC-BLUE in SWF, the Theta week (``shared/data``).

The data is never copied into the repository or the wheel.  It is looked for, first found wins:

1. ``$IOLAB_SHARED_DATA``;
2. ``../shared/data`` beside a source checkout (the folder holding ``iolab/``);
3. ``shared/data`` in the working directory or one of its parents (an installed iolab run from
   inside, or beside, a checkout).

When none exists, :func:`shared_data_dir` returns the first candidate, so an error names a place.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "IOLAB_SHARED_DATA"


def candidates() -> list[Path]:
    env = os.environ.get(ENV)
    if env:
        return [Path(env)]
    found = [Path(__file__).resolve().parents[1].parent / "shared" / "data"]
    cwd = Path.cwd()
    found += [d / "shared" / "data" for d in (cwd, *cwd.parents)]
    return found


def shared_data_dir() -> Path:
    """The folder of the shared input data (see the module's doc)."""
    paths = candidates()
    return next((p for p in paths if p.is_dir()), paths[0])


def shared_data_file(name: str) -> Path:
    """``name`` in :func:`shared_data_dir` (it may not exist: the caller says so, naming it)."""
    return shared_data_dir() / name
