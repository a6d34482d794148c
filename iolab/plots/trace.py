"""Figures of one trace: who did what when, and how busy the nodes were.

- :func:`gantt`: one row per app; compute phases in grey, I/O transfers
  (phase start -> end) in colour, and the wait between an I/O request and its
  grant as a hatched red bar, so that contention shows as red.
- :func:`utilisation`: over time, how many compute nodes compute, transfer,
  wait for an I/O grant, or are idle (carretero2020 Fig. 14's categories).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import new_figure, save

COLORS = {"compute": "#c8c8c8", "write": "#1f77b4", "read": "#2ca02c", "stage-in": "#9467bd",
          "stage-out": "#8c564b", "wait": "#d62728"}


@dataclass
class GanttDrawn:
    path: Path
    apps: int  # rows drawn
    transfers: int  # I/O phase bars
    waits: int  # request -> grant bars (only waits > 0)
    computes: int


def gantt(trace, path: str | Path, max_apps: int = 60) -> GanttDrawn:
    from matplotlib.patches import Patch  # lazy: matplotlib only when a figure is drawn

    jobs = trace.jobs
    ids = [str(j) for j in jobs["id"]][:max_apps]
    row = {j: i for i, j in enumerate(ids)}
    ph, gr = trace.phases, trace.grants
    bars: dict[str, dict[str, list]] = {}
    for j, kind, s, e in zip(ph["job"], ph["kind"], ph["start"], ph["end"]):
        if j in row and e > s:
            bars.setdefault(kind, {}).setdefault(j, []).append((float(s), float(e - s)))
    waits: dict[str, list] = {}
    for j, req, g in zip(gr["job"], gr["request"], gr["grant"]):
        if j in row and g > req:
            waits.setdefault(j, []).append((float(req), float(g - req)))
    fig = new_figure(10, max(2.5, 0.8 + 0.28 * len(ids)))
    ax = fig.add_subplot()
    counts = {}
    for kind, per_app in bars.items():
        counts[kind] = sum(len(v) for v in per_app.values())
        color = COLORS.get(kind, "#ff7f0e")
        for j, xs in per_app.items():
            y = row[j]
            ax.broken_barh(xs, (y - 0.35, 0.7), facecolors=color, edgecolors="none")
    for j, xs in waits.items():
        ax.broken_barh(xs, (row[j] - 0.2, 0.4), facecolors="none", edgecolors=COLORS["wait"], hatch="////",
                       linewidth=0.6)
    ax.set_yticks(range(len(ids)), ids, fontsize=7 if len(ids) > 20 else 9)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    a = trace.attrs
    more = f" (first {max_apps} of {len(jobs)} apps)" if len(jobs) > max_apps else ""
    ax.set_title(f"{a.get('runtime', '?')}, policy {a.get('policy', '?')}: phases and I/O grants{more}", fontsize=10)
    handles = [Patch(color=COLORS.get(k, "#ff7f0e"), label=f"{k}" + (" (transfer)" if k != "compute" else ""))
               for k in bars]
    handles.append(Patch(facecolor="none", edgecolor=COLORS["wait"], hatch="////", label="waiting for grant"))
    ax.legend(handles=handles, fontsize=8, loc="upper right", framealpha=0.9)
    out = save(fig, Path(path))
    transfers = sum(n for k, n in counts.items() if k != "compute")
    return GanttDrawn(out, len(ids), transfers, sum(len(v) for v in waits.values()), counts.get("compute", 0))


def occupancy(trace) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """Times and the number of compute nodes computing / transferring / waiting from each time on."""
    nodes = {str(j): int(n) for j, n in zip(trace.jobs["id"], trace.jobs["nodes"])}
    events: dict[str, list[tuple[float, int]]] = {"computing": [], "transferring": [], "waiting for I/O": []}
    ph, gr = trace.phases, trace.grants
    for j, kind, s, e in zip(ph["job"], ph["kind"], ph["start"], ph["end"]):
        cat = "computing" if kind == "compute" else "transferring"
        events[cat] += [(float(s), nodes[j]), (float(e), -nodes[j])]
    for j, req, g in zip(gr["job"], gr["request"], gr["grant"]):
        if g > req:
            events["waiting for I/O"] += [(float(req), nodes[j]), (float(g), -nodes[j])]
    times = np.unique(np.array([t for ev in events.values() for t, _ in ev] or [0.0]))
    levels = {}
    for cat, ev in events.items():
        delta = np.zeros(len(times))
        if ev:
            t, d = np.array(ev).T
            np.add.at(delta, np.searchsorted(times, t), d)
        levels[cat] = np.cumsum(delta)
    total = float(trace.attrs.get("io_nodes", 1)) * float(trace.attrs.get("nodes_per_io_node", 0) or 0)
    return times, levels, total


def utilisation(trace, path: str | Path) -> Path:
    times, levels, total = occupancy(trace)
    fig = new_figure(10, 3.6)
    ax = fig.add_subplot()
    bottom = np.zeros(len(times))
    for cat, color in zip(levels, (COLORS["compute"], COLORS["write"], COLORS["wait"])):
        top = bottom + levels[cat]
        ax.fill_between(times, bottom, top, step="post", color=color, label=cat, linewidth=0)
        bottom = top
    if total > 0:
        ax.axhline(total, color="black", lw=0.8, ls="--", label=f"compute nodes (R x P = {total:g})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("compute nodes")
    ax.set_title(f"node utilisation, policy {trace.attrs.get('policy', '?')} (idle = the rest)", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_ylim(0, max(total, float(bottom.max()) if len(bottom) else 1.0) * 1.08 or 1)
    return save(fig, Path(path))
