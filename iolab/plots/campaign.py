"""Box plots of a campaign's results, one box per strategy (policy, or policy / mapping)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..campaign.summary import relative_makespan, strategies
from . import new_figure, save


def _boxes(ax, labels: list[str], data: list[np.ndarray], ylabel: str, log: bool) -> None:
    shown = [d[np.isfinite(d)] for d in data]
    ax.boxplot([d if len(d) else [np.nan] for d in shown], showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log and all(len(d) == 0 or (d > 0).all() for d in shown):
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def strategy_boxplots(res, out_dir: str | Path, fmt: str = "png") -> list[Path]:
    """``makespan.<fmt>`` (absolute and relative to the best strategy per instance) and
    ``max_stretch.<fmt>``; failed runs are left out (their count is in the labels)."""
    out_dir = Path(out_dir)
    labels = strategies(res)
    order = list(dict.fromkeys(labels))
    ok = res["status"] == "ok"
    lab = np.array(labels, dtype=object)
    rel = relative_makespan(res)

    def per(values):
        return [np.asarray(values, dtype=float)[(lab == s) & ok] for s in order]

    def names():
        failed = {s: int(((lab == s) & ~ok).sum()) for s in order}
        return [s + (f"\n({failed[s]} failed)" if failed[s] else "") for s in order]

    name = res.attrs.get("campaign", "campaign")
    width = max(6.0, 0.75 * len(order) + 2)
    made = []
    fig = new_figure(width * 2 if width < 8 else width, 4.4)
    ax1, ax2 = fig.subplots(1, 2)
    _boxes(ax1, names(), per(res["makespan"]), "makespan C_max (s)", log=True)
    ax1.set_title(f"{name}: makespan", fontsize=10)
    _boxes(ax2, names(), per(rel), "makespan / best strategy on the instance", log=False)
    ax2.axhline(1.0, color="black", lw=0.6)
    ax2.set_title("makespan relative to the best per instance", fontsize=10)
    made.append(save(fig, out_dir / f"makespan.{fmt}"))

    fig = new_figure(width, 4.4)
    ax = fig.add_subplot()
    _boxes(ax, names(), per(res["max_stretch"]), "max stretch (largest slowdown, >= 1)", log=True)
    ax.set_title(f"{name}: max stretch per run (carretero2020 Eq. 2, as slowdown)", fontsize=10)
    made.append(save(fig, out_dir / f"max_stretch.{fmt}"))
    return made
