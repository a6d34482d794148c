"""pybatsim's shipped schedulers through iolab's Batsim protocol, job for job against iolab's FCFS and EASY, and
what the protocol costs against the built-in EASY.

usage::

    python benchmarks/batsim_conformance.py [--swf PATH] [--jobs N] [--pybatsim PATH] [--json]

Default trace: the whole of KTH-SP2 (``../shared/data`` beside the repository or ``$IOLAB_SHARED_DATA``; absent:
skipped, exit 0) on the platform of ``examples/kth-sp2-easy.yaml``; ``--jobs N`` its first N jobs.  pybatsim:
``.venv-pybatsim/bin/pybatsim`` (``make pybatsim``) or ``--pybatsim``.  Every run is a whole process, as a user
runs it, in this one run:

1. conformance, ``--strict``: ``iolab batsim SPEC --socket ...`` against ``pybatsim fillerSched`` and ``pybatsim
   easyBackfill`` (``-v warning``), and ``iolab simulate`` with ``scheduler: fcfs`` and ``easy``; for each pair,
   the jobs that ran, the starts that are the same, and the first that differs (the earliest of its two starts)
   with what each run did then (the jobs it started at that instant, in submission order, the nodes left free
   after them: how many, and the longest run of consecutive free ids, and the jobs submitted before it still
   waiting);
2. cost, not strict: each pybatsim scheduler's run (its wall seconds, messages per second, the part spent waiting
   for the scheduler) beside ``iolab simulate`` under the built-in EASY, side by side.

Exit 1 if a job did not run or a strict run broke a rule.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from iolab.shared_data import shared_data_file

REPO = Path(__file__).resolve().parents[1]
PYBATSIM = ("fillerSched", "easyBackfill")
IOLAB = ("fcfs", "easy")


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def spec_file(folder: Path, swf: Path, scheduler: str, jobs: int | None) -> Path:
    doc = yaml.safe_load((REPO / "examples" / "kth-sp2-easy.yaml").read_text())
    doc["workload"]["path"] = str(swf)
    if jobs:
        doc["workload"]["limit"] = jobs
    doc["scheduler"] = scheduler
    path = folder / f"{scheduler}.json"
    path.write_text(json.dumps(doc))
    return path


def run(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return time.perf_counter() - t0, p.stdout


def batsim_run(iolab: str, pybatsim: str, sched: str, spec: Path, out: Path | None, strict: bool) -> tuple[float, dict]:
    endpoint = free_endpoint()
    proc = subprocess.Popen([pybatsim, sched, "-v", "warning", "-s", endpoint], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        cmd = [iolab, "batsim", str(spec), "--socket", endpoint, "--json"] + (["--out", str(out)] if out else [])
        wall, text = run(cmd + (["--strict"] if strict else []))
        if proc.wait(30) != 0:
            raise SystemExit(f"pybatsim {sched} failed: {proc.stderr.read().decode()[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    return wall, json.loads(text)


def jobs_of(path: Path) -> dict[str, tuple]:
    from iolab.trace import read_trace

    j = read_trace(path).jobs
    return {str(i): (float(r), float(s), float(e), int(n), str(ids), str(st)) for i, r, s, e, n, ids, st in
            zip(j["id"], j["release"], j["start"], j["end"], j["nodes"], j["node_ids"], j["status"])}


def _ids(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.replace(",", " ").split():
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def state_at(jobs: dict, t: float, total: int, job: str) -> dict:
    """What one run did at ``t``: the jobs it started then, the free nodes left after its decisions, the jobs
    submitted before ``job`` still waiting."""
    busy: set[int] = set()
    for r, s, e, n, ids, _ in jobs.values():
        if s <= t < e:
            busy |= _ids(ids)
    free = set(range(total)) - busy
    best = run_ = 0
    for i in range(total + 1):
        run_ = run_ + 1 if i in free else 0
        best = max(best, run_)
    started = sorted((k for k, v in jobs.items() if v[1] == t), key=lambda k: jobs[k][0])
    ahead = sorted((k for k, v in jobs.items() if v[0] < jobs[job][0] and v[0] <= t < v[1]), key=lambda k: jobs[k][0])
    return {"free": len(free), "longest_block": best, "started": [f"{k} ({jobs[k][3]} nodes)" for k in started],
            "earlier_waiting": [f"{k} ({jobs[k][3]} nodes)" for k in ahead]}


def compare(a: dict, b: dict, total: int) -> dict:
    """pybatsim's run ``a`` against iolab's ``b``: same starts, and the first that differs."""
    same = sum(1 for k in a if a[k][1] == b[k][1])
    differ = sorted((min(a[k][1], b[k][1]), k) for k in a if a[k][1] != b[k][1])
    out = {"jobs": len(a), "ran": sum(1 for v in a.values() if v[5] == "ok"), "same_starts": same}
    if differ:
        t, k = differ[0]
        out["first_difference"] = {"job": k, "submit": a[k][0], "nodes": a[k][3], "pybatsim_start": a[k][1],
                                   "iolab_start": b[k][1], "pybatsim_at": state_at(a, t, total, k),
                                   "iolab_at": state_at(b, t, total, k)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--swf", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=None, help="the trace's first N jobs (default: all)")
    ap.add_argument("--pybatsim", default=str(REPO / ".venv-pybatsim" / "bin" / "pybatsim"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    swf = a.swf or shared_data_file("KTH-SP2-1996-2.1-cln.swf.gz")
    if not Path(swf).is_file():
        print("KTH-SP2 not found beside the repository (../shared/data) nor in $IOLAB_SHARED_DATA: skipped")
        return 0
    if not Path(a.pybatsim).is_file():
        print(f"pybatsim not found at {a.pybatsim} (make pybatsim): skipped")
        return 0
    iolab = str(Path(sys.executable).with_name("iolab"))
    total = 100
    report: dict = {"trace": str(swf), "jobs": a.jobs or "all", "conformance": {}, "cost": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        specs = {s: spec_file(folder, Path(swf), s, a.jobs) for s in IOLAB}
        ours = {}
        for s in IOLAB:
            run([iolab, "simulate", str(specs[s]), "--out", str(folder / f"{s}.h5"), "--strict", "--json"])
            ours[s] = jobs_of(folder / f"{s}.h5")
        for sched in PYBATSIM:
            out = folder / f"{sched}.h5"
            wall, res = batsim_run(iolab, a.pybatsim, sched, specs["fcfs"], out, strict=True)
            theirs = jobs_of(out)
            report["conformance"][sched] = {"strict_wall_seconds": wall,
                                            **{s: compare(theirs, ours[s], total) for s in IOLAB}}
        t_easy, _ = run([iolab, "simulate", str(specs["easy"]), "--json"])
        report["cost"]["iolab easy"] = {"wall_seconds": t_easy}
        for sched in PYBATSIM:
            wall, res = batsim_run(iolab, a.pybatsim, sched, specs["fcfs"], None, strict=False)
            b = res["batsim"]
            report["cost"][f"pybatsim {sched}"] = {
                "wall_seconds": wall, "messages": b["messages"], "messages_per_second": b["messages"] / wall,
                "waiting_seconds": b["waiting_seconds"], "iolab_seconds": b["wall_seconds"] - b["waiting_seconds"],
                "events_sent": b["events_sent"], "events_received": b["events_received"]}
    if a.json:
        print(json.dumps(report, indent=1))
    else:
        _print(report)
    bad = [(s, p) for s, r in report["conformance"].items() for p in IOLAB if r[p]["ran"] != r[p]["jobs"]]
    return 1 if bad else 0


def _print(report: dict) -> None:
    print(f"trace {report['trace']}, jobs: {report['jobs']}")
    print(f"{'pybatsim':<14}{'iolab':<7}{'jobs run':>10}{'same starts':>13}  first difference")
    for sched, r in report["conformance"].items():
        for pol in IOLAB:
            c = r[pol]
            d = c.get("first_difference")
            first = "none" if d is None else (
                f"job {d['job']} ({d['nodes']} nodes, submitted {d['submit']:g}): pybatsim {d['pybatsim_start']:g}, "
                f"iolab {d['iolab_start']:g}; pybatsim then {d['pybatsim_at']}, iolab then {d['iolab_at']}")
            print(f"{sched:<14}{pol:<7}{c['ran']:>5}/{c['jobs']:<5}{c['same_starts']:>12}  {first}")
    print()
    print(f"{'run':<24}{'wall s':>8}{'messages':>10}{'msg/s':>8}{'waiting s':>11}{'iolab s':>9}")
    for name, c in report["cost"].items():
        print(f"{name:<24}{c['wall_seconds']:>8.2f}{c.get('messages', 0):>10,}{c.get('messages_per_second', 0):>8,.0f}"
              f"{c.get('waiting_seconds', 0):>11.2f}{c.get('iolab_seconds', c['wall_seconds']):>9.2f}")


if __name__ == "__main__":
    sys.exit(main())
