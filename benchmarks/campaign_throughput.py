"""Campaign throughput (runs per second) on a local Ray with 1 and 2 workers.

usage:: python benchmarks/campaign_throughput.py [--workers 1,2] [--campaign FILE ...] [--serial]

For every campaign (default: examples/campaigns/quick.yaml and the heavier
examples/campaigns/carretero-policies.yaml) and every worker count, runs the
whole campaign into a fresh folder with ``iolab.campaign.run_campaign`` (the
code behind ``iolab sweep``: a local Ray with num_cpus = workers) and prints

- runs/s of the execution phase (first submission to last result),
- the seconds to start Ray, and the whole call's wall time (start + runs + stop),

then checks that the results tables are identical whatever the worker count.
``--serial`` adds the same runs executed one after the other in this process
without Ray (the cost floor of one run).  The machine's load average is
printed: on a shared machine, other work slows every figure.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from iolab.campaign import load_results, load_runs, run_campaign  # noqa: E402
from iolab.campaign.results import equal  # noqa: E402
from iolab.campaign.task import execute  # noqa: E402

DEFAULT = [REPO / "examples" / "campaigns" / "quick.yaml", REPO / "examples" / "campaigns" / "carretero-policies.yaml"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--campaign", action="append", type=Path, help="campaign file (repeatable)")
    ap.add_argument("--serial", action="store_true", help="also run every campaign serially without Ray")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    print(f"host: {os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.1f}")
    print(f"{'campaign':22s} {'runs':>5s} {'workers':>8s} {'runs/s':>8s} {'run s':>7s} {'ray start s':>12s} "
          f"{'wall s':>7s} {'load':>5s}")
    for camp in args.campaign or DEFAULT:
        _, runs = load_runs(camp)
        tables = []
        with tempfile.TemporaryDirectory(prefix="iolab-bench-") as tmp:
            if args.serial:
                t0 = time.perf_counter()
                for r in runs:
                    execute(r.payload())
                dt = time.perf_counter() - t0
                print(f"{camp.stem:22s} {len(runs):5d} {'serial':>8s} {len(runs) / dt:8.3g} {dt:7.1f} {'-':>12s} "
                      f"{dt:7.1f} {os.getloadavg()[0]:5.1f}", flush=True)
            for n in counts:
                out = Path(tmp) / f"w{n}"
                s = run_campaign(camp, out, workers=n, progress=False, stream=open(os.devnull, "w"))
                assert s.ok == s.total == len(runs), f"{s.failed} runs failed"
                tables.append(load_results(out))
                print(f"{camp.stem:22s} {len(runs):5d} {n:8d} {s.runs_per_second:8.3g} {s.run_seconds:7.1f} "
                      f"{s.startup_seconds:12.1f} {s.wall_seconds:7.1f} {os.getloadavg()[0]:5.1f}", flush=True)
        same = all(equal(tables[0], t) for t in tables[1:])
        print(f"{camp.stem}: results identical across worker counts: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
