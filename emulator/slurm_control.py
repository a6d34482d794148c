"""Suspend and resume Slurm jobs or job steps: the storage load controller's lever.

    suspend("42")      # a whole job:  scontrol suspend 42
    suspend("42.3")    # one step:     scancel --signal=STOP 42.3
    resume("42.3")     #               scancel --signal=CONT 42.3
    step = find_step("42", "iolab-A")  # the step srun started with --job-name=iolab-A
    job_state("42")    # SlurmJobState.SUSPENDED after suspend("42")
    step_pids("42.3")  # the pids of its tasks on this host (scontrol listpids, node by node)
    cancel("42.3")     # end the step (scancel 42.3)

Inside one allocation every app is a step (``iolab.emulator.slurm_launch.SrunApps`` names it
``iolab-APP``), and ``scontrol suspend`` takes whole jobs only (Slurm 22.05 answers
"Invalid job id specified" for ``42.3``), so a single app is paused by stopping its
step's tasks with SIGSTOP and continued with SIGCONT; a separate job (one app per
``sbatch``) is suspended with ``scontrol``, which also frees its CPUs for others.
Either way the processes really stop: a compute phase in ``duration`` mode does not
count the stopped time, an I/O phase holds its grant (pair this with
``Arbiter.suspend``/``resume`` so the arbiter knows).

The emulator's srun launcher (:class:`iolab.emulator.slurm_launch.SrunApps`) suspends and
resumes an app through :func:`find_step` and :func:`suspend`/:func:`resume`; a whole job's
state is :func:`job_state` (:mod:`iolab.emulator.slurm_state`), and :func:`suspend` /
:func:`resume` of a whole job check it: Slurm must then report the job paused, or active.

:class:`StepLever` is the batch loop's lever (:class:`iolab.emulator.suspension.Suspender`)
for jobs that run as steps ``iolab-JOB`` of one allocation: the load controller's
suspensions of a batch run under srun go through it.

Command lines come from :mod:`iolab.emulator.launchers`, and run through :mod:`iolab.emulator.shell`;
a refusal raises :class:`SlurmControlError` with Slurm's message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from iolab.emulator.launchers import (expand_hostlist, listpids_command, scancel_signal_command, scancel_step_command,
                        scontrol_command)
from iolab.emulator.shell import execute_wait
from iolab.emulator.slurm_state import SlurmJobState, parse_state
from iolab.emulator.suspension import wait_halted

__all__ = ["SlurmControlError", "StepLever", "cancel", "command", "find_step", "job_state", "resume",
           "step_nodes", "step_pids", "stop_step", "suspend"]

_STEP = re.compile(r"[^.]+\.[^.]+\Z")


class SlurmControlError(RuntimeError):
    """Slurm refused a suspend/resume (unknown job, not running, not allowed...)."""


def command(action: str, target: str | int) -> list[str]:
    """The command line for ``action`` (``suspend``/``resume``) of a job or ``JOB.STEP``."""
    target = str(target)
    if _STEP.match(target):
        if action not in ("suspend", "resume"):
            raise ValueError(f"action must be 'suspend' or 'resume', got {action!r}")
        return scancel_signal_command("STOP" if action == "suspend" else "CONT", target)
    return scontrol_command(action, target)


# Slurm 22.05's answer to ``scancel --signal=SIG JOB.STEP`` when the step runs on only part of the
# job's nodes: exit 225 and this message, although every task of the step got the signal (seen on
# /proc); it exits 0 for a step that does not exist. So for a step the exit status says nothing:
# :func:`_run` takes this refusal as done when Slurm still lists the step.
PARTIAL_STEP = "Invalid job id specified"


def _step_listed(step: str, env: Mapping[str, str] | None, timeout: float) -> bool:
    rc, out, _ = execute_wait(["squeue", "-h", "-s", "-j", step.split(".", 1)[0], "-o", "%i"], timeout=timeout,
                              env=env)
    return rc == 0 and step in out.split()


def _run(action: str, target: str | int, env: Mapping[str, str] | None, timeout: float) -> None:
    cmd = command(action, target)
    rc, out, err = execute_wait(cmd, timeout=timeout, env=env)
    if rc != 0 and not (_STEP.match(str(target)) and PARTIAL_STEP in err + out
                        and _step_listed(str(target), env, timeout)):
        raise SlurmControlError(f"{' '.join(cmd)} failed (exit {rc}): {(err or out).strip()}")
    if not _STEP.match(str(target)):  # a whole job: Slurm says where it is now
        state = job_state(target, env=env, timeout=timeout)
        if not (state.is_paused if action == "suspend" else state.is_active):
            raise SlurmControlError(f"{' '.join(cmd)}: job {target} is {state.value} afterwards")


def suspend(target: str | int, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
    """Stop every process of a job (``"42"``) or of one job step (``"42.3"``)."""
    _run("suspend", target, env, timeout)


def stop_step(step: str, *, env: Mapping[str, str] | None = None, timeout: float = 30.0,
              settle: float = 5.0) -> list[int]:
    """Stop step ``"42.3"`` and return once its tasks that this host sees are stopped (state T)
    or gone, at most ``settle`` seconds later; returns their pids.

    ``scancel --signal=STOP`` returns when slurmctld has taken the signal; slurmstepd delivers
    it after that (:func:`~iolab.emulator.suspension.wait_halted`).  Without the wait a CI run
    saw a job's write phase end after the suspension the batch loop had recorded.  On a real
    cluster the tasks of other nodes are not seen here: for them the stop stays asynchronous
    (docs/cluster.md)."""
    pids = step_pids(step, env=env, timeout=timeout)
    suspend(step, env=env, timeout=timeout)
    wait_halted(pids, settle)
    return pids


def resume(target: str | int, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
    """Continue what :func:`suspend` stopped."""
    _run("resume", target, env, timeout)


def find_step(job_id: str | int, name: str, *, env: Mapping[str, str] | None = None,
              timeout: float = 30.0) -> str | None:
    """The id (``"42.3"``) of the running step of job ``job_id`` named ``name``, or None."""
    rc, out, err = execute_wait(["squeue", "-h", "-s", "-j", str(job_id), "-o", "%i %j"],
                                timeout=timeout, env=env)
    if rc != 0:
        raise SlurmControlError(f"squeue -s -j {job_id} failed (exit {rc}): {err.strip()}")
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip() == name:
            return parts[0]
    return None


def job_state(job_id: str | int, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> SlurmJobState:
    """The state Slurm reports for job ``job_id`` (``scontrol show job -o``)."""
    rc, out, err = execute_wait(["scontrol", "show", "job", "-o", str(job_id)], timeout=timeout, env=env)
    if rc != 0:
        raise SlurmControlError(f"scontrol show job {job_id} failed (exit {rc}): {(err or out).strip()}")
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return parse_state(fields.get("JobState", ""))


def step_nodes(step: str, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> list[str]:
    """The nodes step ``"42.3"`` runs on (``scontrol show step``), [] if Slurm does not know it."""
    rc, out, _ = execute_wait(["scontrol", "show", "step", "-o", str(step)], timeout=timeout, env=env)
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f) if rc == 0 else {}
    nodes = fields.get("NodeList", "")
    return expand_hostlist(nodes) if nodes and nodes != "(null)" else []


def step_pids(step: str, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> list[int]:
    """The process ids of step ``"42.3"``'s tasks that the slurmd on this host know about
    (``scontrol listpids STEP NODE`` for each node of the step). On the local cluster every
    virtual node is this host, so that is every task; on a real cluster only the tasks of the
    node this runs on. [] if the step is gone."""
    pids: list[int] = []
    for node in step_nodes(step, env=env, timeout=timeout):
        rc, out, _ = execute_wait(listpids_command(step, node), timeout=timeout, env=env)
        if rc != 0:
            continue  # not on this host's slurmd, or ended meanwhile
        for line in out.splitlines()[1:]:  # PID JOBID STEPID LOCALID GLOBALID
            first = line.split()[:1]
            if first and first[0].isdigit() and int(first[0]) not in pids:
                pids.append(int(first[0]))
    return pids


def cancel(step: str, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> bool:
    """End step ``"42.3"`` (``scancel``: SIGCONT, SIGTERM, SIGKILL after KillWait); False if
    Slurm refused (a step that has already ended)."""
    rc, _, _ = execute_wait(scancel_step_command(step), timeout=timeout, env=env)
    return rc == 0


class StepLever:
    """The batch loop's lever for jobs that are steps of the allocation ``job_id``: job ``J`` is
    the step named ``iolab-J`` (:mod:`iolab.emulator.batch.launch`); it is stopped and continued
    with :func:`suspend`/:func:`resume` of that step, and its processes are :func:`step_pids`.

    The ``pid`` the :class:`~iolab.emulator.suspension.Suspender` passes (the job's ``srun``) is
    not used: the tasks are children of ``slurmstepd``, not of ``srun``."""

    def __init__(self, job_id: str, env: Mapping[str, str] | None = None):
        self.job_id, self.env = str(job_id), env
        self.steps: dict[str, str] = {}  # batch job -> the step it stopped
        self.found: dict[str, str] = {}  # batch job -> its step, once seen (step ids are never reused in a job)

    def step(self, job: str) -> str | None:
        """Job ``job``'s step id (``squeue`` the first time), None while Slurm lists none."""
        if job not in self.found:
            step = find_step(self.job_id, f"iolab-{job}", env=self.env)
            if step is None:
                return None
            self.found[job] = step
        return self.found[job]

    def stop(self, job: str, pid: int) -> list[int] | None:
        step = self.step(job)
        if step is None:
            return None
        try:
            pids = stop_step(step, env=self.env)
        except SlurmControlError:  # the step ended between the look-up and the signal
            return None
        self.steps[job] = step
        return pids

    def cont(self, job: str, pid: int, stopped: list[int]) -> bool:
        step = self.steps.pop(job, None)
        if step is None:
            return False
        try:
            resume(step, env=self.env)
        except SlurmControlError:
            return False
        return True

    def pids(self, job: str, pid: int) -> list[int]:
        step = self.step(job)
        return step_pids(step, env=self.env) if step else []
