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

    makespan = float(np.nanmax(end)) if finished.any() else math.nan
    total_nodes = R * P
    exec_t = sum(nodes[i] * busy[j] for i, j in enumerate(jobs["id"])) / total_nodes
    delay_t = sum(nodes[i] * wait[j] for i, j in enumerate(jobs["id"])) / total_nodes
    idle_t = makespan - exec_t - delay_t

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
