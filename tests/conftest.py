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


_RAY_TIMED_OUT: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A Ray test that ran into pytest-timeout leaves this process's Ray in an unknown state: a
    thread stuck inside Ray may hold its lock, and then later ``ray.get`` calls of the session can
    hang until their own timeouts (a CI run once lost 20 minutes to four such tests, and did not
    finish in its 90). Note it."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("ray") and "Timeout" in str(report.longrepr):
        _RAY_TIMED_OUT.append(item.nodeid)


def pytest_runtest_setup(item):
    """After a Ray test timed out, stop the session at the next Ray test, naming the first one: a
    clear failure now rather than a run that times out with nothing said."""
    if _RAY_TIMED_OUT and item.get_closest_marker("ray"):
        pytest.exit(f"{_RAY_TIMED_OUT[0]} timed out inside Ray; later Ray tests in this process may hang "
                    "on what it left, so the session stops here", returncode=1)
