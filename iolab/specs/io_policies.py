"""The names of the I/O arbitration policies, and how a spec may spell them.

Apart from :mod:`iolab.specs.io` (the I/O experiment's models) so that a batch spec, whose I/O nodes
name a policy, is read without building the I/O experiment's models (``iolab simulate BATCH``'s start).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Discriminator, Tag

from iolab.specs.policy_ref import BUILTIN, USER, PolicyRef, builtin_or_user, parse_policy

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

#: an I/O node's policy in a spec: a built-in's name, or a policy of the user's (``kind: python``, or the short
#: forms ``file.py:Class`` and ``pkg.mod:Class``; iolab.specs.policy_ref)
IOPolicyChoice = Annotated[Union[Annotated[IOPolicyName, Tag(BUILTIN)], Annotated[PolicyRef, Tag(USER)]],
                           Discriminator(builtin_or_user)]


def normalise_policy(value: object) -> object:
    """Accept ``Longest_IO`` for ``longest-io``; leave anything else to pydantic."""
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    return value


def io_policy_value(value: object) -> object:
    """A spec's raw I/O policy value, ready for :data:`IOPolicyChoice`: a user's short form becomes its
    mapping, a built-in's name is normalised; an unknown name is refused with the known ones."""
    return normalise_policy(parse_policy(value, "io", IO_POLICIES))


__all__ = ["IO_POLICIES", "LIST_POLICIES", "IOPolicyChoice", "IOPolicyName", "io_policy_value", "normalise_policy"]
