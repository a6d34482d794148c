"""Replays of random whole-node sleep workloads on the local Slurm, against the simulator's policies.

usage:: python benchmarks/slurm_replay.py --seeds 1,2,3 --jobs 30 --nodes 8 --out DIR
        python benchmarks/slurm_replay.py --summary DIR [DIR...]     # the table over seeds
        (with SLURM_CONF set: eval "$(slurm/start-cluster.sh)"; the cluster's own SchedulerParameters
        are the configuration measured: start it with IOLAB_SLURM_CONF_EXTRA=SchedulerParameters=...)

The workload is the one of issue 43's first trial: N jobs of 1..nodes whole nodes (smaller ones more
likely), run times uniform in [15, 110] s, time limits of 1-4 whole minutes no shorter than the run
time, submitted at uniform times over the first 52 s.  For each seed it writes the spec, Slurm's record,
the comparison (JSON) and its figure into --out, and prints the comparison; the targets
(>= 90 % of jobs within bf_interval, makespan within 2 %) are printed by ``iolab slurm replay``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import yaml


def workload(seed: int, jobs: int, nodes: int, span: float = 52.0) -> dict:
    rng = random.Random(seed)
    weights = [1.0 / n for n in range(1, nodes + 1)]
    submits = sorted(round(rng.uniform(0, span)) for _ in range(jobs))
    out = []
    for i, s in enumerate(submits):
        n = rng.choices(range(1, nodes + 1), weights)[0]
        run = rng.randint(15, 110)
        limit = min(max(math.ceil(run / 60), 1) + rng.randint(0, 2), 4)
        out.append({"id": f"j{i:02d}", "submit": s, "nodes": n, "walltime": 60 * limit, "runtime": run})
    return {"kind": "batch", "name": f"replay-s{seed}",
            "platform": {"nodes": nodes, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "1TB"},
                         "stage_rate": "5 GB/s"},
            "scheduler": "slurm", "workload": {"source": "inline", "jobs": out}}


def summary(dirs: list[str]) -> int:
    """One row per configuration (folder) and policy over every seed's record, compared again with this
    build: jobs within bf_interval, mean and max |start error|, mean and max |makespan error|."""
    from iolab.specs.slurm_conf import SlurmConf
    from iolab.validation.slurm_replay import compare
    from iolab.workloads.slurm_accounting import read_jobcomp

    rows: dict[tuple[str, str], list] = {}
    for d in dirs:
        for js in sorted(Path(d).glob("s*.json")):
            try:
                r = json.loads(js.read_text())
            except ValueError:
                continue
            # recomputed from Slurm's record with this build (the replay's exact times kept in its JSON)
            conf = SlurmConf(**{k: v for k, v in r["conf"].items() if k != "epoch"})
            acc = read_jobcomp(js.with_suffix(".jobcomp"))
            result = compare(acc.kept, r["nodes"], conf, submits=r.get("submitted"), runtimes=r.get("runtimes"))
            label = f"{r['nodes']} nodes, bf_interval={conf.SchedulerParameters.bf_interval}"
            for p in result.to_json()["policies"]:
                rows.setdefault((label, p["policy"]), []).append(p)
    print(f"{'configuration':<26} {'policy':<13} {'seeds':>5} {'within bf_interval':>18} {'mean |err|':>10} "
          f"{'max |err|':>9} {'makespan err (mean |.|, max |.|)':>34}")
    for (label, policy), ps in rows.items():
        w, n = sum(p["within_interval"] for p in ps), sum(p["jobs"] for p in ps)
        mean = sum(p["mean_abs_error"] * p["jobs"] for p in ps) / n
        mx = max(p["max_abs_error"] for p in ps)
        ms = [abs(p["makespan_error"]) for p in ps]
        print(f"{label:<26} {policy:<13} {len(ps):>5} {w:>8}/{n:<4} ({100 * w / n:3.0f} %) {mean:>9.1f}s {mx:>8.0f}s "
              f"{100 * sum(ms) / len(ms):>20.1f} %, {100 * max(ms):.1f} %")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--summary"]:
        return summary(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--out", default="slurm-replays")
    ap.add_argument("--iolab", default=str(Path(sys.executable).with_name("iolab")))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rc = 0
    for seed in [int(s) for s in args.seeds.split(",")]:
        spec = out / f"s{seed}.yaml"
        spec.write_text(yaml.safe_dump(workload(seed, args.jobs, args.nodes), sort_keys=False))
        res = subprocess.run([args.iolab, "slurm", "replay", str(spec), "--record", str(out / f"s{seed}.jobcomp"),
                              "--figure", str(out / f"s{seed}.png"), "--json"], capture_output=True, text=True)
        (out / f"s{seed}.json").write_text(res.stdout)
        if res.returncode != 0:
            print(res.stderr, file=sys.stderr)
            rc = 1
            continue
        r = json.loads(res.stdout)
        for p in r["policies"]:
            print(f"seed {seed} {p['policy']:<13} within {p['within_interval']:>2}/{p['jobs']} "
                  f"mean|err| {p['mean_abs_error']:6.1f} max|err| {p['max_abs_error']:6.1f} "
                  f"makespan {100 * p['makespan_error']:+6.1f} %")
    return rc


if __name__ == "__main__":
    sys.exit(main())
