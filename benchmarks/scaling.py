#!/usr/bin/env python3
"""How the batch simulator's cost grows with the jobs and with the nodes: CPU seconds and peak memory of
``iolab simulate SPEC --json`` (a subprocess, measured whole: start-up, workload generation, simulation,
metrics), for FCFS, EASY, conservative and SAS, with and without I/O.

    python benchmarks/scaling.py --quick [--reference] [--out DIR] [--figure scaling.png]
    python benchmarks/scaling.py [--policies fcfs,easy] [--io on|off|both] [--max-jobs 100000]
                                 [--jobs-sizes 1000,10000,...] [--node-sizes 128,1024,...]
                                 [--nodes 128] [--jobs 10000] [--load 0.9] [--seed 1]
                                 [--workload-extra '{"checkpoint": {"interval": 3600}}'] [--timeout S]
                                 [--repeat N] [--phases all|jobs|none]

Two sweeps:

- **jobs**: ``--jobs-sizes`` (default 10^3 ... 10^6) Feitelson jobs on ``--nodes`` nodes (default 128);
- **nodes**: ``--node-sizes`` (default 128 ... 16 384) nodes, ``--jobs`` jobs each (default 10 000).

Every run is at the same offered load (``--load``, default 0.9): the Feitelson arrival factor (mean
seconds between new jobs) is chosen per node count so that sum(nodes x runtime) / (nodes of the machine x
span of the submissions) of a 5 000-job sample of the same generator equals the load (three fixed-point
steps, af <- af x load(af) / target); the same factor then serves every job count.  The platform is
lackner2019's scaled with the nodes: 16 GB per node, R_lps = 1 GB/s, R_hps = 15 GB/s, R_stage = 5 GB/s,
an HPS of 16 GB per node.  Without I/O the workload has ``io_fraction: 0, checkpoint_fraction: 0``;
``--workload-extra`` (a JSON mapping) is merged into the spec's workload mapping (fields other branches
add, e.g. a checkpoint interval).

Measured per run with ``os.wait4`` on the child: CPU seconds (user + system) and peak resident memory;
``--repeat N`` runs every process N times and keeps the run of least CPU (the start-ups too).  iolab's
bytecode is cached first (``cache_bytecode.py``), as an installation has it.
``--reference`` also runs benchmarks/reference_batch_io.py (standard library only) on the same jobs (the
job table is written from ``iolab.workloads.load_workload`` of the same spec, outside the
measurement) for FCFS and EASY, and prints its CPU, memory, makespan and mean turnaround beside
iolab's.  ``--figure`` draws CPU seconds against jobs and against nodes (log-log), one line per
policy x I/O (the reference dashed), each labelled with the exponent of a least-squares line
(``numpy.polyfit``) through log(CPU above the start-up cost) against log(size); the start-up cost is
the CPU of a one-job run of each program, measured first, and points below 1.5 times it are left out
of the fit (a slope needs two points above; else none is given).  ``--out DIR`` writes ``scaling.csv``
(one row per run) and
keeps the specs and job tables there (else they go to a temporary folder, removed at the end).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import shutil
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cache_bytecode import compile_iolab  # noqa: E402  (a sibling script: iolab's .pyc cached before timing)

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference_batch_io.py"
GB = 10**9
MEMORY, R_LPS, R_HPS, R_STAGE = 16 * GB, 1 * GB, 15 * GB, 5 * GB
POLICIES = ("fcfs", "easy", "conservative", "sas")
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red")  # one per policy; I/O: filled markers
REFERENCE_POLICIES = ("fcfs", "easy")
FULL_JOBS = (1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
FULL_NODES = (128, 512, 2048, 8192, 16_384)
QUICK_JOBS = (250, 500, 1000)
QUICK_NODES = (64, 256, 1024)
NEAR_STARTUP = 1.5  # points below this multiple of the start-up cost are left out of the fits (mostly start-up)
SAMPLE = 5000  # jobs of the sample the arrival factor is calibrated on
FIELDS = ("sweep", "program", "policy", "io", "jobs", "nodes", "arrival_factor", "cpu_s", "peak_mb", "wall_s",
          "makespan", "mean_turnaround", "status")


def iolab_exe() -> str:
    exe = Path(sys.executable).with_name("iolab")
    return str(exe) if exe.exists() else "iolab"


def least(repeat: int, cmd: list[str], timeout: float | None) -> tuple[str, float, float, float, int]:
    """:func:`measure` ``repeat`` times (at least once); the run of least CPU (a failed run at once)."""
    best = None
    for _ in range(max(1, repeat)):
        res = measure(cmd, timeout)
        if res[4] != 0:
            return res
        if best is None or res[1] < best[1]:
            best = res
    return best


def measure(cmd: list[str], timeout: float | None) -> tuple[str, float, float, float, int]:
    """Run ``cmd``; (stdout, CPU seconds of the child (user + system), its peak RSS in MB, wall seconds,
    exit status or -9 after a timeout)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        deadline = None if timeout is None else t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                status = -9
                break
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status) if status != -9 else -9  # Popen must not wait again
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        out.seek(0)
        text = out.read().decode(errors="replace")
    if p.returncode not in (0, -9):
        sys.stderr.write(f"{' '.join(cmd)}: exit {p.returncode}\n{err[-2000:]}\n")
    return text, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, time.perf_counter() - t0, p.returncode


RATE_NODES = None  # --scale-rates: the link rates grow with the nodes (lackner2019's per 128 nodes)


def platform(nodes: int) -> dict:
    k = nodes / 128 if RATE_NODES else 1.0
    return {"nodes": nodes, "memory_per_node": MEMORY, "lps": {"rate": R_LPS * k},
            "hps": {"rate": R_HPS * k, "capacity": 16 * GB * nodes}, "stage_rate": R_STAGE * k}


def workload(jobs: int, af: float, io: bool, extra: dict) -> dict:
    """The Feitelson workload mapping; ``extra`` (I/O-model fields) applies to the runs with I/O only."""
    w = {"source": "feitelson", "jobs": jobs, "arrival_factor": af}
    if not io:
        w.update(io_fraction=0.0, checkpoint_fraction=0.0)
    else:
        w.update(extra)
    return w


def offered_load(nodes: int, af: float, seed: int) -> float:
    from iolab.workloads import feitelson_jobs  # only here: the measured runs are subprocesses

    js = feitelson_jobs(seed=seed, max_nodes=nodes, lps_rate=R_LPS, memory_per_node=MEMORY, jobs=SAMPLE,
                        arrival_factor=af)
    span = max(j.submit for j in js) - min(j.submit for j in js)
    return sum(j.nodes * j.runtime for j in js) / (nodes * span)


def arrival_factor(nodes: int, load: float, seed: int) -> float:
    af = 500.0
    for _ in range(3):
        af *= offered_load(nodes, af, seed) / load
    return af


def write_table(spec: dict, path: Path) -> None:
    """The spec's jobs (iolab's generator, as ``iolab simulate`` draws them) as the reference's job table."""
    from iolab.workloads import load_workload
    from iolab.specs import parse_spec

    jobs = load_workload(parse_spec(spec))
    with open(path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["id", "submit", "nodes", "walltime", "runtime", "input", "output", "data"])
        for j in jobs:
            wr.writerow([j.id, repr(float(j.submit)), j.nodes, repr(float(j.walltime)), repr(float(j.runtime)),
                         repr(float(j.input)), repr(float(j.output)), repr(float(j.data))])


def fit_exponent(sizes, cpu, startup: float) -> float:
    import numpy as np

    pts = [(s, c - startup) for s, c in zip(sizes, cpu) if c >= NEAR_STARTUP * startup and s > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def draw(rows: list[dict], startup: dict[str, float], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 8))
    for ax, sweep, xkey in ((axes[0], "jobs", "jobs"), (axes[1], "nodes", "nodes")):
        lines: dict[tuple, list] = {}
        for r in rows:
            if r["sweep"] == sweep and r["status"] == "ok":
                lines.setdefault((r["program"], r["policy"], r["io"]), []).append(r)
        for (program, policy, io), rs in sorted(lines.items()):
            rs.sort(key=lambda r: r[xkey])
            x, y = [r[xkey] for r in rs], [r["cpu_s"] for r in rs]
            b = fit_exponent(x, y, startup[program])
            name = f"{policy}, {'I/O' if io == 'on' else 'no I/O'}" + (" (reference)" if program != "iolab" else "")
            color = COLORS[POLICIES.index(policy) % len(COLORS)]
            ax.plot(x, y, "--" if program != "iolab" else "-", color=color, marker="o" if io == "on" else "s",
                    markersize=5, markerfacecolor=color if io == "on" else "white", alpha=1 if io == "on" else 0.75,
                    label=f"{name}: slope {b:.2f}" if math.isfinite(b) else f"{name}: no slope (near start-up)")
        for program, c in startup.items():
            ax.axhline(c, color="grey", lw=0.8, ls=":" if program == "iolab" else "-.",
                       label=f"start-up, {program} ({c:.2f} s)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        mine = [r for r in rows if r["sweep"] == sweep]
        if not mine:
            ax.set_visible(False)
            continue
        fixed = mine[0]["nodes"] if sweep == "jobs" else mine[0]["jobs"]
        ax.set_xlabel("jobs" if sweep == "jobs" else "nodes")
        ax.set_ylabel("CPU seconds of the whole process")
        ax.set_title(f"against {sweep}" + (f" ({fixed} nodes)" if sweep == "jobs" else f" ({fixed} jobs)"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    fig.suptitle("iolab simulate: CPU seconds (slopes: log-log fit of CPU above the start-up cost)")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)


def parse_sizes(text: str, name: str) -> list[int]:
    try:
        out = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected numbers separated by commas, got {text!r}") from None
    if not out or min(out) < 1:
        raise ValueError(f"{name}: sizes must be >= 1, got {text!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"small sizes (jobs {QUICK_JOBS}, nodes {QUICK_NODES})")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated (default: all four)")
    ap.add_argument("--io", choices=("on", "off", "both"), default="both")
    ap.add_argument("--jobs-sizes", help="job counts of the jobs sweep, comma-separated")
    ap.add_argument("--node-sizes", help="node counts of the nodes sweep, comma-separated")
    ap.add_argument("--nodes", type=int, default=128, help="nodes of the jobs sweep (default 128)")
    ap.add_argument("--jobs", type=int, help="jobs of the nodes sweep (default 10000, --quick 250)")
    ap.add_argument("--max-jobs", type=int, help="leave out job counts above this")
    ap.add_argument("--load", type=float, default=0.9, help="offered load of every run (default 0.9)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workload-extra", default="{}", help="JSON mapping merged into the spec's workload")
    ap.add_argument("--timeout", type=float, help="seconds after which a run is stopped (its row says so)")
    ap.add_argument("--scale-rates", action="store_true",
                    help="link rates grow with the nodes: lackner2019's 1, 15 and 5 GB/s per 128 nodes (10 240 "
                         "nodes: 80, 1 200, 400 GB/s); default: the same rates on every machine")
    ap.add_argument("--phases", choices=("all", "jobs", "none"),
                    help="passed to iolab simulate (jobs: no phase rows, for 10^5 jobs and more)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="timed runs of each process (start-ups included); the one of least CPU is kept (default 1)")
    ap.add_argument("--reference", action="store_true", help="also run benchmarks/reference_batch_io.py (FCFS, EASY)")
    ap.add_argument("--out", help="folder for scaling.csv, the specs and the job tables")
    ap.add_argument("--figure", help="PNG of CPU seconds against jobs and nodes, log-log")
    a = ap.parse_args(argv)
    global RATE_NODES
    RATE_NODES = a.scale_rates
    if a.scale_rates and a.reference:
        ap.error("--reference runs at lackner2019's fixed rates: not with --scale-rates")
    policies = [p.strip() for p in a.policies.split(",") if p.strip()]
    bad = [p for p in policies if p not in POLICIES]
    if bad or not policies:
        print(f"error: --policies: unknown {', '.join(bad) or '(none given)'}; known: {', '.join(POLICIES)}",
              file=sys.stderr)
        return 2
    try:
        extra = json.loads(a.workload_extra)
    except json.JSONDecodeError as e:
        print(f"error: --workload-extra: not JSON: {e.msg}", file=sys.stderr)
        return 2
    if not isinstance(extra, dict):
        print("error: --workload-extra: expected a JSON mapping", file=sys.stderr)
        return 2
    if not (0 < a.load < 10) or a.nodes < 1:
        print("error: --load must be in (0, 10) and --nodes >= 1", file=sys.stderr)
        return 2
    try:
        jobs_sizes = (parse_sizes(a.jobs_sizes, "--jobs-sizes") if a.jobs_sizes
                      else list(QUICK_JOBS if a.quick else FULL_JOBS))
        node_sizes = (parse_sizes(a.node_sizes, "--node-sizes") if a.node_sizes
                      else list(QUICK_NODES if a.quick else FULL_NODES))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fixed_jobs = a.jobs or (250 if a.quick else 10_000)
    if a.max_jobs:
        jobs_sizes = [n for n in jobs_sizes if n <= a.max_jobs]
    ios = {"on": [True], "off": [False], "both": [True, False]}[a.io]
    folder = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="iolab-scaling-"))
    folder.mkdir(parents=True, exist_ok=True)
    exe = iolab_exe()
    compile_iolab()  # as installed: no module compiled again in every timed run
    max_jobs = str(max(jobs_sizes + [fixed_jobs]))

    one = {"kind": "batch", "platform": platform(1), "scheduler": "fcfs",
           "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 1, "runtime": 1}]}
    (folder / "startup.json").write_text(json.dumps(one))
    startup = {"iolab": min(measure([exe, "simulate", str(folder / "startup.json"), "--json"], a.timeout)[1]
                            for _ in range(max(2, a.repeat)))}
    msg = f"start-up: iolab {startup['iolab']:.2f} CPU s (`iolab simulate` of a one-job spec)"
    if a.reference:
        (folder / "startup.csv").write_text("id,submit,nodes,walltime,runtime\na,0,1,1,1\n")
        startup["reference"] = min(measure([sys.executable, str(REFERENCE), str(folder / "startup.csv"), "--nodes", "1",
                                            "--json"], a.timeout)[1] for _ in range(max(2, a.repeat)))
        msg += f", reference {startup['reference']:.2f} CPU s"
    print(f"{msg}; load {a.load}" + (f"; specs, tables and rows in {folder}" if a.out else ""))

    runs = [("jobs", n, a.nodes) for n in jobs_sizes] + [("nodes", fixed_jobs, m) for m in node_sizes]
    factors = {m: arrival_factor(m, a.load, a.seed) for m in sorted({r[2] for r in runs})}
    rows: list[dict] = []
    head = (f"{'sweep':5s} {'policy':12s} {'io':3s} {'jobs':>8s} {'nodes':>6s} {'cpu s':>8s} {'MB':>6s} "
            f"{'makespan':>12s} {'mean turn.':>11s}"
            + ("   | reference: cpu s    MB    makespan  mean turn." if a.reference else ""))
    print(head)
    for sweep, n, m in runs:
        for io in ios:
            for policy in policies:
                spec = {"kind": "batch", "seed": a.seed, "scheduler": policy, "platform": platform(m),
                        "workload": workload(n, factors[m], io, extra)}
                name = f"{sweep}-{policy}-{'io' if io else 'noio'}-{n}-{m}"
                path = folder / f"{name}.json"
                path.write_text(json.dumps(spec))
                text, cpu, mb, wall, rc = least(a.repeat, [exe, "simulate", str(path), "--json", "--max-jobs", max_jobs]
                                                + (["--phases", a.phases] if a.phases else []), a.timeout)
                status = "ok" if rc == 0 else ("timeout" if rc == -9 else f"exit {rc}")
                metrics = json.loads(text) if rc == 0 else {}
                row = {"sweep": sweep, "program": "iolab", "policy": policy, "io": "on" if io else "off",
                       "jobs": n, "nodes": m, "arrival_factor": factors[m], "cpu_s": cpu, "peak_mb": mb,
                       "wall_s": wall, "makespan": metrics.get("makespan", math.nan),
                       "mean_turnaround": metrics.get("mean_turnaround", math.nan), "status": status}
                rows.append(row)
                line = (f"{sweep:5s} {policy:12s} {row['io']:3s} {n:8d} {m:6d} {cpu:8.2f} {mb:6.0f} "
                        f"{row['makespan']:12.6g} {row['mean_turnaround']:11.6g}"
                        + ("" if status == "ok" else f" {status}"))
                if a.reference and policy in REFERENCE_POLICIES:
                    table = folder / f"{sweep}-{'io' if io else 'noio'}-{n}-{m}.csv"
                    if not table.exists():
                        write_table(spec, table)
                    text, cpu, mb, wall, rc = least(
                        a.repeat, [sys.executable, str(REFERENCE), str(table), "--nodes", str(m), "--policy", policy,
                         "--lps-rate", str(R_LPS), "--memory-per-node", str(MEMORY), "--json"], a.timeout)
                    s = json.loads(text) if rc == 0 else {}
                    ref = dict(row, program="reference", cpu_s=cpu, peak_mb=mb, wall_s=wall,
                               makespan=s.get("makespan", math.nan), mean_turnaround=s.get("mean_turnaround", math.nan),
                               status="ok" if rc == 0 else ("timeout" if rc == -9 else f"exit {rc}"))
                    rows.append(ref)
                    line += (f"   | {cpu:8.2f} {mb:5.0f} {ref['makespan']:12.6g} {ref['mean_turnaround']:11.6g}"
                             + ("" if ref["status"] == "ok" else f" {ref['status']}"))
                print(line, flush=True)
    with open(folder / "scaling.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=FIELDS)
        wr.writeheader()
        wr.writerows(rows)
    print("\nslopes (log-log, CPU above the start-up cost):")
    for sweep in ("jobs", "nodes"):
        groups: dict[tuple, list] = {}
        for r in rows:
            if r["sweep"] == sweep and r["status"] == "ok":
                groups.setdefault((r["program"], r["policy"], r["io"]), []).append(r)
        for (program, policy, io), rs in sorted(groups.items()):
            b = fit_exponent([r[sweep] for r in rs], [r["cpu_s"] for r in rs], startup[program])
            print(f"  against {sweep:5s} {program:9s} {policy:12s} io {io:3s}: {b:6.2f}")
    if a.figure:
        draw(rows, startup, a.figure)
        print(f"figure: {a.figure}")
    if a.out:
        print(f"rows: {folder / 'scaling.csv'}")
    else:
        shutil.rmtree(folder)  # the specs and tables of this run only; --out keeps them
    return 0


if __name__ == "__main__":
    sys.exit(main())
