"""The figure of a Slurm replay (``iolab slurm replay|compare --figure``): each policy's simulated start
of every job against the start Slurm recorded (left; the band is the backfill interval), and the share
of jobs within a given |start error| (right)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iolab.plots import new_figure, save

MARKERS = {"slurm": "o", "fcfs": "s", "easy": "^", "conservative": "v"}


def replay_figure(result, path: str | Path, title: str = "") -> Path:
    fig = new_figure(11, 4.6)
    ax, cdf = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    real = np.asarray(result.real_starts)
    hi = max([real.max()] + [max(r.starts) for r in result.results]) * 1.05 + 1
    interval = result.results[0].interval
    ax.fill_between([0, hi], [-interval, hi - interval], [interval, hi + interval], color="0.9",
                    label=f"within bf_interval ({interval:g} s)")
    ax.plot([0, hi], [0, hi], color="0.5", lw=0.8)
    for r in result.results:
        ax.scatter(real, r.starts, s=18, marker=MARKERS.get(r.policy, "o"), alpha=0.75,
                   label=f"{r.policy}: {r.within}/{len(r.errors)} within, makespan {100 * r.makespan_error:+.1f} %")
        err = np.sort(np.abs(np.asarray(r.errors)))
        cdf.step(np.concatenate([[0], err]), np.arange(len(err) + 1) / len(err), where="post", label=r.policy)
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("start recorded by Slurm (s after the first submission)")
    ax.set_ylabel("simulated start (s)")
    ax.legend(fontsize=7, loc="upper left")
    cdf.axvline(interval, color="0.5", ls=":", lw=1)
    cdf.axhline(0.9, color="0.5", ls=":", lw=1)
    cdf.set_xscale("symlog", linthresh=1)
    cdf.set_xlim(0, max(max(abs(e) for e in r.errors) for r in result.results) * 1.5 + 2)
    cdf.set_xlabel("|simulated - recorded start| (s)")
    cdf.set_ylabel("share of jobs")
    cdf.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    return save(fig, Path(path))
