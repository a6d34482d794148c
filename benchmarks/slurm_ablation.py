"""Which of the slurm scheduler's rules make its predictions: each rule taken out in turn, on the records
of real replays (``benchmarks/slurm_replay.py``'s output folders).

usage:: python benchmarks/slurm_ablation.py DIR [DIR...]

Each DIR holds, per seed, ``sN.jobcomp`` (Slurm's record) and ``sN.json`` (the comparison ``iolab slurm
replay --json`` printed: the cluster's settings and the backfill cycle's time).  For every record the jobs
are simulated under the full model and under variants, each without one rule:

- ``no partition stop``: the main scheduler skips a job that does not fit and goes on (textbook list
  scheduling) instead of stopping at it;
- ``exact will-run``: a reservation starts when the job first fits, not at the end of the last job of its
  30 s-aligned group;
- ``no rounding``: bf_resolution = 1 s in the model (the cluster's is kept in the real run);
- ``no cycle phase``: the backfill cycles start at the first submission's second, not at the cluster's
  (sdiag);
- ``no tick``: a submission is scheduled at once, not at the background loop's next turn;

and prints, per variant and configuration, the jobs within bf_interval, the mean |start error| and the
mean |makespan error| over the records.
"""

from __future__ import annotations

import json
import math
import sys
from contextlib import contextmanager
from pathlib import Path

from iolab.middleware.policies.batch import slurm as slurm_mod
from iolab.middleware.policies.batch import slurm_nodes
from iolab.middleware.policies.batch.slurm import SlurmScheduler
from iolab.sim.batch.run import run_batch
from iolab.specs.load import parse_spec
from iolab.specs.slurm_conf import SlurmConf
from iolab.validation.slurm_replay import _names, replay_spec
from iolab.workloads.slurm_accounting import read_jobcomp


class NoPartitionStop(SlurmScheduler):
    def _main(self, snap, order, free, starts):
        for q in order:
            mask = slurm_nodes.best_fit(free, q.nodes)
            if mask is not None:
                self._begin(snap, q, mask, starts)
                free &= ~mask
        return free


def exact_will_run(n, avail, free, running, now, **_):
    m = slurm_nodes.best_fit(avail & free, n)
    if m is not None:
        return now, m
    usable = avail & free
    for end, mask in sorted(running, key=lambda r: r[0]):
        if mask & avail:
            usable |= mask & avail
            m = slurm_nodes.best_fit(usable, n)
            if m is not None:
                return max(end, now), m
    return None


@contextmanager
def patched(name, value):
    old = getattr(slurm_mod, name)
    setattr(slurm_mod, name, value)
    try:
        yield
    finally:
        setattr(slurm_mod, name, old)


def run(jobs, nodes, conf: SlurmConf, cls=SlurmScheduler, submits=None, runtimes=None):
    spec = parse_spec(replay_spec(jobs, nodes, {"kind": "slurm", "conf": conf.model_dump(mode="json", exclude_defaults=True)},
                                  submits, runtimes))
    sched = cls(spec.scheduler.conf)
    rec = run_batch(spec, scheduler=sched)
    return {s.queued.id: (s.start, s.end) for s in rec.jobs}


def measure(jobs, nodes, conf, cls=SlurmScheduler, submits=None, runtimes=None):
    names = _names(jobs)
    t0 = min(j.submit for j in jobs)
    got = run(jobs, nodes, conf, cls, submits, runtimes)
    err = [abs(math.floor(got[names[j.id]][0] + 1e-6) - (j.start - t0)) for j in jobs]
    real_ms = max(j.end for j in jobs) - t0
    ms = max(e for _, e in got.values())
    within = sum(1 for e in err if e <= conf.SchedulerParameters.bf_interval + 1e-9)
    return within, len(err), sum(err) / len(err), abs(ms - real_ms) / real_ms


def main(dirs) -> int:
    variants = ["full model", "no partition stop", "exact will-run", "no rounding", "no cycle phase", "no tick"]
    table: dict[tuple[str, str], list] = {}
    for d in map(Path, dirs):
        for js in sorted(d.glob("s*.json")):
            try:
                info = json.loads(js.read_text())
            except ValueError:
                continue
            acc = read_jobcomp(js.with_suffix(".jobcomp"))
            conf = SlurmConf(**{k: v for k, v in info["conf"].items() if k != "epoch"})
            nodes = info["nodes"]
            label = f"{nodes} nodes, {conf.SchedulerParameters.line() or 'defaults'}"
            for v in variants:
                c, cls = conf, SlurmScheduler
                ctx = patched("BACKGROUND_TICK", slurm_mod.BACKGROUND_TICK)
                if v == "no partition stop":
                    cls = NoPartitionStop
                elif v == "exact will-run":
                    ctx = patched("will_run", exact_will_run)
                elif v == "no rounding":
                    sp = conf.SchedulerParameters.model_copy(update={"bf_resolution": 1})
                    c = conf.model_copy(update={"SchedulerParameters": sp})
                elif v == "no cycle phase":
                    c = conf.model_copy(update={"bf_cycle_at": None})
                elif v == "no tick":
                    ctx = patched("BACKGROUND_TICK", 0.0)
                with ctx:
                    table.setdefault((label, v), []).append(
                        measure(acc.kept, nodes, c, cls, info.get("submitted"), info.get("runtimes")))
    print(f"{'configuration':<28} {'variant':<18} {'within bf_interval':>18} {'mean |err|':>10} {'mean |makespan err|':>20}")
    for (label, v), rows in table.items():
        w, n = sum(r[0] for r in rows), sum(r[1] for r in rows)
        err = sum(r[2] * r[1] for r in rows) / n
        ms = sum(r[3] for r in rows) / len(rows)
        print(f"{label:<28} {v:<18} {w:>8}/{n:<4} ({100 * w / n:3.0f} %) {err:>9.1f}s {100 * ms:>18.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
