"""Figures of traces and campaigns (matplotlib, Agg canvas; no pyplot global state).

- :mod:`.trace`: Gantt chart of a run's phases and I/O grants, node utilisation over time;
- :mod:`.campaign`: per-strategy box plots of makespan and max stretch.

Every function draws onto a fresh :class:`matplotlib.figure.Figure` bound to an
Agg canvas, so it works headless and in threads, and returns the written path.
"""

from __future__ import annotations

from pathlib import Path

FORMATS = ("png", "svg")


def new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib only when a figure is drawn
    from matplotlib.figure import Figure  # lazy: matplotlib only when a figure is drawn

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
