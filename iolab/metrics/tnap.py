"""soysal2019's node-allocation prediction time (T_NAP, §3.1), from a trace alone.

Inputs: the trace's ``jobs`` table (id, release = submit, start) and its
``predictions`` table (one row each time a waiting job's planned start or
planned node set changed: job, time, start, nodes).

- T_NAP of a started job = its start minus the time of the last row whose
  ``nodes`` differ from the job's row before it (its first row counts: the
  set changed from nothing).  The scheduling pass that starts a job plans it
  on the nodes it gets, so a set that changed at the start gives 0.
- A job started at its submission is **instant** (whatever its rows say).
- Classes (§3.1): ``instant``; ``<=1s`` (0 <= T_NAP <= 1 s, not instant:
  backfilled, or moved at the last moment); ``<=600s``; ``>600s``
  (long-term predictions, the ones advance staging can use).

Jobs that never started, or have no prediction row (a trace recorded without
``track_predictions``), are left out; :func:`tnap` says so by ``NaN``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CLASSES", "TnapSummary", "classify", "tnap", "tnap_summary"]

CLASSES = ("instant", "<=1s", "<=600s", ">600s")


def tnap(trace) -> dict[str, float]:
    """T_NAP of every started job (``-inf`` marks an instant job, ``NaN`` an unknown one)."""
    jobs = trace.jobs
    last_change = _last_changes(trace.predictions)
    out: dict[str, float] = {}
    release = np.asarray(jobs["release"], dtype=float).tolist()
    start = np.asarray(jobs["start"], dtype=float).tolist()
    for j, sub, st in zip(jobs["id"], release, start):
        if math.isnan(st):
            continue
        if st == sub:
            out[j] = -math.inf
        elif j in last_change:
            out[j] = max(0.0, st - last_change[j])
        else:
            out[j] = math.nan
    return out


def _last_changes(pred) -> dict[str, float]:
    """Job -> time of its last row whose ``nodes`` differ from its row before (in time order,
    ties in table order; its first row counts), for every job with a row.  Vectorised: the rows
    grouped by job (stable sorts), a change where a group begins or ``nodes`` differ from the
    row before; :func:`_last_changes_plain` is the row-by-row reference."""
    n = len(pred)
    if not n:
        return {}
    times = np.asarray(pred["time"], dtype=float)
    codes: dict = {}
    code = np.fromiter((codes.setdefault(j, len(codes)) for j in pred["job"]), dtype=np.int64, count=n)
    order = np.lexsort((times,))
    idx = order[np.argsort(code[order], kind="stable")]  # by job, then time, then table order
    c = code[idx]
    nodes = np.asarray(pred["nodes"], dtype=object)[idx]
    change = np.ones(n, dtype=bool)
    change[1:] = (c[1:] != c[:-1]) | (nodes[1:] != nodes[:-1]).astype(bool)
    pos = np.flatnonzero(change)
    cp = c[pos]
    last = pos[np.append(cp[1:] != cp[:-1], True)]  # each job's last change
    return dict(zip(np.asarray(pred["job"], dtype=object)[idx[last]].tolist(), times[idx[last]].tolist()))


def _last_changes_plain(pred) -> dict[str, float]:
    """:func:`_last_changes` one row at a time (the reference of the tests)."""
    last_change: dict[str, float] = {}
    last_nodes: dict[str, str] = {}
    order = np.lexsort((np.asarray(pred["time"], dtype=float),)) if len(pred) else []
    jcol, tcol, ncol = pred["job"], pred["time"], pred["nodes"]
    for i in order:
        j = jcol[i]
        n = ncol[i]
        if last_nodes.get(j) != n:
            last_nodes[j] = n
            last_change[j] = float(tcol[i])
    return last_change


def classify(value: float) -> str:
    if value == -math.inf:
        return "instant"
    if value <= 1.0:
        return "<=1s"
    if value <= 600.0:
        return "<=600s"
    return ">600s"


@dataclass(frozen=True)
class TnapSummary:
    jobs: int  # started jobs with a known T_NAP (instant included)
    shares: dict[str, float]  # class -> share of those jobs
    values: tuple[float, ...]  # the non-instant T_NAP values, sorted (Fig. 5's CDF)

    def as_dict(self) -> dict:
        return {"jobs": self.jobs, **{f"share_{k}": v for k, v in self.shares.items()}}


def tnap_summary(trace) -> TnapSummary:
    vals = [v for v in tnap(trace).values() if not math.isnan(v)]
    n = len(vals)
    counts = dict.fromkeys(CLASSES, 0)
    for v in vals:
        counts[classify(v)] += 1
    return TnapSummary(jobs=n, shares={k: (c / n if n else math.nan) for k, c in counts.items()},
                       values=tuple(sorted(v for v in vals if v != -math.inf)))
