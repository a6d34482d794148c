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
from iolab.validation.single_multi import UNITS, single_vs_multiple


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="lustre-plafrim-b")
    ap.add_argument("--apps", type=int, default=4)
    ap.add_argument("--no-real", action="store_true", help="simulate only")
    a = ap.parse_args()
    law = InterferenceLaw.preset(a.preset)
    print(f"law {law.describe()}: f({a.apps}) = {law.factor(a.apps):.4f}, the paper's d = {1 - law.factor(a.apps):.1%}")
    runtimes = [("simulated", None)]
    if not a.no_real:
        from iolab.emulator.io.run import run_emulation

        runtimes.append(("real", lambda s, out: run_emulation(s, out=out)))
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in runtimes:
            t = time.perf_counter()
            (Path(tmp) / name).mkdir()
            r = single_vs_multiple(a.preset, a.apps, run, Path(tmp) / name)
            print(f"{name:9s}: BW_single {r.single:.4f} units/s ({r.single_span:.1f} s), sum BW_multi {r.multi:.4f} "
                  f"units/s ({a.apps} x {UNITS:g} units in {r.multi_span:.1f} s), d = {r.d:.1%} "
                  f"(law: {1 - law.factor(a.apps):.1%}); {time.perf_counter() - t:.0f} s wall")


if __name__ == "__main__":
    main()
