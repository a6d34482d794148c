"""Real suspension of a running job: SIGSTOP/SIGCONT of its whole process group.

dheenadayalan2017 §3 suspends a job through the meta-scheduler (LSF's
USUSP: the processes stop, the slot is kept).  Locally a batch job is one
``mpiexec`` started by :func:`iolab.emulator.shell.spawn` in its own session.
Its process group is *not* the whole job: MPICH's hydra proxy and every rank
call ``setsid`` (measured here: ``mpiexec`` pgid P, ``hydra_pmi_proxy`` and
each rank their own session), so ``killpg(P, SIGSTOP)`` would stop
``mpiexec`` alone while the ranks go on.  :class:`Suspender` therefore stops
the job's *process tree* (``mpiexec`` and its descendants, from ``/proc``'s
parent links), each member's group too, and continues the same set: that is
:class:`TreeLever`.  Under Slurm a batch job is an ``srun`` step whose ranks run
under ``slurmstepd``, not under the ``srun`` process, so the lever is a signal to the
step (:class:`iolab.emulator.slurm_control.StepLever`: ``scancel --signal=STOP/CONT
JOB.STEP``, docs/cluster.md); :class:`Suspender` takes either.

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
import time
from pathlib import Path
from typing import Callable, Protocol

__all__ = ["Lever", "Suspender", "TreeLever", "group_members", "process_state", "process_tree", "signal_tree"]

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


_HALTED = frozenset({"T", "t", "Z", "X", ""})  # stopped, traced, zombie, dead, gone


def wait_halted(pids: list[int], settle: float = 5.0) -> bool:
    """Wait (at most ``settle`` s) until every one of ``pids`` is stopped or gone; whether they are.

    A SIGSTOP takes effect when the process next leaves the kernel: a rank inside ``fsync`` (state
    D) goes on until the call returns, and a Slurm step's tasks are signalled by slurmstepd after
    ``scancel`` has returned.  A suspension is recorded once its processes have really stopped."""
    deadline = time.monotonic() + settle
    while any(process_state(p) not in _HALTED for p in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    return True


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


class Lever(Protocol):
    """How a job's processes are stopped and continued (what :class:`Suspender` pulls).

    ``pid`` is the process the batch loop started for the job (``mpiexec`` or ``srun``)."""

    def stop(self, job: str, pid: int) -> list[int] | None:
        """Stop ``job``; the processes stopped (as far as this machine sees them), None if
        nothing was there to stop."""

    def cont(self, job: str, pid: int, stopped: list[int]) -> bool:
        """Continue what :meth:`stop` stopped; False if nothing was left to continue."""

    def pids(self, job: str, pid: int) -> list[int]:
        """The job's live processes now (for ``/proc/PID/fd``)."""


class TreeLever:
    """Here: SIGSTOP/SIGCONT of the process tree under ``pid`` (``mpiexec``, its proxy, every rank)."""

    def stop(self, job: str, pid: int) -> list[int] | None:
        tree = process_tree(pid)
        if not tree or not _signal_all(tree, signal.SIGSTOP):
            return None
        late = [p for p in process_tree(pid) if p not in tree]  # forked while we stopped the rest
        _signal_all(late, signal.SIGSTOP)
        wait_halted(tree + late)
        return tree + late

    def cont(self, job: str, pid: int, stopped: list[int]) -> bool:
        now = process_tree(pid)
        return _signal_all(list(reversed(stopped)) + [p for p in now if p not in stopped], signal.SIGCONT) > 0

    def pids(self, job: str, pid: int) -> list[int]:
        return process_tree(pid)


class Suspender:
    """Stops and continues jobs through a :class:`Lever` (default: :class:`TreeLever`), and never
    forgets one it stopped.

    ``on_suspend``/``on_resume``: the storage manager's hooks, called with the job id and the wall
    time the suspension began (once its processes have stopped) or ended (as the continue signal goes
    out). The books take these times, not the time a hook's message arrives: a late message would
    shift the recorded suspension away from the real one (a phase would seem to end while stopped)."""

    def __init__(self, on_suspend: Callable[[str, float], None] | None = None,
                 on_resume: Callable[[str, float], None] | None = None, lever: Lever | None = None):
        self.stopped: dict[str, tuple[int, list[int]]] = {}  # job -> (root pid, the processes it stopped)
        self.on_suspend, self.on_resume = on_suspend, on_resume
        self.lever = lever if lever is not None else TreeLever()
        self.log: list[tuple[str, str]] = []  # (suspend|resume, job)

    def suspend(self, job: str, pid: int) -> bool:
        """Stop ``job`` (``pid``: the process the loop started for it); False if it is gone."""
        if job in self.stopped:
            raise RuntimeError(f"job {job!r} is already suspended")
        stopped = self.lever.stop(job, pid)
        if stopped is None:
            return False
        at = time.time()  # the lever returns once the processes it sees have stopped
        self.stopped[job] = (pid, stopped)
        self.log.append(("suspend", job))
        if self.on_suspend is not None:
            self.on_suspend(job, at)
        return True

    def resume(self, job: str) -> bool:
        """Continue ``job`` (what was stopped and anything started since); False if all gone."""
        pid, stopped = self.stopped.pop(job)
        at = time.time()  # stopped until the continue signal goes out
        try:
            alive = self.lever.cont(job, pid, stopped)
        finally:  # even if the lever failed: the job is no longer ours to continue, the books say so
            self.log.append(("resume", job))
            if self.on_resume is not None:
                try:
                    self.on_resume(job, at)
                except Exception:  # noqa: BLE001 - the signal went; the books must not stop the rest
                    pass
        return alive

    def pids(self, job: str, pid: int) -> list[int]:
        """``job``'s processes: those stopped while it is suspended, else what the lever sees now."""
        return self.stopped[job][1] if job in self.stopped else self.lever.pids(job, pid)

    def forget(self, job: str) -> None:
        """``job`` ended (killed) while stopped: nothing left to continue."""
        self.stopped.pop(job, None)

    def release_all(self) -> list[str]:
        """Resume every job this suspender stopped; returns their jobs."""
        jobs = list(self.stopped)
        for job in jobs:
            try:
                self.resume(job)
            except Exception:  # noqa: BLE001 - one job's failed resume must not leave the others stopped
                pass
        return jobs

    def __enter__(self) -> "Suspender":
        return self

    def __exit__(self, *exc) -> None:
        self.release_all()
