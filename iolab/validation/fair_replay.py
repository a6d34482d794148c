"""A real run's transfers replayed on the simulator's fair-share link: what sharing alone gave them.

Under a list policy a transfer holds its I/O node alone, so its duration without noise is its
volume over the bandwidth.  Under ``shared`` it splits the node with every transfer that overlaps
it, and most of its duration is that sharing: a phase of 2.5 units beside three others lasts
about 4 x 2.5 / b, and read as noise over 2.5 / b that is a factor 4.  :func:`fair_share_durations`
gives each transfer of a real run the duration it would have had on a lossless (or the platform's
law's) fair share, each one joining the link at its real start plus the fixed cost, with the
volumes the run moved: what is left in ``real / replayed`` is what the real link added (its
pacing's granularity, a writer late to book, the machine's load), which is what the jittered
simulations (:mod:`iolab.validation.spread`) should resample.

The replay is :class:`iolab.sim.fairshare.FairShareLink`, the link the simulator's ``shared``
I/O nodes run on, so a simulated trace replays to its own durations.
"""

from __future__ import annotations

import math

from iolab.sim.fairshare import FairShareLink
from iolab.trace import Trace

__all__ = ["fair_share_durations"]


def fair_share_durations(trace: Trace, bandwidth: float, law=None, fixed: float = 0.0) -> dict[tuple[str, int], float]:
    """``(job, phase index) -> seconds`` from each finished transfer's start to its end on a fair-share
    link of ``bandwidth`` (``law``: the platform's interference law, or None) per I/O node, every
    transfer's bytes joining at its real start plus ``fixed`` (the calibrated ``io_phase``; the
    duration counts it).  Compute phases, empty transfers and unfinished phases are left out."""
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
    p = trace.phases
    by_node: dict[int, list[tuple[float, str, int, float]]] = {}
    for job, idx, kind, start, end, vol, node in zip(p["job"], p["index"], p["kind"], p["start"], p["end"],
                                                     p["volume"], p["io_node"]):
        if kind == "compute" or not float(vol) > 0 or not (math.isfinite(start) and math.isfinite(end)):
            continue
        by_node.setdefault(int(node), []).append((float(start), str(job), int(idx), float(vol)))
    out: dict[tuple[str, int], float] = {}
    for rows in by_node.values():
        rows.sort()
        link = FairShareLink(bandwidth, law)
        began: dict[tuple[str, int], float] = {}
        k = 0
        while k < len(rows) or len(link):
            join = rows[k][0] + fixed if k < len(rows) else math.inf
            done = link.next_completion()
            if join <= done:  # a transfer joins (before any ends at the same instant)
                start, job, idx, vol = rows[k]
                k += 1
                began[(job, idx)] = start
                link.add((job, idx), vol, join)
            else:
                for key in link.pop_finished(done):
                    out[key] = done - began[key]
    return out
