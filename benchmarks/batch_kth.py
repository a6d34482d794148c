"""Wall time (load and simulate apart) and peak memory of whole SWF traces through the batch simulator.

usage:: python benchmarks/batch_kth.py [--sdsc] [--schedulers easy,sas,conservative,fcfs] [--limit N]

KTH-SP2 (100 nodes, 27 992 jobs in ../shared/data) under EASY, SAS,
conservative backfilling and FCFS (target: <= 5 s for EASY); with
``--sdsc`` also SDSC-BLUE (144 nodes, 243 306 records).  Each (trace,
scheduler) runs in a forked child so that its peak RSS (``ru_maxrss``,
including the interpreter and imports it inherits, ~100 MiB) is its own;
load = ``swf_jobs`` (parse + Job models), simulate =
``iolab.sim.batch.run.run_batch(spec, jobs, rows=False)``.

Platform: lackner2019's rates (R_lps = 1 GB/s, R_hps = 15 GB/s, staging 5 GB/s,
HPS 4096 GB); SWF jobs carry no I/O volumes, so the tiers only matter to SAS's
bookkeeping.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
from pathlib import Path


from iolab.specs import parse_spec  # noqa: E402
from iolab.sim.batch.run import run_batch  # noqa: E402
from iolab.workloads import swf_jobs  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACES = {"KTH-SP2": ("KTH-SP2-1996-2.1-cln.swf.gz", 100), "SDSC-BLUE": ("SDSC-BLUE-2000-4.2-cln.swf.gz", 144)}


def spec_for(path: Path, nodes: int, scheduler: str, limit: int | None):
    wl = {"source": "swf", "path": str(path)}
    if limit:
        wl["limit"] = limit
    return parse_spec({
        "kind": "batch", "name": f"bench-{path.stem}-{scheduler}",
        "platform": {"nodes": nodes, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": 4096e9},
                     "stage_rate": 5e9},
        "scheduler": scheduler, "seed": 0, "workload": wl,
    })


def one(path: Path, nodes: int, scheduler: str, limit: int | None, q) -> None:
    t0 = time.perf_counter()
    jobs = swf_jobs(path, limit=limit)
    t1 = time.perf_counter()
    rec = run_batch(spec_for(path, nodes, scheduler, limit), jobs, rows=False)
    t2 = time.perf_counter()
    end = max(s.end for s in rec.jobs)
    q.put((len(jobs), t1 - t0, t2 - t1, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, rec.events,
           rec.decisions, end))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdsc", action="store_true", help="also SDSC-BLUE")
    ap.add_argument("--schedulers", default="easy,sas,conservative,fcfs")
    ap.add_argument("--limit", type=int, help="only the first N jobs of each trace")
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    names = ["KTH-SP2"] + (["SDSC-BLUE"] if args.sdsc else [])
    print(f"{'trace':10s} {'scheduler':13s} {'jobs':>7s} {'load s':>7s} {'sim s':>8s} {'peak MiB':>9s} "
          f"{'events':>8s} {'decisions':>9s} {'makespan d':>10s}")
    for name in names:
        file, nodes = TRACES[name]
        path = DATA / file
        if not path.is_file():
            print(f"{name}: {path} not found, skipped")
            continue
        for sched in args.schedulers.split(","):
            q = ctx.Queue()
            p = ctx.Process(target=one, args=(path, nodes, sched, args.limit, q))
            p.start()
            n, load, sim, rss, events, decisions, end = q.get()
            p.join()
            print(f"{name:10s} {sched:13s} {n:7d} {load:7.2f} {sim:8.2f} {rss:9.0f} {events:8d} {decisions:9d} "
                  f"{end / 86400:10.1f}", flush=True)


if __name__ == "__main__":
    main()
