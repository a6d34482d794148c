"""The I/O level's apps, their requests and the pack turns, for the I/O kernel.

The I/O kernel (:class:`~.io_kernel.IOKernel`) holds them for the simulator
(``iolab.sim.io.event``, ``iolab.sim.io.stepped``) and the Ray arbiter's state
(``iolab.middleware.arbiter_state``), which differ only in how time advances and in what really
happens; what an app *is* to the I/O level, what it asks its I/O node for, and when
it may start are written here, once:

- :class:`IOApp`: one app as the I/O level sees it, from a spec and a plan (its
  phases, contention-free times T_i(b) per phase and in total, compute time, I/O
  volume, I/O node, pack); :func:`io_apps` builds them all;
- :meth:`IOApp.request`: the one place an :class:`~.io_order.IORequest` is built;
- :class:`PackTurns`: which pack of each I/O node runs now, when an app may start,
  and which pack opens when an app ends.

Times are spec seconds; the caller passes ``now`` (no clock is read here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Sequence

from iolab.middleware.policies.io_order import IORequest

COMPUTE = "compute"
KINDS = (COMPUTE, "write", "read")
_KIND_SET = frozenset(KINDS)
_new_tuple = tuple.__new__


def _period(kinds: tuple, amounts: tuple) -> tuple[tuple, tuple, int]:
    """``(kinds[:2], amounts[:2], n // 2)`` when the n phases repeat their first two, else
    ``(kinds, amounts, 1)``.  Equal means ``==`` (0.0 and -0.0 are one amount: a phase of
    -0.0 takes the period's 0.0, which no time or order can tell apart)."""
    n = len(kinds)
    if n > 2 and n % 2 == 0:
        r = n // 2
        if kinds == kinds[:2] * r and amounts == amounts[:2] * r:
            return kinds[:2], amounts[:2], r
    return kinds, amounts, 1


@dataclass(frozen=True)
class IOApp:
    """One app as the I/O level sees it (spec units and seconds).

    Built from ``kinds``/``amounts`` (a compute amount is seconds, a transfer's is
    units moved at ``bandwidth`` units/s).  ``compute_time`` and ``io_volume`` default
    to the sums of the phases; :func:`io_apps` passes the spec's own values so that
    T_i(b) = compute_time + io_volume / b is the spec's number to the last bit.

    Derived: ``min_time`` (T_i(b), carretero2020 Eq. 1), ``cf[i]`` (contention-free
    seconds of phase i) and ``done[i]`` (contention-free seconds of the phases before
    phase i, summed in phase order; ``done[len(kinds)]`` is everything).
    """

    id: str
    rank: int
    nodes: int
    release: float
    kinds: tuple[str, ...]
    amounts: tuple[float, ...]
    bandwidth: float
    io_node: int = 0
    pack: int = 0
    compute_time: float | None = None
    io_volume: float | None = None
    min_time: float = field(init=False)
    cf: tuple[float, ...] = field(init=False, repr=False)
    done: tuple[float, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        kinds, amounts = tuple(self.kinds), tuple(self.amounts)
        if len(kinds) != len(amounts):
            raise ValueError(f"app {self.id!r}: {len(kinds)} phase kinds but {len(amounts)} amounts")
        # A periodic app (compute, transfer, compute, transfer, ...: every app of the carretero
        # study, ~1 000 phases each, built once per strategy) is checked and converted one period
        # at a time; every phase's cf is its period's, the same float to the bit.
        kinds1, amounts1, reps = _period(kinds, amounts)
        amounts1 = tuple(map(float, amounts1))
        # checked as a whole first; phase by phase only to name the first bad one
        if not (_KIND_SET.issuperset(kinds1) and (not amounts1 or min(amounts1) >= 0)
                and not any(map(math.isnan, amounts1))):
            for i, (k, x) in enumerate(zip(kinds1, amounts1)):
                if k not in KINDS:
                    raise ValueError(f"app {self.id!r}: phase {i} has kind {k!r}; known: {', '.join(KINDS)}")
                if not x >= 0:
                    raise ValueError(f"app {self.id!r}: phase {i} has amount {x!r} (must be >= 0)")
        b = float(self.bandwidth)
        if not b > 0:
            raise ValueError(f"app {self.id!r}: bandwidth must be > 0, got {self.bandwidth!r}")
        cf = tuple(x if k == COMPUTE else x / b for k, x in zip(kinds1, amounts1)) * reps
        amounts = amounts1 * reps
        done = list(accumulate(cf, initial=0.0))  # left to right, as a running sum
        compute = self.compute_time
        if compute is None:
            compute = sum(x for k, x in zip(kinds, amounts) if k == COMPUTE)
        volume = self.io_volume
        if volume is None:
            volume = sum(x for k, x in zip(kinds, amounts) if k != COMPUTE)
        for name, value in (("kinds", kinds), ("amounts", amounts), ("bandwidth", b), ("cf", cf),
                            ("done", tuple(done)), ("compute_time", float(compute)),
                            ("io_volume", float(volume)), ("min_time", float(compute) + float(volume) / b)):
            object.__setattr__(self, name, value)

    @property
    def phases(self) -> int:
        return len(self.kinds)

    def request(self, phase: int, now: float, start: float, io_received: float) -> IORequest:
        """What the app's I/O node is asked when the app reaches I/O phase ``phase`` at
        ``now``, having started at ``start`` and transferred for ``io_received`` seconds."""
        done = self.done[phase]
        # In the order of IORequest's fields (tests/middleware/policies/test_io_apps.py checks them by
        # name), as one tuple given to tuple.__new__: this is the simulator's hottest
        # allocation, and the NamedTuple's own __new__ (a Python function) adds a call.
        return _new_tuple(IORequest, (self.id, self.rank, now, self.amounts[phase],  # app, rank, requested_at, volume
                                      self.cf[phase], self.min_time - done, self.min_time,  # io_time, remaining, total
                                      start, done, io_received, phase))  # start, done, io_received, phase


def io_apps(spec, plan) -> list[IOApp]:
    """Every app of an I/O experiment (``iolab.specs.io.IOExperiment``) placed by ``plan``
    (``iolab.middleware.policies.plan.Plan``), in rank order (the order of ``spec.apps``)."""
    where = plan.location()
    b = spec.platform.bandwidth
    out = []
    for rank, a in enumerate(spec.apps):
        node, pack = where[rank]
        kinds, amounts = a.phase_columns()
        out.append(IOApp(id=a.id, rank=rank, nodes=a.nodes, release=a.release, kinds=kinds, amounts=amounts,
                         bandwidth=b, io_node=node, pack=pack, compute_time=a.compute_time(),
                         io_volume=a.io_total()))
    return out


def node_packs(apps: Sequence[IOApp], io_nodes: int) -> list[list[list[int]]]:
    """No packs: one pack per I/O node holding its apps (ranks), in rank order."""
    return [[[a.rank for a in apps if a.io_node == n]] for n in range(io_nodes)]


class PackTurns:
    """When each app may start: its release, and with packs its pack's turn.

    ``packs[node]`` is the sequence of packs of that I/O node (lists of ranks).  With
    ``packed``, the packs of a node run one after the other: a pack opens when every
    app of the previous one has ended, and its apps start together once all of them
    are released.  Without, every app may start at its release.

    ``due(rank)`` is the earliest spec time ``rank`` may start (inf until its pack's
    turn); ``end(rank, t)`` says the app ended at ``t`` (ended in any way: an app that
    failed frees its pack too) and returns the ranks of the pack(s) it opened.
    """

    def __init__(self, packs: Sequence[Sequence[Sequence[int]]], releases: Sequence[float], packed: bool):
        self.packed = bool(packed)
        self.seq = [[tuple(p) for p in node if len(p)] for node in packs]
        n = len(releases)
        self._where: list[tuple[int, int]] = [(-1, -1)] * n
        for node, seq in enumerate(self.seq):
            for k, pack in enumerate(seq):
                for r in pack:
                    if not 0 <= r < n or self._where[r] != (-1, -1):
                        raise ValueError(f"packs: rank {r} is out of range or in two packs")
                    self._where[r] = (node, k)
        missing = [r for r in range(n) if self._where[r] == (-1, -1)]
        if missing:
            raise ValueError(f"packs: ranks {missing} are in no pack")
        # with packs, an app waits for every release of its pack
        self._bound = [float(x) for x in releases]
        if self.packed:
            for seq in self.seq:
                for pack in seq:
                    last = max(self._bound[r] for r in pack)
                    for r in pack:
                        self._bound[r] = last
        self._turn = [0] * len(self.seq)
        self._opened = [0.0] * len(self.seq)
        self._left = [[len(p) for p in seq] for seq in self.seq]
        self._ended = [False] * n

    def where(self, rank: int) -> tuple[int, int]:
        """(I/O node, index of the pack in that node's sequence)."""
        return self._where[rank]

    def initial(self) -> list[int]:
        """Ranks that may start without waiting for any app to end, in plan order."""
        if self.packed:
            return [r for seq in self.seq if seq for r in seq[0]]
        return [r for seq in self.seq for pack in seq for r in pack]

    def due(self, rank: int) -> float:
        if not self.packed:
            return self._bound[rank]
        node, k = self._where[rank]
        if k != self._turn[node]:
            return math.inf
        return max(self._opened[node], self._bound[rank])

    def end(self, rank: int, t: float) -> list[int]:
        if self._ended[rank]:
            return []
        self._ended[rank] = True
        node, k = self._where[rank]
        self._left[node][k] -= 1
        if not self.packed:
            return []
        opened: list[int] = []
        seq = self.seq[node]
        while self._turn[node] < len(seq) - 1 and self._left[node][self._turn[node]] == 0:
            self._turn[node] += 1
            self._opened[node] = t
            opened.extend(seq[self._turn[node]])
        return opened
