"""Time and memory of generating Feitelson jobs (``feitelson_jobs``), 10^4 to 10^6 jobs.

usage:: python benchmarks/generate_jobs.py [--sizes 10000,100000,1000000] [--validated-up-to 100000]

Each size runs in a fresh process (so its peak memory is its own) on issue 28's large machine:
10 240 nodes of 16 GB, R_lps = 100 GB/s, ``io_rate: share``, one checkpoint an hour. Prints, per
size and path (``fast``: the checks on the arrays, then the objects; ``validated``: every ``Job``
through pydantic, the reference, for sizes up to ``--validated-up-to``):

- seconds to make the jobs (the whole ``feitelson_jobs`` call: the draws, the I/O model, the objects);
- peak RSS of the process above its RSS after the imports (MB), and that per job (bytes);
- RSS still held once the call returns, with the jobs alive (MB).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

GB = 10**9


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 1e6


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux


def child(n: int, validated: bool) -> dict:
    import time

    from iolab.workloads import feitelson_jobs
    from iolab.specs.batch import FeitelsonWorkload

    params = FeitelsonWorkload(jobs=n, arrival_factor=75, io_rate="share", checkpoint={"interval": 3600})
    base = rss_mb()
    t0 = time.perf_counter()
    jobs = feitelson_jobs(params, seed=1, max_nodes=10_240, lps_rate=100 * GB, memory_per_node=16 * GB,
                          validate_each=validated)
    seconds = time.perf_counter() - t0
    assert len(jobs) == n
    return {"jobs": n, "path": "validated" if validated else "fast", "seconds": seconds,
            "peak_mb": peak_mb() - base, "held_mb": rss_mb() - base}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--validated-up-to", type=int, default=100_000)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1] == "validated")))
        return
    print(f"{'jobs':>9s} {'path':>9s} {'seconds':>8s} {'peak MB':>8s} {'B/job':>6s} {'held MB':>8s}")
    for n in (int(x) for x in args.sizes.split(",") if x):
        for path in ("fast", "validated"):
            if path == "validated" and n > args.validated_up_to:
                continue
            out = subprocess.run([sys.executable, __file__, "--child", str(n), path], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{r['jobs']:9d} {r['path']:>9s} {r['seconds']:8.2f} {r['peak_mb']:8.0f} "
                  f"{r['peak_mb'] * 1e6 / n:6.0f} {r['held_mb']:8.0f}", flush=True)


if __name__ == "__main__":
    main()
