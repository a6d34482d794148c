"""Figures of one batch trace: where and when the jobs ran, and how full the cluster was.

- :func:`batch_gantt`: time on x, compute node ids on y; each job is a box
  over the nodes it held from its start to its end (the node ids the run
  recorded, or the lowest free ids at its start when the trace has none:
  see :func:`iolab.metrics.batch_trace.job_nodes`), coloured by tier; job ids
  are written in the largest boxes (at most ``max_labels``).
- :func:`batch_utilisation`: over time, the nodes held by running jobs, the
  nodes asked for by queued jobs, and (when the platform has an HPS) the
  fraction of the HPS capacity allocated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from iolab.metrics.batch import step_curve
from iolab.metrics.batch_trace import hps_curve, job_nodes, node_curve, total_nodes_of
from iolab.plots import new_figure, save, time_unit

TIER_COLORS = {"hps": "#1f77b4", "lps": "#ff7f0e"}
OTHER_COLOR = "#7f7f7f"


@dataclass
class BatchGanttDrawn:
    path: Path
    jobs: int  # jobs drawn
    boxes: int  # rectangles (one per contiguous run of node ids of a job)
    labels: int = 0  # job ids written (each inside its box, none over another)
    figure: Any = None  # the matplotlib Figure, as saved (tests measure what was drawn)


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of sorted ids as (first, count)."""
    out: list[tuple[int, int]] = []
    for x in sorted(ids):
        if out and x == out[-1][0] + out[-1][1]:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((x, 1))
    return out


AXES_INCHES = (9.6, 4.4)  # the Gantt's plotting area, about (figure size minus margins)


def batch_gantt(trace, path: str | Path, max_labels: int = 60) -> BatchGanttDrawn:
    """Jobs as boxes over (time, node ids).  A job id is written only inside a box it fits in, and
    never over another id; the time axis is in seconds, hours or days, whichever the span reads in."""
    j = trace.jobs
    nodes = job_nodes(trace)
    total = total_nodes_of(trace)
    ends = j["end"].astype(float)
    t_max = float(np.nanmax(ends)) if np.isfinite(ends).any() else 1.0
    t_min = float(np.nanmin(j["start"].astype(float))) if np.isfinite(ends).any() else 0.0
    scale, unit = time_unit(t_max - t_min)
    fig = new_figure(11, 5.5)
    ax = fig.add_subplot()
    drawn = boxes = 0
    rects: dict[str, list] = {}
    labels: list[tuple[float, float, float, float, float, str]] = []  # area, x, y, width, height, text
    for jid, tier, s, e, ids in zip(j["id"], j["tier"], j["start"].astype(float), j["end"].astype(float), nodes):
        if not ids or not (e > s):
            continue
        drawn += 1
        runs = _runs(ids)
        x0, x1 = s / scale, e / scale
        for first, count in runs:
            rects.setdefault(str(tier), []).append(
                [(x0, first), (x1, first), (x1, first + count), (x0, first + count)])
            boxes += 1
        big = max(runs, key=lambda r: r[1])
        labels.append(((x1 - x0) * big[1], (x0 + x1) / 2, big[0] + big[1] / 2, x1 - x0, big[1], str(jid)))
    # one collection per tier: tens of thousands of jobs draw in seconds
    for tier, polys in rects.items():
        ax.add_collection(PolyCollection(polys, facecolors=TIER_COLORS.get(tier, OTHER_COLOR), edgecolors="black",
                                         linewidths=0.3 if boxes < 2000 else 0.0, alpha=0.85))
    fontsize = 8 if drawn <= 40 else 6
    x_span = max((t_max - t_min) / scale, 1e-9)
    per_char = x_span * (0.6 * fontsize / 72) / AXES_INCHES[0]  # data units of one character's width
    line = max(total, 1) * (1.3 * fontsize / 72) / AXES_INCHES[1]  # and of one line's height
    placed: list[tuple[float, float, float, float]] = []
    for _, x, y, w, h, text in sorted(labels, reverse=True):
        if len(placed) >= max_labels:
            break
        tw, th = per_char * (len(text) + 1), line
        if w < tw or h < th:  # the id does not fit inside its box
            continue
        box = (x - tw / 2, x + tw / 2, y - th / 2, y + th / 2)
        if any(box[0] < b[1] and b[0] < box[1] and box[2] < b[3] and b[2] < box[3] for b in placed):
            continue  # it would cover an id already written
        placed.append(box)
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, clip_on=True)
    ax.set_xlim(t_min / scale, (t_max if t_max > t_min else t_min + 1) / scale)
    ax.set_ylim(0, total)
    if total <= 32:
        ax.set_yticks(range(total + 1))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("compute node")
    a = trace.attrs
    where = "recorded nodes" if any(str(h) for h in j["hosts"]) else "node ids assigned lowest-free at start"
    ax.set_title(f"{a.get('runtime', '?')}, scheduler {a.get('scheduler', a.get('policy', '?'))}: "
                 f"{drawn:,} jobs on {total:,} nodes ({where}); ids where they fit", fontsize=10)
    tiers = sorted({str(t) for t in j["tier"]})
    ax.legend(handles=[Patch(color=TIER_COLORS.get(t, OTHER_COLOR), label=f"on {t or '?'}") for t in tiers],
              fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)
    return BatchGanttDrawn(save(fig, Path(path)), drawn, boxes, len(placed), fig)


def batch_utilisation(trace, path: str | Path) -> Path:
    j = trace.jobs
    total = total_nodes_of(trace)
    times, busy = node_curve(trace)
    st = j["start"].astype(float)
    rel = j["release"].astype(float)
    # queued: from submission to start (to the last time seen if it never started)
    last = float(np.nanmax(np.concatenate([times, rel]))) if len(j) else 0.0
    qend = np.where(np.isfinite(st), st, last)
    qt, ql = step_curve(rel, qend, j["nodes"].astype(float))
    cap = float(trace.attrs.get("hps_capacity", 0.0) or 0.0)
    has_hps = cap > 0 and len(trace.allocations) > 0
    scale, unit = time_unit(float(np.nanmax(times)) - float(np.nanmin(times)) if len(times) else 1.0)
    times, qt = times / scale, qt / scale
    fig = new_figure(11, 5.5 if has_hps else 3.6)
    ax = fig.add_subplot(2 if has_hps else 1, 1, 1)
    ax.fill_between(times, 0, busy, step="post", color="#1f77b4", alpha=0.8, linewidth=0, label="nodes held")
    ax.axhline(total, color="black", lw=0.8, ls="--", label=f"cluster ({total} nodes)")
    ax.set_ylabel("nodes held")
    ax.set_ylim(0, total * 1.4)  # headroom: the legend sits above the curves
    axq = ax.twinx()  # the queue can ask for many times the cluster: its own scale
    axq.step(qt, ql, where="post", color="#d62728", lw=0.9, label="nodes asked by queued jobs (right axis)")
    axq.set_ylabel("nodes queued", color="#d62728")
    axq.set_ylim(0, max(1.0, float(ql.max()) if len(ql) else 1.0) * 1.4)
    ax.set_title(f"utilisation over time, scheduler {trace.attrs.get('scheduler', '?')}", fontsize=10)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = axq.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right", framealpha=0.9)
    if has_hps:
        ax2 = fig.add_subplot(2, 1, 2, sharex=ax)
        ht, hl = hps_curve(trace)
        ht = ht / scale
        ax2.fill_between(ht, 0, 100 * hl / cap, step="post", color="#2ca02c", alpha=0.8, linewidth=0,
                         label=f"HPS allocated (capacity {cap / 1e9:g} GB)")
        ax2.set_ylim(0, 105)
        ax2.set_ylabel("HPS %")
        ax2.legend(fontsize=8, loc="upper right", framealpha=0.9)
        ax2.set_xlabel(f"time ({unit})")
    else:
        ax.set_xlabel(f"time ({unit})")
    return save(fig, Path(path))


__all__ = ["BatchGanttDrawn", "batch_gantt", "batch_utilisation"]
