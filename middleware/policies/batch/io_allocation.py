"""I/O-aware node allocation: a starting job's node ids, chosen by the load of their I/O nodes.

On a platform with I/O nodes (``platform.io_nodes``), compute node ``i`` forwards its I/O through
I/O node ``i // span`` (carretero2020 §4).  ``allocation: lowest`` gives a starting job the lowest free
ids (or the ids its plan reserved); ``allocation: {kind: io-aware, sensibility: S}`` chooses them here,
carretero2020's Make-Pack idea at the batch level (beyond the papers):

- a job's **I/O load** is the I/O bytes it states (input, checkpoints and output; not its staging, which
  does not cross the I/O nodes) over its planned duration (its walltime estimate): bytes/s;
- an I/O node's **load** is the sum over the running jobs of their load x (their nodes there / their
  nodes);
- the job's ``n`` nodes are filled from the I/O nodes in increasing order of load (ties: lower id), the
  lowest free ids within an I/O node first, **preferring** to keep each I/O node's load plus this job's
  share there (its load x the nodes it takes there / n) within ``S x rate``: a first pass takes on each
  I/O node, in that order, as many free nodes as keep it within that bound; a second pass (same order)
  takes the rest wherever nodes are free (the bound is a preference, never a refusal).

A job's plan may have reserved other ids of the same count (EASY's reservation, conservative's plan):
plans hold counts, the kernel checks the count, so the choice here stands.

Pure: the kernel (:class:`~.kernel.BatchKernel`) calls :meth:`IOAwareAllocator.choose` when a job starts
and :meth:`IOAwareAllocator.release` when it ends, in both runtimes.  The loads are summed afresh from
the running jobs' contributions at each choice (no drift from adding and subtracting floats); cost
O(running jobs + nodes) per start, for machines of tens to thousands of nodes.
"""

from __future__ import annotations

import math

from iolab.middleware.policies.batch.allocation import NodeAllocator, NodeView
from iolab.middleware.policies.batch.nodes import ids, lowest, mask_of

__all__ = ["IOAwareAllocator", "io_load", "io_node_masks"]


def io_load(queued) -> float:
    """A job's I/O load in bytes/s: its stated input + checkpoint data + output over its walltime
    estimate (``queued``: a :class:`~.snapshot.QueuedJob`); 0 for a job without I/O or a walltime of 0."""
    nbytes = queued.input + queued.data + queued.output
    w = queued.walltime
    return nbytes / w if nbytes > 0 and w > 0 else 0.0


def io_node_masks(nodes: int, span: int) -> list[int]:
    """The compute-node ids of each I/O node as a mask (bit i = node i): contiguous ranges of ``span``."""
    out = []
    lo = 0
    while lo < nodes:
        hi = min(lo + span, nodes)
        out.append(((1 << hi) - 1) ^ ((1 << lo) - 1))
        lo = hi
    return out


class IOAwareAllocator(NodeAllocator):
    """``nodes`` compute nodes, ``span`` of them per I/O node, each I/O node of ``rate`` bytes/s, and
    ``sensibility`` S (``inf``: no limit: the least loaded I/O nodes first, nothing deferred).  The kernel
    calls its mask entries (:meth:`choose`, :meth:`take`, :meth:`release`); :meth:`allocate` is the same
    choice through the public API (:class:`~.allocation.NodeAllocator`)."""

    name = "io-aware"

    def __init__(self, nodes: int, span: int, rate: float, sensibility: float = 1.0):
        if not (span >= 1 and rate > 0 and sensibility > 0):
            raise ValueError(f"io-aware allocation needs span >= 1, rate > 0, sensibility > 0; got "
                             f"{span}, {rate}, {sensibility}")
        self.masks = io_node_masks(nodes, span)
        self.span = span
        self.cap = rate * sensibility  # inf * rate = inf: no limit
        self.held: dict[str, tuple[tuple[int, float], ...]] = {}  # job -> ((I/O node, load there), ...)

    @classmethod
    def from_spec(cls, spec) -> "IOAwareAllocator | None":
        """The spec's allocator (``allocation: io-aware``), or None (``lowest``)."""
        a = getattr(spec, "allocation", None)
        if a is None or a.kind != "io-aware":
            return None
        p = spec.platform
        return cls(p.nodes, p.io_nodes_span, p.io_node.rate, a.sensibility)

    def loads(self) -> list[float]:
        """Each I/O node's load (bytes/s), summed afresh over the running jobs."""
        out = [0.0] * len(self.masks)
        for parts in self.held.values():
            for node, x in parts:
                out[node] += x
        return out

    def choose(self, free_ids: int, n: int, load: float, job=None) -> int:
        """The mask of ``n`` free ids (of ``free_ids``) for a job of I/O load ``load`` (module doc);
        ``job`` (its :class:`~.snapshot.QueuedJob`) is not read: the load says what this rule needs."""
        if free_ids.bit_count() < n:
            raise ValueError(f"{n} nodes wanted, {free_ids.bit_count()} free")
        loads = self.loads()
        order = sorted(range(len(self.masks)), key=lambda j: (loads[j], j))
        free = [(free_ids & self.masks[j]).bit_count() for j in range(len(self.masks))]
        take = [0] * len(self.masks)
        left = n
        for j in order:  # first pass: as many as keep the I/O node within S x rate
            if left == 0:
                break
            k = min(free[j], left)
            if load > 0 and k and loads[j] + load * k / n > self.cap:
                room = self.cap - loads[j]
                k = min(k, max(0, math.floor(room * n / load))) if room > 0 else 0
                while k and loads[j] + load * k / n > self.cap:  # the floor's rounding
                    k -= 1
            take[j] = k
            left -= k
        for j in order:  # second pass: the rest, same order, wherever nodes are free
            if left == 0:
                break
            k = min(free[j] - take[j], left)
            if k > 0:
                take[j] += k
                left -= k
        mask = 0
        for j, k in enumerate(take):
            if k:
                mask |= lowest(free_ids & self.masks[j], k)
        return mask

    def allocate(self, job, free: tuple[int, ...], view: NodeView) -> list[int]:
        """The public form of :meth:`choose` (the ids, not masks); it does not take them."""
        return ids(self.choose(mask_of(free), job.nodes, io_load(job), job))

    def take(self, job: str, mask: int, load: float) -> None:
        """``job`` (of I/O load ``load``) starts on the ids ``mask``: its share goes on their I/O nodes."""
        n = mask.bit_count()
        parts = []
        for j, m in enumerate(self.masks):
            k = (mask & m).bit_count()
            if k:
                parts.append((j, load * k / n))
        self.held[job] = tuple(parts)

    def release(self, job: str) -> None:
        """``job`` ended: its load leaves its I/O nodes."""
        self.held.pop(job, None)
