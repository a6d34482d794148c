"""Shared test helpers: where the real input data lives, and small spec builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_data import REPO, SHARED_DATA, shared_file  # noqa: F401  (re-exported for tests)

# Strict mode (iolab.invariants) is on for every run the suite makes, in this process and in
# the processes it starts: a broken invariant fails the test that broke it.
os.environ.setdefault("IOLAB_STRICT", "1")


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
