"""What a real batch run shows while it goes: the live view's snapshot and the progress line.

:func:`snapshot` is the plain data ``iolab emulate --live`` draws (:mod:`iolab.cli.live`), :func:`progress_line`
the line written every ``progress_every`` wall seconds without it; both read the loop's state
(:class:`~iolab.emulator.batch.run.BatchEmulation`).
"""

from __future__ import annotations

import math
import time

from iolab.middleware.policies.batch.kernel import ENDED, FAILED, FUTURE, HOLDING, KILLED, QUEUED, STAGE_IN, STAGE_OUT


def snapshot(run, now: float) -> dict:
    """What a live view shows now (plain data): per job its state, tier and step; nodes
    free; per tier the capacity used and free (from the storage manager); the jobs the
    load controller has suspended (``suspended``); with I/O nodes, per I/O node the jobs
    holding a grant, waiting (policy order) and held by a suspension (``io_nodes``, from the
    I/O nodes' actor, and its ``io_policy``), at the loop's instant ``now`` (spec seconds)."""
    k = run.kernel
    jobs = []
    for j in run.jobs:
        jobs.append({"id": j.queued.id, "state": j.state, "tier": j.tier, "nodes": j.queued.nodes,
                     "step": j.step, "steps": len(j.steps),
                     "elapsed": now - j.start if j.state in HOLDING and j.start == j.start else math.nan,
                     "walltime": j.queued.walltime})
    tiers = []
    st = run.mgr.status() if run.mgr is not None else None
    if st is not None:
        b = run.s.bytes_scale  # the manager holds scaled bytes; the view shows the spec's
        tiers.append({"tier": "hps", "capacity": st["capacity"] / b, "used": st["used"] / b,
                      "free": st["free"] / b, "waiting": list(st["waiting"])})
    tiers.append({"tier": "nodes", "capacity": k.total_nodes, "used": k.total_nodes - k.free_nodes,
                  "free": k.free_nodes, "waiting": list(k.queue)})
    snap = {"kind": "batch", "time": now, "elapsed": time.time() - run.t0, "scheduler": run.label,
            "jobs": jobs, "tiers": tiers, "suspended": sorted(st.get("suspended", [])) if st else []}
    if run.io is not None:
        io = run._io(run.io.snapshot)
        snap.update(io_nodes=io["io_nodes"], io_policy=io["policy"])
    return snap


def progress_line(run, now: float) -> None:
    """The progress line at the loop's instant ``now`` (none with a live view: it shows all this and more)."""
    if not run.progress.enabled or run.progress.live:
        return
    k = run.kernel
    counts: dict[str, int] = {}
    for j in run.jobs:
        counts[j.state] = counts.get(j.state, 0) + 1
    on_hps = sum(1 for j in k.running.values() if j.tier == "hps")
    held = sum(j.storage for j in k.running.values())
    ended = sum(counts.get(x, 0) for x in ENDED)
    failed = counts.get(FAILED, 0) + counts.get(KILLED, 0)
    line = (f"t={now:.0f} s ({time.time() - run.t0:.0f} s wall)  submitted "
            f"{len(run.jobs) - counts.get(FUTURE, 0)}/{len(run.jobs)}  queued {counts.get(QUEUED, 0)}  "
            f"running {len(k.running)} ({on_hps} on HPS, {counts.get(STAGE_IN, 0) + counts.get(STAGE_OUT, 0)} "
            f"staging)  ended {ended} ({failed} failed)  nodes free {k.free_nodes}/{k.total_nodes}  "
            f"HPS held {held / max(k.hps_capacity, 1e-300):.0%}")
    run.progress.note(line)
