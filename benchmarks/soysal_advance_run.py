"""One soysal2019 advance stage-in run (the study's ``advance_run``), timed, with how long its queue grows.

usage:: python benchmarks/soysal_advance_run.py [--trace kth|sdsc-blue|PATH] [--scheduler sas] [--lam 1]
            [--off] [--window N] [--depth D] [--limit N] [--queue]

Defaults: all of KTH-SP2 as one run (``--window 0``: no windows), SAS, lambda = 1, advance stage-in on,
no backfill depth.  Prints the study's row (mean turnaround, HPS jobs, the early-copy counters) and the CPU
seconds of the run.  ``--queue`` (one run only) simulates it once more, untimed, and prints the waiting
queue's length at its longest and at the quarters of the trace's submissions (jobs submitted and not
started), so that a queue that grows without bound shows.  Time the whole process (without ``--queue``:
one run) with ``/usr/bin/time -f "%U user %S sys %M KB"``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from iolab.sim.batch.run import simulate_batch
from iolab.studies import soysal
from iolab.workloads import swf_window_io


def queue_lengths(release, start) -> tuple[int, list[int]]:
    """The longest waiting queue and its length at the quarters of the submissions, from each job's
    release (submission) and start times."""
    release, start = np.sort(np.asarray(release, float)), np.sort(np.asarray(start, float))
    waiting = np.arange(1, len(release) + 1) - np.searchsorted(start, release, side="right")
    quarters = [int(waiting[min(len(waiting) - 1, int(q * len(waiting)))]) for q in (0.25, 0.5, 0.75, 1.0)]
    return int(waiting.max()) if len(waiting) else 0, quarters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default="kth")
    ap.add_argument("--scheduler", default="sas", choices=soysal.ADVANCE_SCHEDULERS + ("easy", "random-tier"))
    ap.add_argument("--lam", type=float, default=1.0)
    ap.add_argument("--off", action="store_true", help="advance stage-in off")
    ap.add_argument("--window", type=int, default=0, help="windows of at most N jobs (0: one run)")
    ap.add_argument("--depth", type=int, default=None, help="scheduler.backfill_depth (default: none)")
    ap.add_argument("--limit", type=int, default=None, help="the trace's first N jobs only")
    ap.add_argument("--queue", action="store_true", help="also the waiting queue's length (a second, untimed run)")
    a = ap.parse_args()
    path, nodes = soysal.trace_path(a.trace)
    size = soysal.Size()
    t0 = time.process_time()
    row = soysal.advance_run(str(path), nodes, a.scheduler, a.lam, a.limit, not a.off, size.hps_capacity_gb,
                             size.io_seed, size.theta_stable, size.margin, a.window or None, a.depth)
    cpu = time.process_time() - t0
    print(f"{a.trace} {a.scheduler} lambda={a.lam:g} advance={'off' if a.off else 'on'} "
          f"window={a.window or 'none'} depth={a.depth if a.depth is not None else 'none'}: "
          f"{row['jobs']} jobs in {row['windows']} run(s), {cpu:.1f} CPU s")
    print("  " + ", ".join(f"{k} {row[k]:.6g}" for k in ("mean_turnaround", "hps_jobs", *soysal.ADVANCE_STATS)))
    if a.queue and a.window == 0:  # the queue of the one run: the same simulation once more
        trace = soysal._trace_jobs(str(path), a.limit)
        spec = soysal.experiment(str(path), nodes, a.scheduler, a.lam, len(trace), io=True, advance=not a.off,
                                 hps_capacity_gb=size.hps_capacity_gb, seed=size.io_seed,
                                 theta_stable=size.theta_stable, margin=size.margin, backfill_depth=a.depth)
        tr = simulate_batch(spec, swf_window_io(list(trace), spec), strict=False, phases="none")
        longest, quarters = queue_lengths(tr.jobs["release"], tr.jobs["start"])
        print(f"  waiting queue: longest {longest} jobs; at 1/4, 1/2, 3/4, all of the submissions: "
              + ", ".join(map(str, quarters)))


if __name__ == "__main__":
    main()
