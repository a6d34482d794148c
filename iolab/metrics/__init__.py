"""Metrics, computed from traces only (definitions in docs/metrics.md).

The I/O level's metrics are imported at their first use (a module ``__getattr__``): ``from iolab.metrics
import io_metrics`` works as ever, and a batch run does not load them.
"""

from iolab.metrics.batch import (
    BatchMetrics, StorageMetrics, batch_metrics, hps_jobs, hps_utilisation, makespan, mean_turnaround,
    node_utilisation, pooled_utilisation, storage_metrics, total_completion, total_flow, turnaround,
    used_hps_byte_seconds, used_node_seconds,
)
from iolab.metrics.tnap import CLASSES as TNAP_CLASSES, TnapSummary, tnap, tnap_summary

_IO_METRICS = frozenset({"AppMetrics", "IOMetrics", "geometric_mean", "io_makespan", "io_metrics", "node_times",
                         "pack_max_slowdowns", "pack_spans", "sequential_makespan", "slowdown"})


def __getattr__(name: str):
    if name in _IO_METRICS:
        from iolab.metrics import io  # lazy: the I/O level's metrics, for whoever asks for them

        return getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AppMetrics", "BatchMetrics", "IOMetrics", "StorageMetrics", "batch_metrics", "geometric_mean", "hps_jobs",
    "hps_utilisation", "io_makespan", "io_metrics", "makespan", "mean_turnaround", "node_times", "node_utilisation",
    "pack_max_slowdowns", "pack_spans", "pooled_utilisation", "sequential_makespan", "slowdown", "storage_metrics",
    "total_completion", "total_flow", "turnaround", "used_hps_byte_seconds", "used_node_seconds",
    "TNAP_CLASSES", "TnapSummary", "tnap", "tnap_summary",
]
