"""Shared test helpers: where the real input data lives, and small spec builders."""

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


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True, scope="module")
def _no_ray_leaks_between_modules():
    """A module that leaves Ray initialised in this process would break the next one that
    starts its own: shut it down after every module, and say so."""
    yield
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
        import warnings

        warnings.warn("a test module left Ray initialised; shut it down", stacklevel=1)
