"""CPU seconds of a whole SWF trace through the batch simulator, strict mode off and on.

usage:: python benchmarks/batch_strict_cost.py [--schedulers easy,sas] [--repeat 5] [--strict] [--limit N]

KTH-SP2 (100 nodes, 27 992 jobs in ../shared/data) on batch_kth.py's platform; the load is done
once, outside the figures.  Each figure is the least CPU time (``time.process_time``) of
``--repeat`` runs of ``iolab.sim.batch.run.run_batch(spec, jobs, rows=False, strict=...)``: the
least because the machine is shared and CPU time still grows with the load.  Without ``--strict``
this is the cost strict mode's hooks add when it is off (one ``if`` per kernel event; compare two
checkouts with the same command); with ``--strict`` it also prints the checked run's time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from iolab.specs import parse_spec
from iolab.sim.batch.run import run_batch
from iolab.workloads import swf_jobs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACE, NODES = "KTH-SP2-1996-2.1-cln.swf.gz", 100


def spec_for(scheduler: str, limit: int | None):
    wl = {"source": "swf", "path": str(DATA / TRACE)}
    if limit:
        wl["limit"] = limit
    return parse_spec({
        "kind": "batch", "name": f"strict-cost-{scheduler}",
        "platform": {"nodes": NODES, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": 4096e9},
                     "stage_rate": 5e9},
        "scheduler": scheduler, "seed": 0, "workload": wl,
    })


def cpu(spec, jobs, strict: bool, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        c = time.process_time()
        run_batch(spec, jobs, rows=False, strict=strict)
        out.append(time.process_time() - c)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedulers", default="easy,sas")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--strict", action="store_true", help="also time the run with strict mode on")
    ap.add_argument("--limit", type=int, help="only the first N jobs")
    a = ap.parse_args()
    jobs = swf_jobs(DATA / TRACE, limit=a.limit)
    print(f"KTH-SP2, {len(jobs)} jobs; least CPU seconds of {a.repeat} runs")
    for sched in a.schedulers.split(","):
        spec = spec_for(sched, a.limit)
        off = cpu(spec, jobs, False, a.repeat)
        line = f"{sched:>14}  strict off {min(off):7.3f} s  (runs: {' '.join(f'{x:.3f}' for x in off)})"
        if a.strict:
            on = cpu(spec, jobs, True, max(1, a.repeat // 2))
            line += f"  strict on {min(on):7.3f} s  (x{min(on) / min(off):.1f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
