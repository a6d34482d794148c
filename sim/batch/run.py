"""Simulate a batch experiment (``kind: batch``) and return its trace."""

from __future__ import annotations

import platform as _platform
import time

import numpy as np

from iolab import __version__
from iolab.trace import Trace, TraceBuilder
from iolab.middleware.policies.batch import LPS, TierRates, get_scheduler

from .engine import BatchEngine, BatchRecord
from .steps import job_steps


def make_policy(spec):
    s = spec.scheduler
    return get_scheduler(s.kind, p=s.p, rng=np.random.default_rng(spec.seed))


def run_batch(spec, jobs=None, *, scheduler=None, rows: bool = True, record_plans: bool = False) -> BatchRecord:
    from iolab.sim.workloads import load_workload

    jobs = load_workload(spec) if jobs is None else jobs
    p = spec.platform
    policy = scheduler or make_policy(spec)
    if not record_plans and hasattr(policy, "project"):
        policy.project = False  # nobody reads the projected starts: skip computing them
    rates = TierRates(lps=p.lps.rate, hps=p.hps.rate, stage=p.stage_rate)
    engine = BatchEngine(jobs, policy, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                         rates=rates, memory_per_node=p.memory_per_node, rows=rows, record_plans=record_plans)
    return engine.run()


def simulate_batch(spec, jobs=None, *, record_plans: bool = False) -> Trace:
    t0 = time.perf_counter()
    rec = run_batch(spec, jobs, record_plans=record_plans)
    wall = time.perf_counter() - t0
    p = spec.platform
    tb = TraceBuilder()
    for s in rec.jobs:
        j = s.job
        tb.add_job(id=s.queued.id, rank=s.index, nodes=s.queued.nodes, release=s.queued.submit, start=s.start,
                   end=s.end, io_node=-1, pack=-1, status="ok", tier=s.tier, min_time=float(j.runtime),
                   compute_time=job_steps(j, LPS, p.lps.rate, p.memory_per_node).compute_time,
                   io_volume=float(j.input + j.output + j.data))
    tb.extend("phases", rec.phases)
    tb.extend("allocations", rec.allocations)
    return tb.build(
        runtime="sim-batch", scheduler=spec.scheduler.kind, policy=spec.scheduler.kind, seed=spec.seed,
        spec=spec.model_dump(mode="json"), iolab_version=__version__, python=_platform.python_version(),
        host=_platform.node(), wall_seconds=wall, events=rec.events, decisions=rec.decisions,
        total_nodes=p.nodes, hps_capacity=p.hps.total_capacity, lps_rate=p.lps.rate, hps_rate=p.hps.rate,
        stage_rate=p.stage_rate, unit_bytes=1,
    )
