"""Metrics, computed from traces only (definitions in docs/metrics.md)."""

from iolab.metrics.batch import (
    BatchMetrics, StorageMetrics, batch_metrics, hps_jobs, hps_utilisation, makespan, mean_turnaround,
    node_utilisation, pooled_utilisation, storage_metrics, total_completion, total_flow, turnaround,
    used_hps_byte_seconds, used_node_seconds,
)
from iolab.metrics.io import (
    AppMetrics, IOMetrics, geometric_mean, io_makespan, io_metrics, node_times, pack_max_slowdowns, pack_spans,
    sequential_makespan, slowdown,
)
from iolab.metrics.tnap import CLASSES as TNAP_CLASSES, TnapSummary, tnap, tnap_summary

__all__ = [
    "AppMetrics", "BatchMetrics", "IOMetrics", "StorageMetrics", "batch_metrics", "geometric_mean", "hps_jobs",
    "hps_utilisation", "io_makespan", "io_metrics", "makespan", "mean_turnaround", "node_times", "node_utilisation",
    "pack_max_slowdowns", "pack_spans", "pooled_utilisation", "sequential_makespan", "slowdown", "storage_metrics",
    "total_completion", "total_flow", "turnaround", "used_hps_byte_seconds", "used_node_seconds",
    "TNAP_CLASSES", "TnapSummary", "tnap", "tnap_summary",
]
