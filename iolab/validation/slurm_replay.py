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

:func:`replay` submits a spec's jobs to a real Slurm cluster first (``iolab slurm replay``) and compares
its record; :func:`compare` takes a record already made (``iolab slurm compare``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iolab.emulator.slurm_replay import (backfill_cycle_at, cluster_config, cycle_phase, partition_nodes,
                                         probe_cycle, queued_in, recorded, submit_replay, wait_done)
from iolab.errors import IolabError
from iolab.metrics.batch import makespan, wait_time
from iolab.names import path_component
from iolab.sim.batch.run import simulate_batch
from iolab.specs.load import parse_spec
from iolab.specs.slurm_conf import SlurmConf
from iolab.workloads import load_workload
from iolab.workloads.slurm_accounting import AccountingJob, limit_of

__all__ = ["POLICIES", "PolicyResult", "Replayed", "ReplayResult", "compare", "job_order", "replay", "replay_spec",
           "TARGET_SHARE", "TARGET_MAKESPAN"]

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
    def slurm(self) -> PolicyResult | None:
        """The ``slurm`` scheduler's result, None if it was not among the policies simulated."""
        return next((r for r in self.results if r.policy == "slurm"), None)

    def targets_met(self) -> bool | None:
        """The targets hold for the ``slurm`` scheduler (None: it was not simulated)."""
        s = self.slurm
        if s is None:
            return None
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


@dataclass
class Replayed:
    """A replay on a real cluster (:func:`replay`): the comparison, and what the replay measured."""

    result: ReplayResult
    partition: str
    launch_cost: float  # seconds: a completed job's recorded run time - its sleep, on average (0 to 1 s)
    submitted: dict[str, float]  # Slurm job id -> when this process submitted it (the records' clock)
    runtimes: dict[str, float]  # Slurm job id -> its run time as the simulations take it
    record: list[str]  # Slurm's job completion log lines of the replay's jobs ([] under sacct)

    def details(self) -> dict:
        return {"partition": self.partition, "launch_cost": self.launch_cost, "submitted": self.submitted,
                "runtimes": self.runtimes}


def replay(spec, source: str, *, time_scale: float = 1.0, partition: str | None = None, policies=POLICIES,
           keep_record: bool = False, note: Callable[[str], None] = lambda _: None) -> Replayed:
    """Submit the batch ``spec``'s jobs to this host's Slurm cluster as sleep jobs (their submit offsets, run
    times and limits divided by ``time_scale``) on ``partition`` (default: the cluster's default one), wait
    for them, read Slurm's record and compare it with ``policies`` simulated (:func:`compare`).  Refused
    (:class:`~iolab.errors.IolabError`, naming ``source``) before anything is submitted if a job needs more
    nodes than the partition has, the partition is not empty, or ``keep_record`` asks for the job completion
    log's lines of the jobs and the cluster keeps none this host can read.  ``note`` is told when the jobs go in.

    The simulations take the exact times of the replay: the submissions as this process made them, and a
    completed job's run time as its sleep + the launch cost the record shows on average; the backfill
    thread's cycles, every ``bf_interval`` from one of them, are located from sdiag (read at every poll, and
    probed to the fraction of a second while jobs wait)."""
    if not time_scale > 0:
        raise ValueError(f"time_scale must be > 0, not {time_scale}")
    jobs = load_workload(spec)
    cfg = cluster_config()
    part, nodes = partition_nodes(partition)
    big = max(jobs, key=lambda j: j.nodes)
    if big.nodes > len(nodes):
        raise IolabError(f"{source}: job {big.id} needs {big.nodes} nodes; partition {part} has {len(nodes)}")
    if keep_record and not (cfg.get("JobCompType") == "jobcomp/filetxt" and Path(cfg.get("JobCompLoc", "")).is_file()):
        raise IolabError(f"--record: Slurm writes no job completion log this host can read (JobCompType="
                         f"{cfg.get('JobCompType') or '(none)'}, JobCompLoc={cfg.get('JobCompLoc') or '(none)'}); "
                         "the replay reads its record from accounting, which `sacct --parsable2` prints")
    busy = queued_in(part)
    if busy:
        raise IolabError(f"partition {part} is not empty (jobs {', '.join(busy[:10])}): a replay needs it alone")
    conf = conf_from_config(cfg)
    note(f"replaying {len(jobs)} jobs on partition {part} ({len(nodes)} nodes), time scale {time_scale:g}")
    cycles: set[float] = set()  # the backfill cycles sdiag named, one per poll

    def sample() -> None:
        t = backfill_cycle_at()
        if t is not None:
            cycles.add(t)

    submitted: dict[str, float] = {}
    ids = submit_replay(jobs, time_scale=time_scale, partition=part, on_submit=lambda *_: sample(),
                        submitted=submitted)
    interval = conf.SchedulerParameters.bf_interval
    exact = probe_cycle(interval) if conf.SchedulerType == "sched/backfill" else None  # while jobs wait
    wait_done(ids.values(), on_poll=sample)
    acc = recorded(cfg, ids.values())
    cycle = cycle_phase(sorted(cycles), interval)
    if exact is not None and (cycle is None or math.floor(exact) % interval == cycle % interval):
        cycle = exact  # the cycles' fraction of a second too
    if cycle is not None:
        conf = conf.model_copy(update={"bf_cycle_at": cycle})
    sleep_of = {ids[j.id]: j.runtime / time_scale for j in jobs}
    done = [r.end - r.start - sleep_of[r.id] for r in acc.kept if r.state == "COMPLETED"]
    launch = min(max(sum(done) / len(done), 0.0), 1.0) if done else 0.0
    runtimes = {r.id: (sleep_of[r.id] + launch if r.state == "COMPLETED" else r.end - r.start) for r in acc.kept}
    want = set(ids.values())  # a completion log's line starts with JobId=ID
    record = ([ln for ln in Path(acc.source).read_text().splitlines() if ln.split(" ", 1)[0][6:] in want]
              if keep_record else [])
    result = compare(acc.kept, len(nodes), conf, policies, submits=submitted, runtimes=runtimes)
    return Replayed(result, part, launch, submitted, runtimes, record)
