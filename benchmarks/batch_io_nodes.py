"""What I/O nodes cost the batch simulator: examples/lackner-sas.yaml (500 Feitelson jobs, 128 nodes, SAS)
without I/O nodes and with them under each given policy.

usage: python benchmarks/batch_io_nodes.py [--io-nodes 16] [--rate "4 GB/s"] [--policies fifo,shared] [--repeat 3]

Prints, per run, the least CPU seconds of ``--repeat`` simulations (no strict checks, every phase row kept),
the makespan and the number of I/O-node grants.  The I/O-node layer solves max-min rates over every
granted part at each change (O(streams x links)), where a plain tier link costs O(log k): the difference
is what this measures (docs/simulator.md, "I/O nodes in the batch simulator").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec

SPEC = Path(__file__).resolve().parents[1] / "examples" / "lackner-sas.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--io-nodes", type=int, default=16)
    ap.add_argument("--rate", default="4 GB/s")
    ap.add_argument("--policies", default="fifo,shared")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    base = yaml.safe_load(SPEC.read_text())
    runs = [("no I/O nodes", base)]
    for pol in a.policies.split(","):
        doc = yaml.safe_load(SPEC.read_text())
        doc["platform"].update(io_nodes=a.io_nodes, io_node={"rate": a.rate, "policy": pol})
        runs.append((f"{a.io_nodes} I/O nodes, {pol}", doc))
    print(f"{'run':<28} {'CPU s':>8} {'makespan s':>12} {'grants':>8}")
    for name, doc in runs:
        spec = parse_spec(doc)
        best, t = float("inf"), None
        for _ in range(a.repeat):
            c0 = time.process_time()
            t = simulate_batch(spec, strict=False)
            best = min(best, time.process_time() - c0)
        makespan = float(max(t.jobs["end"]) - min(t.jobs["release"]))
        print(f"{name:<28} {best:>8.2f} {makespan:>12.0f} {len(t.grants):>8}")


if __name__ == "__main__":
    main()
