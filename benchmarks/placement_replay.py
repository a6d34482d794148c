"""Wall time and peak memory of a 24 000-request StorAlloc replay, per strategy.

usage:: python benchmarks/placement_replay.py [--requests 24000] [--layout nNnD] [--capacity-tb 32] [--seed 1]

monniot2023 §5.1 replays ~24 000 Theta requests per run in ~5 min (one
core of a Xeon E5-2630); the target here is >= 100x faster, <= 3 s per run.
Requests are synthetic and seeded, shaped like the Theta ones: sizes and
durations drawn (with replacement) from the Theta week's requests when
../shared/data holds it, else from a log-normal (median 1 GB); arrivals
Poisson at the paper's year rate (24 000 per 365 days).  Split at 200 GB,
no requeue (the paper's retained setting), then once more with requeue on
for the refusing strategies.  Peak memory is tracemalloc's peak during a
second, untimed replay.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np


from iolab.studies.monniot import default_theta_path, theta_requests  # noqa: E402
from iolab.sim.batch.storage_replay import PAPER_SPLIT, TB, StorageRequest, replay_layout  # noqa: E402

YEAR = 365 * 86400


def requests(n: int, seed: int) -> tuple[list[StorageRequest], str]:
    rng = np.random.default_rng(seed)
    path = default_theta_path()
    if path.is_file():
        week = theta_requests(path)
        pick = rng.integers(len(week), size=n)
        sizes = np.array([week[i].size for i in pick])
        durs = np.array([week[i].duration for i in pick])
        src = f"sizes and durations resampled from {len(week)} Theta-week requests"
    else:
        sizes = np.exp(rng.normal(np.log(1e9), 1.5, n)).astype(np.int64) + 1
        durs = rng.uniform(60, 3 * 3600, n)
        src = "log-normal sizes (Theta week not found)"
    t = np.cumsum(rng.exponential(YEAR / n, n))
    return [StorageRequest(f"r{i}", float(t[i]), int(sizes[i]), float(durs[i])) for i in range(n)], src


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=24_000)
    ap.add_argument("--layout", default="nNnD")
    ap.add_argument("--capacity-tb", type=float, nargs="+", default=[32, 1], help="one table per capacity (1 TB: a contended platform)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    reqs, src = requests(args.requests, args.seed)
    print(f"{len(reqs)} requests ({src}), {sum(r.size for r in reqs) / 1e15:.2f} PB in all")
    for cap in args.capacity_tb:
        table(reqs, args.layout, cap, args.seed)


def table(reqs: list[StorageRequest], layout: str, cap_tb: float, seed: int) -> None:
    print(f"\n{layout} {cap_tb:g} TB, split 200 GB")
    print(f"{'strategy':16s} {'requeue':>7s} {'wall s':>7s} {'req/s':>9s} {'peak MiB':>9s} {'events':>7s} "
          f"{'% sum_cap':>9s} {'failed':>6s} {'refused':>7s} {'vs 5 min':>9s}")
    for strategy, retries in (("random", 0), ("round-robin", 0), ("worst-fit", 0), ("best-bandwidth", 0),
                              ("round-robin", 12), ("best-bandwidth", 12)):
        kw = dict(split=PAPER_SPLIT, requeue_retries=retries, seed=seed)
        t0 = time.perf_counter()
        res = replay_layout(reqs, layout, cap_tb * TB, strategy, **kw)
        wall = time.perf_counter() - t0
        m = res.metrics()
        tracemalloc.start()
        replay_layout(reqs, layout, cap_tb * TB, strategy, **kw)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"{strategy:16s} {retries:7d} {wall:7.2f} {len(reqs) / wall:9.0f} {peak:9.1f} {res.events:7d} "
              f"{m.pct_sum_cap_allocated:9.2f} {m.failed:6d} {m.refused:7d} {309 / wall:8.0f}x")


if __name__ == "__main__":
    main()
