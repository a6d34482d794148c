"""Metrics, computed from traces only (definitions in docs/metrics.md)."""

from .io import AppMetrics, IOMetrics, geometric_mean, io_metrics

__all__ = ["AppMetrics", "IOMetrics", "geometric_mean", "io_metrics"]
