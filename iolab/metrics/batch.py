"""Batch and storage metrics, as pure functions of arrays or an allocation log.

Batch level (lackner2019 §V):

- makespan: ``max(end) - min(submit)`` (the workload's span, from its first
  submission to its last completion);
- turnaround of a job: ``end - submit``; mean turnaround over the jobs;
- wait time of a job: ``start - submit``; run time: ``end - start``;
- total completion and total flow (dheenadayalan2017 Table 1): the sums over
  the jobs of ``end - start`` and of ``end - submit``;
- jobs on HPS: the count of jobs whose tier is ``hps``;
- bounded slowdown of a job (Feitelson et al. 1997): ``max(1, (end - submit)
  / max(end - start, tau))`` with ``tau = BSLD_TAU = 10 s``, so that very short
  jobs do not dominate the average;
- aggregates of a per-job quantity (:func:`summary`): mean, median, p95
  (numpy's linear interpolation between order statistics) and max;
- utilisation over time (:func:`step_curve`, :func:`time_weighted_summary`):
  the fraction of the cluster's nodes held by running jobs at each instant;
  its mean, median, p95 and max are weighted by time over
  ``[min(submit), max(end)]``, so its mean is Eq. 3's ``U`` below;
- :func:`assign_nodes`: node ids for jobs whose trace does not record them
  (the simulator's): each job takes the lowest free ids when it starts;
- utilisation, Eq. 3: ``U = sum_i u_i / sum_i a_i`` over experiments i, with
  ``u`` the used node-seconds (``sum (end - start) * nodes``) and ``a`` the
  available ones (``makespan * nodes of the cluster``); HPS utilisation is the
  same with HPS bytes (of the jobs on HPS) for nodes and the HPS capacity for
  the cluster's nodes.  :func:`node_utilisation` and :func:`hps_utilisation`
  give one experiment; :func:`pooled_utilisation` pools several (Eq. 3).

Sums over jobs or experiments that a caller keeps as a total (total
completion and flow, Eq. 3's pooled sums) are taken in order with Python's
``sum``, so that the total is the same number whichever caller computes it.

Storage level (monniot2023 Table 3), from an allocation log with columns
``job, disk, bytes, alloc, free, status`` (see
``iolab.middleware.policies.placement.AllocationRecord``):

- ``sum_cap``: the sum of the requested capacities (every request once,
  whatever became of it); ``pct_sum_cap_allocated``: % of it that landed;
- disk use: per disk, the fraction of its capacity in use, max and
  time-weighted mean over the observed span; ``max_disk_use``: the largest;
  ``mean_disk_use``: the mean of the per-disk means;
- concurrent allocations per disk: max and time-weighted mean count of live
  parts on each disk; ``mean_concurrent`` / ``max_concurrent`` aggregate them
  (mean of the per-disk means, max of the maxima);
- counts: ``refused`` and ``failed`` requests, ``split`` requests, requests
  ``requeued`` at least once, with the number of requeue events and the total
  delay they added.

Allocations never freed are counted live until ``end_time`` (default: the
last time in the log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np


def _arr(x: Any, dtype: Any = float) -> np.ndarray:
    return np.asarray(x, dtype=dtype)


def makespan(submit: Any, end: Any) -> float:
    s, e = _arr(submit), _arr(end)
    if s.size == 0:
        return 0.0
    return float(e.max() - s.min())


def turnaround(submit: Any, end: Any) -> np.ndarray:
    return _arr(end) - _arr(submit)


def mean_turnaround(submit: Any, end: Any) -> float:
    t = turnaround(submit, end)
    return float(t.mean()) if t.size else 0.0


def total_completion(start: Any, end: Any) -> float:
    """dheenadayalan2017 Table 1's total completion time: ``sum (end - start)`` over the jobs."""
    return float(sum((_arr(end) - _arr(start)).tolist()))


def total_flow(submit: Any, end: Any) -> float:
    """dheenadayalan2017 Table 1's total flow time: the sum of the turnarounds, ``sum (end - submit)``."""
    return float(sum(turnaround(submit, end).tolist()))


def hps_jobs(tier: Any) -> int:
    """The jobs whose tier is ``hps``."""
    return int(np.sum(np.asarray(tier) == "hps"))


def used_node_seconds(start: Any, end: Any, nodes: Any) -> float:
    return float(np.sum((_arr(end) - _arr(start)) * _arr(nodes)))


def node_utilisation(submit: Any, start: Any, end: Any, nodes: Any, total_nodes: int) -> float:
    """Eq. 3 for one experiment: used node-seconds / (makespan * cluster nodes)."""
    avail = makespan(submit, end) * total_nodes
    return used_node_seconds(start, end, nodes) / avail if avail > 0 else 0.0


def used_hps_byte_seconds(start: Any, end: Any, tier: Any, hps_bytes: Any) -> float:
    on_hps = np.asarray(tier) == "hps"
    return float(np.sum(np.where(on_hps, (_arr(end) - _arr(start)) * _arr(hps_bytes), 0.0)))


def hps_utilisation(submit: Any, start: Any, end: Any, tier: Any, hps_bytes: Any, capacity: float) -> float:
    """Eq. 3 with storage for nodes: HPS byte-seconds used / (makespan * capacity)."""
    avail = makespan(submit, end) * capacity
    return used_hps_byte_seconds(start, end, tier, hps_bytes) / avail if avail > 0 else 0.0


def pooled_utilisation(used: Sequence[float], available: Sequence[float]) -> float:
    """Eq. 3: ``sum u_i / sum a_i`` over experiments."""
    a = float(sum(_arr(available).tolist()))
    return float(sum(_arr(used).tolist())) / a if a > 0 else 0.0


@dataclass
class BatchMetrics:
    jobs: int
    makespan: float
    mean_turnaround: float
    node_utilisation: float
    hps_utilisation: float
    hps_jobs: int


def batch_metrics(submit: Any, start: Any, end: Any, nodes: Any, total_nodes: int, tier: Any = None,
                  hps_bytes: Any = None, hps_capacity: float = 0.0) -> BatchMetrics:
    n = len(_arr(submit))
    tier = np.full(n, "lps") if tier is None else np.asarray(tier)
    hb = np.zeros(n) if hps_bytes is None else _arr(hps_bytes)
    return BatchMetrics(
        jobs=n, makespan=makespan(submit, end), mean_turnaround=mean_turnaround(submit, end),
        node_utilisation=node_utilisation(submit, start, end, nodes, total_nodes),
        hps_utilisation=hps_utilisation(submit, start, end, tier, hb, hps_capacity) if hps_capacity > 0 else 0.0,
        hps_jobs=hps_jobs(tier),
    )


# ---------------------------------------------------------------- per job, and over time

BSLD_TAU = 10.0  # seconds: the bound of the bounded slowdown (Feitelson et al. 1997)


def wait_time(submit: Any, start: Any) -> np.ndarray:
    return _arr(start) - _arr(submit)


def run_time(start: Any, end: Any) -> np.ndarray:
    """``end - start`` per job (on HPS it includes the job's stage-in and stage-out)."""
    return _arr(end) - _arr(start)


def bounded_slowdown(submit: Any, start: Any, end: Any, tau: float = BSLD_TAU) -> np.ndarray:
    """``max(1, (end - submit) / max(end - start, tau))`` per job."""
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    s, b, e = _arr(submit), _arr(start), _arr(end)
    return np.maximum(1.0, (e - s) / np.maximum(e - b, tau))


def summary(values: Any) -> dict[str, float]:
    """Mean, median, p95 (linear interpolation) and max; NaN for no values."""
    v = _arr(values)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {"mean": float("nan"), "median": float("nan"), "p95": float("nan"), "max": float("nan")}
    return {"mean": float(v.mean()), "median": float(np.median(v)), "p95": float(np.percentile(v, 95)),
            "max": float(v.max())}


def step_curve(begin: Any, end: Any, weight: Any) -> tuple[np.ndarray, np.ndarray]:
    """A step function: ``level[i]`` holds on ``[times[i], times[i+1])`` (the last level is 0).

    Each interval ``[begin, end)`` adds its ``weight`` (nodes, bytes) while it lasts.
    """
    b, e, w = _arr(begin), _arr(end), _arr(weight)
    if b.size == 0:
        return np.array([0.0]), np.array([0.0])
    times = np.unique(np.concatenate([b, e]))
    delta = np.zeros(len(times))
    np.add.at(delta, np.searchsorted(times, b), w)
    np.add.at(delta, np.searchsorted(times, e), -w)
    level = np.cumsum(delta)
    level[np.abs(level) < 1e-9 * max(1.0, float(np.abs(w).max()))] = 0.0  # rounding of the sums
    return times, level


def time_weighted_summary(times: Any, level: Any, t0: float, t1: float) -> dict[str, float]:
    """Mean, median, p95 and max of a step curve over ``[t0, t1]``, weighted by time.

    A quantile q is the smallest level held, together with every lower level,
    during at least a fraction q of the window.
    """
    t, lv = _arr(times), _arr(level)
    if t1 <= t0:
        return {"mean": float("nan"), "median": float("nan"), "p95": float("nan"), "max": float("nan")}
    edges = np.clip(np.append(t, np.inf), t0, t1)
    dur = np.diff(edges)
    # the window before the first step is at level 0
    lv = np.append(0.0, lv)
    dur = np.append(max(0.0, min(t[0], t1) - t0) if t.size else t1 - t0, dur)
    keep = dur > 0
    lv, dur = lv[keep], dur[keep]
    order = np.argsort(lv, kind="stable")
    cum = np.cumsum(dur[order]) / (t1 - t0)

    def q(x: float) -> float:
        return float(lv[order][min(np.searchsorted(cum, x - 1e-12), len(cum) - 1)])

    return {"mean": float(np.sum(lv * dur) / (t1 - t0)), "median": q(0.5), "p95": q(0.95), "max": float(lv.max())}


def assign_nodes(start: Any, end: Any, nodes: Any, total_nodes: int) -> list[list[int]]:
    """Node ids for each job: at its start it takes the ``nodes`` lowest free ids.

    Ends free their ids before starts at the same instant take them (a job of
    no duration holds nothing: it gets ids free at its instant, else the lowest
    ones).  Raises
    ValueError if the jobs ever need more than ``total_nodes`` at once.
    """
    s, e, n = _arr(start), _arr(end), np.asarray(nodes, dtype=np.int64)
    events = sorted([(float(e[i]), 0, i) for i in range(len(s))] + [(float(s[i]), 1, i) for i in range(len(s))])
    free = list(range(int(total_nodes)))  # kept sorted
    out: list[list[int]] = [[] for _ in range(len(s))]
    for t, kind, i in events:
        if kind == 0:
            if out[i]:
                free = sorted(free + out[i])
            continue
        k = int(n[i])
        if e[i] <= s[i]:  # a job of no duration holds nothing: free ids, else the lowest ones
            ids = free[:k]
            ids += [x for x in range(int(total_nodes)) if x not in set(ids)][:k - len(ids)]
            out[i] = sorted(ids)
            continue
        if k > len(free):
            raise ValueError(f"job #{i} needs {k} nodes at t={t:g} but only {len(free)} of {total_nodes} are free")
        out[i], free = free[:k], free[k:]
    return out


def id_ranges(ids: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2 5"`` (the interval-set notation of Batsim and procset)."""
    parts: list[str] = []
    run: list[int] = []
    for x in sorted(ids):
        if run and x == run[-1] + 1:
            run.append(x)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [x]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return " ".join(parts)


# ---------------------------------------------------------------- storage (monniot2023)

_COLUMNS = ("job", "disk", "bytes", "alloc", "free", "status")


def _rows(log: Any) -> list[tuple]:
    """Accept records with attributes, tuples in column order, or a mapping of columns."""
    if isinstance(log, Mapping):
        cols = [list(log[c]) for c in _COLUMNS]
        return list(zip(*cols))
    rows = []
    for r in log:
        if hasattr(r, "status"):
            rows.append(tuple(getattr(r, c) for c in _COLUMNS))
        else:
            rows.append(tuple(r))
    return rows


@dataclass
class StorageMetrics:
    requests: int
    sum_cap: float
    allocated_bytes: float
    pct_sum_cap_allocated: float
    max_disk_use: float  # fraction of a disk's capacity, the largest over disks and time
    refused: int
    failed: int
    split: int
    requeued: int
    requeue_events: int
    requeue_delay: float
    mean_concurrent: float
    max_concurrent: int
    per_disk: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def mean_disk_use(self) -> float:
        """The mean over the disks of their time-weighted mean use (fraction of capacity); NaN with no disk."""
        return float(np.mean([c["mean_use"] for c in self.per_disk.values()]))


def _disk_curves(intervals: list[tuple[float, float, float]], t0: float, t1: float) -> dict[str, float]:
    """Max and time-weighted mean of bytes and count of live parts on one disk."""
    ev: list[tuple[float, int, float]] = []
    for a, f, b in intervals:
        ev.append((a, 1, b))
        ev.append((f, -1, -b))
    ev.sort(key=lambda e: (e[0], e[1]))  # frees before allocations at the same instant
    count = 0
    used = 0.0
    max_c = 0
    max_u = 0.0
    area_c = 0.0
    area_u = 0.0
    last = t0
    for t, dc, db in ev:
        t = min(max(t, t0), t1)
        area_c += count * (t - last)
        area_u += used * (t - last)
        last = t
        count += dc
        used += db
        max_c = max(max_c, count)
        max_u = max(max_u, used)
    span = t1 - t0
    return {"max_concurrent": float(max_c), "mean_concurrent": area_c / span if span > 0 else float(max_c),
            "max_bytes": max_u, "mean_bytes": area_u / span if span > 0 else max_u}


def storage_metrics(log: Any, disk_capacity: Mapping[str, float], end_time: float | None = None) -> StorageMetrics:
    """monniot2023 Table 3 from an allocation log; ``disk_capacity``: disk id -> bytes."""
    rows = _rows(log)
    times = [r[3] for r in rows] + [r[4] for r in rows if r[4] is not None]
    t0 = min(times) if times else 0.0
    t1 = end_time if end_time is not None else (max(times) if times else 0.0)
    requests: dict[tuple[str, float], float] = {}  # allocated requests: (job, alloc) -> bytes
    sum_cap = 0.0
    refused = failed = split = requeue_events = 0
    requeued_jobs: set[str] = set()
    delay = 0.0
    per_disk_iv: dict[str, list[tuple[float, float, float]]] = {d: [] for d in disk_capacity}
    for job, disk, b, alloc, free, status in rows:
        if status == "allocated":
            requests[(job, alloc)] = requests.get((job, alloc), 0.0) + float(b)
            if disk not in per_disk_iv:
                raise ValueError(f"log names disk {disk!r}, absent from disk_capacity")
            per_disk_iv[disk].append((float(alloc), float(t1 if free is None else free), float(b)))
        elif status == "refused":
            refused += 1
            sum_cap += float(b)
        elif status == "failed":
            failed += 1
            sum_cap += float(b)
        elif status == "split":
            split += 1
        elif status == "requeued":
            requeue_events += 1
            requeued_jobs.add(job)
            if free is not None:
                delay += float(free) - float(alloc)
        else:
            raise ValueError(f"unknown allocation status {status!r}")
    allocated = float(sum(requests.values()))
    sum_cap += allocated
    per_disk: dict[str, dict[str, float]] = {}
    max_use = 0.0
    for d, cap in disk_capacity.items():
        c = _disk_curves(per_disk_iv[d], t0, t1)
        c["max_use"] = c["max_bytes"] / cap
        c["mean_use"] = c["mean_bytes"] / cap
        per_disk[d] = c
        max_use = max(max_use, c["max_use"])
    means = [c["mean_concurrent"] for c in per_disk.values()]
    return StorageMetrics(
        requests=len(requests) + refused + failed, sum_cap=sum_cap, allocated_bytes=allocated,
        pct_sum_cap_allocated=100.0 * allocated / sum_cap if sum_cap > 0 else 0.0, max_disk_use=max_use,
        refused=refused, failed=failed, split=split, requeued=len(requeued_jobs), requeue_events=requeue_events,
        requeue_delay=delay, mean_concurrent=float(np.mean(means)) if means else 0.0,
        max_concurrent=int(max((c["max_concurrent"] for c in per_disk.values()), default=0)), per_disk=per_disk,
    )


__all__ = [
    "BSLD_TAU", "assign_nodes", "bounded_slowdown", "id_ranges", "run_time", "step_curve", "summary",
    "time_weighted_summary", "wait_time",
    "BatchMetrics", "StorageMetrics", "batch_metrics", "hps_jobs", "hps_utilisation", "makespan", "mean_turnaround",
    "node_utilisation", "pooled_utilisation", "storage_metrics", "total_completion", "total_flow", "turnaround",
    "used_hps_byte_seconds", "used_node_seconds",
]
