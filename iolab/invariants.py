"""Strict mode: the invariants any run can check as it goes (``--strict``; on in the test suite).

Like Batsim's validating machine, a checker watches every decision and state change
of a run and stops it at the first violation, with a message that names the rule,
the time and the job (or app, I/O node, disk).  Each level keeps its own checker
next to its kernel; what they share is the error type and the switch:

- :class:`InvariantViolation`: raised by a checker; the CLI turns it into exit 1
  with the message (a run that broke a rule is a failed run, not bad input).
- :func:`strict_default`: whether a run with no explicit ``strict=`` argument checks;
  ``IOLAB_STRICT=1`` in the environment turns it on (the test suite sets it).
"""

from __future__ import annotations

import os


class InvariantViolation(RuntimeError):
    """A rule of the model was broken: ``rule`` (short name), at ``time``, by ``subject``."""

    def __init__(self, rule: str, time: float, subject: str, detail: str = ""):
        self.rule, self.time, self.subject, self.detail = rule, time, subject, detail
        super().__init__(f"invariant '{rule}' violated at t={time:.6g} by {subject}" + (f": {detail}" if detail else ""))

    def __reduce__(self):  # pickles whole (Ray carries a real run's violations from its actors)
        return type(self), (self.rule, self.time, self.subject, self.detail)

    def note(self, where: str) -> None:
        """Add where it happened to the message (``detail``), e.g. which of a command's runs broke it."""
        self.detail = f"{self.detail} ({where})" if self.detail else f"({where})"
        self.args = (f"invariant '{self.rule}' violated at t={self.time:.6g} by {self.subject}: {self.detail}",)


def strict_default(strict: bool | None = None) -> bool:
    """``strict`` if given, else whether ``IOLAB_STRICT`` is set to 1/true/yes/on."""
    if strict is not None:
        return bool(strict)
    return os.environ.get("IOLAB_STRICT", "").strip().lower() in {"1", "true", "yes", "on"}


class PolicyRaised(InvariantViolation):
    """A policy raised while deciding (a user's policy: its own bug): ``subject`` names the policy, ``detail``
    the exception and the policy's own frames (``file:line in function``).  Ends a run as a broken rule does
    (exit 1, the partial trace written), in strict mode or not."""

    def __init__(self, policy: str, time: float, detail: str):
        super().__init__("policy-raised", time, policy, detail)

    def __str__(self) -> str:
        return f"policy {self.subject} raised at t={self.time:.6g}: {self.detail}"

    def __reduce__(self):
        return type(self), (self.subject, self.time, self.detail)
