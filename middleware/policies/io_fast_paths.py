"""What an I/O node's policy allows the runtimes to skip: one record, built once per run.

Every runtime of an I/O node's policy (the I/O kernel, :class:`~.io_kernel.IOKernel`, and the engines
around it; the batch level's I/O nodes, :class:`~.batch.io_node_book.IONodeBook`; the Ray arbiter's
state) takes the policy object of :func:`~.io_guard.io_policy` and reads :func:`io_fast_paths` of it
once, then only the record.  A user's order or sharing is built into one of those objects by the
guard (``io_guard``): a ``key`` or ``choose`` becomes a :class:`~.io_order.ListPolicy`, ``shares`` a
:class:`~.io_guard.GuardedSharing`, so the same attributes are read for it.  docs/sharing.md, "What a
policy allows the runtimes", is the same list for a reader.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["IOFastPaths", "io_fast_paths"]


@dataclass(frozen=True, slots=True)
class IOFastPaths:
    """What the runtimes may skip for one I/O policy.  Each field's default is that of a policy object
    that sets none of the attributes read (a sharing asked its shares)."""

    #: one transfer at a time per I/O node, granted in the policy's order and never preempted (a list
    #: policy: the policy's ``exclusive``): the arbiters keep a wait queue, and the event engine runs
    #: its loop for list policies (``EventEngine._run_exclusive``)
    exclusive: bool = False
    #: every transfer on an I/O node gets 1/k of it without asking ``shares()`` (``shared``: the
    #: policy's ``equal``): fair-share links in the simulator, one bucket in a real run
    equal_shares: bool = False
    #: a waiting request's rank in the order does not change while it waits (a list policy that is
    #: not ``time_dependent``): the wait queue keys each request once and keeps a heap
    #: (``io_queue.KeyedQueue``), instead of asking the order over every waiting request at each grant
    fixed_order: bool = False
    #: neither exclusive nor equal: transfers share an I/O node as the policy's ``shares()`` says
    #: (weighted links in the simulator, one lane per stream in a real run); a field, not a property,
    #: so that reading it is no call
    asks_shares: bool = True


def io_fast_paths(policy) -> IOFastPaths:
    """The record of an I/O policy object (:func:`~.io_guard.io_policy`'s)."""
    exclusive = bool(getattr(policy, "exclusive", False))
    equal = not exclusive and bool(getattr(policy, "equal", False))
    return IOFastPaths(exclusive=exclusive, equal_shares=equal,
                       fixed_order=exclusive and not getattr(policy, "time_dependent", False),
                       asks_shares=not exclusive and not equal)
