"""A batch job's I/O phases on a platform with I/O nodes: their parts and what each part asks its arbiter.

On a platform with I/O nodes (``platform.io_nodes``) a job's I/O phases on its tier (input read,
checkpoint writes, output write: the steps of :func:`iolab.workloads.steps.job_steps` whose link is LPS or
HPS; staging between the tiers does not cross the I/O nodes) go through the I/O nodes of its compute nodes:

- **parts**: a phase of V bytes of a job whose nodes sit on I/O nodes n1 < n2 < ... has one part per
  I/O node, V x (the job's nodes there) / (the job's nodes) (:func:`split_volume` of the job's
  :func:`node_counts`; :func:`split_parts` from its node ids at once), in both runtimes; each part is a
  request to that I/O node's arbiter (:class:`~iolab.middleware.policies.arbiter.IONodeArbiter`, the
  I/O level's), granted and released independently; the phase ends when its last part ends;
- **request**: the facts a list policy ranks (:class:`~iolab.middleware.policies.io_order.IORequest`)
  come from the job's steps (:class:`JobIOFacts`): the part's volume, its contention-free time (its
  bytes at the lesser of the I/O node's and the tier's rate), the job's contention-free time left (this
  phase included) and in all, its start and the I/O seconds it has had so far.

Pure (no clock): both runtimes build their requests here.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Sequence

from iolab.middleware.policies.io_order import IORequest

__all__ = ["JobIOFacts", "node_counts", "split_parts", "split_volume", "through_io_nodes"]

TIER_LINKS = frozenset(("lps", "hps"))


def through_io_nodes(link: str) -> bool:
    """Whether a step on ``link`` goes through the I/O nodes (a tier's link, not staging)."""
    return link in TIER_LINKS


def node_counts(node_ids: int, span: int) -> dict[int, int]:
    """How many of the compute nodes ``node_ids`` (a mask) sit on each I/O node, ``span`` compute nodes per
    I/O node: ``{I/O node: nodes}``."""
    if node_ids == 0:
        raise ValueError("a job's phase needs its nodes to go through I/O nodes")
    counts: dict[int, int] = {}
    m = node_ids
    while m:
        low = m & -m
        j = (low.bit_length() - 1) // span
        counts[j] = counts.get(j, 0) + 1
        m ^= low
    return counts


def split_volume(volume: float, counts: dict[int, int]) -> list[tuple[int, float]]:
    """The parts of a phase of ``volume`` bytes of a job with ``counts[j]`` compute nodes on I/O node ``j``:
    ``[(I/O node, bytes), ...]`` in increasing I/O node order, each ``volume x counts[j] / (the job's nodes)``."""
    n = sum(counts.values())
    return [(j, volume * k / n) for j, k in sorted(counts.items())]


def split_parts(volume: float, node_ids: int, span: int) -> list[tuple[int, float]]:
    """The parts of a phase of ``volume`` bytes of a job holding the ids ``node_ids`` (a mask), ``span``
    compute nodes per I/O node: ``[(I/O node, bytes), ...]`` in increasing I/O node order."""
    return split_volume(volume, node_counts(node_ids, span))


class JobIOFacts:
    """A job's contention-free times, from its steps: compute and overhead steps take their seconds,
    a step on a tier its bytes at ``min(io_rate, tier rate)``, a staging step its bytes at ``stage``.
    ``rates``: link name -> bytes/s (``lps``, ``hps``, ``stage``)."""

    __slots__ = ("id", "rank", "cf", "done", "total", "io_rate", "rates", "links")

    def __init__(self, job_id: str, rank: int, steps: Sequence, rates: dict[str, float], io_rate: float):
        self.id, self.rank, self.io_rate, self.rates = job_id, rank, io_rate, rates
        self.links = [st.link for st in steps]
        self.cf = [self._cf(st) for st in steps]
        self.done = [0.0, *accumulate(self.cf)]  # contention-free seconds before step i
        self.total = self.done[-1]

    def _cf(self, st) -> float:
        if not st.link:
            return float(st.amount)
        rate = self.rates[st.link]
        if through_io_nodes(st.link):
            rate = min(rate, self.io_rate)
        return st.amount / rate

    def request(self, step: int, phase: int, volume: float, now: float, start: float,
                io_received: float) -> IORequest:
        """The request of a part of ``volume`` bytes of step ``step`` (phase row index ``phase``) at
        ``now``; the job started at ``start`` and has spent ``io_received`` seconds in I/O phases."""
        rate = min(self.rates[self.links[step]], self.io_rate)
        done = self.done[step]
        return IORequest(self.id, self.rank, now, volume, volume / rate, self.total - done, self.total,
                         start, done, io_received, phase)
