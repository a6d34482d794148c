"""Everything that can be checked before a real run starts a single process.

:func:`check_runnable` raises :class:`~iolab.errors.SpecError` for a spec the
emulator cannot run as written (too many ranks, I/O phases smaller than a
checkpoint of the grid, a read before any write) and
:class:`~iolab.errors.RunError` for the environment (no ``mpiexec``, a work
directory that cannot be created or written).  Limits:

- all apps together run at most ``emulator.max_ranks`` ranks (default 16):
  every app is launched before the clock starts;
- every rank's share of the smallest I/O phase holds at least its block of the
  grid (``grid**2 * 8 / ranks`` bytes plus HDF5 metadata), otherwise the app
  would write more than the spec says and the phase would last too long.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from iolab.errors import RunError, SpecError
from iolab.specs.io import IOExperiment

from iolab.emulator import launchers

H5_OVERHEAD = 16 * 1024  # generous bound on one rank file's HDF5 metadata


def check_runnable(spec: IOExperiment, work_dir: Path, source: str = "<spec>") -> str:
    """Raise if the run cannot start; returns the ``mpiexec`` to use."""
    s = spec.emulator
    problems: list[tuple[str, str]] = []
    ranks = {a.id: s.ranks_for(a.nodes) for a in spec.apps}
    total = sum(ranks.values())
    if total > s.max_ranks:
        problems.append(("emulator.max_ranks",
                         f"the apps need {total} MPI ranks together ({', '.join(f'{k}: {v}' for k, v in ranks.items())}) "
                         f"but the limit is {s.max_ranks}; lower emulator.ranks_per_app or raise max_ranks "
                         f"(this machine has {os.cpu_count()} CPUs)"))
    for i, a in enumerate(spec.apps):
        r = ranks[a.id]
        if r > s.grid:
            problems.append((f"apps[{i}]", f"app {a.id!r} has {r} ranks but the grid has only {s.grid} rows"))
        phases = a.phase_list()
        io = [x for k, x in phases if k != "compute" and x > 0]
        if io:
            need = s.grid * s.grid * 8 / r + H5_OVERHEAD
            smallest = min(io) * s.unit_bytes / r
            if smallest < need:
                problems.append((f"apps[{i}]",
                                 f"app {a.id!r}: its smallest I/O phase is {smallest:.0f} bytes per rank "
                                 f"({min(io):g} units x {s.unit_bytes} B / {r} ranks) but a checkpoint of the "
                                 f"{s.grid}x{s.grid} grid needs {need:.0f}; raise emulator.unit_bytes or lower "
                                 "emulator.grid"))
        first_io = next((k for k, x in phases if k != "compute" and x > 0), None)
        if first_io == "read":
            problems.append((f"apps[{i}]", f"app {a.id!r} reads before it ever writes a checkpoint"))
    return conclude(problems, source, work_dir)


def conclude(problems: list[tuple[str, str]], source: str, work_dir: Path) -> str:
    """The end of every run check: the spec's problems (``SpecError``), then the machine's:
    an ``mpiexec`` to run with and a writable work dir (``RunError``).  Returns the mpiexec."""
    if problems:
        raise SpecError(source, problems)


    try:
        mpiexec = launchers.find_mpiexec()
    except launchers.MpiexecNotFound as exc:
        raise RunError(str(exc)) from None
    check_writable(work_dir)
    return mpiexec


def check_writable(work_dir: Path) -> None:
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"work directory {work_dir}: cannot create it ({exc.strerror or exc})") from None
    if not work_dir.is_dir():
        raise RunError(f"work directory {work_dir}: not a directory")
    try:
        with tempfile.NamedTemporaryFile(dir=work_dir, prefix=".iolab-probe-"):
            pass
    except OSError as exc:
        raise RunError(f"work directory {work_dir}: not writable ({exc.strerror or exc})") from None
