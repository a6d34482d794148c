"""What happens to a batch run's jobs at an instant, written once for both clocks.

:class:`BatchDriver` is the batch level's driver: the simulator (``iolab.sim.batch.engine``, an event
heap) and the real run (``iolab.emulator.batch.run``, a loop on the wall clock) each find the instant
``t`` and call it; it tells the kernel (:class:`~.kernel.BatchKernel`: books, policy, checker) and
the runtime's effectors (:class:`JobEffects`) what happened, in the same order in both runtimes:

- ``decide``: the policy decides, again while something changed at ``t`` (a start that ended at once),
  and every job it started begins (its effect: its first step on a link, or its processes);
- ``retry``: a job ``allocating`` since its disk placement was requeued asks the disks again and begins;
- ``end``: a job ends (``done`` after its last step, ``failed``, ``killed`` by the policy or at a
  limit): its effects stop where they are, then the kernel gives back its nodes and HPS bytes;
- ``suspend`` / ``resume`` / ``act`` / ``release``: the load controller's actions (dheenadayalan2017):
  the job's effect stops (a link's stream, a process tree's signal) and the kernel keeps its nodes and
  space; each carried out is a row ``(t, job, suspend|resume, volume, reason)``.

The runtime keeps only its clock and its effectors.  The simulator's event loop writes two of these
inline, its hot path (what a call there costs: docs/results.md): ``decide``, and the end of a job whose
steps all ended (nothing to halt: the kernel's ``finish``).  Pure: no Ray, MPI, h5py or clock.
"""

from __future__ import annotations

from typing import Iterable, Protocol

from iolab.middleware.policies.batch.kernel import ALLOCATING, DONE, KILLED, SUSPENDABLE, SUSPENDED, BatchKernel, JobState

# the controller's resume action (``iolab.middleware.policies.controller.handler``), here by value: a batch run
# without a load controller (every SWF trace) does not import the controller's package
RESUME = "resume"

__all__ = ["BatchDriver", "JobEffects"]


class JobEffects(Protocol):
    """What a runtime does to a job when the driver says so (``t``: spec seconds)."""

    def begin(self, s: JobState, t: float) -> None: ...  # started (or placed after a retry): its first effect
    def halt(self, s: JobState, t: float, state: str, message: str) -> None: ...  # ends: stop what it still does
    def pause(self, s: JobState, t: float) -> bool: ...  # stop its progress (False: it cannot be stopped now)
    def unpause(self, s: JobState, t: float) -> bool: ...  # go on (False: it was not stopped)


class BatchDriver:
    """The batch kernel's instants, for a runtime's effectors (module doc).  It answers the kernel's
    kills (``kernel.on_kill``: a policy's ``Decision.kills``)."""

    __slots__ = ("kernel", "effects")

    def __init__(self, kernel: BatchKernel, effects: JobEffects):
        self.kernel = kernel
        self.effects = effects
        kernel.on_kill = self.kill

    def decide(self, t: float) -> bool:
        """Decide at ``t`` while something changed (a job of runtime 0 ends inside its decision); every
        job started begins.  Whether the policy was asked."""
        k = self.kernel
        if not k.changed:
            return False
        begin = self.effects.begin
        while k.changed:
            for s in k.decide(t):
                begin(s, t)
        return True

    def retry(self, s: JobState, t: float) -> bool:
        """``s``'s disks are asked again at its ``retry_at`` (False: it ended while it waited)."""
        if s.state != ALLOCATING:
            return False
        self.kernel.retry(s, t)
        self.effects.begin(s, t)
        return True

    def end(self, s: JobState, t: float, state: str = DONE, message: str = "") -> None:
        """``s`` ends ``state``: what it still does stops, then its nodes and HPS bytes return (a job
        ended while suspended ends its suspension with it: the kernel's ``finish``)."""
        self.effects.halt(s, t, state, message)
        self.kernel.finish(s, t, state, message)

    def kill(self, s: JobState, t: float, message: str) -> None:
        """The policy killed ``s`` (``Decision.kills``)."""
        self.end(s, t, KILLED, message)

    # -- the load controller's actions ----------------------------------------------------------------
    def suspend(self, s: JobState, t: float) -> bool:
        """``s`` stops where it is and keeps its nodes and space (False: it is not running, or its effect
        could not stop)."""
        if s.state not in SUSPENDABLE or not self.effects.pause(s, t):
            return False
        self.kernel.suspend(s, t)
        return True

    def resume(self, s: JobState, t: float) -> bool:
        """``s`` goes on from where it stopped (False: it was not stopped)."""
        if not self.effects.unpause(s, t):
            return False
        if s.state == SUSPENDED:
            self.kernel.resume(s, t)
        return True

    def act(self, actions: Iterable[tuple], t: float) -> list[tuple]:
        """A controller cycle's actions, ``(kind, job, volume, reason)`` each, in order; returns the rows of
        those carried out."""
        rows = []
        by_id = self.kernel.by_id
        for kind, job, volume, reason in actions:
            s = by_id[job]
            if self.resume(s, t) if kind == RESUME else self.suspend(s, t):
                rows.append((t, job, kind, volume, reason))
        return rows

    def release(self, t: float, reason: str, jobs: Iterable[str]) -> list[tuple]:
        """The suspended ``jobs`` go on, in this order (the controller stops, fails, or the run ends); the
        rows of those resumed."""
        by_id = self.kernel.by_id
        return [(t, job, RESUME, "", reason) for job in list(jobs) if self.resume(by_id[job], t)]
