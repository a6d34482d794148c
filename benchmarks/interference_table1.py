"""carretero2020 Table 1 under ``shared`` against exclusive policies, on I/O nodes with each preset (simulated).

usage:: python benchmarks/interference_table1.py [--policies shared,fifo,stretch,bandwidth]

Prints per law (none and the three ``lustre-plafrim`` presets) and policy the makespan and the
geometric mean of the apps' stretch (end - release over T_min) of ``examples/carretero-table1.yaml``.
Exclusive policies move one transfer at a time (k = 1: the law never slows them); ``shared`` moves
every requested transfer at once and loses ``1 - f(k)`` of the I/O node with k of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

from iolab.sim.io.run import simulate
from iolab.specs import parse_spec
from iolab.specs.interference import PRESETS

SPEC = Path(__file__).resolve().parent.parent / "examples" / "carretero-table1.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="shared,fifo,stretch,bandwidth")
    a = ap.parse_args()
    base = yaml.safe_load(SPEC.read_text())
    print("law | " + " | ".join(f"{p}: makespan s / geo-mean stretch" for p in a.policies.split(",")))
    for law in ("none", *PRESETS):
        spec = parse_spec({**base, "platform": {**base["platform"], "interference": law}})
        cells = []
        for pol in a.policies.split(","):
            j = simulate(spec, policy=pol).jobs
            stretch = (np.asarray(j["end"]) - np.asarray(j["release"])) / np.asarray(j["min_time"])
            cells.append(f"{float(np.max(j['end'])):.0f} / {float(np.exp(np.mean(np.log(stretch)))):.3f}")
        print(f"{law} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
