"""Metrics of an I/O experiment, computed from its trace alone (carretero2020).

- stretch of app i (Eq. 2): rho_i = T_i(b) / (C_i - r_i), at most 1, where
  T_i(b) is the contention-free time (Eq. 1) and r_i the release.  Its
  inverse, the *slowdown*, is at least 1.  ``pack_stretch`` uses the app's
  start instead of its release: the measure of a pack in isolation (§6.2.3).
- max stretch: the worst app, reported as the largest slowdown (>= 1), the
  quantity the paper plots and minimises; ``worst_stretch`` is the same app's rho.
- makespan (Eq. 3): C_max = max_i C_i.
- I/O load alpha (Eq. 6): P * sum_i V_i/b / sum_i Q_i T_i(b).
- per-node exec / delay / idle time (Fig. 14): over the R*P compute nodes and
  [0, C_max], a node executes while its app computes or transfers, is delayed
  while its app waits for an I/O grant, and is idle otherwise.

:func:`io_metrics` reads them from a trace; the functions of arrays below it
(:func:`slowdown`, :func:`io_makespan`, :func:`pack_spans`,
:func:`pack_max_slowdowns`, :func:`sequential_makespan`, :func:`node_times`)
measure an engine's record without a trace, as the studies do.  Sums over
apps are taken in app order with Python's ``sum``, so that a total is the
same number whichever caller computes it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from iolab.errors import TraceError
from iolab.trace import Trace


@dataclass
class AppMetrics:
    id: str
    io_node: int
    pack: int
    nodes: int
    release: float
    start: float
    end: float
    min_time: float
    stretch: float
    slowdown: float
    pack_stretch: float
    io_wait: float


@dataclass
class IOMetrics:
    makespan: float
    max_stretch: float  # largest slowdown, >= 1
    worst_stretch: float  # smallest rho, <= 1
    mean_stretch: float
    mean_pack_max_slowdown: float  # mean over packs of the largest slowdown in the pack
    io_load: float
    packs: int
    exec_time: float  # average per compute node
    delay_time: float
    idle_time: float
    apps: list[AppMetrics] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def slowdown(begin, end, min_time) -> np.ndarray:
    """``(end - begin) / min_time`` per app: with ``begin`` the release, 1 / rho of Eq. 2 (>= 1); with
    ``begin`` the app's start, its slowdown inside its pack (§6.2.3).  NaN where the app did not end."""
    return (np.asarray(end, dtype=float) - np.asarray(begin, dtype=float)) / np.asarray(min_time, dtype=float)


def io_makespan(end) -> float:
    """Eq. 3: C_max = max_i C_i over the apps that ended (times start at 0); NaN if none did."""
    e = np.asarray(end, dtype=float)
    return float(np.nanmax(e)) if e.size and not np.isnan(e).all() else math.nan


def _pack_index(packs) -> tuple[np.ndarray, np.ndarray]:
    """The packs' app indices one after the other, and where each pack begins among them."""
    sizes = [len(p) for p in packs]
    if not sizes or min(sizes) == 0:
        raise ValueError("every pack needs at least one app")
    order = np.fromiter((i for p in packs for i in p), dtype=np.int64, count=sum(sizes))
    return order, np.concatenate(([0], np.cumsum(sizes[:-1]))).astype(np.int64)


def pack_spans(start, end, packs) -> np.ndarray:
    """Per pack (a sequence of app indices): its duration, the last end minus the first start of its apps
    (a pack's makespan when it runs alone, §6.2.3)."""
    order, first = _pack_index(packs)
    s, e = np.asarray(start, dtype=float)[order], np.asarray(end, dtype=float)[order]
    return np.maximum.reduceat(e, first) - np.minimum.reduceat(s, first)


def pack_max_slowdowns(start, end, min_time, packs) -> np.ndarray:
    """Per pack: the largest :func:`slowdown` of its apps from their starts (the pack's worst app, §6.2.3).
    Their mean is Fig. 11's stretch measure (``mean_pack_max_slowdown``)."""
    order, first = _pack_index(packs)
    sd = slowdown(np.asarray(start, dtype=float)[order], np.asarray(end, dtype=float)[order],
                  np.asarray(min_time, dtype=float)[order])
    return np.maximum.reduceat(sd, first)


def sequential_makespan(durations, placement) -> float:
    """The makespan of packs run one after the other on each I/O node: the largest sum, over the nodes, of
    the ``durations`` of the packs ``placement`` puts on it (one sequence of pack indices per node)."""
    d = np.asarray(durations, dtype=float).tolist()
    return float(max(sum(d[p] for p in seq) for seq in placement))


def node_times(nodes, busy, wait, makespan: float, total_nodes: float) -> tuple[float, float, float]:
    """Fig. 14's ``(exec, delay, idle)`` per compute node: each app's ``nodes`` times its ``busy`` seconds
    (computing or transferring) and its ``wait`` seconds (for I/O grants), summed over the apps and shared
    over ``total_nodes``; idle is the rest of ``[0, makespan]``."""
    n = np.asarray(nodes, dtype=float)
    exec_t = sum((n * np.asarray(busy, dtype=float)).tolist()) / total_nodes
    delay_t = sum((n * np.asarray(wait, dtype=float)).tolist()) / total_nodes
    return exec_t, delay_t, makespan - exec_t - delay_t


def _attr(trace: Trace, name: str) -> float:
    if name not in trace.attrs:
        raise TraceError(f"trace lacks attribute {name!r} (not an I/O experiment trace?)")
    return float(trace.attrs[name])


def _check_times(jobs, cols: dict) -> None:
    """Refuse a trace whose apps' times cannot be a run's: infinite or negative anywhere, a NaN
    release, contention-free time or node count, a NaN end of an app that ended ``ok`` (a start or
    end is NaN only for an app that never started or never ended), an end before its start."""
    status = [str(x) for x in jobs["status"]] if "status" in jobs.columns else ["ok"] * len(jobs)
    for i, ident in enumerate(str(x) for x in jobs["id"]):
        for name, col in cols.items():
            v = float(col[i])
            if math.isnan(v) and (name == "start" and status[i] != "ok" or name == "end" and status[i] != "ok"):
                continue
            if not math.isfinite(v) or v < 0:
                raise TraceError(f"app {ident!r} ({status[i]}): {name} is {v!r}; a run's times are finite "
                                 "and >= 0 (a damaged trace?)")
        if cols["end"][i] < cols["start"][i]:
            raise TraceError(f"app {ident!r}: ends at {float(cols['end'][i])!r}, before its start "
                             f"{float(cols['start'][i])!r} (a damaged trace?)")


def io_metrics(trace: Trace) -> IOMetrics:
    jobs = trace.jobs
    if len(jobs) == 0:
        raise TraceError("trace has no jobs")
    b = _attr(trace, "bandwidth")
    P = _attr(trace, "nodes_per_io_node")
    R = _attr(trace, "io_nodes")
    for name, v in (("bandwidth", b), ("nodes_per_io_node", P), ("io_nodes", R)):
        if not (math.isfinite(v) and v > 0):
            raise TraceError(f"trace attribute {name} is {v!r}: it must be a finite number > 0")
    end = jobs["end"].astype(float)
    release = jobs["release"].astype(float)
    start = jobs["start"].astype(float)
    tmin = jobs["min_time"].astype(float)
    nodes = jobs["nodes"].astype(float)
    _check_times(jobs, {"release": release, "start": start, "end": end, "min_time": tmin, "nodes": nodes})
    finished = ~np.isnan(end)
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = np.where(end - release > 0, tmin / (end - release), 1.0)
        pack_stretch = np.where(end - start > 0, tmin / (end - start), 1.0)
    stretch[~finished] = np.nan
    pack_stretch[~finished] = np.nan
    slowdown = 1.0 / stretch

    # waits per app from the grants table
    wait = {j: 0.0 for j in jobs["id"]}
    g = trace.grants
    for j, req, gr in zip(g["job"], g["request"], g["grant"]):
        wait[j] = wait.get(j, 0.0) + float(gr - req)
    busy = {j: 0.0 for j in jobs["id"]}
    ph = trace.phases
    for j, s, e in zip(ph["job"], ph["start"], ph["end"]):
        busy[j] = busy.get(j, 0.0) + float(e - s)

    makespan = io_makespan(end)
    ids = list(jobs["id"])
    exec_t, delay_t, idle_t = node_times(nodes, [busy[j] for j in ids], [wait[j] for j in ids], makespan, R * P)

    den = float(np.sum(nodes * tmin))
    alpha = P * float(np.sum(jobs["io_volume"].astype(float))) / b / den if den > 0 else 0.0

    pack_ids = sorted(set(zip(jobs["io_node"].tolist(), jobs["pack"].tolist())))
    per_pack = []
    for key in pack_ids:
        mask = (jobs["io_node"] == key[0]) & (jobs["pack"] == key[1])
        vals = 1.0 / pack_stretch[mask]
        if np.isfinite(vals).any():
            per_pack.append(float(np.nanmax(vals)))

    apps = [
        AppMetrics(
            id=str(j), io_node=int(jobs["io_node"][i]), pack=int(jobs["pack"][i]), nodes=int(nodes[i]),
            release=float(release[i]), start=float(start[i]), end=float(end[i]), min_time=float(tmin[i]),
            stretch=float(stretch[i]), slowdown=float(slowdown[i]), pack_stretch=float(pack_stretch[i]),
            io_wait=wait[j],
        )
        for i, j in enumerate(jobs["id"])
    ]
    return IOMetrics(
        makespan=makespan,
        max_stretch=float(np.nanmax(slowdown)) if finished.any() else math.nan,
        worst_stretch=float(np.nanmin(stretch)) if finished.any() else math.nan,
        mean_stretch=float(np.nanmean(stretch)) if finished.any() else math.nan,
        mean_pack_max_slowdown=float(np.mean(per_pack)) if per_pack else math.nan,
        io_load=alpha, packs=len(pack_ids),
        exec_time=exec_t, delay_time=delay_t, idle_time=idle_t, apps=apps,
    )


def geometric_mean(values) -> float:
    arr = np.asarray(list(values), dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return float(np.exp(np.mean(np.log(arr)))) if len(arr) else math.nan
