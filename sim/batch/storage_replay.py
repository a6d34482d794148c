"""Discrete-event replay of storage requests through StorAlloc (monniot2023 §4.4).

A storage request is monniot2023 §4.2's triple: a capacity, an allocation
time (duration) and a submission time.  The replay is a heap of events
``(time, priority, seq)`` (SimPy's core, without the generators):

- at ``submit`` the request goes to :meth:`StorageAllocator.request`;
- an ``allocated`` request is released at *grant time* + ``duration`` (a
  requeued request that lands late keeps its full duration: Table 2's
  "postpone starting time and retry");
- a ``retry`` outcome schedules the same request again at ``retry_at``;
- ``refused`` and ``failed`` requests end there (the job falls back to the
  parallel file system).

At one instant, releases go before requests and retries (a disk freed at
``t`` is free for a request at ``t``: the same convention as
``iolab.metrics.batch``'s disk curves); requests at one instant keep their
input order, so the replay is deterministic for a seed (the seed only feeds
the random and worst-fit tie draws).

:func:`monniot_layout` builds the four platforms of Table 4 for a total
capacity: 8 disks in all (Table 4: 1/2/4/8 TB disks for 8/16/32/64 TB),
except 1N1D's single disk.  Bandwidths are not in the paper's Table 4; they
are StorAlloc's published platform files (``config/systems/infra*TB``),
which agree with the SSDs of the paper's Table 5:

========  =======  ==============  ===========================================
layout    nodes    disks per node  bandwidths
========  =======  ==============  ===========================================
1N1D      1        1               disk 1.465 GB/s write, 1.565 GB/s read
                                   (StorAlloc's "fake RAID 10": half an SSD)
1NnD      1        8               disk 2.93 GB/s write, 3.13 GB/s read
nN1D      8        1               same disks
nNnD      4        2               same disks
all                                node network 12.5 GB/s (100 Gb Ethernet)
========  =======  ==============  ===========================================

    reqs = [StorageRequest("j1", submit=0, size=300 * GB, duration=3600), ...]
    res = replay_layout(reqs, "nNnD", 32 * TB, "best-bandwidth", split=200 * GB, seed=1)
    res.status["j1"]      # allocated | refused | failed
    res.metrics()         # monniot2023 Table 3 (iolab.metrics.batch.StorageMetrics)
    res.trace             # iolab trace: the allocations table, attrs layout/strategy/capacity/split/seed
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from iolab.metrics.batch import storage_metrics
from iolab.trace import TraceBuilder
from iolab.middleware.policies.placement import (
    ALLOCATED, FAILED, GB, REFUSED, RETRY, AllocationRecord, DiskInfo, StorageAllocator,
)

TB = 10**12

# monniot2023 Table 4 layouts: (storage nodes, disks per node).
LAYOUTS: dict[str, tuple[int, int]] = {"1N1D": (1, 1), "1NnD": (1, 8), "nN1D": (8, 1), "nNnD": (4, 2)}
DISK_WRITE_BW = 2.93e9   # bytes/s, Intel SSDPE2KX080T8 in StorAlloc's platform files (paper Table 5: 2.93)
DISK_READ_BW = 3.13e9
RAID_WRITE_BW = 1.465e9  # 1N1D's single volume in StorAlloc's platform files
RAID_READ_BW = 1.565e9
NETWORK_BW = 12.5e9      # 100 Gb/s Ethernet per storage node
# monniot2023 Table 5's heterogeneous platform (32 TB): kind -> (nodes, disks per node, share of the total
# capacity, disk write/read bandwidth, node network).  Its bandwidths are the table's numbers read as GB/s for
# the disks (StorAlloc's SSD files give 2.93 GB/s, as Table 4's) and as Gb/s for the network (200 and 100 Gb/s).
HETERO = "hetero"
HETERO_KINDS: dict[str, tuple[int, int, float, float, float, float]] = {
    "ssd": (2, 5, 0.5, 2.93e9, 3.13e9, 25e9),  # 5 x 1.6 TB SSD per node, 16 TB of the 32
    "hdd": (4, 2, 0.5, 0.08e9, 0.08e9, 12.5e9),  # 2 x 2 TB HDD per node, 16 TB of the 32
}
PAPER_CAPACITIES_TB = (8, 16, 32, 64)
PAPER_SUM_CAP = 1.6e15   # monniot2023 §5.2: sum of the year's requests
PAPER_SPLIT = 200 * GB   # Table 2 / Table 4
_RELEASE, _REQUEST = 0, 1  # event priorities at one instant


@dataclass(frozen=True, slots=True)
class StorageRequest:
    """``size`` bytes from ``submit`` for ``duration`` seconds (monniot2023 §4.2)."""

    job: str
    submit: float
    size: int
    duration: float

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"request {self.job!r}: size must be > 0 bytes, got {self.size}")
        if self.duration < 0 or self.submit != self.submit or self.duration != self.duration:
            raise ValueError(f"request {self.job!r}: needs a finite submit time and a duration >= 0")


def monniot_layout(layout: str, total_capacity: float, *, disk_write_bw: float | None = None,
                   disk_read_bw: float | None = None, network_bw: float = NETWORK_BW) -> list[DiskInfo]:
    """One of Table 4's layouts holding ``total_capacity`` bytes (split evenly over its disks), or Table 5's
    heterogeneous platform (``hetero``: SSD and HDD nodes, half the capacity each; disk ids ``ssdI.dJ``
    and ``hddI.dJ``)."""
    if layout == HETERO:
        return hetero_layout(total_capacity)
    try:
        nodes, per_node = LAYOUTS[layout]
    except KeyError:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}") from None
    n = nodes * per_node
    total = int(round(total_capacity))
    if total < n:
        raise ValueError(f"total capacity {total} B cannot be split over {n} disks")
    single = n == 1
    wbw = disk_write_bw or (RAID_WRITE_BW if single else DISK_WRITE_BW)
    rbw = disk_read_bw or (RAID_READ_BW if single else DISK_READ_BW)
    q, r = divmod(total, n)  # capacities sum exactly to the total
    return [DiskInfo(id=f"n{i}.d{d}", node=f"n{i}", server="s0", capacity=q + (1 if i * per_node + d < r else 0),
                     read_bw=rbw, write_bw=wbw, network_bw=network_bw)
            for i in range(nodes) for d in range(per_node)]


def hetero_layout(total_capacity: float) -> list[DiskInfo]:
    """monniot2023 Table 5 holding ``total_capacity`` bytes (its 32 TB scaled): :data:`HETERO_KINDS`."""
    out = []
    for kind, (nodes, per_node, share, wbw, rbw, net) in HETERO_KINDS.items():
        n = nodes * per_node
        q, r = divmod(int(round(total_capacity * share)), n)
        if q < 1:
            raise ValueError(f"total capacity {total_capacity:g} B cannot be split over Table 5's disks")
        out += [DiskInfo(id=f"{kind}{i}.d{d}", node=f"{kind}{i}", server="s0",
                         capacity=q + (1 if i * per_node + d < r else 0), read_bw=rbw, write_bw=wbw, network_bw=net)
                for i in range(nodes) for d in range(per_node)]
    return out


def disk_fill_times(log: Sequence[AllocationRecord], capacity: dict[str, int], full: float = 0.995
                    ) -> dict[str, tuple[float | None, float | None]]:
    """Per disk: when it first held an allocation and when its allocated bytes first reached ``full`` of its
    capacity (None: never), from a replay's log (releases at an instant before allocations, as the replay)."""
    events: dict[str, list[tuple[float, int, int]]] = {d: [] for d in capacity}
    for r in log:
        if r.status == ALLOCATED and r.disk in events:
            events[r.disk].append((float(r.alloc), 1, int(r.bytes)))
            if r.free is not None:
                events[r.disk].append((float(r.free), 0, -int(r.bytes)))
    out = {}
    for d, ev in events.items():
        used, first, filled = 0, None, None
        for t, _, b in sorted(ev):
            used += b
            if b > 0 and first is None:
                first = t
            if filled is None and used >= full * capacity[d]:
                filled = t
        out[d] = (first, filled)
    return out


@dataclass
class ReplayResult:
    log: tuple[AllocationRecord, ...]
    status: dict[str, str]          # job -> allocated | refused | failed
    granted_at: dict[str, float]    # allocated jobs: time the allocation landed
    disks: tuple[DiskInfo, ...]
    end_time: float                 # time of the last event
    events: int
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def disk_capacity(self) -> dict[str, int]:
        return {d.id: d.capacity for d in self.disks}

    def metrics(self):
        """monniot2023 Table 3 (``iolab.metrics.batch.storage_metrics``) over the replay's span."""
        return storage_metrics(self.log, self.disk_capacity, end_time=self.end_time)

    @property
    def trace(self):
        """The iolab trace: the ``allocations`` table (free = NaN where none) and the run's attributes."""
        tb = TraceBuilder(**self.attrs)
        tb.extend("allocations", [(r.job, r.disk, float(r.bytes), float(r.alloc),
                                   float("nan") if r.free is None else float(r.free), r.status) for r in self.log])
        return tb.build(events=self.events, end_time=self.end_time)


def replay(requests: Sequence[StorageRequest], allocator: StorageAllocator, *,
           attrs: dict[str, Any] | None = None) -> ReplayResult:
    """Replay ``requests`` through ``allocator`` until every request has ended and every allocation is freed."""
    heap: list[tuple[float, int, int, int]] = []  # (time, priority, seq, request index)
    seen: set[str] = set()
    for i, r in enumerate(requests):
        if r.job in seen:
            raise ValueError(f"two requests for job {r.job!r}; job ids must be unique")
        seen.add(r.job)
        heap.append((float(r.submit), _REQUEST, i, i))
    heapq.heapify(heap)
    seq = len(requests)
    status: dict[str, str] = {}
    granted: dict[str, float] = {}
    now = float(min((r.submit for r in requests), default=0.0))
    events = 0
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        now, prio, _, i = pop(heap)
        events += 1
        r = requests[i]
        if prio == _RELEASE:
            allocator.release(r.job, now)
            continue
        out = allocator.request(r.job, r.size, now)
        if out.status == ALLOCATED:
            status[r.job] = ALLOCATED
            granted[r.job] = now
            push(heap, (now + float(r.duration), _RELEASE, seq, i))
            seq += 1
        elif out.status == RETRY:
            push(heap, (float(out.retry_at), _REQUEST, seq, i))
            seq += 1
        elif out.status in (REFUSED, FAILED):
            status[r.job] = out.status
        else:  # pragma: no cover - the allocator's contract
            raise RuntimeError(f"unexpected outcome {out.status!r} for {r.job!r}")
    return ReplayResult(log=allocator.log(), status=status, granted_at=granted, disks=allocator.disks,
                        end_time=now, events=events, attrs=dict(attrs or {}))


def replay_layout(requests: Sequence[StorageRequest], layout: str, capacity: float, strategy: str, *,
                  split: float | None = PAPER_SPLIT, requeue_retries: int = 0, requeue_period: float = 300.0,
                  seed: int = 0, disks: Iterable[DiskInfo] | None = None) -> ReplayResult:
    """Build the layout (or take ``disks``), the allocator, and replay; the trace carries the settings."""
    disks = list(disks) if disks is not None else monniot_layout(layout, capacity)
    alloc = StorageAllocator(disks, strategy, split_threshold=split, requeue_retries=requeue_retries,
                             requeue_period=requeue_period, rng=seed)
    attrs = dict(runtime="sim-storage-replay", layout=layout, strategy=alloc.strategy.name,
                 capacity=float(sum(d.capacity for d in disks)), split=float(split) if split else 0.0,
                 requeue_retries=requeue_retries, requeue_period=requeue_period, seed=seed,
                 requests=len(requests), disks=len(disks))
    return replay(requests, alloc, attrs=attrs)


def requests_from_jobs(jobs: Iterable[Any], *, times: Sequence[float] | None = None,
                       duration: str = "runtime") -> list[StorageRequest]:
    """Storage requests of batch jobs (``iolab.specs.batch.Job``): size = ``job.storage``.

    ``times`` overrides the request times (e.g. the Theta jobs' start times);
    else ``job.submit``.  ``duration``: the job attribute used as the
    allocation time (``runtime`` or ``walltime``).  Jobs without storage are
    skipped (they ask for nothing).
    """
    jobs = list(jobs)
    if times is not None and len(times) != len(jobs):
        raise ValueError(f"{len(times)} times for {len(jobs)} jobs")
    out = []
    for k, j in enumerate(jobs):
        size = int(round(j.storage or 0))
        if size <= 0:
            continue
        t = float(times[k]) if times is not None else float(j.submit)
        out.append(StorageRequest(str(j.id), t, size, float(getattr(j, duration))))
    return out


def week_scale(sum_cap: float, paper_sum_cap: float = PAPER_SUM_CAP) -> float:
    """Factor that keeps the paper's capacity-to-demand ratio: this workload's sum_cap / 1.6 PB."""
    if sum_cap <= 0:
        raise ValueError("sum_cap must be > 0")
    return float(sum_cap) / float(paper_sum_cap)


def peak_demand(requests: Sequence[StorageRequest]) -> float:
    """Largest sum of request sizes live at one instant if every request landed at its submit time."""
    ev = sorted([(r.submit, 1, r.size) for r in requests] + [(r.submit + r.duration, 0, -r.size) for r in requests])
    live = peak = 0
    for _, _, b in ev:
        live += b
        peak = max(peak, live)
    return float(peak)


__all__ = [
    "HETERO", "HETERO_KINDS", "disk_fill_times", "hetero_layout", "LAYOUTS", "NETWORK_BW", "PAPER_CAPACITIES_TB", "PAPER_SPLIT", "PAPER_SUM_CAP", "TB", "ReplayResult",
    "StorageRequest", "monniot_layout", "peak_demand", "replay", "replay_layout", "requests_from_jobs",
    "week_scale",
]
