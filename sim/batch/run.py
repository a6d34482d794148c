"""Simulate a batch experiment (``kind: batch``) and return its trace."""

from __future__ import annotations

import time
from operator import attrgetter

from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace, TraceBuilder
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.trace.provenance import provenance
from iolab.invariants import InvariantViolation, strict_default
from iolab.middleware.policies.batch.kernel import DONE, BatchKernel
from iolab.middleware.policies.interference import tier_laws

from iolab.workloads import load_workload
from iolab.workloads.run_size import check_batch_run
from iolab.sim.batch.engine import BatchEngine, BatchRecord
from iolab.middleware.policies.batch.job_table import (
    job_columns, node_ranges, platform_attrs, scheduler_label, trace_status,
)
from iolab.middleware.policies.loader import check_spec_policies

__all__ = ["run_batch", "simulate_batch"]

_state = attrgetter("state")


def run_batch(spec, jobs=None, *, scheduler=None, rows: bool = True, record_plans: bool = False,
              strict: bool | None = None, progress=None, phases: str | None = None,
              node_ids: bool = True, max_events: float | None = None, source: str | None = None) -> BatchRecord:
    """Simulate ``spec`` (its workload, or ``jobs``); ``scheduler`` replaces the spec's policy
    (a study drawing its own random tiers); ``strict`` checks every decision and state change
    (default: ``IOLAB_STRICT``); ``progress(t, submitted, total)`` is called every
    :data:`~iolab.sim.batch.engine.PROGRESS_EVERY` events; ``phases``: ``all`` (default with
    ``rows``), ``jobs`` (each job's I/O time only) or ``none``; ``node_ids`` False: the jobs get no node
    ids where nothing of the run reads them (no I/O nodes; see :class:`BatchKernel`).  The run is sized first
    (:func:`iolab.workloads.run_size.check_batch_run`: ``max_events``, default
    :data:`~iolab.workloads.run_size.MAX_BATCH_EVENTS`): one too big raises ``SpecError`` naming ``source``
    (default: the spec's name) and the field."""
    jobs = load_workload(spec) if jobs is None else jobs
    strict = strict_default(strict)  # once for the run: what it builds is told
    check_batch_run(spec, jobs, source or spec.name, max_events, rows=rows and phases in (None, "all"))
    kernel = BatchKernel.from_spec(spec, jobs, scheduler=scheduler, observer=BatchChecker() if strict else None,
                                   record_plans=record_plans,
                                   node_ids=node_ids or spec.platform.io_nodes is not None)  # the parts' split
    laws = tier_laws(spec)  # each tier's interference law (docs/simulator.md)
    engine = BatchEngine.around(kernel, memory_per_node=spec.platform.memory_per_node, rows=rows,
                                overheads=spec.platform.overheads, phases=phases,
                                laws={name: law for name, law in laws.items() if not law.lossless})
    engine.on_progress = progress
    c = getattr(spec, "controller", None)
    if c is not None:  # its volume model holds with the controller off too (the same platform)
        from iolab.sim.batch.load_controller import SimController  # lazy: the load controller, for a spec that has one

        SimController.from_spec(spec, laws).install(engine, control=c.enabled)
    try:
        if spec.platform.io_nodes is None:
            return engine.run()
        from iolab.sim.batch.io_node_layer import IONodeLayer  # lazy: the I/O nodes, for a platform that has them

        layer = IONodeLayer.from_spec(spec, strict=strict)  # after the tiers' laws: it keeps them
        layer.install(engine)
        rec = engine.run()
        layer.close(max((s.end for s in rec.jobs), default=0.0))
        rec.grants = layer.grants
        return rec
    except InvariantViolation as exc:  # a broken rule or a policy that raised: what ran so far goes with it
        exc.record = engine.partial()
        raise


def simulate_batch(spec, jobs=None, *, record_plans: bool = False, strict: bool | None = None,
                   progress=None, phases: str = "all", node_ids: bool = True, max_events: float | None = None,
                   source: str | None = None, scheduler=None, metrics_only: bool = False) -> Trace:
    """The trace of ``spec``; ``phases``: ``all`` (a row per phase), ``jobs`` (no phase rows: a large
    run keeps each job's I/O time, the jobs table's ``io_time``) or ``none`` (neither); ``node_ids``
    False leaves the jobs table's node sets empty: for a caller that reads only the trace's metrics
    (``iolab simulate`` without ``--out``), no job's node set is kept or written as text.  ``metrics_only``:
    that caller's trace, whose jobs table has only the columns its metrics read
    (:data:`~iolab.middleware.policies.batch.job_table.METRIC_COLUMNS`; not a trace to write).  ``scheduler``
    replaces the spec's (an external decision process's adapter, behind its guard); the trace names it."""
    check_spec_policies(spec)
    label = scheduler_label(spec, scheduler)
    t0 = time.perf_counter()
    try:
        rec = run_batch(spec, jobs, record_plans=record_plans, strict=strict, progress=progress, phases=phases,
                        node_ids=node_ids, max_events=max_events, source=source, scheduler=scheduler)
    except InvariantViolation as exc:
        rec = getattr(exc, "record", None)
        if rec is not None:  # the trace up to where the run stopped (complete False), for the caller to keep
            exc.trace = _trace(spec, rec, phases, node_ids, time.perf_counter() - t0, complete=False,
                               stopped=str(exc), label=label, metrics_only=metrics_only)
        raise
    return _trace(spec, rec, phases, node_ids, time.perf_counter() - t0, label=label, metrics_only=metrics_only)


def _any_not_ok(states) -> bool:
    """Whether a job of a finished run did not end ``done`` (killed or rejected by its scheduler)."""
    return any(map(DONE.__ne__, map(_state, states)))  # no Python frame per job


def _trace(spec, rec: BatchRecord, phases: str, node_ids: bool, wall: float, complete: bool = True,
           stopped: str = "", *, label: str, metrics_only: bool = False) -> Trace:
    p = spec.platform
    tb = TraceBuilder()
    # column-wise (TraceBuilder.extend_columns): the same table as one add_job per job
    if metrics_only:  # the metrics' columns alone
        tb.extend_columns("jobs", job_columns(rec.jobs, p.lps.rate, metrics_only=True), take=True, only_given=True)
    else:
        tb.extend_columns("jobs", job_columns(rec.jobs, p.lps.rate, io_time=rec.io_time if phases != "none" else None,
                                              node_ids=node_ids,
                                              statuses=None if complete and not _any_not_ok(rec.jobs)
                                              else [trace_status(s) for s in rec.jobs]),
                          take=True)
    tb.extend_columns("phases", rec.phases.columns(), take=True)
    preds = rec.predictions  # PlanRows: columns
    if len(preds):
        # KTH, FCFS: 808 008 rows, 70 735 distinct node sets
        tb.extend_columns("predictions", {"job": preds.job, "time": preds.time, "start": preds.start,
                                          "nodes": node_ranges(preds.mask)})
    tb.extend("allocations", rec.allocations)
    tb.extend("grants", rec.grants)  # the I/O nodes' (none without them)
    tb.extend("actions", [(s.queued.id, a, b) for s in rec.jobs for a, b in s.suspensions])  # the load controller
    extra = platform_attrs(spec, label)
    if rec.controller is not None:
        tb.extend("samples", rec.controller.samples)
        extra["prediction"] = rec.controller.prediction()  # what fed the window (docs/controller.md)
    return tb.build(
        **provenance(spec, "sim-batch"), wall_seconds=wall, events=rec.events, decisions=rec.decisions,
        advance_stage_in=rec.advance, phases_kept=phases, **extra,
        **({} if complete else {"complete": False, "stopped": stopped}),
    )


def simulated_makespan(spec: BatchExperiment, jobs: list) -> float:
    """The makespan of ``jobs`` under ``spec`` in the simulator (no rows kept): what a real run's
    wall-time check multiplies by its time scale."""
    rec = run_batch(spec, jobs, rows=False)
    return max(st.end for st in rec.jobs) - min(st.queued.submit for st in rec.jobs)
