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

from iolab.plots import bin_means, new_figure, save, span_text, time_unit

COLORS = {"compute": "#c8c8c8", "write": "#1f77b4", "read": "#2ca02c", "stage-in": "#9467bd",
          "stage-out": "#8c564b", "wait": "#d62728"}


@dataclass
class GanttDrawn:
    path: Path
    apps: int  # rows drawn
    transfers: int  # I/O phase bars
    waits: int  # request -> grant bars (only waits > 0)
    computes: int
    binned: bool = False  # True: rows too dense for a bar per phase, drawn as shares per time bin


DENSE = 150  # phases in one row above which a row is drawn as shares per time bin
BINS = 400  # time bins of a dense Gantt chart and of the utilisation plot


def gantt(trace, path: str | Path, max_apps: int = 60) -> GanttDrawn:
    """One row per app.  A row of at most :data:`DENSE` phases shows each phase and each wait; a
    denser one (carretero2020 Table 1: hundreds of phases per app, thinner than a pixel) shows, per
    time bin, the share of the bin the app spent computing, transferring and waiting for a grant,
    stacked within the row, so that contention reads as red whatever the number of phases."""
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
    ends = [s + d for per in bars.values() for xs in per.values() for s, d in xs] + \
           [s + d for xs in waits.values() for s, d in xs]
    span = max(ends) if ends else 1.0
    scale, unit = time_unit(span)
    per_row = max([sum(len(per.get(j, [])) for per in bars.values()) for j in ids] or [0])
    dense = per_row > DENSE
    fig = new_figure(10, max(2.5, 0.8 + (0.45 if dense else 0.28) * len(ids)))
    ax = fig.add_subplot()
    counts = {kind: sum(len(v) for v in per_app.values()) for kind, per_app in bars.items()}
    if dense:
        edges = np.linspace(0.0, span, BINS + 1)
        width = edges[1] - edges[0]
        for j in ids:
            y0 = row[j] + 0.4  # rows run downwards (inverted axis): the stack grows up from the row's foot
            shares = {}
            for kind in ("compute", "io", "wait"):
                spans = (bars.get("compute", {}).get(j, []) if kind == "compute" else
                         waits.get(j, []) if kind == "wait" else
                         [x for k, per in bars.items() if k != "compute" for x in per.get(j, [])])
                shares[kind] = _busy(spans, edges) / width
            bottom = np.zeros(BINS)
            for kind, color in (("compute", COLORS["compute"]), ("io", COLORS["write"]), ("wait", COLORS["wait"])):
                top = bottom + shares[kind]
                ax.fill_between(edges[:-1] / scale, y0 - 0.8 * bottom, y0 - 0.8 * top, step="post", color=color,
                                linewidth=0)
                bottom = top
        handles = [Patch(color=COLORS["compute"], label="compute"),
                   Patch(color=COLORS["write"], label="I/O transfer"),
                   Patch(color=COLORS["wait"], label="waiting for grant")]
        how = f"\n(too many phases for a bar each: the share of each {span_text(width)} bin in each state)"
    else:
        for kind, per_app in bars.items():
            color = COLORS.get(kind, "#ff7f0e")
            for j, xs in per_app.items():
                ax.broken_barh([(s / scale, d / scale) for s, d in xs], (row[j] - 0.35, 0.7), facecolors=color,
                               edgecolors="none")
        for j, xs in waits.items():
            ax.broken_barh([(s / scale, d / scale) for s, d in xs], (row[j] - 0.2, 0.4), facecolors="none",
                           edgecolors=COLORS["wait"], hatch="////", linewidth=0.6)
        handles = [Patch(color=COLORS.get(k, "#ff7f0e"), label=f"{k}" + (" (transfer)" if k != "compute" else ""))
                   for k in bars]
        handles.append(Patch(facecolor="none", edgecolor=COLORS["wait"], hatch="////", label="waiting for grant"))
        how = ""
    ax.set_yticks(range(len(ids)), ids, fontsize=7 if len(ids) > 20 else 9)
    ax.set_ylim(len(ids) - 0.5, -0.5)
    ax.set_xlim(0, span / scale * 1.01)
    ax.set_xlabel(f"time ({unit})")
    a = trace.attrs
    more = f" (first {max_apps} of {len(jobs)} apps)" if len(jobs) > max_apps else ""
    ax.set_title(f"{a.get('runtime', '?')}, policy {a.get('policy', '?')}: phases and I/O grants{more}{how}",
                 fontsize=10)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)
    out = save(fig, Path(path))
    transfers = sum(n for k, n in counts.items() if k != "compute")
    return GanttDrawn(out, len(ids), transfers, sum(len(v) for v in waits.values()), counts.get("compute", 0),
                      binned=dense)


def _busy(spans: list, edges: np.ndarray) -> np.ndarray:
    """Seconds of each bin covered by the (start, duration) spans (which do not overlap one another)."""
    if not spans:
        return np.zeros(len(edges) - 1)
    t = np.array([s for s, _ in spans] + [s + d for s, d in spans])
    v = np.array([1.0] * len(spans) + [-1.0] * len(spans))
    order = np.argsort(t, kind="stable")
    times, level = t[order], np.cumsum(v[order])
    return bin_means(times, level, edges) * np.diff(edges)


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
    """Compute nodes computing / transferring / waiting over time, each the average over one of
    :data:`BINS` equal time bins (the exact integral of the step function: phases far shorter than
    a pixel do not alias into bands)."""
    times, levels, total = occupancy(trace)
    span = float(times[-1]) if len(times) else 1.0
    scale, unit = time_unit(span)
    edges = np.linspace(0.0, span if span > 0 else 1.0, BINS + 1)
    fig = new_figure(10, 3.6)
    ax = fig.add_subplot()
    bottom = np.zeros(BINS)
    for cat, color in zip(levels, (COLORS["compute"], COLORS["write"], COLORS["wait"])):
        top = bottom + bin_means(times, levels[cat], edges)
        ax.fill_between(edges[:-1] / scale, bottom, top, step="post", color=color, label=cat, linewidth=0)
        bottom = top
    if total > 0:
        ax.axhline(total, color="black", lw=0.8, ls="--", label=f"compute nodes (R x P = {total:g})")
    ax.set_xlabel(f"time ({unit}); each value the mean over {span_text(edges[1] - edges[0])}")
    ax.set_ylabel("compute nodes")
    ax.set_title(f"node utilisation, policy {trace.attrs.get('policy', '?')} (idle = the rest)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_xlim(0, span / scale)
    ax.set_ylim(0, max(total, float(bottom.max()) if len(bottom) else 1.0) * 1.08 or 1)
    return save(fig, Path(path))
