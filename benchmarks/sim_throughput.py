"""Simulator throughput and the wall time / peak memory of the carretero study.

usage:: python benchmarks/sim_throughput.py [--full] [--jobs N] [--repeat N]

Prints events per second of CPU time (``time.process_time``: on a loaded machine
the wall clock counts the other processes' turns too) of the next-event engine on a generated workload
(each of the 9 I/O policies, best of ``--repeat``, 3) and, for the policies it knows (fifo,
longest-remaining, stretch), of benchmarks/reference_carretero.py on the same
workload and plan (the same events; every app's end is checked equal), of the
time-stepped engine on Table 1, and, with --full, the
wall time and peak RSS of `iolab study carretero` (target: <= 60 s on 2 cores).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path


from iolab.middleware.policies import POLICIES  # noqa: E402
from iolab.specs import load_spec  # noqa: E402
from iolab.sim.io.event import EventEngine  # noqa: E402
from iolab.sim.io.scenario import Scenario  # noqa: E402
from iolab.sim.io.stepped import SteppedEngine  # noqa: E402
from iolab.workloads.carretero import generate  # noqa: E402
from reference_compare import load_reference_carretero  # noqa: E402  (beside this script)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also time the full carretero study")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs per policy, the best counts (default 3)")
    args = ap.parse_args()

    spec = generate(1.0, 7)
    sc = Scenario.from_spec(spec)
    print(f"workload: {len(spec.apps)} apps, {sum(a.iterations for a in spec.apps)} I/O phases, {sc.plan.pack_count} packs")
    ref = load_reference_carretero()
    doc = spec.model_dump(mode="json")
    plan = [[list(pack) for pack in node] for node in sc.plan.nodes]
    for policy in POLICIES:
        best = best_ref = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            rec = EventEngine(sc, policy, rows=False).run()
            best = min(best, time.process_time() - t0)
            if policy in ref.POLICIES:  # alternating, so that a slow moment hits both
                apps, b, io_nodes = ref.build(doc, spec.name)
                t0 = time.process_time()
                ref.simulate(apps, b, io_nodes, policy, plan, sc.plan.packed)
                best_ref = min(best_ref, time.process_time() - t0)
        line = f"event engine, {policy:18s}: {rec.events / best:10.0f} events/s ({rec.events} events, {best:.3f} s)"
        if policy in ref.POLICIES:
            worst = max(abs(a.end - rec.end[a.rank]) / max(abs(rec.end[a.rank]), 1e-300) for a in apps)
            if worst > 1e-9:
                raise SystemExit(f"{policy}: the reference disagrees (worst relative difference {worst:.3g})")
            line += f"   reference: {rec.events / best_ref:10.0f} events/s ({best_ref:.3f} s, same ends)"
        print(line)
    t1 = load_spec(Path(__file__).resolve().parents[1] / "examples" / "carretero-table1.yaml")
    sc1 = Scenario.from_spec(t1)
    for dt in (1.0, 0.5):
        t0 = time.process_time()
        rec = SteppedEngine(sc1, "fifo", dt, rows=False).run()
        el = time.process_time() - t0
        print(f"step engine, Table 1, dt={dt}: {rec.events / el:10.0f} steps/s ({rec.events} steps, {el:.2f} s)")
    if args.full:
        from iolab.studies.carretero import run_study

        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            s = run_study(Path(d), jobs=args.jobs, progress=False)
            wall = time.perf_counter() - t0
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"carretero study: {s['workloads']} workloads, {s['events']} events, {wall:.1f} s wall "
              f"with {args.jobs} processes; peak RSS {peak_self:.0f} MiB (main), {peak_children:.0f} MiB (largest worker)")
        print("relative makespan of Sensibility=1 (geo. mean), R=1/3/5: "
              + ", ".join(f"{s['strategies']['s1'][f'makespan_R{R}']:.2f}" for R in (1, 3, 5))
              + "  (paper: 1.09, 0.71, 0.53)")


if __name__ == "__main__":
    main()
