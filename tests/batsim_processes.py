"""Batsim schedulers as processes of their own for the tests: PyPI's pybatsim 3.2.1 (in its own venv: ``make
pybatsim``) or ``batsim/scripted_scheduler.py``, each listening on a free endpoint."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from shared_data import REPO

HERE = Path(__file__).resolve().parent / "batsim"


def pybatsim_command() -> str:
    """The ``pybatsim`` launcher (``IOLAB_PYBATSIM``, else the one ``make pybatsim`` installs), or skip."""
    path = Path(os.environ.get("IOLAB_PYBATSIM", REPO / ".venv-pybatsim" / "bin" / "pybatsim"))
    if not path.is_file():
        pytest.skip(f"pybatsim is not installed at {path} (make pybatsim, or IOLAB_PYBATSIM=/path/to/pybatsim)")
    return str(path)


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


class Scheduler:
    """A scheduler process listening at ``endpoint``; its output goes to ``log``."""

    def __init__(self, argv: list[str], endpoint: str, log: Path):
        self.endpoint, self.log = endpoint, log
        self.out = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT)

    def wait(self, timeout: float = 30) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.out.close()

    def text(self) -> str:
        self.out.flush()
        return self.log.read_text()
