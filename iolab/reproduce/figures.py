"""Each paper's claims beside the paper's numbers: one figure per paper (``figures/<paper>.png``).

A panel per claim with numbers: the paper's value (black tick) and its tolerance band (grey), iolab's
value (a dot coloured by the verdict); for a claim judged on several values (``Each``, ``NearEach``) a
dot per value against the limit; for a share (``Share``) the share against its thresholds.  Claims
judged on a set of names, and those that cannot be tested here, are listed in the title only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from iolab.reproduce.claim import Row
from iolab.reproduce.criteria import CANNOT, NOT, PARTLY, REPRODUCED, Between, Each, Near, NearEach, Share
from iolab.reproduce.scorecard import Scorecard

COLOURS = {REPRODUCED: "tab:green", PARTLY: "tab:orange", NOT: "tab:red", CANNOT: "tab:gray"}


def _points(row: Row) -> tuple[list[tuple[str, float]], list[float], tuple[float, float] | None] | None:
    """(labelled values of iolab, the paper's marks, the band where it counts as reproduced) or None."""
    c, m = row.claim.criterion, row.measured
    try:
        values = [(str(k), float(v)) for k, v in m.items()] if isinstance(m, Mapping) else None
        if isinstance(c, Near):
            tol = c.tol * abs(c.target) if c.relative else c.tol
            return values or [("iolab", float(m))], [c.target], (c.target - tol, c.target + tol)
        if isinstance(c, Between):
            return values or [("iolab", float(m))], [c.lo, c.hi], (c.lo, c.hi)
        if isinstance(c, Share):
            return [("iolab", float(m))], [c.full, c.part], (c.full, 1.0)
        if isinstance(c, Each):
            return [(str(k), float(v)) for k, v in dict(m).items()], [c.limit], None
        if isinstance(c, NearEach):  # each value beside its own paper mark, labelled alike
            return ([(str(k), float(dict(m)[k])) for k in c.targets], [(str(k), v) for k, v in c.targets.items()],
                    None)
    except (TypeError, ValueError, KeyError):
        return None
    return None


def draw_paper(rows: list[Row], path: Path) -> Path | None:
    import matplotlib  # lazy: matplotlib only when figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when figures are drawn

    drawn = [(r, p) for r in rows if (p := _points(r)) is not None]
    if not drawn:
        return None
    fig, axes = plt.subplots(len(drawn), 1, figsize=(8.5, 0.62 * len(drawn) + 1.2), squeeze=False)
    for ax, (row, (values, marks, band)) in zip(axes[:, 0], drawn):
        if band is not None:
            ax.axvspan(*band, color="0.88", zorder=0)
        for i, x in enumerate(marks):
            if isinstance(x, tuple):  # a labelled paper mark
                ax.axvline(x[1], color="black", lw=1.2, zorder=1)
                ax.annotate(x[0], (x[1], 0), xytext=(2, -12 - 7 * (i % 2)), textcoords="offset points", fontsize=6)
            else:
                ax.axvline(x, color="black", lw=1.2, zorder=1)
        marks = [x[1] if isinstance(x, tuple) else x for x in marks]
        for i, (label, v) in enumerate(values):
            ax.plot([v], [0], "o", color=COLOURS[row.verdict], ms=6, zorder=2)
            if len(values) > 1 or label != "iolab":
                ax.annotate(label, (v, 0), xytext=(0, 5 + 7 * (i % 2)), textcoords="offset points", fontsize=6,
                            ha="center")
        xs = [v for _, v in values] + marks + (list(band) if band else [])
        lo, hi = min(xs), max(xs)
        pad = (hi - lo) * 0.15 or abs(hi) * 0.1 or 0.1
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_yticks([])
        ax.tick_params(axis="x", labelsize=7)
        ax.set_ylabel(row.claim.id.split(".", 1)[1], rotation=0, ha="right", va="center", fontsize=7)
    listed = [r for r in rows if _points(r) is None]
    title = f"{rows[0].claim.paper}: iolab (dot: green reproduced, orange partly, red not) vs the paper (black), " \
            "tolerance grey"
    if listed:
        title += "\nnot drawn: " + "; ".join(f"{r.claim.id.split('.', 1)[1]} ({r.verdict})" for r in listed)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw_scorecard(card: Scorecard, folder: Path) -> list[Path]:
    out = []
    for p in card.papers:
        made = draw_paper([r for r in card.rows if r.claim.paper == p], folder / f"{p}.png")
        if made:
            out.append(made)
    return out


__all__ = ["draw_paper", "draw_scorecard"]
