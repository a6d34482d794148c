"""How much work a batch run is, from its spec and its jobs, before it runs; refused above the bounds.

A batch run's job count alone does not bound it: a rate of 1 B/s (a tier, the staging link, an I/O
node, or a delivered share of 1e-300) makes every transfer last longer than the clock can count; an
arrival factor of 1e300 puts the submissions past it; a checkpoint interval of 0.1 s gives a job of a
day 864 000 checkpoints; a load controller samples every ``d`` for as long as the run lasts.  So the
run is sized first (docs/specs.md, "Limits"):

- **times**: the last submission, and the run if every job ran one after the other with all its I/O
  (staging included) at the slowest link, stay finite and below :data:`~iolab.specs.base.MAX_TIME`;
- **events**: the steps of every job (lackner2019's: compute segments, checkpoints, reads, writes and
  staging, each I/O step once per I/O node it crosses, the overheads' timed steps), the load
  controller's samples over the run's estimated length, and the requeue retries, stay below the
  limit (``iolab simulate --max-events N``; default :data:`MAX_BATCH_EVENTS`); a run that keeps a trace
  row per phase (``--phases all``, the default with ``--out``: ~180 bytes a row in memory) keeps its
  steps below :data:`MAX_PHASE_ROWS` too (``--max-events N`` lifts both).

The refusal (a :class:`~iolab.errors.SpecError`, exit 2) names the field that makes the run too big:
the slowest rate, the arrival factor, the checkpoint interval, the controller's ``d``.  Pure
arithmetic over the jobs: no clock, no simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce
from operator import add, mul

from iolab.errors import SpecError
from iolab.specs.base import MAX_TIME
from iolab.specs.batch import MAX_SPLIT_PARTS
from iolab.specs.size import MAX_BATCH_EVENTS

__all__ = ["MAX_BATCH_EVENTS", "MAX_PHASE_ROWS", "BatchRunSize", "batch_run_size", "check_batch_run"]

MAX_PHASE_ROWS = 10_000_000  # a row per phase kept in memory: ~1.8 GB at this bound


@dataclass(frozen=True)
class BatchRunSize:
    steps: float          # job steps (each I/O step counted per I/O node it crosses)
    samples: float        # the load controller's samples
    retries: float        # placement requeue retries, at most
    serial_time: float    # spec seconds if every job ran alone, one after the other, at the slowest link
    estimate_time: float  # spec seconds the run is estimated to last (the node-seconds spread over the nodes)
    last_submit: float
    slowest: tuple[str, float]  # (field, bytes/s) of the slowest link a job's bytes may cross

    @property
    def events(self) -> float:
        return self.steps + self.samples + self.retries


def _links(spec) -> list[tuple[str, float]]:
    """(field, effective bytes/s) of every link a job's bytes may cross."""
    p = spec.platform
    d = p.overheads.delivered
    out = []
    for name, rate, share in (("lps", p.lps.rate, d.lps), ("hps", p.hps.rate, d.hps), ("stage", p.stage_rate, d.stage)):
        field = f"platform.{name}.rate" if name != "stage" else "platform.stage_rate"
        if share < 1:
            field = f"platform.overheads.delivered.{name}"
        out.append((field, rate * share))
    if p.io_nodes is not None and p.io_node is not None:
        out.append(("platform.io_node.rate", p.io_node.rate))
    return out


def batch_run_size(spec, jobs: list) -> BatchRunSize:
    """The size of a run of ``spec`` with ``jobs`` (:class:`iolab.specs.batch.Job`), from their numbers."""
    p = spec.platform
    field, slowest = min(_links(spec), key=lambda x: x[1])
    mem = p.memory_per_node
    o = p.overheads
    span = p.io_nodes_span if p.io_nodes is not None else 0
    lean = None if span or o.launch or o.exit or o.io_phase else _without_io(jobs)
    if lean is not None:
        steps, serial, node_seconds, longest, last = lean
    else:
        steps, serial, node_seconds, longest, last = _sizes(jobs, slowest, mem, o, span)
    estimate = max(last, node_seconds / p.nodes) + longest
    c = getattr(spec, "controller", None)
    samples = estimate / c.d * len(c.volumes) if c is not None and c.enabled else 0.0
    r = getattr(getattr(spec, "placement", None), "requeue", None)
    retries = len(jobs) * r.retries if r is not None and r.enabled else 0.0
    return BatchRunSize(steps, samples, retries, last + serial, estimate, last, (field, slowest))


def _without_io(jobs: list) -> tuple | None:
    """:func:`_sizes` of jobs that move no byte, on a platform without I/O nodes or overheads (every SWF
    job): one step each, a duration of its runtime; the same floats as that loop (its sums taken in job
    order, ``runtime + 0.0`` for each duration), from the jobs' columns.  None if a job moves bytes."""
    if any([j.input for j in jobs]) or any([j.output for j in jobs]) or any([j.data for j in jobs]):
        return None
    durs = [r + 0.0 for r in [j.runtime for j in jobs]]
    return (float(len(jobs)), reduce(add, durs, 0.0), reduce(add, map(mul, [j.nodes for j in jobs], durs), 0.0),
            max(0.0, max(durs, default=0.0)), max(0.0, max([j.submit for j in jobs], default=0.0)))


def _sizes(jobs: list, slowest: float, mem: float, o, span: int) -> tuple:
    """(steps, serial seconds, node-seconds, longest job's seconds, last submission) of ``jobs``."""
    steps = serial = node_seconds = longest = 0.0
    last = 0.0
    for j in jobs:
        inp, out, data, n = j.input, j.output, j.data, j.nodes
        k = math.ceil(data / (n * mem) - 1e-12) if data > 0 else 0
        io_steps = k + (inp > 0) + (out > 0)
        crossings = (n + span - 1) // span + 1 if span else 1  # I/O nodes a job's step is split over, at most
        job_steps = 1 + k + io_steps * crossings + 2 * ((inp > 0) + (out > 0))  # + staging, when on HPS
        if o.launch or o.exit or o.io_phase:
            job_steps += 2 + io_steps
        steps += job_steps
        dur = j.runtime + (inp + out + data + inp + out) / slowest + o.launch + o.exit + o.io_phase * io_steps
        serial += dur
        node_seconds += n * dur
        longest = max(longest, dur)
        last = max(last, j.submit)
    return steps, serial, node_seconds, longest, last


def _workload_field(spec, name: str) -> str:
    w = spec.workload
    if w.source == "feitelson":
        return f"workload.{name}"
    if w.source == "swf" and w.io is not None:
        return f"workload.io.{name}"
    return "workload"


def check_batch_run(spec, jobs: list, source: str, max_events: float | None = None,
                    rows: bool = False) -> BatchRunSize:
    """:func:`batch_run_size`, refused (:class:`SpecError`, exit 2, naming the field) above the bounds;
    ``rows``: the run keeps a trace row per phase."""
    limit = MAX_BATCH_EVENTS if max_events is None else max_events
    s = batch_run_size(spec, jobs)
    doc = "(docs/specs.md, 'Limits')"
    if not (math.isfinite(s.last_submit) and s.last_submit <= MAX_TIME):
        where = "workload.arrival_factor" if spec.workload.source == "feitelson" else "workload"
        raise SpecError(source, [(where, f"the last job is submitted at {s.last_submit:.3g} s, past the "
                                         f"{MAX_TIME:g} s a run's clock can count {doc}")])
    split = getattr(getattr(spec, "placement", None), "split", None)
    if split is not None and split.enabled and spec.platform.hps.servers and jobs:
        biggest = max(max(j.storage, j.input + j.output) for j in jobs)
        parts = math.ceil(biggest / split.threshold)
        if parts > MAX_SPLIT_PARTS:
            raise SpecError(source, [("placement.split.threshold",
                                      f"{split.threshold:g} bytes would split a request of {biggest:g} bytes into "
                                      f"{parts:,} parts, above the {MAX_SPLIT_PARTS:,} a request may have (a unit "
                                      f"mistake? the threshold is in bytes: 200GB) {doc}")])
    if not (math.isfinite(s.serial_time) and s.serial_time <= MAX_TIME):
        field, rate = s.slowest
        raise SpecError(source, [(field, f"at {rate:.3g} B/s the jobs' I/O, one job after the other, would reach "
                                         f"{s.serial_time:.3g} s, past the {MAX_TIME:g} s a run's clock can count; "
                                         f"a rate this low cannot be simulated {doc}")])
    kept = rows and s.steps > (MAX_PHASE_ROWS if max_events is None else max_events)
    if s.events > limit or kept:
        option = "pass --max-events N to allow it (iolab simulate)"
        rows_only = kept and s.events <= limit
        if rows_only:
            limit = MAX_PHASE_ROWS if max_events is None else max_events
            option = ("the trace would keep a row per phase in memory (~180 bytes each): --phases jobs keeps "
                      "each job's I/O time only, or " + option)
        if not rows_only and s.samples >= max(s.steps, s.retries):
            where = "controller.d"
            what = (f"the load controller would take {s.samples:,.0f} samples (a run of about {s.estimate_time:.3g} s,"
                    f" one sample every d = {spec.controller.d:g} s per volume)")
        elif not rows_only and s.retries >= s.steps:
            where = "placement.requeue.retries"
            what = f"{len(jobs):,} jobs with up to {s.retries / max(len(jobs), 1):,.0f} retries each"
        else:
            w = spec.workload
            ck = getattr(w, "checkpoint", None) or getattr(getattr(w, "io", None), "checkpoint", None)
            per_job = s.steps / max(len(jobs), 1)
            where = (_workload_field(spec, "checkpoint.interval") if ck is not None and ck.interval is not None
                     else _workload_field(spec, "checkpoint") if ck is not None
                     else "platform.memory_per_node" if per_job > 100  # a checkpoint holds at most nodes x this
                     else "workload.jobs")
            what = f"the jobs would run {s.steps:,.0f} steps ({s.steps / max(len(jobs), 1):,.0f} a job on average)"
        count = f"{s.steps:,.0f} phase rows" if rows_only else f"an estimated {s.events:,.0f} events"
        raise SpecError(source, [(where, f"{what}: {count}, above the limit of {limit:,.0f}; {option} {doc}")])
    return s
