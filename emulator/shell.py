"""The one seam through which the emulator runs external commands.

Launchers (:mod:`iolab.emulator.launchers`) only *build* argument lists; this module is
the only place that turns them into processes (Parsl's ``execute_wait`` idea).
Keeping every shell-out here means one place to log, time out and clean up, and one
place a test can watch.

Two ways to run something:

* :func:`execute_wait` runs a short command to completion and returns
  ``(returncode, stdout, stderr)`` — for ``sinfo``, ``scontrol``, ``sbatch``...
* :func:`spawn` starts a long-lived child (an MPI app under ``mpiexec``/``srun``,
  a ``ray start --block``) in its *own process group*, so :func:`kill_tree` can
  stop it together with every process it started (ranks, proxies, step daemons'
  clients) with one ``killpg``.

Commands are always argument lists, never shell strings: no quoting bugs and no
injection through job names or paths.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from iolab.emulator.run_residue import Residue, mpi_processes

__all__ = ["CommandTimeout", "execute_wait", "spawn", "kill_tree"]


class CommandTimeout(RuntimeError):
    """A command run by :func:`execute_wait` did not finish within its timeout."""

    def __init__(self, cmd: Sequence[str], timeout: float, stdout: str, stderr: str):
        super().__init__(f"command timed out after {timeout:g}s: {' '.join(cmd)}")
        self.cmd = list(cmd)
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr


def _check_cmd(cmd: Sequence[str]) -> list[str]:
    if isinstance(cmd, (str, bytes)):
        raise TypeError(f"cmd must be a list of arguments, not a string: {cmd!r}")
    argv = [os.fspath(a) for a in cmd]
    if not argv:
        raise ValueError("cmd is empty")
    return argv


def _merged_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The child's environment: ours updated with ``env`` (None keeps ours as is)."""
    if env is None:
        return None
    merged = dict(os.environ)
    merged.update({str(k): str(v) for k, v in env.items()})
    return merged


def execute_wait(
    cmd: Sequence[str],
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> tuple[int, str, str]:
    """Run ``cmd`` to completion and return ``(returncode, stdout, stderr)``.

    ``env`` entries are *added* to the current environment. A non-zero return code
    is returned, not raised: the caller knows which codes are errors (``squeue`` on
    an unknown job, ``sbatch --wait`` of a failing script...). A missing program
    raises :class:`FileNotFoundError`; a timeout kills the command's whole process
    group and raises :class:`CommandTimeout` carrying the output so far.
    """
    argv = _check_cmd(cmd)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_merged_env(env),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        signal_group(proc, signal.SIGKILL)
        out, err = proc.communicate()
        raise CommandTimeout(argv, timeout or 0.0, out, err) from None
    return proc.returncode, out, err


def spawn(
    cmd: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log_path: str | os.PathLike[str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in a new session (own process group) and return its Popen.

    stdin is /dev/null. With ``log_path``, stdout and stderr both go (appended) to
    that file, whose parent directory is created; otherwise they are inherited.
    The child's PID is also its process-group ID, which :func:`kill_tree` uses.
    """
    argv = _check_cmd(cmd)
    log = None
    if log_path is not None:
        path = Path(log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")  # noqa: SIM115 - the child owns it; we close our copy
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
            env=_merged_env(env),
            cwd=cwd,
            start_new_session=True,
        )
    finally:
        if log is not None:
            log.close()


def signal_group(popen: subprocess.Popen, sig: int) -> bool:
    """Send ``sig`` to the child's process group (every process of it: ``mpiexec`` and its
    ranks); False if it is already gone.  SIGSTOP/SIGCONT suspend and resume a local app."""
    try:
        os.killpg(popen.pid, sig)
    except ProcessLookupError:
        return False
    return True


def kill_tree(popen: subprocess.Popen, grace: float = 5.0) -> int | None:
    """Stop a child from :func:`spawn` and everything in its process group.

    SIGTERM (then SIGCONT, so suspended members act on it) the group, wait up to ``grace`` seconds for the child to exit, then
    SIGKILL the group. Returns the child's return code (negative: the signal that
    ended it). Safe to call on a child that has already exited.  The MPICH and hydra
    files (:mod:`.run_residue`) that the child's MPI descendants mapped or held are removed. Processes that
    left the group on purpose (``setsid``, daemons) are out of reach by design.
    """
    if grace < 0:
        raise ValueError(f"grace must be >= 0 seconds, got {grace!r}")
    # MPICH unlinks its ranks' /dev/shm segments in MPI_Finalize, which a killed rank never reaches: the
    # files the child's hydra proxies and ranks (its descendants; hydra gives them process groups of their
    # own) map or hold are recorded now and removed once they are dead
    residue = Residue()
    residue.scan(mpi_processes(popen.pid))
    if popen.poll() is None:
        signal_group(popen, signal.SIGTERM)
        # A stopped (suspended) process only acts on SIGTERM once continued.
        signal_group(popen, signal.SIGCONT)
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    residue.scan(mpi_processes(popen.pid))  # a rank that mapped its segment during the grace
    # The leader may be gone while group members linger: always finish the group.
    signal_group(popen, signal.SIGKILL)
    code = popen.wait()
    residue.remove()
    return code
