"""A random agent and a shortest-job-first agent in iolab's batch scheduling environment, beside the built-in
EASY on the same jobs (nothing is trained).

usage::

    python examples/gym/compare_agents.py [SPEC] [--k 16] [--window N] [--seed 0]

Default SPEC: examples/kth-sp2-easy.yaml (the whole of KTH-SP2).  Each agent plays one episode (``--window N``:
N jobs of it, from a job drawn with the seed); EASY is simulated on the same jobs.  Printed per scheduler: the
jobs, their mean bounded slowdown (minus the episode's return over its jobs), mean wait, makespan, the agent's
steps and the wall seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from iolab.gym import BatchSchedulingEnv
from iolab.metrics.batch import bounded_slowdown
from iolab.sim.batch.run import run_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agents import random_agent, sjf  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def play(env: BatchSchedulingEnv, agent, seed: int) -> dict:
    t0 = time.perf_counter()
    obs, _ = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, done, _, info = env.step(agent(obs))
        total += reward
        steps += 1
    rec = env.last_run
    return {"jobs": info["jobs"], "mean_bsld": -total / info["jobs"], **_waits(rec.jobs), "steps": steps,
            "wall": time.perf_counter() - t0}


def _waits(states) -> dict:
    sub = np.array([s.queued.submit for s in states])
    start = np.array([s.start for s in states])
    end = np.array([s.end for s in states])
    return {"mean_wait": float(np.mean(start - sub)), "makespan": float(end.max() - sub.min()),
            "check_bsld": float(np.mean(bounded_slowdown(sub, start, end)))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec", nargs="?", default=str(REPO / "examples" / "kth-sp2-easy.yaml"))
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--window", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    env = BatchSchedulingEnv(a.spec, k=a.k, window=a.window, strict=False)
    rows = {"random": play(env, random_agent(a.seed, a.k), a.seed), "SJF": play(env, sjf, a.seed)}
    jobs = [s.job for s in env.last_run.jobs]  # the episode's jobs (the same window for both: the same seed)
    spec = env.experiment.model_validate({**env.experiment.model_dump(), "scheduler": "easy"})
    t0 = time.perf_counter()
    rec = run_batch(spec, jobs, rows=False)
    rows["EASY (built-in)"] = {"jobs": len(rec.jobs), **_waits(rec.jobs), "steps": 0, "wall": time.perf_counter() - t0}
    rows["EASY (built-in)"]["mean_bsld"] = rows["EASY (built-in)"]["check_bsld"]
    print(f"{Path(a.spec).name}: {len(jobs):,} jobs, k = {a.k}")
    print(f"{'scheduler':<16}{'mean BSLD':>11}{'mean wait h':>13}{'makespan d':>12}{'steps':>9}{'wall s':>8}")
    for name, r in rows.items():
        print(f"{name:<16}{r['mean_bsld']:>11.1f}{r['mean_wait'] / 3600:>13.2f}{r['makespan'] / 86400:>12.2f}"
              f"{r['steps']:>9,}{r['wall']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
