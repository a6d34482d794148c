"""The storage platform a placement decides on: disks, their nodes, live allocations.

monniot2023 §4.3: servers -> nodes (network bandwidth) -> disks (capacity,
read and write bandwidth).  :class:`DiskState` holds the bytes each live
allocation occupies on each disk and refuses, all or nothing, any commit
that would exceed a disk's capacity.  Sizes are whole bytes (ints) so that
sums are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence


@dataclass(frozen=True, slots=True)
class DiskInfo:
    id: str
    node: str
    server: str
    capacity: int  # bytes
    read_bw: float  # bytes/s
    write_bw: float  # bytes/s
    network_bw: float  # bytes/s of the node's link

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DiskInfo":
        """From one entry of ``iolab.specs.batch.HPSTier.layout()``."""
        return cls(id=str(d["id"]), node=str(d["node"]), server=str(d.get("server", "")),
                   capacity=int(d["capacity"]), read_bw=float(d["read_bw"]), write_bw=float(d["write_bw"]),
                   network_bw=float(d["network_bw"]))


def make_layout(n_nodes: int, disks_per_node: int, capacity: int, *, disk_bw: float = 1e9,
                network_bw: float = 1e10, server: str = "s0") -> list[DiskInfo]:
    """A homogeneous layout (monniot2023 Table 4: 1N1D, 1NnD, nN1D, nNnD)."""
    return [DiskInfo(id=f"n{n}.d{d}", node=f"n{n}", server=server, capacity=int(capacity),
                     read_bw=disk_bw, write_bw=disk_bw, network_bw=network_bw)
            for n in range(n_nodes) for d in range(disks_per_node)]


class DiskState:
    """Live allocations on a set of disks.  Pure bookkeeping; no clock."""

    def __init__(self, disks: Iterable[DiskInfo | Mapping[str, Any]]):
        self.disks: tuple[DiskInfo, ...] = tuple(d if isinstance(d, DiskInfo) else DiskInfo.from_dict(d) for d in disks)
        if not self.disks:
            raise ValueError("a storage platform needs at least one disk")
        ids = [d.id for d in self.disks]
        if len(set(ids)) != len(ids):
            raise ValueError("disk ids must be unique")
        for d in self.disks:
            if d.capacity <= 0 or d.write_bw <= 0 or d.read_bw <= 0 or d.network_bw <= 0:
                raise ValueError(f"disk {d.id!r}: capacity and bandwidths must be > 0")
        self.index = {d.id: i for i, d in enumerate(self.disks)}
        self.used: list[int] = [0] * len(self.disks)
        self.count: list[int] = [0] * len(self.disks)  # live allocation parts per disk
        self._node_of = [d.node for d in self.disks]
        self.node_count: dict[str, int] = {d.node: 0 for d in self.disks}
        self.live: dict[str, tuple[tuple[int, int], ...]] = {}  # key -> ((disk, bytes), ...)

    def __len__(self) -> int:
        return len(self.disks)

    @property
    def capacity(self) -> int:
        return sum(d.capacity for d in self.disks)

    @property
    def total_used(self) -> int:
        return sum(self.used)

    def free(self, i: int) -> int:
        return self.disks[i].capacity - self.used[i]

    def fits(self, parts: Sequence[tuple[int, int]]) -> int | None:
        """``None`` if every part fits together; else the index of a disk that overflows."""
        need: dict[int, int] = {}
        for disk, size in parts:
            need[disk] = need.get(disk, 0) + size
        for disk, size in need.items():
            if size > self.free(disk):
                return disk
        return None

    def commit(self, key: str, parts: Sequence[tuple[int, int]]) -> None:
        """Record an allocation of every part, or of none (raises ``RuntimeError``)."""
        if key in self.live:
            raise RuntimeError(f"allocation {key!r} already exists")
        bad = self.fits(parts)
        if bad is not None:
            raise RuntimeError(f"allocation {key!r} does not fit on disk {self.disks[bad].id!r}")
        for disk, size in parts:
            self.used[disk] += size
            self.count[disk] += 1
            self.node_count[self._node_of[disk]] += 1
        self.live[key] = tuple(parts)

    def release(self, key: str) -> tuple[tuple[int, int], ...]:
        try:
            parts = self.live.pop(key)
        except KeyError:
            raise RuntimeError(f"no live allocation {key!r}") from None
        for disk, size in parts:
            self.used[disk] -= size
            self.count[disk] -= 1
            self.node_count[self._node_of[disk]] -= 1
        return parts
