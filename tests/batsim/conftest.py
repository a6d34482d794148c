"""Fixtures that start a scheduler process for a test and stop it after (tests/batsim_processes.py)."""

from __future__ import annotations

import sys

import pytest

from batsim_processes import HERE, Scheduler, free_endpoint, pybatsim_command
from listening import listening_inodes
from polling import wait_until


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
        port = int(endpoint.rsplit(":", 1)[1])  # ZeroMQ would reconnect by itself: this spares a retry
        wait_until(f"the scripted scheduler to listen at {endpoint}",
                   lambda: s.proc.poll() is not None or port in {p for _, p in listening_inodes().values()},
                   timeout=30, detail=s.text)
        return s

    yield start
    for s in started:
        s.stop()
