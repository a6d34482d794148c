"""A batch run's trace, in the simulator's schema and units (spec seconds, spec bytes),
so ``iolab simulate`` and ``iolab emulate`` compare directly.

:func:`batch_trace` assembles it from the jobs of :mod:`iolab.emulator.batch.run`'s loop
and the storage manager's records (phases, allocations, suspend/resume actions);
the kernel's times are spec seconds already, the manager's wall times become
spec seconds with :func:`spec_time`.  :func:`run_trace` is the loop's trace: that, with
the run's own attributes.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

from iolab import calibration
from iolab.middleware.policies.batch.kernel import ENDED
from iolab.middleware.policies.batch.nodes import ranges
from iolab.middleware.policies.batch.job_table import job_columns, platform_attrs, trace_status
from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace, TraceBuilder
from iolab.trace.provenance import provenance

from iolab.emulator.batch.jobs import JobRun


def spec_time(wall: float, t0: float, time_scale: float) -> float:
    """Spec seconds since the clock started at wall time ``t0``; NaN stays NaN."""
    return (wall - t0) / time_scale if wall == wall else math.nan


def _nominal(s, p) -> dict[str, float]:
    """Each tier's wall rate a lone read or write phase could reach: the tier's, or with I/O nodes the
    lesser of the tier's and an I/O node's (the two are in series), for the calibration's delivered shares."""
    io = p.io_node.rate if p.io_nodes is not None else float("inf")
    return {"lps": s.wall_rate(min(p.lps.rate, io)), "hps": s.wall_rate(min(p.hps.rate, io))}


def batch_trace(spec: BatchExperiment, jobs: list[JobRun], mgr, *, t0: float | None, decisions: int,
                work: Path, complete: bool, requests: list[tuple] = (), samples: list[tuple] = (),
                predictions: list[tuple] = (), hosts: Callable[[JobRun], str] | None = None, io=None,
                label: str) -> Trace:
    """The trace of ``jobs`` (in submission order) run with the storage manager ``mgr`` from wall
    time ``t0``; an unreachable manager gives a trace without storage rows.  ``requests``: the
    kernel's request-level placement rows (split, requeued, refused, failed; spec bytes and
    seconds), beside the manager's rows of the bytes it really holds.  ``hosts(job)``: the job's
    ``hosts`` column (default: its kernel node ids as ``n0,n1``; under srun the nodes its ranks ran on).
    ``io``: the I/O nodes' actor of a platform with I/O nodes: an I/O phase then has one row per part
    (``io_node`` its I/O node, ``start`` the phase's start, ``end`` the part's end, ``volume`` its bytes)
    and every grant of a part is a ``grants`` row (its phase as the job's step index).  ``label``: the
    scheduler's name in the trace (:func:`~iolab.middleware.policies.batch.job_table.scheduler_label`)."""
    s, p = spec.emulator, spec.platform
    bs = s.bytes_scale
    by_id = {j.queued.id: j for j in jobs}

    def secs(wall: float) -> float:
        return spec_time(wall, t0, s.time_scale)

    try:
        rec = mgr.records()
        status = mgr.status()
    except Exception:
        rec, status = {"allocations": [], "actions": [], "phases": [], "finished": {}}, {}
    try:
        io_rec = io.records() if io is not None else {"grants": [], "ends": []}
    except Exception:
        io_rec = {"grants": [], "ends": []}
    part_ends: dict[tuple[str, int], list[tuple]] = {}  # (job, app phase) -> [(I/O node, end, real bytes)]
    for job, ph, node, end, nbytes in io_rec["ends"]:
        part_ends.setdefault((job, ph), []).append((node, end, nbytes))
    tb = TraceBuilder()
    launch_overhead: dict[str, float] = {}
    exit_overhead: dict[str, float] = {}
    first_phase: dict[str, float] = {}
    last_phase: dict[str, float] = {}
    io_phases: list[tuple[str, float, float, float]] = []  # (tier, wall start, wall end, real bytes)
    io_time: dict[str, float] = {}  # spec seconds of each job's I/O phases (the jobs table's io_time)
    for job, idx, kind, start, end, nbytes in rec["phases"]:
        j = by_id.get(job)
        if j is None or idx >= len(j.index_map):
            continue
        step = j.index_map[idx]
        first_phase[job] = min(first_phase.get(job, math.inf), start)
        last_phase[job] = max(last_phase.get(job, -math.inf), end)
        if kind in ("read", "write") and end == end:
            io_phases.append((j.tier, start, end, float(nbytes)))
            io_time[job] = io_time.get(job, 0.0) + secs(end) - secs(start)
        parts = part_ends.get((job, idx)) if kind != "compute" else None
        if parts:  # one row per part: the phase's start, the part's end on its I/O node
            for node, pend, pbytes in sorted(parts):
                tb.add_phase(job=job, index=step, kind=kind, start=secs(start), end=pend, volume=pbytes / bs,
                             io_node=node, tier=j.tier)
            continue
        tb.add_phase(job=job, index=step, kind=kind, start=secs(start), end=secs(end),
                     volume=nbytes / bs if kind != "compute" else 0.0, io_node=-1, tier=j.tier)
    for j in jobs:
        for st in j.staged:
            kinds = [k for k, x in enumerate(j.steps) if x.kind == st["direction"]]
            tb.add_phase(job=j.queued.id, index=kinds[0] if kinds else -1, kind=st["direction"],
                         start=secs(st["start"]), end=secs(st["end"]),
                         volume=st["bytes"] / bs, io_node=-1, tier="stage")
            io_time[j.queued.id] = io_time.get(j.queued.id, 0.0) + secs(st["end"]) - secs(st["start"])
        if j.queued.id in first_phase and j.launched == j.launched:
            launch_overhead[j.queued.id] = first_phase[j.queued.id] - j.launched
        if j.queued.id in last_phase and j.exited == j.exited and j.rc == 0:
            exit_overhead[j.queued.id] = j.exited - last_phase[j.queued.id]
    tb.extend_columns("jobs", job_columns(
        jobs, p.lps.rate, io_time=[io_time.get(j.queued.id, 0.0) for j in jobs],
        ends=[j.end if j.state in ENDED else math.nan for j in jobs], statuses=[trace_status(j) for j in jobs],
        hosts=[hosts(j) if hosts is not None else ",".join(f"n{h}" for h in j.hosts) for j in jobs]))
    for job, step, node, request, grant, release in io_rec["grants"]:
        if job in by_id:
            tb.add_grant(job=job, phase=step, io_node=node, request=request, grant=grant, release=release)
    for job, disk, nbytes, alloc, free, st in rec["allocations"]:
        tb.add_allocation(job=job, disk=disk, bytes=nbytes / bs, alloc=secs(alloc),
                          free=secs(free), status=st)
    for job, disk, nbytes, alloc, free, st in requests:
        tb.add_allocation(job=job, disk=disk, bytes=nbytes, alloc=alloc, free=free, status=st)
    tb.extend("predictions", [(job, t, start, ranges(m)) for job, t, start, m in predictions])
    for job, sus, res in rec["actions"]:
        tb.add_action(job=job, suspend=secs(sus), resume=secs(res))
    for job, at, allocated, apparent, blocks in rec.get("usage", []):  # bytes measured on HPS
        tb.extend("usage", [(job, secs(at), allocated / bs, apparent / bs, blocks / bs)])
    tb.extend("samples", list(samples))  # the load controller's, already in spec units
    staging = [st for j in jobs for st in j.staged]
    stage_secs = [(st["bytes"], st["end"] - st["start"]) for st in staging if st["end"] > st["start"]]
    stage_achieved = sum(b for b, _ in stage_secs) / sum(t for _, t in stage_secs) if stage_secs else math.nan
    cal = calibration.measure(
        launch=launch_overhead, exit=exit_overhead, io_phases=io_phases, time_scale=s.time_scale,
        wall_rates=_nominal(s, p) if s.bandwidth_cap else None,
        staging=[(st["start"], st["end"], float(st["bytes"])) for st in staging], stage_wall_rate=s.wall_rate(p.stage_rate))
    return tb.build(
        **provenance(spec, "emulator-batch", real=True), **platform_attrs(spec, label),
        time_scale=s.time_scale, bytes_scale=s.bytes_scale,
        bandwidth_cap=s.bandwidth_cap, decisions=decisions, complete=complete,
        wall_seconds=time.time() - t0 if t0 else 0.0, t0=t0 or 0.0, work_dir=str(work),
        failures={j.queued.id: {"status": j.status, "reason": j.message, "rc": j.rc,
                                "time": j.end}
                  for j in jobs if j.status in ("failed", "killed")},
        exit_codes={j.queued.id: j.rc for j in jobs if j.rc is not None},
        launch_overhead=launch_overhead,
        staging=[{k: v for k, v in st.items() if k != "files"} for st in staging],
        staging_rate_achieved=stage_achieved, calibration=cal,
        staging_rate_target=s.wall_rate(p.stage_rate),
        hps_capacity_bytes=status.get("capacity", -1), hps_free_end=status.get("free", -1),
        hps_peak_bytes=status.get("peak", -1),
        quota_refusals=[{"job": r[0], "time": spec_time(r[1], t0, s.time_scale) if t0 else r[1], "bytes": r[2],
                         "in_use": r[3], "allocation": r[4], "reason": r[5]} for r in rec.get("quota", [])],
    )


def run_trace(run, complete: bool) -> Trace:
    """The trace of the batch loop ``run`` (:class:`~iolab.emulator.batch.run.BatchEmulation`) so far: its
    jobs' and the storage manager's (:func:`batch_trace`) with the run's own attributes (launcher, a deleted
    work folder, advance stage-in, the load controller's cost of watching the volumes)."""
    requests = [r for r in run.kernel.allocation_rows() if r[5] != "allocated"] if run.kernel.allocator else []
    samples = run.controller.sample_rows() if run.controller is not None else []
    trace = batch_trace(run.spec, run.jobs, run.mgr, t0=run.t0, decisions=run.kernel.decisions,
                        work=run.work, complete=complete, requests=requests, samples=samples,
                        predictions=run.kernel.prediction_rows(), hosts=run.launcher.hosts, io=run.io,
                        label=run.label)
    trace.attrs["launcher"] = run.launcher.name
    if run.work_deleted is None and run.t0 is not None and not run.work.is_dir():
        run.work_deleted = run.instant
    if run.work_deleted is not None:
        trace.attrs["work_dir_deleted"] = run.work_deleted
    trace.attrs["advance_stage_in"] = dict(run.kernel.advance_stats)
    if run.controller is not None:  # the cost of watching the volumes: the benchmark units it wrote
        rec = run.controller.records or {}
        wall = trace.attrs.get("wall_seconds", 0.0)
        trace.attrs["monitoring"] = {
            "samples": len(samples), "bytes_written": int(rec.get("bytes_written", 0)),
            "write_seconds": float(rec.get("seconds", 0.0)),
            "share_of_wall": float(rec.get("seconds", 0.0)) / wall if wall else math.nan,
            "devices": rec.get("devices", {})}
        trace.attrs["prediction"] = rec.get("prediction", {})  # what fed the window (docs/controller.md)
    return trace
