"""How fast iolab's Gymnasium environment plays an episode: a random agent over the whole of KTH-SP2, beside an
SJF agent and the built-in EASY simulated on the same jobs, in one run.

usage::

    python benchmarks/gym_speed.py [--swf PATH] [--k 16] [--json]

Default trace: KTH-SP2 (``../shared/data`` or ``$IOLAB_SHARED_DATA``; absent: skipped, exit 0) on the platform of
``examples/kth-sp2-easy.yaml``, not strict (as a training run would be).  Printed per row: the steps (agent
decisions), the wall seconds of the episode (reset to termination; the agents' own time included: a few
microseconds a step) and steps per second, and the episode's mean bounded slowdown.  The target: the random agent's
episode in 30 s or less (docs/results.md, "The Gymnasium environment"); exit 1 above it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from iolab.gym import BatchSchedulingEnv
from iolab.metrics.batch import bounded_slowdown
from iolab.shared_data import shared_data_file
from iolab.sim.batch.run import run_batch
from iolab.specs.batch import BatchExperiment

REPO = Path(__file__).resolve().parents[1]
TARGET = 30.0
sys.path.insert(0, str(REPO / "examples" / "gym"))
from agents import random_agent, sjf  # noqa: E402


def episode(env, agent) -> dict:
    t0 = time.perf_counter()
    obs, _ = env.reset(seed=0)
    steps, total, done = 0, 0.0, False
    while not done:
        obs, reward, done, _, info = env.step(agent(obs))
        steps += 1
        total += reward
    wall = time.perf_counter() - t0
    return {"steps": steps, "wall_seconds": wall, "steps_per_second": steps / wall, "mean_bsld": -total / info["jobs"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--swf", type=Path, default=None)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    swf = a.swf or shared_data_file("KTH-SP2-1996-2.1-cln.swf.gz")
    if not Path(swf).is_file():
        print("KTH-SP2 not found beside the repository (../shared/data) nor in $IOLAB_SHARED_DATA: skipped")
        return 0
    doc = yaml.safe_load((REPO / "examples" / "kth-sp2-easy.yaml").read_text())
    doc["workload"]["path"] = str(swf)
    spec = BatchExperiment.model_validate(doc)
    env = BatchSchedulingEnv(spec, k=a.k, strict=False)
    rows = {"random agent": episode(env, random_agent(0, a.k)), "SJF agent": episode(env, sjf)}
    jobs = [s.job for s in env.last_run.jobs]
    t0 = time.perf_counter()
    rec = run_batch(spec, jobs, rows=False, strict=False)
    sub = np.array([s.queued.submit for s in rec.jobs])
    st, en = np.array([s.start for s in rec.jobs]), np.array([s.end for s in rec.jobs])
    rows["built-in EASY (simulate)"] = {"steps": 0, "wall_seconds": time.perf_counter() - t0, "steps_per_second": 0.0,
                                        "mean_bsld": float(np.mean(bounded_slowdown(sub, st, en)))}
    if a.json:
        print(json.dumps({"jobs": len(jobs), "k": a.k, "target_seconds": TARGET, "rows": rows}, indent=1))
    else:
        print(f"KTH-SP2, {len(jobs):,} jobs, k = {a.k}; target: the random agent's episode in {TARGET:g} s or less")
        print(f"{'':<26}{'steps':>9}{'wall s':>9}{'steps/s':>10}{'mean BSLD':>11}")
        for name, r in rows.items():
            print(f"{name:<26}{r['steps']:>9,}{r['wall_seconds']:>9.2f}{r['steps_per_second']:>10,.0f}{r['mean_bsld']:>11.1f}")
    return 0 if rows["random agent"]["wall_seconds"] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
