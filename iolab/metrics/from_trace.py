"""Batch-level metrics of a trace (lackner2019 Eq. 3, turnaround, makespan)."""

from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..trace import Trace
from .batch import BatchMetrics, batch_metrics


def trace_batch_metrics(trace: Trace) -> BatchMetrics:
    """Makespan, mean turnaround, node and HPS utilisation of a batch trace."""
    if "total_nodes" not in trace.attrs:
        raise TraceError("not a batch trace (no total_nodes attribute)")
    j = trace.jobs
    ok = ~np.isnan(j["end"].astype(float))
    hps = {}
    a = trace.allocations
    for job, b in zip(a["job"], a["bytes"]):
        hps[job] = hps.get(job, 0.0) + float(b)
    hb = np.array([hps.get(x, 0.0) for x in j["id"][ok]])
    return batch_metrics(j["release"][ok], j["start"][ok], j["end"][ok], j["nodes"][ok],
                         int(trace.attrs["total_nodes"]), j["tier"][ok], hb,
                         float(trace.attrs.get("hps_capacity", 0.0)))
