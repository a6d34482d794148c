"""Fixtures that start a scheduler process for a test and stop it after (tests/batsim_processes.py)."""

from __future__ import annotations

import sys
import time

import pytest

from batsim_processes import HERE, Scheduler, free_endpoint, pybatsim_command


@pytest.fixture
def start_pybatsim(tmp_path):
    """``start_pybatsim("fillerSched", endpoint=None)``: pybatsim's shipped scheduler, quiet (-v warning)."""
    started = []

    def start(name: str, endpoint: str | None = None, timeout_ms: int = 5000) -> Scheduler:
        endpoint = endpoint or free_endpoint()
        s = Scheduler([pybatsim_command(), name, "-v", "warning", "-s", endpoint, "-t", str(timeout_ms)], endpoint,
                      tmp_path / f"{name}-{len(started)}.log")
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def start_scripted(tmp_path):
    """``start_scripted(mode)``: ``scripted_scheduler.py`` answering as ``mode`` says (a broken scheduler)."""
    started = []

    def start(mode: str) -> Scheduler:
        endpoint = free_endpoint()
        s = Scheduler([sys.executable, str(HERE / "scripted_scheduler.py"), endpoint, mode], endpoint,
                      tmp_path / f"{mode}.log")
        started.append(s)
        time.sleep(0.2)  # (ZeroMQ reconnects by itself: this only spares a retry)
        return s

    yield start
    for s in started:
        s.stop()
