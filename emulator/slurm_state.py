"""Slurm job states as one enum, parsed from ``squeue``/``sacct``/``scontrol`` text.

Slurm prints a job's state in two spellings: the compact code of ``squeue -o %t``
(``PD``, ``R``, ``CG``...) and the long name of ``squeue -o %T``, ``sacct -o State``
and ``scontrol show job`` (``PENDING``, ``RUNNING``, ``COMPLETING``...). ``sacct``
may decorate it (``CANCELLED by 0``) or truncate it with a ``+`` (``CANCELLED+``).
:func:`parse_state` accepts all of these and returns a :class:`SlurmJobState`; anything
it does not know becomes :attr:`SlurmJobState.UNKNOWN` rather than an exception, so a
newer Slurm with a new state cannot crash a running experiment (Parsl's approach).

The enum keeps Slurm's distinctions that matter to the emulator (a suspended job is
not a pending one; a timeout is not a failure) and folds the rare federation and
hold variants into their nearest state, as listed in ``_CODES``.
"""

from __future__ import annotations

import enum

__all__ = ["SlurmJobState", "parse_state"]


class SlurmJobState(enum.Enum):
    """State of a Slurm job, with the predicates the emulator needs.

    Values are Slurm's long names, so ``SlurmJobState("RUNNING")`` also works.
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
        return self in (SlurmJobState.PENDING, SlurmJobState.REQUEUED)

    @property
    def is_active(self) -> bool:
        """The job holds nodes and its processes may be running."""
        return self in _ACTIVE

    @property
    def is_paused(self) -> bool:
        """The job holds nodes but its processes are stopped (can be resumed)."""
        return self in (SlurmJobState.SUSPENDED, SlurmJobState.STOPPED)

    @property
    def succeeded(self) -> bool:
        """Only :attr:`COMPLETED` counts as success."""
        return self is SlurmJobState.COMPLETED


_TERMINAL = frozenset({
    SlurmJobState.COMPLETED, SlurmJobState.FAILED, SlurmJobState.CANCELLED, SlurmJobState.TIMEOUT,
    SlurmJobState.DEADLINE, SlurmJobState.NODE_FAIL, SlurmJobState.BOOT_FAIL,
    SlurmJobState.OUT_OF_MEMORY, SlurmJobState.PREEMPTED,
})
_ACTIVE = frozenset({
    SlurmJobState.CONFIGURING, SlurmJobState.RUNNING, SlurmJobState.RESIZING, SlurmJobState.SIGNALING,
    SlurmJobState.COMPLETING, SlurmJobState.STAGE_OUT,
})

# squeue %t codes (Slurm 22.05 "JOB STATE CODES") and the long names that have no
# member of their own, mapped onto the enum.
_CODES: dict[str, SlurmJobState] = {
    "PD": SlurmJobState.PENDING,
    "RD": SlurmJobState.PENDING, "RESV_DEL_HOLD": SlurmJobState.PENDING,
    "RQ": SlurmJobState.REQUEUED,
    "RH": SlurmJobState.REQUEUED, "REQUEUE_HOLD": SlurmJobState.REQUEUED,
    "RF": SlurmJobState.REQUEUED, "REQUEUE_FED": SlurmJobState.REQUEUED,
    "SE": SlurmJobState.REQUEUED, "SPECIAL_EXIT": SlurmJobState.REQUEUED,
    "CF": SlurmJobState.CONFIGURING,
    "R": SlurmJobState.RUNNING,
    "RS": SlurmJobState.RESIZING,
    "SI": SlurmJobState.SIGNALING,
    "S": SlurmJobState.SUSPENDED,
    "ST": SlurmJobState.STOPPED,
    "CG": SlurmJobState.COMPLETING,
    "SO": SlurmJobState.STAGE_OUT,
    "CD": SlurmJobState.COMPLETED,
    "F": SlurmJobState.FAILED,
    "CA": SlurmJobState.CANCELLED,
    "RV": SlurmJobState.CANCELLED, "REVOKED": SlurmJobState.CANCELLED,
    "TO": SlurmJobState.TIMEOUT,
    "DL": SlurmJobState.DEADLINE,
    "NF": SlurmJobState.NODE_FAIL,
    "BF": SlurmJobState.BOOT_FAIL,
    "OOM": SlurmJobState.OUT_OF_MEMORY,
    "PR": SlurmJobState.PREEMPTED,
}


def parse_state(text: str) -> SlurmJobState:
    """Map one state as Slurm prints it to a :class:`SlurmJobState`.

    Accepts the short code (``"PD"``), the long name (``"PENDING"``), any case,
    surrounding blanks, sacct's decorations (``"CANCELLED by 0"``) and truncation
    mark (``"CANCELLED+"``). Unrecognised text gives :attr:`SlurmJobState.UNKNOWN`.
    """
    if not isinstance(text, str):
        raise TypeError(f"state must be a str, got {type(text).__name__}: {text!r}")
    words = text.strip().split()
    if not words:
        return SlurmJobState.UNKNOWN
    word = words[0].rstrip("+").upper()
    if word in _CODES:
        return _CODES[word]
    try:
        return SlurmJobState(word)
    except ValueError:
        return SlurmJobState.UNKNOWN
