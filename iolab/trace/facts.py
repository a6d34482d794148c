"""The facts every trace of a run holds, checked before a trace is reported or exported.

A trace file is data a user can edit or damage: a job that ends before it starts would give a negative
makespan ("-11 d") and export negative run times; NaN starts would give "10 ok" with no metrics; a NaN
attribute would end in a traceback.  :func:`check_trace` names the first fact that fails (exit 2):

- the numeric attributes the metrics read (``total_nodes``, the rates, ``bandwidth``, ...) are finite
  numbers, the counts integers >= 1;
- each job's ``release`` is finite and >= 0, its ``nodes`` an integer from 1 to the machine's nodes
  (``total_nodes``, or ``io_nodes x nodes_per_io_node`` of an I/O trace);
- a ``start`` or an ``end`` is finite where it is known (NaN only for a job that did not start or end:
  never for one whose status is ``ok``), and ``end >= start >= release``;
- each phase's ``start`` and ``end`` are finite and ``end >= start``.

The comparisons allow :data:`SLACK` seconds (a real run converts wall clock readings to spec seconds).
"""

from __future__ import annotations

import math

import numpy as np

from iolab.errors import TraceError
from iolab.trace.model import Trace

__all__ = ["SLACK", "check_trace", "first_problem"]

SLACK = 1e-3  # seconds two times of one job may disagree by (wall clock readings converted)
_COUNTS = ("total_nodes", "io_nodes", "nodes_per_io_node")  # integer attributes >= 1
_NUMBERS = ("hps_capacity", "lps_rate", "hps_rate", "stage_rate", "bandwidth", "unit_bytes", "time_scale",
            "bytes_scale", "wall_seconds", "dt", "decisions", "events")  # finite numbers >= 0


def _attribute_problem(attrs: dict) -> str | None:
    for name in _COUNTS + _NUMBERS:
        if name not in attrs:
            continue
        v = attrs[name]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            if name == "dt" and (v is None or v == ""):  # an event-mode I/O run has no step
                continue
            return f"attribute {name} is {v!r}, not a number"
        x = float(v)
        if not math.isfinite(x) or x < 0:
            return f"attribute {name} is {x!r}: it must be a finite number >= 0"
        if name in _COUNTS and (x < 1 or x != int(x)):
            return f"attribute {name} is {x!r}: it must be an integer >= 1"
    return None


def _machine_nodes(attrs: dict) -> float:
    if "total_nodes" in attrs:
        return float(attrs["total_nodes"])
    if "io_nodes" in attrs and "nodes_per_io_node" in attrs:
        return float(attrs["io_nodes"]) * float(attrs["nodes_per_io_node"])
    return math.inf


def first_problem(trace: Trace) -> str | None:
    """The first fact of the module doc that ``trace`` breaks, in words (None if it holds them all)."""
    a = trace.attrs
    bad = _attribute_problem(a)
    if bad:
        return bad
    jobs = trace.jobs
    if len(jobs):
        n = len(jobs)
        ids = jobs["id"]
        status = np.array([str(s) for s in jobs["status"]]) if "status" in jobs.columns else np.full(n, "ok")
        ok = status == "ok"
        release, start, end = (np.asarray(jobs[c], dtype=float) for c in ("release", "start", "end"))
        nodes = np.asarray(jobs["nodes"], dtype=float)
        machine = _machine_nodes(a)
        with np.errstate(invalid="ignore"):
            checks = [
                (~np.isfinite(release) | (release < 0), lambda i: f"release {float(release[i])!r}: it must be finite and >= 0"),
                (~np.isfinite(nodes) | (nodes < 1) | (nodes != np.round(nodes)),
                 lambda i: f"nodes {float(nodes[i])!r}: it must be an integer >= 1"),
                (nodes > machine, lambda i: f"needs {float(nodes[i]):.0f} nodes; the machine has {machine:.0f}"),
                (np.isinf(start) | (np.isnan(start) & ok), lambda i: f"start {float(start[i])!r} (status {status[i]})"),
                (np.isinf(end) | (np.isnan(end) & ok), lambda i: f"end {float(end[i])!r} (status {status[i]})"),
                (np.isnan(start) & np.isfinite(end), lambda i: f"ends at {float(end[i])!r} but has no start"),
                (start < release - SLACK - 1e-9 * np.abs(release),
                 lambda i: f"starts at {float(start[i])!r}, before its release {float(release[i])!r}"),
                (end < start - SLACK - 1e-9 * np.abs(start), lambda i: f"ends at {float(end[i])!r}, before its start {float(start[i])!r}"),
            ]
        rows = [np.flatnonzero(mask) for mask, _ in checks]
        first = min((int(r[0]), k) for k, r in enumerate(rows) if len(r)) if any(len(r) for r in rows) else None
        if first is not None:
            i, k = first
            return f"job {str(ids[i])!r} (row {i}): {checks[k][1](i)}"
    ph = trace.phases
    if len(ph):
        s, e = np.asarray(ph["start"], dtype=float), np.asarray(ph["end"], dtype=float)
        with np.errstate(invalid="ignore"):
            bad_rows = np.flatnonzero(~np.isfinite(s) | ~np.isfinite(e) | (e < s - SLACK - 1e-9 * np.abs(s)))
        if len(bad_rows):
            i = int(bad_rows[0])
            return (f"phase {int(ph['index'][i])} of job {str(ph['job'][i])!r} (row {i}): start {float(s[i])!r}, end "
                    f"{float(e[i])!r}: times are finite and the end is not before the start")
    return None


def check_trace(trace: Trace, path) -> None:
    """Raise :class:`TraceError` (exit 2) naming ``path`` and the first fact ``trace`` breaks."""
    bad = first_problem(trace)
    if bad:
        raise TraceError(f"{path}: {bad}: not the trace of a run (a damaged or edited file?)")
