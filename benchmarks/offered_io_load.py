"""How much I/O lackner2019's model asks of the links and the HPS, per workload.

usage:: python benchmarks/offered_io_load.py [--trace kth|sdsc-blue|PATH] [--prefixes 600,4000,8000]

For the Feitelson workloads lackner2019 simulates (500 jobs, three seeds) and for an SWF trace with
the model's volumes (``io: lackner``, seed 0; whole and its first jobs), prints the loads a
scheduler cannot lower, each over the workload's span (first submit to last submit + runtime):

- LPS link: the jobs' I/O volumes at R_lps (the time each would take alone on the shared link)
  over the span; above 1, all of it on LPS can never keep up;
- HPS capacity: requested HPS bytes x runtime over capacity x span; above 1, not every job can
  run on HPS;
- node use: nodes x runtime over nodes x span.

These are why the soysal study runs its advance stage-in workloads in windows (docs/studies.md).
"""

from __future__ import annotations

import argparse

import numpy as np

from iolab.workloads import feitelson_jobs, load_workload
from iolab.studies.soysal import experiment, trace_path

GB = 1e9
HPS = 2048 * GB  # the study's HPS (lackner2019's smaller one)


def loads(jobs, nodes: int) -> dict[str, float]:
    sub = np.array([j.submit for j in jobs])
    rt = np.array([j.runtime for j in jobs])
    n = np.array([j.nodes for j in jobs])
    io = np.array([j.input + j.output + j.data for j in jobs])
    st = np.array([j.storage for j in jobs])
    span = float((sub + rt).max() - sub.min())
    return {"jobs": len(jobs), "span_s": span, "lps_link": io.sum() / GB / span,
            "hps_capacity": float((st * rt).sum() / HPS / span), "nodes": float((n * rt).sum() / nodes / span)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="kth")
    ap.add_argument("--prefixes", default="600,4000,8000")
    args = ap.parse_args()
    print(f"{'workload':32s} {'jobs':>7s} {'LPS link':>9s} {'HPS cap.':>9s} {'nodes':>6s}")
    for seed in range(3):
        r = loads(feitelson_jobs(seed=seed), 128)
        print(f"{'feitelson, 128 nodes, seed ' + str(seed):32s} {r['jobs']:7d} {r['lps_link']:9.2f} "
              f"{r['hps_capacity']:9.2f} {r['nodes']:6.2f}")
    path, nodes = trace_path(args.trace)
    for limit in [int(x) for x in args.prefixes.split(",") if x] + [None]:
        jobs = load_workload(experiment(str(path), nodes, "sas", 1.0, limit, io=True, hps_capacity_gb=HPS / GB))
        r = loads(jobs, nodes)
        label = f"{args.trace}, first {limit}" if limit else f"{args.trace}, all"
        print(f"{label:32s} {r['jobs']:7d} {r['lps_link']:9.2f} {r['hps_capacity']:9.2f} {r['nodes']:6.2f}")


if __name__ == "__main__":
    main()
