"""The rate a real batch run's I/O node delivers: two jobs writing through one I/O node, fifo and shared.

usage:: python benchmarks/batch_io_nodes_real.py

Two one-node jobs on one I/O node of 1 GB/s (spec; the tier, 20 GB/s, is no bottleneck) compute 100
spec s and then write 300 GB each, at time scale 0.01 and bytes scale 1e-5 (real MPI ranks, Ray, files;
strict mode on).  Prints, per policy, each grant's rate (the part's bytes over its grant-to-release
time, spec GB/s: fifo should give ~1 each, shared ~0.5 each) and the aggregate over both grants
(~1: the I/O node's rate), and the run's wall seconds.  docs/storage.md, "Measured".
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from iolab.emulator.batch.run import run_batch_emulation
from iolab.specs.batch import BatchExperiment

GB = 10**9


def spec(policy: str) -> BatchExperiment:
    job = {"submit": 0, "nodes": 1, "walltime": 2400, "runtime": 100, "output": "300GB"}
    return BatchExperiment.model_validate({
        "name": "io-node-rate", "scheduler": "fcfs",
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 1, "io_node": {"rate": "1 GB/s", "policy": policy}},
        "workload": [{"id": "a", **job}, {"id": "b", **job}],
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-5, "ranks_per_job": "nodes", "chunk_bytes": 65536},
    })


def main() -> None:
    for policy in ("fifo", "shared"):
        with tempfile.TemporaryDirectory() as d:
            t = run_batch_emulation(spec(policy), work_dir=Path(d) / "w", strict=True)
        grants = sorted(t.grants.rows(), key=lambda r: r["grant"])
        writes = {r["job"]: r for r in t.phases.rows() if r["kind"] == "write"}
        span = max(r["release"] for r in grants) - min(r["grant"] for r in grants)
        rates = [writes[r["job"]]["volume"] / (r["release"] - r["grant"]) / GB for r in grants]
        print(f"{policy:6s}  per-grant rate {', '.join(f'{x:.3f}' for x in rates)} GB/s  "
              f"aggregate {sum(writes[r['job']]['volume'] for r in grants) / span / GB:.3f} GB/s "
              f"(I/O node: 1 GB/s)  wall {t.attrs['wall_seconds']:.1f} s")


if __name__ == "__main__":
    main()
