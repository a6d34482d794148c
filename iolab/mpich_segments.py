"""MPICH's shared-memory segments, ``/dev/shm/mpich_shm_*``, which it unlinks only in ``MPI_Finalize``.

MPICH 4 maps one segment per job and node (its ranks on the node share it) and removes its name when the
job finalizes.  A rank that aborts, or is killed, never gets there: the segment stays, a megabyte or more
of the node's memory until reboot.  The file a process maps is read from ``/proc/PID/maps`` (Linux; elsewhere
nothing is found): :func:`mapped` for a run's ranks (:mod:`iolab.emulator.run_residue`), :func:`unlink_mapped`
for a rank about to abort its job (the job's other ranks keep their mappings; the name only goes).
"""

from __future__ import annotations

import os

SHM_PREFIX = "/dev/shm/mpich_shm_"


def mapped(pid: int | str = "self") -> set[str]:
    """The MPICH segments process ``pid`` maps (their paths); empty if it is gone or there is no ``/proc``."""
    found: set[str] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                i = line.find(SHM_PREFIX)
                if i >= 0:
                    found.add(line[i:].split()[0])
    except OSError:
        pass
    return found


def unlink_mapped() -> list[str]:
    """Unlink the MPICH segments this process maps (its node's segment of its job): the last thing a rank
    does before ``MPI_Abort``.  Returns those removed."""
    gone = []
    for path in sorted(mapped()):
        try:
            os.unlink(path)
            gone.append(path)
        except OSError:
            pass
    return gone
