"""StorAlloc disk placement (monniot2023 §4.2-4.3) as pure policies.

    alloc = StorageAllocator(make_layout(4, 2, 4 * GB), "best-bandwidth",
                             split_threshold=200 * GB, requeue_retries=5, requeue_period=300)
    out = alloc.request("job1", 500 * GB, now)   # allocated | refused | failed | retry (at out.retry_at)
    alloc.release("job1", later)
    alloc.log()                                  # rows for iolab.metrics.batch.storage_metrics
"""

from iolab.middleware.policies.placement.allocator import (
    ALLOCATED, FAILED, GB, LOG_STATUSES, REFUSED, RETRY, AllocationRecord, Outcome, StorageAllocator, split_sizes,
)
from iolab.middleware.policies.placement.disks import DiskInfo, DiskState, make_layout
from iolab.middleware.policies.placement.strategies import (
    STRATEGIES, BestBandwidth, PlacementPolicy, RandomPlacement, RoundRobin, Strategy, Tentative, WorstFit, get_strategy,
)

__all__ = [
    "ALLOCATED", "DiskState", "FAILED", "GB", "LOG_STATUSES", "REFUSED", "RETRY", "STRATEGIES", "AllocationRecord",
    "BestBandwidth", "DiskInfo", "Outcome", "PlacementPolicy", "RandomPlacement", "RoundRobin", "StorageAllocator",
    "Strategy", "Tentative", "WorstFit", "get_strategy", "make_layout", "split_sizes",
]
