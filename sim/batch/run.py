"""Simulate a batch experiment (``kind: batch``) and return its trace."""

from __future__ import annotations

import platform as _platform
import time

from iolab import __version__
from iolab.trace import Trace, TraceBuilder
from iolab.middleware.policies.batch import LPS
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.batch.nodes import ranges

from ..workloads import load_workload
from .controller import SimController
from .engine import BatchEngine, BatchRecord
from .steps import job_steps

__all__ = ["run_batch", "simulate_batch"]


def run_batch(spec, jobs=None, *, scheduler=None, rows: bool = True, record_plans: bool = False,
              strict: bool | None = None, progress=None) -> BatchRecord:
    """Simulate ``spec`` (its workload, or ``jobs``); ``scheduler`` replaces the spec's policy
    (a study drawing its own random tiers); ``strict`` checks every decision and state change
    (default: ``IOLAB_STRICT``); ``progress(t, submitted, total)`` is called every
    :data:`~iolab.sim.batch.engine.PROGRESS_EVERY` events."""
    jobs = load_workload(spec) if jobs is None else jobs
    kernel = BatchKernel.from_spec(spec, jobs, scheduler=scheduler, strict=strict, record_plans=record_plans)
    engine = BatchEngine.around(kernel, memory_per_node=spec.platform.memory_per_node, rows=rows,
                                overheads=spec.platform.overheads)
    engine.progress = progress
    c = getattr(spec, "controller", None)
    if c is not None:  # its volume model holds with the controller off too (the same platform)
        SimController.from_spec(spec).install(engine, control=c.enabled)
    return engine.run()


def simulate_batch(spec, jobs=None, *, record_plans: bool = False, strict: bool | None = None,
                   progress=None) -> Trace:
    t0 = time.perf_counter()
    rec = run_batch(spec, jobs, record_plans=record_plans, strict=strict, progress=progress)
    wall = time.perf_counter() - t0
    p = spec.platform
    tb = TraceBuilder()
    for s in rec.jobs:
        j = s.job
        tb.add_job(id=s.queued.id, rank=s.index, nodes=s.queued.nodes, release=s.queued.submit, start=s.start,
                   end=s.end, io_node=-1, pack=-1, status="ok", tier=s.tier, min_time=float(j.runtime),
                   compute_time=job_steps(j, LPS, p.lps.rate, p.memory_per_node).compute_time,
                   io_volume=float(j.input + j.output + j.data), node_ids=ranges(s.node_ids))
    tb.extend("phases", rec.phases)
    tb.extend("predictions", [(job, t, start, ranges(m)) for job, t, start, m in rec.predictions])
    tb.extend("allocations", rec.allocations)
    tb.extend("actions", [(s.queued.id, a, b) for s in rec.jobs for a, b in s.suspensions])  # the load controller
    if rec.controller is not None:
        tb.extend("samples", rec.controller.samples)
    return tb.build(
        runtime="sim-batch", scheduler=spec.scheduler.kind, policy=spec.scheduler.kind, seed=spec.seed,
        spec=spec.model_dump(mode="json"), iolab_version=__version__, python=_platform.python_version(),
        host=_platform.node(), wall_seconds=wall, events=rec.events, decisions=rec.decisions,
        total_nodes=p.nodes, hps_capacity=p.hps.total_capacity, lps_rate=p.lps.rate, hps_rate=p.hps.rate,
        stage_rate=p.stage_rate, unit_bytes=1, advance_stage_in=rec.advance,
    )
