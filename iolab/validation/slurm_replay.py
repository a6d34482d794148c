"""Slurm's recorded schedule against iolab's: the same jobs simulated under ``slurm`` and the textbook
policies, job by job.

The jobs are Slurm's records (:mod:`iolab.workloads.slurm_accounting`): each is replayed with its
recorded submit time, its node count, its time limit and its recorded run time (end - start), on the
partition's node count, so only the scheduler differs.  The measures, per policy:

- **start error** of a job: simulated start - recorded start (s); the share of jobs whose |error| is
  within the configuration's backfill interval (the target: >= 90 %), the mean and max of |error|;
- **makespan error**: (simulated - recorded) / recorded, the makespan being the last end - the first
  submit (the target: within 2 %);
- **same start rank**: jobs whose rank in start order (ties: submit order) is the same in both;
- the mean wait, recorded and simulated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from iolab.metrics.batch import makespan, wait_time
from iolab.names import path_component
from iolab.sim.batch.run import simulate_batch
from iolab.specs.load import parse_spec
from iolab.specs.slurm_conf import SlurmConf
from iolab.workloads.slurm_accounting import AccountingJob, limit_of

__all__ = ["POLICIES", "PolicyResult", "ReplayResult", "compare", "job_order", "replay_spec", "TARGET_SHARE", "TARGET_MAKESPAN"]

POLICIES = ("slurm", "fcfs", "easy", "conservative")
TARGET_SHARE = 0.90  # of jobs within the backfill interval
TARGET_MAKESPAN = 0.02  # relative makespan error


def job_order(j: AccountingJob) -> tuple:
    """Submit time, then Slurm's job id as numbers (``9`` before ``10``, ``12_3`` after ``12_2``): the
    order priority/basic gives jobs submitted in the same second."""
    return (j.submit, [int(x) for x in re.findall(r"\d+", j.id)], j.id)


def replay_spec(jobs: list[AccountingJob], nodes: int, scheduler, submits: dict | None = None,
                runtimes: dict | None = None) -> dict:
    """A batch spec (as a mapping) of the recorded ``jobs`` on ``nodes`` nodes under ``scheduler``, in
    :func:`job_order`; time 0 is the first submission's whole second (a ``slurm`` scheduler's
    ``conf.epoch`` its wall-clock time).  ``submits`` and ``runtimes`` (by job id, on the records' clock):
    the exact times a replay measured, instead of the records' whole seconds."""
    jobs = sorted(jobs, key=job_order)
    t0 = min(j.submit for j in jobs)
    submits, runtimes = submits or {}, runtimes or {}
    if isinstance(scheduler, dict) and scheduler.get("kind") == "slurm":
        conf = dict(scheduler.get("conf") or {})
        conf.setdefault("epoch", t0)
        scheduler = {**scheduler, "conf": conf}
    names = _names(jobs)
    return {"kind": "batch", "name": "slurm-replay",
            "platform": {"nodes": nodes, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "1TB"},
                         "stage_rate": "5 GB/s"},
            "scheduler": scheduler,
            "workload": {"source": "inline", "jobs": [
                {"id": names[j.id], "user": j.user or "0", "submit": max(submits.get(j.id, j.submit) - t0, 0.0),
                 "nodes": j.nodes, "walltime": limit_of(j), "runtime": runtimes.get(j.id, j.end - j.start)}
                for j in jobs]}}


def _names(jobs) -> dict[str, str]:
    out, used = {}, set()
    for j in jobs:
        n = path_component(j.id, "job")
        k, base = 2, n
        while n in used:
            n, k = f"{base}-{k}", k + 1
        used.add(n)
        out[j.id] = n
    return out


@dataclass
class PolicyResult:
    policy: str
    errors: list[float]  # simulated - recorded start, by job (the records' order)
    interval: float
    makespan: float
    makespan_real: float
    mean_wait: float
    same_rank: int
    starts: list[float] = field(default_factory=list)

    @property
    def within(self) -> int:
        return sum(1 for e in self.errors if abs(e) <= self.interval + 1e-9)

    @property
    def share(self) -> float:
        return self.within / len(self.errors) if self.errors else math.nan

    @property
    def mean_abs(self) -> float:
        return sum(abs(e) for e in self.errors) / len(self.errors) if self.errors else math.nan

    @property
    def max_abs(self) -> float:
        return max((abs(e) for e in self.errors), default=math.nan)

    @property
    def makespan_error(self) -> float:
        return (self.makespan - self.makespan_real) / self.makespan_real if self.makespan_real > 0 else math.nan

    def row(self) -> dict:
        return {"policy": self.policy, "jobs": len(self.errors), "within_interval": self.within,
                "share_within": self.share, "interval": self.interval, "mean_abs_error": self.mean_abs,
                "max_abs_error": self.max_abs, "makespan": self.makespan, "makespan_real": self.makespan_real,
                "makespan_error": self.makespan_error, "mean_wait": self.mean_wait, "same_rank": self.same_rank}


@dataclass
class ReplayResult:
    jobs: list[AccountingJob]
    nodes: int
    conf: SlurmConf
    real_starts: list[float]
    real_mean_wait: float
    results: list[PolicyResult]

    @property
    def slurm(self) -> PolicyResult:
        return next(r for r in self.results if r.policy == "slurm")

    def targets_met(self) -> bool:
        s = self.slurm
        return s.share >= TARGET_SHARE and abs(s.makespan_error) <= TARGET_MAKESPAN

    def to_json(self) -> dict:
        return {"jobs": len(self.jobs), "nodes": self.nodes, "conf": self.conf.model_dump(mode="json"),
                "real_mean_wait": self.real_mean_wait, "policies": [r.row() for r in self.results],
                "targets": {"share_within_interval": TARGET_SHARE, "makespan_error": TARGET_MAKESPAN,
                            "met": self.targets_met()}}


def _ranks(starts: list[float]) -> list[int]:
    order = sorted(range(len(starts)), key=lambda i: (starts[i], i))
    rank = [0] * len(starts)
    for r, i in enumerate(order):
        rank[i] = r
    return rank


def compare(jobs: list[AccountingJob], nodes: int, conf: SlurmConf | None = None,
            policies=POLICIES, submits: dict | None = None, runtimes: dict | None = None) -> ReplayResult:
    """Simulate the recorded ``jobs`` on ``nodes`` nodes under each policy and measure it against the
    record (``slurm`` with ``conf``, the cluster's settings); ``submits``/``runtimes``: a replay's exact
    times (:func:`replay_spec`).  A simulated start is compared in whole seconds (rounded down), as Slurm
    records it."""
    conf = conf if conf is not None else SlurmConf()
    jobs = sorted(jobs, key=job_order)
    submit = [j.submit for j in jobs]
    t0 = min(submit)
    real = [j.start - t0 for j in jobs]
    makespan_real = makespan(submit, [j.end for j in jobs])
    real_wait = float(np.mean(wait_time(submit, [j.start for j in jobs])))
    interval = float(conf.SchedulerParameters.bf_interval)
    names = _names(jobs)
    out = []
    for policy in policies:
        sched = ({"kind": "slurm", "conf": conf.model_dump(mode="json", exclude_defaults=True)}
                 if policy == "slurm" else policy)
        spec = parse_spec(replay_spec(jobs, nodes, sched, submits, runtimes))
        trace = simulate_batch(spec, strict=True)
        cols = trace.jobs.columns
        by = dict(zip(cols["id"], zip(cols["start"], cols["end"])))
        sim = [float(math.floor(by[names[j.id]][0] + 1e-6)) for j in jobs]
        ends = [float(by[names[j.id]][1]) for j in jobs]
        waits = wait_time([j.submit - t0 for j in jobs], sim)
        rr, rs = _ranks(real), _ranks(sim)
        # the simulation's clock starts at the first submission: its makespan is its last end
        out.append(PolicyResult(policy, [s - r for s, r in zip(sim, real)], interval, max(ends), makespan_real,
                                float(np.mean(waits)), sum(1 for a, b in zip(rr, rs) if a == b), sim))
    return ReplayResult(jobs, nodes, conf, real, real_wait, out)


def conf_from_config(cfg: dict[str, str]) -> SlurmConf:
    """The :class:`SlurmConf` of a cluster's ``scontrol show config`` (the keys the model reads)."""
    def val(key):
        v = cfg.get(key, "")
        return None if v in ("", "(null)") else v

    data: dict = {}
    st = val("SchedulerType")
    if st in ("sched/backfill", "sched/builtin"):
        data["SchedulerType"] = st
    sp = val("SchedulerParameters")
    if sp:
        data["SchedulerParameters"] = sp
    pt = val("PriorityType")
    if pt in ("priority/basic", "priority/multifactor"):
        data["PriorityType"] = pt
    for key in ("PriorityWeightAge", "PriorityWeightJobSize", "PriorityWeightFairshare"):
        if val(key) is not None and val(key).isdigit():
            data[key] = int(val(key))
    for key in ("PriorityMaxAge", "PriorityDecayHalfLife"):
        if val(key):
            data[key] = val(key)
    if val("PriorityCalcPeriod"):
        data["PriorityCalcPeriod"] = _scontrol_duration(val("PriorityCalcPeriod"))
    if val("PriorityFavorSmall"):
        data["PriorityFavorSmall"] = val("PriorityFavorSmall")
    return SlurmConf(**data)


def _scontrol_duration(text: str) -> object:
    """scontrol prints some periods with their unit (``00:05:00``, ``5 min``, ``300 sec``)."""
    words = text.split()
    if len(words) == 2 and words[0].isdigit():
        return float(words[0]) * {"sec": 1 / 60, "min": 1, "hour": 60}.get(words[1], 1)
    return text
