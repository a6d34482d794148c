"""Figures of traces and campaigns (matplotlib, Agg canvas; no pyplot global state).

- :mod:`.trace`: Gantt chart of a run's phases and I/O grants, node utilisation over time;
- :mod:`.campaign`: per-strategy box plots of makespan and max slowdown.

Every function draws onto a fresh :class:`matplotlib.figure.Figure` bound to an
Agg canvas, so it works headless and in threads, and returns the written path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iolab.atomic import OutputError, check_output

FORMATS = ("png", "svg")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")  # what a figure a user names may be written as


def check_figure(path: str | Path, inputs=(), option: str = "--figure") -> Path:
    """A figure's path a user named, refused before any work (:class:`~iolab.atomic.OutputError`, exit 2,
    naming ``option``) as :func:`~iolab.atomic.check_output` refuses an output, and if its suffix is not
    one a figure is written as (:data:`FIGURE_SUFFIXES`)."""
    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise OutputError(f"{option} {path}: a figure is written as {', '.join(FIGURE_SUFFIXES)}; "
                          f"name the file with one of them")
    if path.exists() and not path.is_file() and not path.is_dir():  # (a folder: check_output names it)
        raise OutputError(f"{option} {path}: a device, FIFO or socket; a figure is written as a file")
    return check_output(path, inputs, option=option)


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


def time_unit(span: float) -> tuple[float, str]:
    """The unit a time axis of this span (seconds) reads best in: seconds up to 2 h, hours up to 4
    days, days beyond; returns (seconds per unit, its name)."""
    if span > 4 * 86400:
        return 86400.0, "days"
    if span > 2 * 3600:
        return 3600.0, "hours"
    return 1.0, "s"


def span_text(seconds: float) -> str:
    """A bin width as a reader says it: ``38 s``, ``12 min``, ``3.5 h``, ``2.1 days``."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 4 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def bin_means(times, levels, edges):
    """The time average over each bin [edges[i], edges[i+1]) of a step function that is
    ``levels[k]`` from ``times[k]`` on (0 before the first time): its exact integral per bin over
    the bin's width, so that no event is lost between two samples (no aliasing)."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(levels, dtype=float)
    area = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t))]) if len(t) else np.zeros(0)

    def integral(x):
        k = np.searchsorted(t, x, side="right") - 1
        inside = k >= 0
        out = np.zeros(len(x))
        out[inside] = area[k[inside]] + v[k[inside]] * (x[inside] - t[k[inside]])
        return out

    e = np.asarray(edges, dtype=float)
    a = integral(e)
    return np.diff(a) / np.diff(e)

