"""Grant round trip of the Ray arbiter: begin_io (request -> grant) and end_io, as an app sees them.

usage:: python benchmarks/grant_latency.py [--clients K] [--rounds N] [--busy B]

Starts a local Ray (num_cpus=2), an arbiter with K I/O nodes and one app per
node (so no request ever waits for another app: the numbers are the control
plane's own latency), then K client processes, each a ``iolab.middleware.client``
coordinator doing N x (begin_io, end_io).  ``--busy B`` runs B CPU-bound
processes at nice 10 meanwhile, like the compute ranks of an emulation.
Prints p50/p90/p99/max in milliseconds for both calls.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np



def client(config: dict, rounds: int) -> None:
    from iolab.middleware.client import RayCoordinator

    c = RayCoordinator(config, 0, 1)
    grant, release = [], []
    for p in range(rounds):
        t = time.perf_counter()
        c.begin_io(p, "write", 1)
        t1 = time.perf_counter()
        c.end_io(p, 1)
        t2 = time.perf_counter()
        grant.append(t1 - t)
        release.append(t2 - t1)
    c.finish(True)
    print(json.dumps({"grant": grant, "release": release}), flush=True)
    c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes (nice 10) during the measurement")
    ap.add_argument("--client", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        return client(json.loads(args.client), args.rounds)

    import ray

    from iolab.middleware.arbiter_actor import Arbiter
    from iolab.middleware.policies.io_apps import IOApp

    from iolab.emulator.ray_session import RaySession

    # the local Ray of a run (memory monitor off, actors at nice 0); RAY_worker_niceness=15 in the
    # environment measures Ray's default instead
    session = RaySession.open(namespace="bench")
    busy = [subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        k = args.clients
        apps = [IOApp(id=f"c{i}", rank=i, nodes=1, release=0.0, kinds=["write"] * args.rounds,
                      amounts=[1.0] * args.rounds, bandwidth=1.0, io_node=i) for i in range(k)]
        arb = Arbiter.create(apps, policy="fifo", bandwidth=1.0, io_nodes=k, lease=60, directories=["/tmp"] * k,
                             name="bench", namespace="bench")
        gcs = ray.get_runtime_context().gcs_address
        procs = [subprocess.Popen([sys.executable, __file__, "--rounds", str(args.rounds), "--client",
                                   json.dumps({"address": gcs, "namespace": "bench", "actor": "bench",
                                               "app": f"c{i}"})], stdout=subprocess.PIPE, text=True)
                 for i in range(k)]
        while any(s["arrived"] < 1 for s in arb.status().values()):
            time.sleep(0.05)
        arb.start()
        grant, release = [], []
        for p in procs:
            out, _ = p.communicate(timeout=600)
            d = json.loads(out.strip().splitlines()[-1])
            grant += d["grant"][10:]  # drop warm-up
            release += d["release"][10:]
        arb.kill()
    finally:
        for b in busy:
            b.kill()
        session.close()
    print(f"clients {k}, rounds {args.rounds}, busy processes {args.busy}")
    for name, xs in (("begin_io (request -> grant)", grant), ("end_io (release)", release)):
        ms = np.array(xs) * 1e3
        print(f"{name:28s} p50 {np.percentile(ms, 50):6.2f} ms  p90 {np.percentile(ms, 90):6.2f} ms  "
              f"p99 {np.percentile(ms, 99):6.2f} ms  max {ms.max():6.2f} ms  (n={len(ms)})")


if __name__ == "__main__":
    main()
