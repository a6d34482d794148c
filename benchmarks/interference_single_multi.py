"""carretero2020 §3's single-vs-multiple experiment, simulated and on the testbed, with a preset.

usage:: python benchmarks/interference_single_multi.py [--preset lustre-plafrim-b] [--apps 4] [--no-real]

One I/O node under ``shared`` whose law is the preset; identical apps each write ``V`` units once.
*Single*: one app alone; *multiple*: ``--apps`` of them released together (the paper's 4, each on
its own file).  ``d = 1 - sum(BW_multi) / BW_single`` as the paper defines it: ``BW_single`` the
lone app's bandwidth (V over its write phase), ``sum(BW_multi)`` the aggregate of the apps together
(their bytes over the span from the first write's start to the last one's end).  The simulator
gives ``1 - f(k)`` exactly; the real run (``iolab emulate``'s machinery: MPI Jacobi apps, the Ray
arbiter's token bucket under the law) measures it from the trace's phase rows.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from iolab.middleware.policies.interference import InterferenceLaw
from iolab.sim.io.run import simulate
from iolab.specs import parse_spec

V = 40.0  # units each app writes (4 MiB each: 160 MiB)


def spec(n: int, preset: str):
    return parse_spec({
        "name": f"single-multi-{n}", "policy": "shared", "mapping": "none",
        "platform": {"io_nodes": 1, "nodes_per_io_node": 16, "bandwidth": 1.0, "interference": preset},
        "apps": [{"id": f"app{i}", "nodes": 1, "phases": [{"compute": 0.5}, {"write": V}]} for i in range(n)],
        "emulator": {"time_scale": 0.1, "unit_bytes": 4 << 20, "chunk_bytes": 1 << 20, "ranks_per_app": 1,
                     "grid": 32, "lease": 60},
    })


def d_of(trace) -> tuple[float, float, float]:
    """(aggregate units/s, span, bytes) of the write phases of a trace."""
    w = [r for r in trace.phases.rows() if r["kind"] == "write"]
    t0, t1 = min(r["start"] for r in w), max(r["end"] for r in w)
    vol = sum(r["volume"] for r in w)
    return vol / (t1 - t0), t1 - t0, vol


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="lustre-plafrim-b")
    ap.add_argument("--apps", type=int, default=4)
    ap.add_argument("--no-real", action="store_true", help="simulate only")
    a = ap.parse_args()
    law = InterferenceLaw.preset(a.preset)
    print(f"law {law.describe()}: f({a.apps}) = {law.factor(a.apps):.4f}, the paper's d = {1 - law.factor(a.apps):.1%}")
    runtimes = [("simulated", lambda s, out: simulate(s))]
    if not a.no_real:
        from iolab.emulator.io.run import run_emulation

        runtimes.append(("real", lambda s, out: run_emulation(s, out=out)))
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in runtimes:
            t = time.perf_counter()
            single, s_span, _ = d_of(run(spec(1, a.preset), Path(tmp) / f"{name}-1.h5"))
            multi, m_span, vol = d_of(run(spec(a.apps, a.preset), Path(tmp) / f"{name}-{a.apps}.h5"))
            d = 1 - multi / single
            print(f"{name:9s}: BW_single {single:.4f} units/s ({s_span:.1f} s), sum BW_multi {multi:.4f} units/s "
                  f"({vol:g} units in {m_span:.1f} s), d = {d:.1%} (law: {1 - law.factor(a.apps):.1%}); "
                  f"{time.perf_counter() - t:.0f} s wall")


if __name__ == "__main__":
    main()
