"""The names of the I/O arbitration policies, and how a spec may spell them.

Apart from :mod:`iolab.specs.io` (the I/O experiment's models) so that a batch spec, whose I/O nodes
name a policy, is read without building the I/O experiment's models (``iolab simulate BATCH``'s start).
"""

from __future__ import annotations

from typing import Literal

# Names of the I/O arbitration policies (carretero2020 §5.1) plus ``shared``.
IO_POLICIES: tuple[str, ...] = (
    "lowest-id",
    "longest-io",
    "shortest-io",
    "shortest-remaining",
    "longest-remaining",
    "fifo",
    "bandwidth",
    "stretch",
    "shared",
)
LIST_POLICIES: tuple[str, ...] = IO_POLICIES[:-1]

IOPolicyName = Literal[IO_POLICIES]  # a tuple subscript spreads into the Literal


def normalise_policy(value: object) -> object:
    """Accept ``Longest_IO`` for ``longest-io``; leave anything else to pydantic."""
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    return value


__all__ = ["IO_POLICIES", "LIST_POLICIES", "IOPolicyName", "normalise_policy"]
