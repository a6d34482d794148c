"""The job state handler of dheenadayalan2017 §4.3: time-share the I/O jobs of a loaded volume.

Per volume a *run stack* (``runList``: the running jobs that use the volume,
the most recent start on top) and a *suspend queue* (``suspendList``: the jobs
this handler suspended, first suspended first resumed).  At every rescheduling
cycle, for each volume:

- loaded (S(alpha, beta) = 1) and more than one running job uses it: the
  newest running job that is a candidate is popped and suspended (one per
  volume and cycle); the oldest running job of the volume is never suspended;
- not loaded: the head of the suspend queue is resumed, unless a job of this
  volume was suspended in the same cycle (the paper: "it helps to see the
  effect of suspending job_q");
- a volume on which no job runs any more resumes the head of its queue even
  when loaded (our addition: the oldest job of a volume never stays stopped;
  the paper's window would clear once the load is gone).

Candidates (§4.3's checks): a job with no file on the volume (CPU-only) is
not a user of it; a job whose open files on the volume total less than
``omega`` bytes, or none of which was modified in the last ``recent`` seconds
(60 s in the paper), is left alone.

Pure: no clock (``now`` is passed), no signals; it returns the actions for
the runtime to carry out.
"""

from __future__ import annotations

from abc import abstractmethod

from collections import deque
from dataclasses import dataclass
from typing import Mapping

__all__ = ["RESUME", "SUSPEND", "Action", "ControllerPolicy", "JobStateHandler", "JobUsage", "OpenFile"]

SUSPEND, RESUME = "suspend", "resume"


@dataclass(frozen=True)
class OpenFile:
    """One file a job has open (§4.1's allFileDetails): its volume, size (bytes), mtime (seconds)."""

    path: str
    volume: str
    size: float
    mtime: float


@dataclass(frozen=True)
class JobUsage:
    """A job that holds its nodes (§4.1's jobDetail): its start and its open files."""

    job: str
    start: float
    files: tuple[OpenFile, ...] = ()

    def on(self, volume: str) -> tuple[OpenFile, ...]:
        return tuple(f for f in self.files if f.volume == volume)


@dataclass(frozen=True)
class Action:
    kind: str  # suspend | resume
    job: str
    volume: str
    reason: str = ""


class ControllerPolicy:
    """The public base of the load controller's decision (``iolab.policy.ControllerPolicy``): which jobs
    to suspend and resume at a rescheduling cycle.  ``cycle(now, jobs, loaded)`` gets every job that holds
    its nodes (``jobs``: job id -> :class:`JobUsage`, its start and its open files, each with its volume,
    size and mtime) and whether each watched volume is loaded (``loaded``: volume -> S(alpha, beta) of the
    response window, dheenadayalan2017 Eq. 8); it returns :class:`Action` s (``Action(SUSPEND, job,
    volume, reason)`` or ``RESUME``).  It may suspend a job that runs and resume a job it suspended; when
    the run ends or the controller stops, every job it still holds suspended is resumed for it.  The
    windows, the forecast and the sleep of Eq. 9 stay the controller's.  The built-in ``newest-first`` (the
    paper's §4.3 job state handler) is a subclass."""

    name: str = ""
    api_version: int = 1

    @abstractmethod  # (no ABCMeta: marks the method a subclass must define; iolab's loader reads it)
    def cycle(self, now: float, jobs: Mapping[str, JobUsage], loaded: Mapping[str, bool]) -> list[Action]:
        raise NotImplementedError(f"{type(self).__name__} must define cycle(now, jobs, loaded)")  # pragma: no cover


class JobStateHandler(ControllerPolicy):
    """``newest-first``: dheenadayalan2017 §4.3's job state handler (the module's doc)."""

    name = "newest-first"

    def __init__(self, omega: float, recent: float = 60.0):
        if omega < 0 or recent <= 0:
            raise ValueError(f"omega must be >= 0 and recent > 0, got omega={omega}, recent={recent}")
        self.omega, self.recent = float(omega), float(recent)
        self.run: dict[str, list[str]] = {}  # volume -> stack of running jobs (oldest first)
        self.queue: dict[str, deque[str]] = {}  # volume -> suspended jobs (first suspended first)
        self.volume_of: dict[str, str] = {}  # suspended job -> the volume it was suspended for

    # -- state ---------------------------------------------------------------------------------
    def suspended(self) -> list[str]:
        """Every job this handler holds suspended, in suspension order per volume."""
        return [j for v in sorted(self.queue) for j in self.queue[v]]

    def forget(self, job: str) -> None:
        """``job`` ended (or was resumed by someone else): drop it from every list."""
        v = self.volume_of.pop(job, None)
        if v is not None:
            self.queue[v].remove(job)
        for stack in self.run.values():
            if job in stack:
                stack.remove(job)

    def release_all(self, reason: str = "controller stops") -> list[Action]:
        """Resume every suspended job (the controller stops or crashes)."""
        out = [Action(RESUME, j, v, reason) for v in sorted(self.queue) for j in self.queue[v]]
        self.queue.clear()
        self.volume_of.clear()
        return out

    def candidate(self, u: JobUsage, volume: str, now: float) -> str:
        """Why ``u`` may not be suspended for ``volume`` ('' when it may)."""
        files = u.on(volume)
        if not files:
            return "no file on the volume"
        if sum(f.size for f in files) < self.omega:
            return "files below omega"
        if max(f.mtime for f in files) < now - self.recent:
            return "files unchanged"
        return ""

    # -- one rescheduling cycle ------------------------------------------------------------------
    def cycle(self, now: float, jobs: Mapping[str, JobUsage], loaded: Mapping[str, bool]) -> list[Action]:
        """Decide the suspensions and resumptions of one cycle.  ``jobs``: every job holding its
        nodes (running or suspended) with its open files; ``loaded``: S(alpha, beta) per volume."""
        for job in [j for j in self.volume_of if j not in jobs]:
            self.forget(job)  # ended while suspended (killed, walltime)
        volumes = set(loaded) | set(self.queue)
        for u in jobs.values():
            volumes.update(f.volume for f in u.files)
        actions: list[Action] = []
        suspended_now: set[str] = set()
        for vol in sorted(volumes):
            users = sorted((u for u in jobs.values() if u.job not in self.volume_of and u.on(vol)),
                           key=lambda u: (u.start, u.job))
            self.run[vol] = [u.job for u in users]
            q = self.queue.setdefault(vol, deque())
            if loaded.get(vol, False):
                if len(users) > 1:
                    for u in reversed(users[1:]):  # newest first; never the oldest
                        if u.job in suspended_now or self.candidate(u, vol, now):
                            continue
                        self.run[vol].remove(u.job)
                        q.append(u.job)
                        self.volume_of[u.job] = vol
                        suspended_now.add(u.job)
                        actions.append(Action(SUSPEND, u.job, vol, "volume loaded"))
                        break
                if q and not users and vol not in {a.volume for a in actions}:
                    actions.append(self._resume(vol, "no job runs on the volume"))
            elif q and not any(a.volume == vol and a.kind == SUSPEND for a in actions):
                actions.append(self._resume(vol, "volume not loaded"))
        return actions

    def _resume(self, vol: str, reason: str) -> Action:
        job = self.queue[vol].popleft()
        del self.volume_of[job]
        self.run.setdefault(vol, []).append(job)
        return Action(RESUME, job, vol, reason)
