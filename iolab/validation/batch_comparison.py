"""A real batch run against its simulation, job by job (``iolab validate`` on a ``kind: batch`` spec).

:func:`compare_batch` reads two traces of the same spec (spec seconds in both) and gives:

- per job that ended ``ok`` in both: start, end, wait (start - submit), turnaround
  (end - submit), the stage-in and stage-out durations, the tier, and the HPS disks of
  its allocation, real and simulated;
- errors: turnaround |real - sim| / sim per job (max and geo-mean
  ``exp(mean |ln(real/sim)|) - 1``, as the I/O-level validation); start and wait
  as absolute differences in spec seconds (a wait of 0 has no relative error);
- per run: makespan, mean turnaround, node and HPS utilisation, real, simulated and
  the relative error;
- agreement: the jobs whose tier differs, the jobs whose disks differ;
- with the storage load controller: every job's suspensions (how many, how long in
  total) and the run's count, real and simulated.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from iolab.metrics.batch import turnaround, wait_time
from iolab.metrics.batch_trace import trace_batch_metrics
from iolab.trace import Trace

from iolab.validation.relative_errors import geo_error, rel_error

RUN_METRICS = ("makespan", "mean_turnaround", "node_utilisation", "hps_utilisation")


def _jobs(trace: Trace) -> dict[str, dict]:
    j = trace.jobs
    submit, start, end = (np.asarray(j[c], dtype=float) for c in ("release", "start", "end"))
    wait, ta = wait_time(submit, start).tolist(), turnaround(submit, end).tolist()
    out = {}
    for k, (i, st, tier) in enumerate(zip(j["id"], j["status"], j["tier"])):
        out[str(i)] = {"submit": float(submit[k]), "start": float(start[k]), "end": float(end[k]), "status": str(st),
                       "tier": str(tier), "wait": wait[k], "turnaround": ta[k]}
    stage: dict[tuple[str, str], float] = defaultdict(float)
    for job, kind, s, e in zip(trace.phases["job"], trace.phases["kind"], trace.phases["start"], trace.phases["end"]):
        if kind in ("stage-in", "stage-out") and e == e:
            stage[(str(job), str(kind))] += float(e) - float(s)
    disks: dict[str, set] = defaultdict(set)
    a = trace.allocations
    for job, disk, st in zip(a["job"], a["disk"], a["status"]):
        if str(st) == "allocated":  # the bytes held (request-level rows: split, requeued, refused, failed)
            disks[str(job)].add(str(disk))
    suspended: dict[str, list[float]] = defaultdict(list)  # the load controller's suspensions: their lengths
    ac = trace.actions
    for job, sus, res in zip(ac["job"], ac["suspend"], ac["resume"]):
        suspended[str(job)].append(float(res) - float(sus) if res == res else math.nan)
    for job, v in out.items():
        v["suspensions"] = len(suspended.get(job, ()))
        v["suspended"] = sum(x for x in suspended.get(job, ()) if x == x)
        v["stage_in"] = stage.get((job, "stage-in"), 0.0)
        v["stage_out"] = stage.get((job, "stage-out"), 0.0)
        v["disks"] = sorted(disks.get(job, ()))
    return out


def compare_batch(real: Trace, sim: Trace) -> dict:
    """The comparison of a real run and a simulation of the same batch spec (see the module)."""
    rj, sj = _jobs(real), _jobs(sim)
    jobs: dict[str, dict] = {}
    pairs: list[tuple[float, float]] = []
    tier_differs, disks_differ, skipped = [], [], []
    for job in sj:
        r, s = rj.get(job), sj[job]
        if r is None or r["status"] != "ok" or s["status"] != "ok":
            skipped.append(job)
            continue
        row = {}
        for key in ("start", "end", "stage_in", "stage_out", "suspensions", "suspended"):
            row[key] = {"real": r[key], "sim": s[key], "diff": r[key] - s[key]}
        for key in ("wait", "turnaround"):
            a, b = r[key], s[key]
            row[key] = {"real": a, "sim": b, "diff": a - b, "error": rel_error(a, b)}
        pairs.append((row["turnaround"]["real"], row["turnaround"]["sim"]))
        row["tier"] = {"real": r["tier"], "sim": s["tier"], "same": r["tier"] == s["tier"]}
        row["disks"] = {"real": r["disks"], "sim": s["disks"], "same": r["disks"] == s["disks"]}
        if not row["tier"]["same"]:
            tier_differs.append(job)
        if not row["disks"]["same"]:
            disks_differ.append(job)
        jobs[job] = row
    mr, ms = trace_batch_metrics(real), trace_batch_metrics(sim)
    run = {k: {"real": getattr(mr, k), "sim": getattr(ms, k), "error": rel_error(getattr(mr, k), getattr(ms, k))}
           for k in RUN_METRICS}
    errors = [v["turnaround"]["error"] for v in jobs.values()]
    finite = [e for e in errors if e == e]
    return {
        "jobs": jobs,
        "run": run,
        "turnaround_error_max": max(finite) if finite else math.nan,
        "turnaround_error_geomean": geo_error(pairs),
        "start_diff_max": max((abs(v["start"]["diff"]) for v in jobs.values()), default=math.nan),
        "tier_differs": tier_differs,
        "disks_differ": disks_differ,
        "not_compared": skipped,
        "suspensions": {"real": sum(v["suspensions"] for v in rj.values()),
                        "sim": sum(v["suspensions"] for v in sj.values())},
    }


__all__ = ["RUN_METRICS", "compare_batch"]
