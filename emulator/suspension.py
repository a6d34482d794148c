"""Real suspension of a running job: SIGSTOP/SIGCONT of its whole process group.

dheenadayalan2017 §3 suspends a job through the meta-scheduler (LSF's
USUSP: the processes stop, the slot is kept).  Locally a batch job is one
``mpiexec`` started by :func:`iolab.emulator.shell.spawn` in its own session.
Its process group is *not* the whole job: MPICH's hydra proxy and every rank
call ``setsid`` (measured here: ``mpiexec`` pgid P, ``hydra_pmi_proxy`` and
each rank their own session), so ``killpg(P, SIGSTOP)`` would stop
``mpiexec`` alone while the ranks go on.  :class:`Suspender` therefore stops
the job's *process tree* (``mpiexec`` and its descendants, from ``/proc``'s
parent links), each member's group too, and continues the same set.  Under
Slurm the same lever is ``scontrol suspend``/``resume``
(:func:`iolab.emulator.launchers.scontrol_command`, docs/slurm.md).

:class:`Suspender` is the effector the batch loop uses for the controller's
actions.  It keeps a ledger of the groups it stopped and resumes every one of
them in :meth:`Suspender.release_all`, which runs when the controller stops,
when its actor dies, and (as a context manager) on any exception, Ctrl-C
included: no job is ever left stopped.  The storage manager's hooks
(``suspend``/``resume``) are called so its books show the suspension; an HPS
allocation has no lease, so it survives a stop of any length.

:func:`group_members` and :func:`process_state` read ``/proc`` so tests and
the monitor can check that every member is really stopped (state ``T``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Callable

__all__ = ["Suspender", "group_members", "process_state", "process_tree", "signal_tree"]

PROC = Path("/proc")


def _stat(pid: int) -> list[str] | None:
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
    return text[text.rindex(")") + 2:].split()


def process_state(pid: int) -> str:
    """The one-letter state of ``pid`` (``R``, ``S``, ``T`` stopped, ``Z`` ...), '' if gone."""
    f = _stat(pid)
    return f[0] if f else ""


def group_members(pgid: int) -> list[int]:
    """Every live process whose process group is ``pgid`` (from ``/proc``)."""
    out = []
    for d in PROC.iterdir():
        if d.name.isdigit():
            f = _stat(int(d.name))
            if f and int(f[2]) == pgid and f[0] != "Z":
                out.append(int(d.name))
    return sorted(out)


def process_tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (by parent links in ``/proc``), parents first."""
    children: dict[int, list[int]] = {}
    for d in PROC.iterdir():
        if d.name.isdigit():
            f = _stat(int(d.name))
            if f and f[0] != "Z":
                children.setdefault(int(f[1]), []).append(int(d.name))
    if not _stat(pid):
        return []
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(sorted(children.get(p, ())))
    return out


def _signal_all(pids: list[int], sig: int) -> int:
    sent = 0
    for p in pids:
        try:
            os.kill(p, sig)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


def signal_tree(pid: int, sig: int) -> bool:
    """Send ``sig`` to ``pid``'s process group and to every process of its tree (MPICH's ranks
    are in sessions of their own); False if nothing was there to signal."""
    tree = process_tree(pid)
    try:
        os.killpg(pid, sig)
        sent = 1
    except (ProcessLookupError, PermissionError):
        sent = 0
    return bool(_signal_all(tree, sig) + sent)


class Suspender:
    """Stops and continues jobs' process groups, and never forgets one it stopped.

    ``on_suspend``/``on_resume``: called with the job id after the signal (the storage
    manager's hooks)."""

    def __init__(self, on_suspend: Callable[[str], None] | None = None,
                 on_resume: Callable[[str], None] | None = None):
        self.stopped: dict[str, tuple[int, list[int]]] = {}  # job -> (root pid, the tree it stopped)
        self.on_suspend, self.on_resume = on_suspend, on_resume
        self.log: list[tuple[str, str]] = []  # (suspend|resume, job)

    def suspend(self, job: str, pid: int) -> bool:
        """SIGSTOP ``job``'s process tree (``pid``: its ``mpiexec``, the root); False if it is gone."""
        if job in self.stopped:
            raise RuntimeError(f"job {job!r} is already suspended")
        tree = process_tree(pid)
        if not tree or not _signal_all(tree, signal.SIGSTOP):
            return False
        late = [p for p in process_tree(pid) if p not in tree]  # forked while we stopped the rest
        _signal_all(late, signal.SIGSTOP)
        self.stopped[job] = (pid, tree + late)
        self.log.append(("suspend", job))
        if self.on_suspend is not None:
            self.on_suspend(job)
        return True

    def resume(self, job: str) -> bool:
        """SIGCONT ``job``'s tree (the processes stopped and any descendant now); False if all gone."""
        pid, tree = self.stopped.pop(job)
        now = process_tree(pid)
        alive = _signal_all(list(reversed(tree)) + [p for p in now if p not in tree], signal.SIGCONT) > 0
        self.log.append(("resume", job))
        if self.on_resume is not None:
            try:
                self.on_resume(job)
            except Exception:  # noqa: BLE001 - the signal went; the books must not stop the rest
                pass
        return alive

    def forget(self, job: str) -> None:
        """``job`` ended (killed) while stopped: nothing left to continue."""
        self.stopped.pop(job, None)

    def release_all(self) -> list[str]:
        """Resume every group this suspender stopped; returns their jobs."""
        jobs = list(self.stopped)
        for job in jobs:
            self.resume(job)
        return jobs

    def __enter__(self) -> "Suspender":
        return self

    def __exit__(self, *exc) -> None:
        self.release_all()
