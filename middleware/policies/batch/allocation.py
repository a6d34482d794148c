"""Node allocation as a public decision point: which free compute nodes a starting job gets.

:class:`NodeAllocator` is the public base (``iolab.policy.NodeAllocator``); the built-ins are subclasses:
``lowest`` (:class:`LowestAllocator`: the lowest free ids, the default) and ``io-aware``
(:class:`~.io_allocation.IOAwareAllocator`).  The kernel gives ``lowest`` and ``io-aware`` their node ids
through the masks it keeps (:mod:`.nodes`), and asks a user's allocator through its guard
(:class:`~iolab.middleware.policies.guard.GuardedAllocator`), which checks the answer: as many distinct
free ids as the job needs.
"""

from __future__ import annotations

from abc import abstractmethod

from dataclasses import dataclass
from typing import Callable, Sequence

from iolab.middleware.policies.batch.snapshot import QueuedJob

__all__ = ["LowestAllocator", "NodeAllocator", "NodeView"]


@dataclass(frozen=True)
class NodeView:
    """What an allocator may read besides the free ids: the time, the machine's size, and its I/O nodes
    (compute node ``i`` forwards through I/O node ``i // io_span``; ``io_span`` None without I/O nodes)."""

    now: float
    total_nodes: int
    io_span: int | None = None
    loads: Callable[[], Sequence[float]] | None = None

    def io_node_of(self, node: int) -> int:
        """The I/O node compute node ``node`` forwards through (-1 without I/O nodes)."""
        return -1 if self.io_span is None else int(node) // self.io_span

    @property
    def io_node_loads(self) -> tuple[float, ...]:
        """Each I/O node's I/O load in bytes/s (the running jobs' stated I/O over their walltime)."""
        return () if self.loads is None else tuple(self.loads())


class NodeAllocator:
    """The public base of a node allocator: ``allocate(job, free, view)`` returns the ids of the compute
    nodes the starting ``job`` (a :class:`~.snapshot.QueuedJob`) runs on: exactly ``job.nodes`` distinct ids
    taken from ``free`` (the free ids, increasing).  ``ended(job_id)`` (optional) is told when a job ends,
    for an allocator that keeps books of its own.  A scheduler that names node ids in its starts
    (``Start.node_ids``) bypasses the allocator for those jobs."""

    name: str = ""
    api_version: int = 1

    @abstractmethod  # (no ABCMeta: marks the method a subclass must define; iolab's loader reads it)
    def allocate(self, job: QueuedJob, free: tuple[int, ...], view: NodeView) -> Sequence[int]:
        raise NotImplementedError(f"{type(self).__name__} must define allocate(job, free, view)")  # pragma: no cover

    def ended(self, job: str) -> None:
        """``job`` ended (its nodes are free again)."""


class LowestAllocator(NodeAllocator):
    """``lowest``: the lowest free ids (the kernel takes them from its mask without calling this)."""

    name = "lowest"

    def allocate(self, job: QueuedJob, free: tuple[int, ...], view: NodeView) -> Sequence[int]:
        return free[:job.nodes]
