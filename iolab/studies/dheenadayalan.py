"""dheenadayalan2017's Table 1 and Fig. 1 on the simulator: the load controller against FCFS and EASY.

Data sets (§5; the paper's own jobs are LSF jobs on a NetApp filer, not
published: these are drawn to the paper's description):

- **DS1**: 6 jobs, 2 CPU-bound and 4 I/O-bound, all submitted within a minute;
- **DS2**: 152 jobs, Poisson arrivals, hyper-exponential service times, 104
  CPU-bound and 48 I/O-bound (the paper's split), one slot (node) each;
- **DS3**: 21 jobs sampled from DS2 without bias (submit times rebased).

Platform: 12 slots (the paper's 3 hosts x 4 cores) sharing one volume
(``lps``, 100 MB/s) that loses throughput past one writer
(``controller.model``: gamma 0.5, knee 1; an assumption, not fitted). An
I/O-bound job writes checkpoints of 1 GB for most of its run (10-100 GB,
§5); a CPU-bound job does no I/O.  The controller runs with §5's parameters.
Each data set runs under FCFS and EASY, with and without the controller;
Table 1's totals are the sums of completion (end - start) and flow (end -
submit) times.  All runs are simulated; DS1 on real processes is
``tests/emulator/test_batch_controller.py``'s shape, not part of this study.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_text
from ..sim.batch.run import run_batch
from ..specs import parse_spec
from .common import write_csv

__all__ = ["PAPER", "QUICK", "DheenadayalanSize", "datasets", "run_study"]

GB = 1e9

# Table 1 (hh:mm:ss): dataset -> scheduler -> (completion without, with, flow without, with)
PAPER = {
    "DS1": {"fcfs": ("15:35:27", "12:51:16", "15:35:34", "12:51:23")},
    "DS2": {"fcfs": ("256:06:14", "235:57:28", "298:28:12", "274:24:14"),
            "easy": ("314:12:18", "295:16:17", "345:33:11", "323:02:10")},
    "DS3": {"fcfs": ("63:26:42", "57:58:39", "67:11:32", "61:03:05"),
            "easy": ("65:12:12", "60:14:55", "69:03:22", "62:33:54")},
}


@dataclass(frozen=True)
class DheenadayalanSize:
    ds2_jobs: int = 152
    ds2_io: int = 48
    ds3_jobs: int = 21
    mean_interarrival: float = 600.0  # s, Poisson arrivals
    seed: int = 2017


QUICK = DheenadayalanSize(ds2_jobs=40, ds2_io=13, ds3_jobs=10)


def _hyperexp(rng, n: int) -> np.ndarray:
    """Hyper-exponential service times: 70 % short (mean 30 min), 30 % long (mean 3 h), >= 5 min."""
    long = rng.random(n) < 0.3
    return np.maximum(300.0, np.where(long, rng.exponential(10800.0, n), rng.exponential(1800.0, n)))


def _job(i: int, submit: float, runtime: float, io: bool, rng) -> dict:
    j = {"id": f"{'io' if io else 'cpu'}{i}", "submit": round(float(submit), 3), "nodes": 1,
         "walltime": round(float(runtime) * 1.5, 3), "runtime": round(float(runtime), 3)}
    if io:  # 10-100 GB of checkpoints, at most 80 % of the run alone on the volume (100 MB/s)
        j["data"] = float(min(rng.uniform(10, 100) * GB, 0.8 * runtime * 1e8))
    return j


def datasets(size: DheenadayalanSize) -> dict[str, list[dict]]:
    rng = np.random.default_rng(size.seed)
    ds1 = [_job(i + 1, i * 10, 2000 + 500 * i, True, rng) for i in range(4)]
    ds1 += [_job(i + 5, 5 + i * 10, 3000, False, rng) for i in range(2)]
    for j in ds1:
        if "data" in j:
            j["data"] = 150 * GB if j["runtime"] >= 2000 else j["data"]
    n = size.ds2_jobs
    submits = np.cumsum(rng.exponential(size.mean_interarrival, n)) - size.mean_interarrival
    submits = np.maximum(submits, 0.0)
    runtimes = _hyperexp(rng, n)
    io = np.zeros(n, dtype=bool)
    io[rng.choice(n, size.ds2_io, replace=False)] = True
    ds2 = [_job(i + 1, submits[i], runtimes[i], bool(io[i]), rng) for i in range(n)]
    pick = sorted(rng.choice(n, size.ds3_jobs, replace=False))
    t0 = ds2[pick[0]]["submit"]
    ds3 = [{**ds2[i], "submit": round(ds2[i]["submit"] - t0, 3)} for i in pick]
    return {"DS1": ds1, "DS2": ds2, "DS3": ds3}


def spec_for(jobs: list[dict], scheduler: str, controller: bool, seed: int):
    return parse_spec({
        "kind": "batch", "name": "dheenadayalan", "seed": seed, "scheduler": scheduler,
        "platform": {"nodes": 12, "memory_per_node": "1GB", "lps": {"rate": "100MB/s"},
                     "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"},
        "workload": {"source": "inline", "jobs": jobs},
        "controller": {"enabled": controller, "volumes": ["lps"], "model": {"gamma": 0.5, "knee": 1}},
    })


def hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def run_study(out: Path, size: DheenadayalanSize = DheenadayalanSize(), *, figures: bool = True) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows, gantt_rec = [], None
    for name, jobs in datasets(size).items():
        io_jobs = sum(1 for j in jobs if "data" in j)
        for sched in ("fcfs", "easy"):
            for on in (False, True):
                rec = run_batch(spec_for(jobs, sched, on, size.seed), strict=False)
                comp = sum(s.end - s.start for s in rec.jobs)
                flow = sum(s.end - s.queued.submit for s in rec.jobs)
                rows.append({"dataset": name, "size": len(jobs), "cpu_jobs": len(jobs) - io_jobs, "io_jobs": io_jobs,
                             "scheduler": sched, "controller": on, "total_completion": comp, "total_flow": flow,
                             "completion_hms": hms(comp), "flow_hms": hms(flow),
                             "suspensions": sum(len(s.suspensions) for s in rec.jobs)})
                if name == "DS1" and sched == "fcfs" and on:
                    gantt_rec = rec
    write_csv(out / "table1.csv", rows)
    summary = {"rows": rows, "paper": PAPER, "wall_seconds": time.perf_counter() - t0,
               "size": size.__dict__}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
    if figures and gantt_rec is not None:
        summary["figure"] = str(gantt_figure(gantt_rec, out / "fig1-gantt.png"))
    return summary


def gantt_figure(rec, path: Path) -> Path:
    """Fig. 1's shape: one bar per job from start to end, its suspensions cut out in grey."""
    import matplotlib  # lazy: figures only when asked

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: figures only when asked

    fig, ax = plt.subplots(figsize=(8, 3.5))
    jobs = sorted(rec.jobs, key=lambda s: s.id)
    for y, s in enumerate(jobs):
        ax.barh(y, s.end - s.start, left=s.start, color="tab:blue" if s.id.startswith("io") else "tab:green")
        for a, b in s.suspensions:
            ax.barh(y, b - a, left=a, color="lightgrey", hatch="//", edgecolor="grey")
    ax.set_yticks(range(len(jobs)), [s.id for s in jobs])
    ax.set_xlabel("time (s)")
    ax.set_title("DS1 under FCFS with the load controller (grey: suspended)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
