"""Where the real input data lives (../shared/data beside the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("IOLAB_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(name: str) -> Path:
    """A file of ../shared/data, or skip the test saying where it was looked for."""
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{name} not found in {SHARED_DATA} (set IOLAB_SHARED_DATA to the folder holding it)")
    return path
