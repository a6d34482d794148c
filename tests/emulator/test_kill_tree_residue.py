"""A job stopped with ``kill_tree`` leaves no MPICH segment in ``/dev/shm``, and only its own are removed.

MPICH unlinks ``/dev/shm/mpich_shm_*`` in MPI_Finalize, which a killed rank never reaches: before
``kill_tree`` recorded them, every killed job left its node segment behind (a megabyte or more of memory
until reboot).  The segments are read here from the ranks' own memory maps, independently of
:mod:`iolab.emulator.run_residue`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from iolab.emulator.launchers import find_mpiexec, mpiexec_command
from iolab.emulator.shell import kill_tree, spawn
from listening import process_tree

pytestmark = pytest.mark.mpi

HOLDER = ("import sys, time\n"
          "from mpi4py import MPI\n"
          "MPI.COMM_WORLD.Barrier()\n"  # every rank has mapped the node's segment
          "if MPI.COMM_WORLD.rank == 0:\n"
          "    print('ready', flush=True)\n"
          "time.sleep(600)\n")


def segments_of(root: int) -> set[Path]:
    """The mpich_shm files that the live descendants of ``root`` map (from /proc; hydra's proxies and the
    ranks have process groups of their own)."""
    found = set()
    for pid in process_tree(root):
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        found |= {Path(line.split()[-1]) for line in maps.splitlines() if "/dev/shm/mpich_shm_" in line}
    return found


def start(tmp_path: Path, name: str):
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    log = tmp_path / f"{name}.log"
    proc = spawn(mpiexec_command(2, [sys.executable, str(script)], mpiexec=find_mpiexec()), log_path=log)
    deadline = time.monotonic() + 60
    while "ready" not in (log.read_text() if log.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
        time.sleep(0.05)
    return proc


def test_kill_tree_removes_the_killed_jobs_segments_and_no_other(tmp_path):
    first, second = start(tmp_path, "first"), start(tmp_path, "second")
    try:
        mine, theirs = segments_of(first.pid), segments_of(second.pid)
        assert mine and theirs and not mine & theirs, (mine, theirs)
        assert all(p.exists() for p in mine | theirs)
        assert kill_tree(first, grace=1.0) != 0
        assert not any(p.exists() for p in mine), mine  # gone with the job that was killed
        assert all(p.exists() for p in theirs), theirs  # the job still running keeps its own
        assert second.poll() is None
    finally:
        kill_tree(first, grace=0)
        kill_tree(second, grace=1.0)
    assert not any(p.exists() for p in theirs)
