"""Whole-process CPU of ``iolab simulate`` on carretero2020 Table 1: ``shared`` against sharing policies
asked through the public ``Sharing`` API.

usage:: python benchmarks/sharing_speed.py [--repeats 7]

Runs, in turn and ``--repeats`` times each (interleaved, so that a shared machine's slow phases fall on
every variant alike), ``iolab simulate examples/carretero-table1.yaml --json`` with

- ``--policy shared``: the built-in, applied by the simulator's fair-share links without asking it;
- ``--policy benchmarks/equal_shares.py:EqualShares``: the same split from a user's file, asked through
  the guard at every change (the weighted link);
- ``--policy job-fair``: the built-in ThemisIO sharing, asked without a guard;
- ``--policy '{kind: tbf, rules: [{job: app[34], rate: 0.4}], default_rate: 0.2}'``: the built-in TBF;

and prints each one's user + system CPU seconds of the whole process (``os.wait4`` on the child: the
interpreter's start, the imports, the spec, the run and the output), min and median, and the ratio of
each median to ``shared``'s (target: at most 2 for a sharing through the API).  Each run's makespan is
printed too: the user's equal shares give ``shared``'s run.

Most of a whole process is Python's start and the imports; a second table gives the simulation alone
(``iolab.sim.io.run.simulate`` of the parsed spec, CPU time in this process, min and median of the same
number of runs), where the weighted link's O(k) changes and the policy's calls are what differs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "carretero-table1.yaml"
IOLAB = Path(sys.executable).parent / "iolab"
VARIANTS = {
    "shared": "shared",
    "user file, equal shares": f"{ROOT / 'benchmarks' / 'equal_shares.py'}:EqualShares",
    "job-fair (built-in)": "job-fair",
    "tbf (built-in)": "{kind: tbf, rules: [{job: 'app[34]', rate: 0.4}], default_rate: 0.2}",
}


def run(policy: str) -> tuple[float, float]:
    """(CPU seconds of the whole ``iolab simulate`` process, its makespan)."""
    p = subprocess.Popen([str(IOLAB), "simulate", str(SPEC), "--policy", policy, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"iolab simulate --policy {policy} failed (status {status})")
    return ru.ru_utime + ru.ru_stime, float(json.loads(out)["makespan"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    cpu: dict[str, list[float]] = {k: [] for k in VARIANTS}
    makespan: dict[str, float] = {}
    for _ in range(a.repeats):
        for name, policy in VARIANTS.items():
            c, m = run(policy)
            cpu[name].append(c)
            makespan[name] = m
    base = statistics.median(cpu["shared"])
    print(f"iolab simulate {SPEC.relative_to(ROOT)} --policy P --json, {a.repeats} runs each, whole-process CPU (s)")
    print("| policy | min | median | median / shared's | makespan s |")
    print("|---|---|---|---|---|")
    for name in VARIANTS:
        med = statistics.median(cpu[name])
        print(f"| {name} | {min(cpu[name]):.3f} | {med:.3f} | {med / base:.2f} | {makespan[name]:,.1f} |")
    inner = in_process(a.repeats)
    base = statistics.median(inner["shared"])
    print(f"\nthe simulation alone (simulate(spec) in this process), {a.repeats} runs each, CPU (ms)")
    print("| policy | min | median | median / shared's |")
    print("|---|---|---|---|")
    for name in VARIANTS:
        med = statistics.median(inner[name])
        print(f"| {name} | {1e3 * min(inner[name]):.1f} | {1e3 * med:.1f} | {med / base:.2f} |")


def in_process(repeats: int) -> dict[str, list[float]]:
    """CPU seconds of ``simulate(spec)`` per variant, in this process (the imports and the spec done)."""
    import time

    from iolab.cli.options import IO_POLICY
    from iolab.sim.io.run import simulate
    from iolab.specs import load_spec

    specs = {name: load_spec(SPEC, overrides={"policy": IO_POLICY.convert(p, None, None)})
             for name, p in VARIANTS.items()}
    out: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for _ in range(repeats):
        for name, spec in specs.items():
            t0 = time.process_time()
            simulate(spec, strict=False)
            out[name].append(time.process_time() - t0)
    return out


if __name__ == "__main__":
    main()
