"""A batch run's jobs table (the trace's ``jobs`` rows) and platform attributes, written the same way by
both runtimes.

Each job's row holds what its description says (submit time, nodes, runtime, its pure compute
time by :func:`~.steps.compute_seconds`, its bytes) and what the run did with it (start, end,
status (:func:`trace_status`), tier, nodes held, time in I/O).  The simulator
(:func:`iolab.sim.batch.run.simulate_batch`) and the real run (:func:`iolab.emulator.batch.trace.batch_trace`)
hand their kernel's job states here, plus what only they know (a real run's ends, statuses and hosts), and
take the platform's and the scheduler's attributes from :func:`platform_attrs` (the scheduler named by
:func:`scheduler_label`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from iolab.middleware.policies.batch.kernel import ENDED, FUTURE, QUEUED
from iolab.middleware.policies.batch.nodes import ranges
from iolab.workloads.steps import compute_times


def node_ranges(masks: Sequence[int]) -> list[str]:
    """Node sets (masks) as text, each distinct set written once (SDSC-BLUE: 243 306 jobs, most of
    them on a few hundred distinct sets)."""
    text = dict.fromkeys(masks)
    for m in text:
        text[m] = ranges(m)
    return list(map(text.__getitem__, masks))


#: the jobs columns a batch trace's metrics read (iolab.metrics.batch_trace.trace_batch_metrics)
METRIC_COLUMNS: tuple[str, ...] = ("id", "release", "start", "end", "nodes", "tier")


def job_columns(states: Sequence[Any], lps_rate: float, *, io_time: Sequence[float] | None = None,
                ends: Sequence[float] | None = None, statuses: Sequence[str] | None = None,
                hosts: Sequence[str] | None = None, node_ids: bool = True,
                metrics_only: bool = False) -> dict[str, Sequence]:
    """The ``jobs`` columns of the kernel's job states ``states`` (in submission order), for
    :meth:`iolab.trace.TraceBuilder.extend_columns`.  Left out: ``io_time`` NaN (not kept), ``ends``
    the states' ends, ``statuses`` ok, ``hosts`` empty; ``node_ids`` False: the node sets not written
    as text (the column empty: a trace nobody reads but its metrics).  ``metrics_only``: only the
    :data:`METRIC_COLUMNS`, for a trace read for its metrics alone (no job's description, I/O time or
    node set computed).

    Each field is read once, as a column (a list comprehension per field: attribute reads on slots are the
    interpreter's fastest; a getter of several fields at once is slower), the compute time from those
    columns (:func:`~.steps.compute_times`, the same floats; SDSC-BLUE: 243 306 rows)."""
    n = len(states)
    queued = [s.queued for s in states]
    if metrics_only:
        return {"id": [q.id for q in queued], "release": [q.submit for q in queued],
                "start": [s.start for s in states], "end": ends if ends is not None else [s.end for s in states],
                "nodes": [q.nodes for q in queued], "tier": [s.tier for s in states]}
    jobs = [s.job for s in states]
    runtime = [j.runtime for j in jobs]
    io = [i + o + d for i, o, d in zip([j.input for j in jobs], [j.output for j in jobs], [j.data for j in jobs])]
    cols: dict[str, Sequence] = {
        "id": [q.id for q in queued], "rank": [s.index for s in states],
        "nodes": [q.nodes for q in queued], "release": [q.submit for q in queued],
        "start": [s.start for s in states], "end": ends if ends is not None else [s.end for s in states],
        "io_node": [-1] * n, "pack": [-1] * n, "status": statuses if statuses is not None else ["ok"] * n,
        "tier": [s.tier for s in states], "min_time": list(map(float, runtime)),
        "compute_time": compute_times(runtime, io, lps_rate), "io_volume": list(map(float, io)),
        "io_time": io_time if io_time is not None else [math.nan] * n,
    }
    if node_ids:
        cols["node_ids"] = node_ranges([s.node_ids for s in states])
    if hosts is not None:
        cols["hosts"] = hosts
    return cols


def trace_status(s) -> str:
    """A job's status in a trace: its own once it ended; in a trace cut short, ``killed`` if it held nodes
    when the run stopped, else ``pending``."""
    if s.state in ENDED:
        return s.status
    return "pending" if s.state in (FUTURE, QUEUED) else "killed"


def scheduler_label(spec, scheduler=None) -> str:
    """What a batch trace calls its scheduler: ``scheduler``'s name (a policy that replaced the spec's, such as
    an external decision process's adapter), else the spec's."""
    return (scheduler.name if scheduler is not None else "") or spec.scheduler.label


def platform_attrs(spec, label: str) -> dict[str, Any]:
    """The trace attributes of a batch run's platform and scheduler (``label``: its name in the trace), the
    same in both runtimes; with I/O nodes, theirs and the node allocation's."""
    p = spec.platform
    out: dict[str, Any] = dict(scheduler=label, policy=label, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                               lps_rate=p.lps.rate, hps_rate=p.hps.rate, stage_rate=p.stage_rate, unit_bytes=1)
    if p.io_nodes is not None:
        from iolab.middleware.policies.io_guard import policy_label  # lazy: the I/O policies, for I/O nodes only

        out.update(io_nodes=p.io_nodes, nodes_per_io_node=p.io_nodes_span, io_node_rate=p.io_node.rate,
                   io_node_policy=policy_label(p.io_node.policy), allocation=spec.allocation.label)
    return out


__all__ = ["METRIC_COLUMNS", "job_columns", "node_ranges", "platform_attrs", "scheduler_label", "trace_status"]
