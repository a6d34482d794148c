"""The phase plan of a synthetic application: what it does, in order.

A plan is a list of :class:`PlannedPhase`: ``compute`` phases last a number of
seconds (or a number of sweeps in ``work`` mode), ``write`` and ``read``
phases move a number of bytes for the whole application.  It is built either
periodically (carretero2020 Table 1: *iterations* x (compute W s, I/O V bytes))
or from an explicit JSON list such as ``[["compute", 10.0], ["write", 1048576]]``.

Pure code: no MPI, no clock, no files.  Bad plans raise ``ValueError`` with a
message that names the offending entry.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

KINDS = ("compute", "write", "read")


@dataclass(frozen=True)
class PlannedPhase:
    """One phase. ``amount`` is seconds for compute, bytes for write/read.

    ``iteration`` counts the application's iterations from 1: in a periodic
    plan a compute phase and the I/O phase after it share one iteration; in an
    explicit plan every compute phase opens a new iteration.
    """

    index: int
    kind: str
    amount: float
    iteration: int

    @property
    def is_io(self) -> bool:
        return self.kind != "compute"


def periodic(iterations: int, compute: float, io_volume: int, io_kind: str = "write") -> list[PlannedPhase]:
    """``iterations`` x (compute ``compute`` s, then ``io_kind`` of ``io_volume`` bytes).

    An I/O volume of 0 leaves the I/O phases out; a compute time of 0 leaves
    the compute phases out.
    """
    if iterations < 0:
        raise ValueError(f"--iterations must be >= 0, got {iterations}")
    _check_seconds("--compute", compute)
    _check_bytes("--io-volume", io_volume)
    if io_kind not in ("write", "read"):
        raise ValueError(f"--io-kind must be 'write' or 'read', got {io_kind!r}")
    plan: list[PlannedPhase] = []
    for it in range(1, iterations + 1):
        if compute > 0:
            plan.append(PlannedPhase(len(plan), "compute", float(compute), it))
        if io_volume > 0:
            plan.append(PlannedPhase(len(plan), io_kind, int(io_volume), it))
    return plan


def explicit(text: str) -> list[PlannedPhase]:
    """Parse ``[["compute", seconds], ["write", bytes], ["read", bytes], ...]``."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--phases-json is not valid JSON: {exc}") from None
    if not isinstance(raw, list):
        raise ValueError("--phases-json must be a JSON list of [kind, amount] pairs")
    plan: list[PlannedPhase] = []
    iteration = 0
    for i, entry in enumerate(raw):
        where = f"--phases-json[{i}]"
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise ValueError(f"{where}: expected [kind, amount], got {entry!r}")
        kind, amount = entry
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if kind == "compute":
            _check_seconds(where, amount)
            iteration += 1
            plan.append(PlannedPhase(i, kind, float(amount), iteration))
        else:
            if isinstance(amount, float) and amount.is_integer():
                amount = int(amount)
            _check_bytes(where, amount)
            plan.append(PlannedPhase(i, kind, int(amount), max(iteration, 1)))
    return plan


def _check_seconds(where: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: seconds must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: seconds must be finite and >= 0, got {value!r}")


def _check_bytes(where: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: bytes must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{where}: bytes must be >= 0, got {value!r}")
