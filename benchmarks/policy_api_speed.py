"""What a policy written through the public API costs: EASY from a user's file against the built-in EASY.

usage::

    python benchmarks/policy_api_speed.py [--swf PATH] [--repeat N] [--json]

Default trace: KTH-SP2 (``../shared/data/KTH-SP2-1996-2.1-cln.swf.gz`` beside the repository, or
``$IOLAB_SHARED_DATA``; a missing trace is skipped with a message, exit 0), on the platform of
``examples/kth-sp2-easy.yaml``.  Two commands, each a whole process (``iolab simulate SPEC --json``, the
CLI as a user runs it), alternating, ``--repeat`` times each:

- built-in: ``scheduler: easy``;
- public API: ``scheduler: examples/policies/easy.py:EASY`` (EASY re-written through ``iolab.policy``,
  guarded like any user's policy).

It prints each side's CPU seconds (user + system of the process, ``os.wait4``) as least / median, and
the ratio of the least (noise only adds time) and of the medians.  Then one more run of each writes its
trace and the starts are compared job for job: exit 1 if any differs.  The target is a ratio of 3 or
less (docs/results.md, "The public policy API: what a user's policy costs").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from iolab.shared_data import shared_data_file

REPO = Path(__file__).resolve().parents[1]

POLICIES = {"built-in": "easy", "public API": str(REPO / "examples" / "policies" / "easy.py") + ":EASY"}


def cpu_of(cmd: list[str]) -> float:
    """User + system CPU seconds of ``cmd`` as a whole process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def spec_file(folder: Path, swf: Path, scheduler: str) -> Path:
    doc = yaml.safe_load((REPO / "examples" / "kth-sp2-easy.yaml").read_text())
    doc["workload"]["path"] = str(swf)
    doc["scheduler"] = scheduler
    path = folder / (("api" if ":" in scheduler else "builtin") + ".json")
    path.write_text(json.dumps(doc))
    return path


def starts(trace: Path) -> dict[str, float]:
    from iolab.trace import read_trace

    return {r["id"]: r["start"] for r in read_trace(trace).jobs.rows()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--swf", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    swf = a.swf or shared_data_file("KTH-SP2-1996-2.1-cln.swf.gz")
    if not Path(swf).is_file():
        print("KTH-SP2 not found beside the repository (../shared/data) nor in $IOLAB_SHARED_DATA: skipped")
        return 0
    iolab = str(Path(sys.executable).with_name("iolab"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        specs = {name: spec_file(folder, Path(swf), s) for name, s in POLICIES.items()}
        cpu: dict[str, list[float]] = {name: [] for name in specs}
        for _ in range(a.repeat):
            for name, spec in specs.items():
                cpu[name].append(cpu_of([iolab, "simulate", str(spec), "--json"]))
        seen = {}
        for name, spec in specs.items():
            out = folder / f"{name.replace(' ', '_')}.h5"
            subprocess.run([iolab, "simulate", str(spec), "--out", str(out)], check=True, capture_output=True)
            seen[name] = starts(out)
    a_s, b_s = seen["built-in"], seen["public API"]
    differ = sorted(j for j in a_s if a_s[j] != b_s.get(j))
    least = {n: min(v) for n, v in cpu.items()}
    median = {n: statistics.median(v) for n, v in cpu.items()}
    result = {"trace": str(swf), "jobs": len(a_s), "repeat": a.repeat, "cpu": cpu,
              "ratio_least": least["public API"] / least["built-in"],
              "ratio_median": median["public API"] / median["built-in"], "starts_that_differ": len(differ)}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{Path(swf).name}: {len(a_s):,} jobs, whole-process CPU seconds of `iolab simulate` "
              f"(least / median of {a.repeat})")
        for name in cpu:
            print(f"  {name:<11} {least[name]:6.2f} / {median[name]:6.2f}   ({POLICIES[name].split('/')[-1]})")
        print(f"  public API / built-in: {result['ratio_least']:.2f}x (least), {result['ratio_median']:.2f}x (median); "
              f"target <= 3x")
        print(f"  starts that differ: {len(differ)}" + (f" (first: {differ[:5]})" if differ else " (same starts)"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
