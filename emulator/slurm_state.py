"""Slurm job states as one enum, parsed from ``squeue``/``sacct``/``scontrol`` text.

Slurm prints a job's state in two spellings: the compact code of ``squeue -o %t``
(``PD``, ``R``, ``CG``...) and the long name of ``squeue -o %T``, ``sacct -o State``
and ``scontrol show job`` (``PENDING``, ``RUNNING``, ``COMPLETING``...). ``sacct``
may decorate it (``CANCELLED by 0``) or truncate it with a ``+`` (``CANCELLED+``).
:func:`parse_state` accepts all of these and returns a :class:`JobState`; anything
it does not know becomes :attr:`JobState.UNKNOWN` rather than an exception, so a
newer Slurm with a new state cannot crash a running experiment (Parsl's approach).

The enum keeps Slurm's distinctions that matter to the emulator (a suspended job is
not a pending one; a timeout is not a failure) and folds the rare federation and
hold variants into their nearest state, as listed in ``_CODES``.
"""

from __future__ import annotations

import enum

__all__ = ["JobState", "parse_state"]


class JobState(enum.Enum):
    """State of a Slurm job, with the predicates the emulator needs.

    Values are Slurm's long names, so ``JobState("RUNNING")`` also works.
    """

    PENDING = "PENDING"            #: PD: waiting for resources or priority (also RD held)
    REQUEUED = "REQUEUED"          #: RQ: put back in the queue (also RH, RF, SE)
    CONFIGURING = "CONFIGURING"    #: CF: allocated, nodes booting/getting ready
    RUNNING = "RUNNING"            #: R
    RESIZING = "RESIZING"          #: RS: running, size being changed
    SIGNALING = "SIGNALING"        #: SI: running, a signal is being delivered
    SUSPENDED = "SUSPENDED"        #: S: ``scontrol suspend``; processes are stopped
    STOPPED = "STOPPED"            #: ST: SIGSTOP'd, resources still held
    COMPLETING = "COMPLETING"      #: CG: finished, some processes still being cleaned up
    STAGE_OUT = "STAGE_OUT"        #: SO: finished, burst buffer staging out
    COMPLETED = "COMPLETED"        #: CD: every process exited with code 0
    FAILED = "FAILED"              #: F: non-zero exit code or other failure
    CANCELLED = "CANCELLED"        #: CA: ``scancel`` (also RV, revoked by a federation)
    TIMEOUT = "TIMEOUT"            #: TO: killed at its time limit
    DEADLINE = "DEADLINE"          #: DL: killed at its ``--deadline``
    NODE_FAIL = "NODE_FAIL"        #: NF: an allocated node failed
    BOOT_FAIL = "BOOT_FAIL"        #: BF: an allocated node failed to boot
    OUT_OF_MEMORY = "OUT_OF_MEMORY"  #: OOM
    PREEMPTED = "PREEMPTED"        #: PR: ended by preemption
    UNKNOWN = "UNKNOWN"            #: anything this module does not recognise

    @property
    def is_terminal(self) -> bool:
        """The job is over and will not run again (as far as Slurm says now)."""
        return self in _TERMINAL

    @property
    def is_waiting(self) -> bool:
        """The job is queued and has not (again) started."""
        return self in (JobState.PENDING, JobState.REQUEUED)

    @property
    def is_active(self) -> bool:
        """The job holds nodes and its processes may be running."""
        return self in _ACTIVE

    @property
    def is_paused(self) -> bool:
        """The job holds nodes but its processes are stopped (can be resumed)."""
        return self in (JobState.SUSPENDED, JobState.STOPPED)

    @property
    def succeeded(self) -> bool:
        """Only :attr:`COMPLETED` counts as success."""
        return self is JobState.COMPLETED


_TERMINAL = frozenset({
    JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT,
    JobState.DEADLINE, JobState.NODE_FAIL, JobState.BOOT_FAIL,
    JobState.OUT_OF_MEMORY, JobState.PREEMPTED,
})
_ACTIVE = frozenset({
    JobState.CONFIGURING, JobState.RUNNING, JobState.RESIZING, JobState.SIGNALING,
    JobState.COMPLETING, JobState.STAGE_OUT,
})

# squeue %t codes (Slurm 22.05 "JOB STATE CODES") and the long names that have no
# member of their own, mapped onto the enum.
_CODES: dict[str, JobState] = {
    "PD": JobState.PENDING,
    "RD": JobState.PENDING, "RESV_DEL_HOLD": JobState.PENDING,
    "RQ": JobState.REQUEUED,
    "RH": JobState.REQUEUED, "REQUEUE_HOLD": JobState.REQUEUED,
    "RF": JobState.REQUEUED, "REQUEUE_FED": JobState.REQUEUED,
    "SE": JobState.REQUEUED, "SPECIAL_EXIT": JobState.REQUEUED,
    "CF": JobState.CONFIGURING,
    "R": JobState.RUNNING,
    "RS": JobState.RESIZING,
    "SI": JobState.SIGNALING,
    "S": JobState.SUSPENDED,
    "ST": JobState.STOPPED,
    "CG": JobState.COMPLETING,
    "SO": JobState.STAGE_OUT,
    "CD": JobState.COMPLETED,
    "F": JobState.FAILED,
    "CA": JobState.CANCELLED,
    "RV": JobState.CANCELLED, "REVOKED": JobState.CANCELLED,
    "TO": JobState.TIMEOUT,
    "DL": JobState.DEADLINE,
    "NF": JobState.NODE_FAIL,
    "BF": JobState.BOOT_FAIL,
    "OOM": JobState.OUT_OF_MEMORY,
    "PR": JobState.PREEMPTED,
}


def parse_state(text: str) -> JobState:
    """Map one state as Slurm prints it to a :class:`JobState`.

    Accepts the short code (``"PD"``), the long name (``"PENDING"``), any case,
    surrounding blanks, sacct's decorations (``"CANCELLED by 0"``) and truncation
    mark (``"CANCELLED+"``). Unrecognised text gives :attr:`JobState.UNKNOWN`.
    """
    if not isinstance(text, str):
        raise TypeError(f"state must be a str, got {type(text).__name__}: {text!r}")
    words = text.strip().split()
    if not words:
        return JobState.UNKNOWN
    word = words[0].rstrip("+").upper()
    if word in _CODES:
        return _CODES[word]
    try:
        return JobState(word)
    except ValueError:
        return JobState.UNKNOWN
