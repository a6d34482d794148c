"""The batch user's metrics of a batch trace (simulated or emulated: same schema).

Per job: wait time, run time (``end - start``: on HPS it includes the job's
stage-in and stage-out, during which it holds its nodes), turnaround and
bounded slowdown (tau = :data:`~iolab.metrics.batch.BSLD_TAU`, 10 s).
Aggregated over the jobs that ran to an end (any status): mean, median,
p95 and max.  Over time: the fraction of the cluster's nodes held by running
jobs and the fraction of the HPS capacity allocated, both summarised over
``[first submit, last end]`` of those jobs, weighted by time (their means are
lackner2019 Eq. 3's node and HPS utilisation).  :func:`trace_batch_metrics`: the few numbers
``iolab simulate`` and ``emulate`` print (makespan, mean turnaround, both utilisations).
:func:`total_io_time`: the jobs' I/O seconds summed.
Definitions: docs/metrics.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from iolab.errors import TraceError
from iolab.trace import Trace
from iolab.metrics.batch import (
    BSLD_TAU, BatchMetrics, assign_nodes, batch_metrics, bounded_slowdown, run_time, step_curve, summary,
    time_weighted_summary, turnaround, wait_time,
)

BATCH_RUNTIMES = ("sim-batch", "emulator-batch")


def is_batch_trace(trace: Trace) -> bool:
    """A batch run's trace (it records the cluster's size, ``total_nodes``)."""
    return "total_nodes" in trace.attrs or str(trace.attrs.get("runtime", "")) in BATCH_RUNTIMES


@dataclass
class BatchJobMetrics:
    id: str
    nodes: int
    tier: str
    status: str
    submit: float
    start: float
    end: float
    wait: float
    run: float
    turnaround: float
    bounded_slowdown: float


@dataclass
class BatchReport:
    jobs: int  # rows of the trace
    finished: int  # jobs with a start and an end (the ones measured)
    statuses: dict[str, int]
    total_nodes: int
    hps_capacity: float
    tau: float
    span: tuple[float, float]  # [first submit, last end] of the measured jobs
    makespan: float
    wait: dict[str, float]
    run: dict[str, float]
    turnaround: dict[str, float]
    bounded_slowdown: dict[str, float]
    utilisation: dict[str, float]  # fraction of the nodes held, over time
    hps_utilisation: dict[str, float]  # fraction of the HPS capacity allocated, over time
    per_job: list[BatchJobMetrics] = field(default_factory=list)

    def to_dict(self, per_job: bool = True) -> dict[str, Any]:
        d = asdict(self)
        d["span"] = list(self.span)
        if not per_job:
            d.pop("per_job")
        return d


def trace_batch_metrics(trace: Trace) -> BatchMetrics:
    """Makespan, mean turnaround, node and HPS utilisation of a batch trace (lackner2019 Eq. 3),
    over the jobs that ended."""
    if "total_nodes" not in trace.attrs:
        raise TraceError("not a batch trace (no total_nodes attribute)")
    j = trace.jobs
    ok = ~np.isnan(j["end"].astype(float))
    hps = {}
    a = trace.allocations
    for job, b in zip(a["job"], a["bytes"]):
        hps[job] = hps.get(job, 0.0) + float(b)
    ids = j["id"][ok]
    hb = np.array([hps.get(x, 0.0) for x in ids]) if hps else np.zeros(len(ids))  # no HPS bytes: zeros
    return batch_metrics(j["release"][ok], j["start"][ok], j["end"][ok], j["nodes"][ok],
                         int(trace.attrs["total_nodes"]), j["tier"][ok], hb,
                         float(trace.attrs.get("hps_capacity", 0.0)))


def total_io_time(trace: Trace) -> float:
    """The jobs' I/O seconds summed: the ``io_time`` column (seconds in read, write and staging phases,
    waiting for the I/O node included), a job without one (NaN: it never ran) counting 0."""
    return float(np.nansum(np.asarray(trace.jobs["io_time"], dtype=float)))


def _finished(trace: Trace) -> np.ndarray:
    j = trace.jobs
    s, e = j["start"].astype(float), j["end"].astype(float)
    return np.isfinite(s) & np.isfinite(e)


def total_nodes_of(trace: Trace) -> int:
    a = trace.attrs
    if "total_nodes" in a:
        return int(a["total_nodes"])
    if "io_nodes" in a and "nodes_per_io_node" in a:
        return int(a["io_nodes"]) * int(a["nodes_per_io_node"])
    raise TraceError("trace records neither total_nodes (batch) nor io_nodes x nodes_per_io_node (I/O)")


def node_curve(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Times and the nodes held by running jobs from each time on."""
    j = trace.jobs
    ok = _finished(trace)
    return step_curve(j["start"][ok].astype(float), j["end"][ok].astype(float), j["nodes"][ok].astype(float))


def hps_curve(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Times and the HPS bytes allocated from each time on (allocations that landed)."""
    a = trace.allocations
    ok = (a["status"] == "allocated") & np.isfinite(a["alloc"].astype(float))
    if not ok.any():
        return np.array([0.0]), np.array([0.0])
    alloc = a["alloc"][ok].astype(float)
    free = a["free"][ok].astype(float)
    end = float(np.nanmax(trace.jobs["end"].astype(float))) if _finished(trace).any() else float(alloc.max())
    free = np.where(np.isfinite(free), free, max(end, float(alloc.max())))  # never freed: held to the end
    return step_curve(alloc, free, a["bytes"][ok].astype(float))


def job_nodes(trace: Trace) -> list[list[int]]:
    """Node ids of every job of the trace (empty for jobs that never ran).

    From the ``hosts`` column where the run recorded it (``n0,n3``: the
    emulator), else assigned: each job takes the lowest free ids at its start.
    """
    j = trace.jobs
    ok = _finished(trace)
    hosts = [str(h) for h in j["hosts"]]
    if all(h for h, f in zip(hosts, ok) if f) and ok.any():
        try:
            return [[int(x.strip().lstrip("n")) for x in h.split(",")] if f else [] for h, f in zip(hosts, ok)]
        except ValueError:
            pass  # host names that are not n<k>: assign ids instead
    idx = np.flatnonzero(ok)
    ids = assign_nodes(j["start"][idx].astype(float), j["end"][idx].astype(float), j["nodes"][idx],
                       total_nodes_of(trace))
    out: list[list[int]] = [[] for _ in range(len(j))]
    for k, i in enumerate(idx):
        out[i] = ids[k]
    return out


def batch_report(trace: Trace, tau: float = BSLD_TAU) -> BatchReport:
    if not is_batch_trace(trace):
        raise TraceError("not a batch trace (no total_nodes attribute)")
    j = trace.jobs
    if len(j) == 0:
        raise TraceError("trace has no jobs")
    ok = _finished(trace)
    sub = j["release"][ok].astype(float)
    st = j["start"][ok].astype(float)
    en = j["end"][ok].astype(float)
    w = wait_time(sub, st)
    ta = turnaround(sub, en)
    bs = bounded_slowdown(sub, st, en, tau)
    run = run_time(st, en)
    per_job = [
        BatchJobMetrics(id=str(i), nodes=int(n), tier=str(t), status=str(s), submit=float(a), start=float(b),
                        end=float(c), wait=float(x), run=float(r), turnaround=float(y), bounded_slowdown=float(z))
        for i, n, t, s, a, b, c, x, r, y, z in zip(j["id"][ok], j["nodes"][ok], j["tier"][ok], j["status"][ok],
                                                   sub, st, en, w, run, ta, bs)
    ]
    statuses: dict[str, int] = {}
    for s in j["status"]:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    total = total_nodes_of(trace)
    cap = float(trace.attrs.get("hps_capacity", 0.0) or 0.0)
    if ok.any():
        t0, t1 = float(sub.min()), float(en.max())
        times, level = node_curve(trace)
        util = time_weighted_summary(times, level / total, t0, t1)
        if cap > 0:
            ht, hl = hps_curve(trace)
            hps = time_weighted_summary(ht, hl / cap, t0, t1)
        else:
            hps = summary([])
    else:
        t0 = t1 = math.nan
        util = hps = summary([])
    return BatchReport(
        jobs=len(j), finished=int(ok.sum()), statuses=statuses, total_nodes=total, hps_capacity=cap, tau=tau,
        span=(t0, t1), makespan=t1 - t0, wait=summary(w), run=summary(run), turnaround=summary(ta),
        bounded_slowdown=summary(bs), utilisation=util, hps_utilisation=hps, per_job=per_job,
    )


__all__ = ["BATCH_RUNTIMES", "BatchJobMetrics", "BatchReport", "batch_report", "hps_curve", "is_batch_trace",
           "job_nodes", "node_curve", "total_io_time", "total_nodes_of", "trace_batch_metrics"]
