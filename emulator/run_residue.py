"""What a real run leaves outside its work folder, found while it runs and removed on every exit path.

MPICH's ranks map shared-memory segments ``/dev/shm/mpich_shm_*`` and hydra's proxies hold a topology
file ``/tmp/hydra_hwloc_xmlfile_*``; MPICH unlinks both when a run ends normally, but not when its
processes are killed.  Other runs (other users, other iolab runs) have files of the same names, so
only the files that *this* run's processes map or hold open are recorded (:meth:`Residue.scan`,
from ``/proc``) and removed (:meth:`Residue.remove`).

:func:`descendants` lists every process a run started (Ray's GCS, raylet, agents and workers, the
apps' ``mpiexec``, proxies and ranks) with its start time, so that a supervisor can stop exactly those
after the driver died (:mod:`iolab.emulator.reaper`), never a recycled PID.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from iolab.mpich_segments import SHM_PREFIX, mapped

HWLOC_PREFIX = "/tmp/hydra_hwloc_xmlfile_"


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(ppid, pgid, start time in clock ticks, command name) of a live process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[2]), int(rest[19]), comm


def start_time(pid: int) -> int | None:
    s = _stat(pid)
    return s[2] if s else None


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _tree(root: int) -> list[tuple[int, int, int, str]]:
    """``(pid, start time, ppid, command name)`` of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[int, int, int, str]] = {}
    for pid in _pids():
        s = _stat(pid)
        if s is not None:
            children.setdefault(s[0], []).append(pid)
            info[pid] = s
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append((pid, info[pid][2], info[pid][0], info[pid][3]))
        todo += children.get(pid, [])
    return out


def descendants(root: int) -> list[tuple[int, int]]:
    """``(pid, start time)`` of every live descendant of ``root`` (not ``root`` itself)."""
    return [(p, st) for p, st, _, _ in _tree(root)]


MPI_NAMES = ("mpiexec", "hydra_pmi_proxy", "mpiexec.hydra")


def mpi_processes(root: int) -> list[int]:
    """The descendants of ``root`` that MPICH's files belong to: hydra's ``mpiexec`` and proxies and
    their children (the ranks); Ray's processes (large memory maps) are not read."""
    tree = _tree(root)
    names = {p: c for p, _, _, c in tree}
    return [p for p, _, ppid, c in tree if c.startswith(MPI_NAMES) or names.get(ppid, "").startswith(MPI_NAMES)]


def _files_of(pid: int) -> set[str]:
    found = mapped(pid)
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith((SHM_PREFIX, HWLOC_PREFIX)):
                found.add(target.split(" (deleted)")[0])
    except OSError:
        pass
    return found


@dataclass
class Residue:
    """The run's MPICH and hydra files, as seen on its processes."""

    files: set[str] = field(default_factory=set)

    def scan(self, pids) -> bool:
        """Record the files the processes ``pids`` map or hold open; True if new ones were found."""
        before = len(self.files)
        for pid in pids:
            self.files |= _files_of(pid)
        return len(self.files) > before

    def remove(self) -> list[str]:
        """Unlink every recorded file still there; returns those removed."""
        return remove_files(self.files)


def remove_files(files) -> list[str]:
    gone = []
    for f in sorted(files):
        prefix = next((p for p in (SHM_PREFIX, HWLOC_PREFIX) if f.startswith(p)), None)
        if prefix is None or "/" in f[len(prefix):] or ".." in f:  # only those two kinds of file, by name
            continue
        try:
            os.unlink(f)
            gone.append(f)
        except FileNotFoundError:
            pass
        except OSError:
            pass
    return gone
