"""Box plots of a campaign's results, one box per strategy (policy, or policy / mapping)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iolab.campaign.summary import relative_makespan, strategies
from iolab.plots import new_figure, save, time_unit


def _boxes(ax, labels: list[str], data: list[np.ndarray], ylabel: str, log: bool, key: bool = True) -> None:
    """One box per strategy, with a key to what its marks are.  On a log axis the ticks are plain
    numbers (``20``, ``100``), not powers of ten, and the minor ticks carry labels only when the
    axis spans less than a decade."""
    from matplotlib.lines import Line2D  # lazy: matplotlib only when a figure is drawn
    from matplotlib.patches import Patch  # lazy: matplotlib only when a figure is drawn
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # lazy: matplotlib only when drawing

    shown = [d[np.isfinite(d)] for d in data]
    ax.boxplot([d if len(d) else [np.nan] for d in shown], showmeans=True,
               meanprops={"marker": "^", "markerfacecolor": "#2ca02c", "markeredgecolor": "#2ca02c"},
               medianprops={"color": "#ff7f0e"})
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    values = np.concatenate([d for d in shown if len(d)]) if any(len(d) for d in shown) else np.zeros(0)
    if log and len(values) and (values > 0).all():
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:,.10g}")
        ax.yaxis.set_major_locator(LogLocator(base=10))
        ax.yaxis.set_major_formatter(plain)
        narrow = values.max() / values.min() < 100  # two decades or less: too few powers of ten to read
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2, 3, 5) if narrow else (2, 5)))
        ax.yaxis.set_minor_formatter(plain if narrow else NullFormatter())
    ax.grid(axis="y", alpha=0.3)
    if not key:
        return
    ax.legend(handles=[Patch(facecolor="none", edgecolor="black", label="box: quartiles of the runs"),
                       Line2D([], [], color="#ff7f0e", label="median"),
                       Line2D([], [], marker="^", ls="none", color="#2ca02c", label="mean"),
                       Line2D([], [], color="black", label="whiskers: last run within 1.5 x the box"),
                       Line2D([], [], marker="o", ls="none", mfc="none", color="black", label="a run beyond")],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)


def strategy_boxplots(res, out_dir: str | Path, fmt: str = "png") -> list[Path]:
    """``makespan.<fmt>`` (absolute and relative to the best strategy per instance) and
    ``max_slowdown.<fmt>``; failed runs are left out (their count is in the labels)."""
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
    fig = new_figure(width * 2 if width < 8 else width * 1.6, 4.6)
    ax1, ax2 = fig.subplots(1, 2)
    mk = per(res["makespan"])
    finite = [float(np.max(d)) for d in mk if len(d)]
    scale, unit = time_unit(max(finite) if finite else 1.0)
    _boxes(ax1, names(), [d / scale for d in mk], f"makespan C_max ({unit})", log=True, key=False)
    ax1.set_title(f"{name}: makespan", fontsize=10)
    _boxes(ax2, names(), per(rel), "makespan / best strategy on the instance", log=False)
    ax2.axhline(1.0, color="black", lw=0.6)
    ax2.set_title("makespan relative to the best per instance", fontsize=10)
    made.append(save(fig, out_dir / f"makespan.{fmt}"))

    fig = new_figure(width + 2.5, 4.6)
    ax = fig.add_subplot()
    _boxes(ax, names(), per(res["max_stretch"]), "max slowdown (the run's largest, >= 1)", log=True)
    ax.set_title(f"{name}: max slowdown per run (1 / carretero2020 Eq. 2's stretch)", fontsize=10)
    made.append(save(fig, out_dir / f"max_slowdown.{fmt}"))
    return made
