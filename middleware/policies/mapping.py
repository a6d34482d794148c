"""Mapping apps onto I/O nodes: Make-Pack (carretero2020 Alg. 1) and LPT (§6.2.4).

Make-Pack partitions the apps into *packs*: the apps of a pack run together
on one I/O node's partition, and the packs of an I/O node run one after the
other.  Apps are taken by decreasing contention-free time T_i(b); each goes
into the first pack (packs kept by decreasing processor use) where it fits
both the processor constraint (Eq. 5, Q_i <= P - P^Pack) and the I/O
constraint (Eq. 4, V_i <= (S - L^Pack) b T^Pack); otherwise it opens a new
pack.  S = infinity drops the I/O constraint: that is First-Fit.

LPT then places the packs on R I/O nodes: longest pack (by its
contention-free length T^Pack) first, each on the node where it would finish
earliest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence


@dataclass(frozen=True, slots=True)
class PackJob:
    """What the mapping needs of an app: id, nodes Q, total volume V, T_i(b)."""

    id: str
    nodes: int
    volume: float
    min_time: float


@dataclass
class Pack:
    jobs: list[PackJob] = field(default_factory=list)
    nodes: int = 0  # P^Pack
    length: float = 0.0  # T^Pack
    volume: float = 0.0  # sum of V_i

    def load(self, bandwidth: float) -> float:
        """L^Pack: the average I/O occupation of the pack."""
        if self.length <= 0:
            return 0.0 if self.volume <= 0 else math.inf
        return self.volume / (bandwidth * self.length)

    def add(self, job: PackJob) -> None:
        self.jobs.append(job)
        self.nodes += job.nodes
        self.length = max(self.length, job.min_time)
        self.volume += job.volume

    @property
    def ids(self) -> list[str]:
        return [j.id for j in self.jobs]


def make_pack(jobs: Sequence[PackJob], nodes_per_partition: int, bandwidth: float,
              sensibility: float = 1.0) -> list[Pack]:
    """Algorithm 1 of carretero2020.  Returns packs in creation order.

    Ties in T_i(b) keep the input order; ties in P^Pack keep creation order.
    """
    if sensibility <= 0:
        raise ValueError(f"sensibility must be > 0, got {sensibility}")
    for j in jobs:
        if j.nodes > nodes_per_partition:
            raise ValueError(f"job {j.id!r} needs {j.nodes} nodes; a partition has {nodes_per_partition}")
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].min_time)
    packs: list[Pack] = []
    by_nodes: list[int] = []  # pack indices by decreasing P^Pack, then creation order
    for i in order:
        job = jobs[i]
        chosen = None
        for p in by_nodes:
            pack = packs[p]
            if job.nodes > nodes_per_partition - pack.nodes:  # Eq. 5
                continue
            if not math.isinf(sensibility):  # Eq. 4
                budget = (sensibility - pack.load(bandwidth)) * bandwidth * pack.length
                if job.volume > budget + 1e-12 * max(1.0, budget):
                    continue
            chosen = p
            break
        if chosen is None:
            packs.append(Pack())
            chosen = len(packs) - 1
            by_nodes.append(chosen)
        packs[chosen].add(job)
        # ties in P^Pack in creation order (the index), not in the previous sort's order
        by_nodes.sort(key=lambda p: (-packs[p].nodes, p))
    return packs


def first_fit(jobs: Sequence[PackJob], nodes_per_partition: int, bandwidth: float) -> list[Pack]:
    """First-Fit pack creation: Make-Pack with S = infinity."""
    return make_pack(jobs, nodes_per_partition, bandwidth, math.inf)


def lpt_assign(lengths: Sequence[float], io_nodes: int) -> list[list[int]]:
    """Largest Processing Time: pack indices per I/O node, in execution order.

    The longest remaining pack goes to the node on which it finishes earliest
    (ties: lowest node id; equal lengths keep input order).
    """
    if io_nodes < 1:
        raise ValueError("need at least one I/O node")
    load = [0.0] * io_nodes
    out: list[list[int]] = [[] for _ in range(io_nodes)]
    for p in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        node = min(range(io_nodes), key=lambda n: (load[n], n))
        out[node].append(p)
        load[node] += lengths[p]
    return out
