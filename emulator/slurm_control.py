"""Suspend and resume Slurm jobs or job steps: the storage load controller's lever.

    suspend("42")      # a whole job:  scontrol suspend 42
    suspend("42.3")    # one step:     scancel --signal=STOP 42.3
    resume("42.3")     #               scancel --signal=CONT 42.3
    step = find_step("42", "iolab-A")  # the step srun started with --job-name=iolab-A
    job_state("42")    # SlurmJobState.SUSPENDED after suspend("42")

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

Command lines come from :mod:`iolab.emulator.launchers`, and run through :mod:`iolab.emulator.shell`;
a refusal raises :class:`SlurmControlError` with Slurm's message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .launchers import scancel_signal_command, scontrol_command
from .shell import execute_wait
from .slurm_state import SlurmJobState, parse_state

__all__ = ["SlurmControlError", "command", "suspend", "resume", "find_step", "job_state"]

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


def _run(action: str, target: str | int, env: Mapping[str, str] | None, timeout: float) -> None:
    cmd = command(action, target)
    rc, out, err = execute_wait(cmd, timeout=timeout, env=env)
    if rc != 0:
        raise SlurmControlError(f"{' '.join(cmd)} failed (exit {rc}): {(err or out).strip()}")
    if not _STEP.match(str(target)):  # a whole job: Slurm says where it is now
        state = job_state(target, env=env, timeout=timeout)
        if not (state.is_paused if action == "suspend" else state.is_active):
            raise SlurmControlError(f"{' '.join(cmd)}: job {target} is {state.value} afterwards")


def suspend(target: str | int, *, env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
    """Stop every process of a job (``"42"``) or of one job step (``"42.3"``)."""
    _run("suspend", target, env, timeout)


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
