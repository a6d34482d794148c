"""StorAlloc's four placement algorithms (monniot2023 §4.2).

A strategy gets the sizes of the parts of one request (one part unless the
request was split) and the storage state, and returns a disk index per part,
or ``None`` to *refuse* the request.  Parts of one request are placed one
after the other; each sees the parts already chosen for the same request
(:class:`Tentative`), so two parts never count the same free bytes twice.

- ``random``: each part on a disk drawn uniformly; no check ("with a chance
  of failure"): never refuses, the commit may *fail*.
- ``worst-fit``: each part on the disk with the most free bytes (absolute,
  not a percentage), ties drawn uniformly; no check, never refuses.
- ``round-robin``: from a cursor that survives between requests, the next
  disk where the part fits; refuses if none.
- ``best-bandwidth``: the disk where the part fits that offers it the best
  bandwidth in the "permanent maximum I/O regime": every live allocation on
  a disk shares the disk's write bandwidth, every one on a node shares the
  node's network bandwidth, so a new one gets
  ``min(write_bw / (k_disk + 1), network_bw / (k_node + 1))``; ties: more
  free bytes, then lower index.  Refuses if no disk fits.

Only round-robin and best-bandwidth refuse (monniot2023 §4.2), so only they
can be requeued.
"""

from __future__ import annotations

from abc import abstractmethod

from typing import Protocol, Sequence

import numpy as np

from iolab.middleware.policies.placement.disks import DiskState


class Tentative:
    """The state plus the parts already chosen for the current request."""

    def __init__(self, state: DiskState):
        self.state = state
        self.extra = [0] * len(state)
        self.extra_count = [0] * len(state)
        self.extra_node: dict[str, int] = {}

    def free(self, i: int) -> int:
        return self.state.free(i) - self.extra[i]

    def count(self, i: int) -> int:
        return self.state.count[i] + self.extra_count[i]

    def node_count(self, i: int) -> int:
        node = self.state.disks[i].node
        return self.state.node_count[node] + self.extra_node.get(node, 0)

    def take(self, i: int, size: int) -> None:
        self.extra[i] += size
        self.extra_count[i] += 1
        node = self.state.disks[i].node
        self.extra_node[node] = self.extra_node.get(node, 0) + 1


class Strategy(Protocol):
    name: str
    refuses: bool

    def choose(self, sizes: Sequence[int], state: DiskState, rng: np.random.Generator) -> list[int] | None: ...


class PlacementPolicy:
    """The public base of a disk placement policy (``iolab.policy.PlacementPolicy``): where the parts of
    one HPS request go.  ``choose(sizes, disks, rng)`` gets the parts' sizes (bytes; one part unless the
    spec's ``split`` cut the request), the :class:`~.disks.DiskState` (read it, never change it: each
    disk's :class:`~.disks.DiskInfo` in ``disks.disks``, ``disks.free(i)``, ``disks.count[i]`` live parts,
    ``disks.node_count[node]``) and the run's random generator (seeded by the spec); it returns a disk index
    per part, or None to refuse the request (only if ``refuses``: a refused request may be requeued, then
    falls back to LPS).  A part that does not fit on the disk it was given fails the request (``failed``):
    a policy that places without checking, as ``random`` does, may fail.  The built-ins are subclasses."""

    name: str = ""
    api_version: int = 1
    refuses: bool = True

    @abstractmethod  # (no ABCMeta: marks the method a subclass must define; iolab's loader reads it)
    def choose(self, sizes: Sequence[int], disks: DiskState, rng: np.random.Generator) -> list[int] | None:
        raise NotImplementedError(f"{type(self).__name__} must define choose(sizes, disks, rng)")  # pragma: no cover


class RandomPlacement(PlacementPolicy):
    name = "random"
    refuses = False

    def choose(self, sizes: Sequence[int], state: DiskState, rng: np.random.Generator) -> list[int] | None:
        return [int(rng.integers(len(state))) for _ in sizes]


class WorstFit(PlacementPolicy):
    name = "worst-fit"
    refuses = False

    def choose(self, sizes: Sequence[int], state: DiskState, rng: np.random.Generator) -> list[int] | None:
        view = Tentative(state)
        out = []
        for size in sizes:
            free = [view.free(i) for i in range(len(state))]
            best = max(free)
            tied = [i for i, f in enumerate(free) if f == best]  # each tied disk once
            i = tied[0] if len(tied) == 1 else tied[int(rng.integers(len(tied)))]
            view.take(i, size)
            out.append(i)
        return out


class RoundRobin(PlacementPolicy):
    name = "round-robin"
    refuses = True

    def __init__(self) -> None:
        self.cursor = 0

    def choose(self, sizes: Sequence[int], state: DiskState, rng: np.random.Generator) -> list[int] | None:
        view = Tentative(state)
        n = len(state)
        cursor = self.cursor % n
        out = []
        for size in sizes:
            for step in range(n):
                i = (cursor + step) % n
                if view.free(i) >= size:
                    break
            else:
                return None  # cursor unchanged: a refused request leaves no trace
            view.take(i, size)
            out.append(i)
            cursor = (i + 1) % n
        self.cursor = cursor
        return out


class BestBandwidth(PlacementPolicy):
    name = "best-bandwidth"
    refuses = True

    @staticmethod
    def bandwidth(view: Tentative, i: int) -> float:
        d = view.state.disks[i]
        return min(d.write_bw / (view.count(i) + 1), d.network_bw / (view.node_count(i) + 1))

    def choose(self, sizes: Sequence[int], state: DiskState, rng: np.random.Generator) -> list[int] | None:
        view = Tentative(state)
        out = []
        for size in sizes:
            fit = [i for i in range(len(state)) if view.free(i) >= size]
            if not fit:
                return None
            i = max(fit, key=lambda k: (self.bandwidth(view, k), view.free(k), -k))
            view.take(i, size)
            out.append(i)
        return out


STRATEGIES = {"random": RandomPlacement, "round-robin": RoundRobin, "worst-fit": WorstFit,
              "best-bandwidth": BestBandwidth}


def get_strategy(name: str) -> Strategy:
    key = name.strip().lower().replace("_", "-")
    try:
        return STRATEGIES[key]()
    except KeyError:
        raise ValueError(f"unknown placement strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
