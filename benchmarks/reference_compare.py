"""iolab's batch simulator against benchmarks/reference_easy.py on a whole SWF trace: same starts? how fast?

usage::

    python benchmarks/reference_compare.py [--swf PATH] [--nodes N] [--policies fcfs,easy,conservative]
                                           [--repeat N] [--json]

Default trace: KTH-SP2 (``../shared/data/KTH-SP2-1996-2.1-cln.swf.gz`` beside the repository, or
``$IOLAB_SHARED_DATA``), the platform of ``examples/kth-sp2-easy.yaml`` with its scheduler replaced by
each policy in turn.  A missing trace is skipped with a message (exit 0).

For each policy, both sides run as whole processes, each timed (wall time, and that
process's own peak RSS and CPU seconds, from ``/usr/bin/time``), median over ``--repeat`` runs, the two
sides alternating.  The CPU ratio is also given two ways that a shared host's slow phases move less: the
median of the ratios of each iolab run to the reference run right after it (*paired*), and the ratio of
each side's least CPU (*least*: noise only adds time):

- iolab: ``iolab simulate SPEC --json`` (the CLI, as a user runs it; SPEC is a temporary JSON copy of
  the example with the policy and an absolute trace path);
- reference: ``python benchmarks/reference_easy.py TRACE --policy P --json``.

Then, untimed, one more run of each writes every job's start (iolab: ``--out`` trace, read back with
``iolab.trace.read_trace``; reference: ``--csv``), and the starts are compared job for job.  Starts that
differ are attributed by a third run of the reference with ``--iolab-runtime0`` (no new decision when a
runtime-0 job ends, iolab's behaviour before issue 8 item 7a): if iolab agrees with that run on every
job, every difference traces back to runtime-0 jobs.  Exit 1 on any difference not so explained.

``--carretero [--quick]``: the I/O level instead.  The workloads of ``iolab study carretero`` (120, or
the quick study's 8), packed by Make-Pack for each of the study's 4 strategies exactly as the study does
(one I/O node), go through iolab's event engine (``Scenario.from_spec`` + ``run_engine``) and through
``benchmarks/reference_carretero.py`` (the spec as a dict + the plan), both in this process; every app
must end at the same time (1e-9 relative).  Prints the CPU seconds of each side per strategy (workload
generation and packing are outside both).
"""

from __future__ import annotations

import argparse
import importlib.util
import csv
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cache_bytecode import compile_iolab  # noqa: E402  (a sibling script: iolab's .pyc cached before timing)

import yaml

from iolab.middleware.policies.mapping import PackJob, make_pack
from iolab.middleware.policies.plan import Plan
from iolab.sim.io.run import run_engine
from iolab.sim.io.scenario import Scenario
from iolab.workloads.carretero import generate
from iolab.studies.carretero import QUICK, STRATEGIES, StudySize, workload_seed
from iolab.trace import read_trace

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("IOLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
EXAMPLE = REPO / "examples" / "kth-sp2-easy.yaml"
REFERENCE = REPO / "benchmarks" / "reference_easy.py"
TIME = Path("/usr/bin/time")


def iolab_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("iolab")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "iolab"]


def timed(cmd: list[str], out: Path) -> tuple[float, float, str, float]:
    """Run ``cmd`` to completion: (wall seconds, peak RSS in MB of that process, its stdout, its CPU seconds).

    The peak comes from ``/usr/bin/time``, not from this process's ``wait4``: Linux keeps a process's
    peak RSS across exec, so a child forked from this (large) process would report at least its size.
    """
    if not TIME.is_file():
        raise SystemExit(f"{TIME} not found: it measures each process's own peak memory")
    rss = out.with_suffix(".rss")
    with open(out, "w") as fh:
        t0 = time.perf_counter()
        p = subprocess.run([str(TIME), "-f", "%M %U %S", "-o", str(rss)] + cmd, stdout=fh, stderr=subprocess.PIPE,
                           text=True)
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    peak, user, system = rss.read_text().split()[-3:]
    return wall, int(peak) / 1024, out.read_text(), float(user) + float(system)


def read_csv_starts(path: Path) -> dict[str, float]:
    with open(path, newline="") as fh:
        return {r["job"]: float(r["start"]) for r in csv.DictReader(fh)}


def compare(policy: str, swf: Path, nodes: int, repeat: int, tmp: Path) -> dict:
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name=f"reference-compare-{policy}", scheduler=policy,
                workload={"source": "swf", "path": str(swf.resolve())})
    spec["platform"]["nodes"] = nodes
    spec_path = tmp / f"{policy}.json"
    spec_path.write_text(json.dumps(spec))
    # the whole trace, whatever its size (SDSC-BLUE's 243 306 jobs are above the command's default --max-jobs)
    io_cmd = iolab_cmd() + ["simulate", str(spec_path), "--json", "--max-jobs", str(10 ** 7)]
    ref_cmd = [sys.executable, str(REFERENCE), str(swf), "--policy", policy, "--nodes", str(nodes), "--json"]
    io_runs, ref_runs = [], []
    for _ in range(repeat):  # alternate, so that a slow moment of the machine hits both
        wall, peak, _, cpu = timed(io_cmd, tmp / "io.out")
        io_runs.append((wall, peak, cpu))
        wall, peak, out, cpu = timed(ref_cmd, tmp / "ref.out")
        ref_runs.append((wall, peak, cpu))
    summ = json.loads(out)
    # the starts, untimed
    trace_path = tmp / f"{policy}.h5"
    timed(iolab_cmd() + ["simulate", str(spec_path), "--out", str(trace_path), "--max-jobs", str(10 ** 7)], tmp / "io.out")
    t = read_trace(trace_path)
    io_starts = dict(zip((str(x) for x in t.jobs["id"]), (float(x) for x in t.jobs["start"])))
    timed(ref_cmd[:-1] + ["--csv", str(tmp / "ref.csv")], tmp / "ref.out")
    ref_starts = read_csv_starts(tmp / "ref.csv")
    if io_starts.keys() != ref_starts.keys():
        raise SystemExit(f"{policy}: the two sides simulated different job sets "
                         f"({len(io_starts)} vs {len(ref_starts)} jobs)")
    differ = [j for j in ref_starts if ref_starts[j] != io_starts[j]]
    unexplained = None
    if differ:
        timed(ref_cmd[:-1] + ["--iolab-runtime0", "--csv", str(tmp / "bug.csv")], tmp / "ref.out")
        bug = read_csv_starts(tmp / "bug.csv")
        unexplained = sum(bug[j] != io_starts[j] for j in bug)
    n = len(ref_starts)
    return {
        "policy": policy, "jobs": n,
        "iolab_wall_s": statistics.median(r[0] for r in io_runs),
        "iolab_cpu_s": statistics.median(r[2] for r in io_runs),
        "iolab_peak_mb": max(r[1] for r in io_runs),
        "ref_wall_s": statistics.median(r[0] for r in ref_runs),
        "ref_cpu_s": statistics.median(r[2] for r in ref_runs),
        "ref_peak_mb": max(r[1] for r in ref_runs),
        # each iolab run against the reference run right after it, the median of those ratios: robust to the
        # machine's slow phases (a shared host), which the ratio of two medians is not when the runs are few
        "cpu_ratio_paired": statistics.median(i[2] / r[2] for i, r in zip(io_runs, ref_runs)),
        "iolab_cpu_least": min(r[2] for r in io_runs), "ref_cpu_least": min(r[2] for r in ref_runs),
        "runtime0_jobs": summ["runtime0_jobs"],
        "starts_differ": len(differ),
        "differ_not_runtime0": unexplained if differ else 0,
        "mean_wait_ref": summ["mean_wait"],
        "mean_wait_iolab": statistics.fmean(float(s) - float(r) for s, r in zip(t.jobs["start"], t.jobs["release"])),
    }


def load_reference_carretero():
    spec = importlib.util.spec_from_file_location("reference_carretero", REPO / "benchmarks" / "reference_carretero.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def compare_carretero(size: StudySize, seed: int = 2020) -> dict:
    """CPU seconds per strategy of both sides over the study's workloads, and the worst disagreement."""
    ref = load_reference_carretero()
    cpu = {name: [0.0, 0.0] for name in STRATEGIES}
    worst, apps_checked = 0.0, 0
    for i, alpha_gen in enumerate(size.alphas):
        for k in range(size.workloads):
            spec = generate(alpha_gen, workload_seed(seed, i, k), size.params)
            doc = spec.model_dump(mode="json")
            b, P = spec.platform.bandwidth, spec.platform.nodes_per_io_node
            jobs = [PackJob(a.id, a.nodes, a.io_total(), a.min_time(b)) for a in spec.apps]
            index = spec.app_index()
            for name, (sens, policy) in STRATEGIES.items():
                packs = make_pack(jobs, P, b, spec.io_load() if sens is None else sens)
                ranks = [[index[j] for j in pk.ids] for pk in packs]
                t0 = time.process_time()
                rec = run_engine(spec, policy=policy, mode="event", rows=False,
                                 scenario=Scenario.from_spec(spec, Plan(True, (tuple(map(tuple, ranks)),), 1.0)))
                t1 = time.process_time()
                apps, bw, io_nodes = ref.build(doc, spec.name)
                ref.simulate(apps, bw, io_nodes, policy, [ranks])
                t2 = time.process_time()
                cpu[name][0] += t1 - t0
                cpu[name][1] += t2 - t1
                for a in apps:
                    mine, theirs = a.end, rec.end[a.rank]
                    worst = max(worst, abs(mine - theirs) / max(abs(theirs), 1e-300))
                apps_checked += len(apps)
    return {"workloads": len(size.alphas) * size.workloads, "apps_checked": apps_checked,
            "worst_relative_difference": worst,
            "strategies": {n: {"policy": STRATEGIES[n][1], "iolab_cpu_s": c[0], "ref_cpu_s": c[1]}
                           for n, c in cpu.items()}}


def main_carretero(quick: bool, as_json: bool) -> int:
    r = compare_carretero(QUICK if quick else StudySize())
    if as_json:
        print(json.dumps(r, indent=1))
    else:
        print(f"carretero study ({'quick' if quick else 'full'}): {r['workloads']} workloads, one I/O node, "
              f"{r['apps_checked']} app ends checked, worst relative difference {r['worst_relative_difference']:.3g}\n")
        print("| strategy | policy | iolab CPU s | reference CPU s | ratio |")
        print("|---|---|---|---|---|")
        for n, e in r["strategies"].items():
            print(f"| {n} | {e['policy']} | {e['iolab_cpu_s']:.2f} | {e['ref_cpu_s']:.2f} "
                  f"| {e['iolab_cpu_s'] / e['ref_cpu_s']:.1f}x |")
    return 0 if r["worst_relative_difference"] <= 1e-9 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--swf", type=Path, default=DATA / "KTH-SP2-1996-2.1-cln.swf.gz")
    ap.add_argument("--nodes", type=int, help="default: the example's 100 for KTH, else the header's MaxNodes")
    ap.add_argument("--policies", default="fcfs,easy,conservative")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per side (median)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--carretero", action="store_true", help="the I/O level: the carretero study's workloads")
    ap.add_argument("--quick", action="store_true", help="with --carretero: the quick study's 8 workloads")
    a = ap.parse_args()
    compile_iolab()  # as installed: no module compiled again in every timed run
    if a.carretero:
        return main_carretero(a.quick, a.json)
    if not a.swf.is_file():
        print(f"skipped: {a.swf} not found (set IOLAB_SHARED_DATA to the folder holding it, or give --swf)")
        return 0
    nodes = a.nodes
    if nodes is None:
        nodes = yaml.safe_load(EXAMPLE.read_text())["platform"]["nodes"]
        if "KTH" not in a.swf.name:
            with open(a.swf, "rb") as fh:
                gz = fh.read(2) == b"\x1f\x8b"
            with gzip.open(a.swf, "rt") if gz else open(a.swf) as fh:
                for line in fh:
                    if line.startswith("; MaxNodes:"):
                        nodes = int(line.split(":")[1])
                        break
    if not a.json:
        print(f"{a.swf.name} on {nodes} nodes, whole processes, median of {a.repeat} run(s)\n")
        print("| policy | jobs | iolab wall / CPU s | iolab peak MB | reference wall / CPU s | reference peak MB "
              "| ratio (wall, CPU) | CPU ratio: paired, least | runtime-0 jobs | starts differing | not from runtime-0 "
              "| mean wait iolab / ref s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="refcmp-") as d:
        for policy in a.policies.split(","):
            r = compare(policy.strip(), a.swf, nodes, a.repeat, Path(d))
            rows.append(r)
            if not a.json:  # one row as soon as it is measured
                print(f"| {r['policy']} | {r['jobs']} | {r['iolab_wall_s']:.2f} / {r['iolab_cpu_s']:.2f} "
                      f"| {r['iolab_peak_mb']:.0f} | {r['ref_wall_s']:.2f} / {r['ref_cpu_s']:.2f} | {r['ref_peak_mb']:.0f} "
                      f"| {r['iolab_wall_s'] / r['ref_wall_s']:.1f}x, {r['iolab_cpu_s'] / r['ref_cpu_s']:.1f}x "
                      f"| {r['cpu_ratio_paired']:.2f}x, {r['iolab_cpu_least'] / r['ref_cpu_least']:.2f}x "
                      f"| {r['runtime0_jobs']} | {r['starts_differ']} | {r['differ_not_runtime0']} "
                      f"| {r['mean_wait_iolab']:.1f} / {r['mean_wait_ref']:.1f} |", flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
    return 1 if any(r["differ_not_runtime0"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
