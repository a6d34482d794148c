"""The steps a job runs on its tier (lackner2019 §IV-B).

On HPS: (1) stage-in of the input from LPS over the staging link, (2) read
the input from HPS, (3) compute, writing checkpoints to HPS, (4) write the
output to HPS, (5) stage-out of the output to LPS over the staging link.
On LPS: the same (2)-(4) against LPS, no staging.

The job's trace runtime is its time alone on LPS (lackner2019 §IV-B fills a
fraction of the runtime with I/O at R_lps), so its pure compute time is
``runtime - (input + output + data) / R_lps`` (never below 0).  ``data``
(intermediate bytes) is written as ``k`` checkpoints of at most
``nodes * memory_per_node`` bytes each, evenly spaced through the compute
time (``k`` compute segments, each followed by a checkpoint, then the last
segment).  A step on a link moves its bytes as one stream of that link.

With ``platform.overheads`` (the costs a real run pays, see
:class:`iolab.specs.batch.Overheads`), three kinds of timed steps that use no
link and leave no phase row are added: ``launch`` after the stage-in and
before the first app step, ``exit`` after the last app step and before the
stage-out, and ``fixed`` before every read and write (its time counts in that
phase's row, as a real phase's does).  Every step keeps the ``index`` it has
without overheads, so phase rows number the same in both runtimes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from iolab.tiers import HPS, LPS

COMPUTE = "compute"
LAUNCH, EXIT, FIXED = "launch", "exit", "fixed"
OVERHEADS = frozenset((LAUNCH, EXIT, FIXED))  # timed steps without a link or a phase row of their own
# step kinds -> (trace phase kind, link)
LINKS = {"stage-in": "stage", "stage-out": "stage"}


@dataclass(frozen=True, slots=True)
class Step:
    kind: str  # compute, read, write, stage-in, stage-out
    amount: float  # seconds (compute) or bytes
    link: str = ""  # lps, hps or stage for transfers
    index: int = -1  # the step's index without overheads (its phase row's); -1: the list's position


@dataclass(frozen=True)
class JobSteps:
    steps: tuple[Step, ...]
    compute_time: float
    io_bytes: float
    checkpoints: int


def compute_seconds(job, lps_rate: float, io: float | None = None) -> float:
    """The job's pure compute time: its runtime less its I/O at R_lps (never below 0);
    ``io``: its ``input + output + data`` if already summed."""
    if io is None:
        io = job.input + job.output + job.data
    return max(0.0, job.runtime - io / lps_rate)


def job_steps(job, tier: str, lps_rate: float, memory_per_node: float, overheads=None) -> JobSteps:
    """The step list of ``job`` (an ``iolab.specs.batch.Job``) on ``tier``; ``overheads`` (an
    :class:`iolab.specs.batch.Overheads`) adds the launch, exit and fixed per-phase steps."""
    io = job.input + job.output + job.data
    compute = compute_seconds(job, lps_rate, io)
    timed = overheads is not None and (overheads.launch > 0 or overheads.exit > 0 or overheads.io_phase > 0)
    if io == 0 and not timed:
        # a job without I/O (every SWF job): one compute step, what the general path below builds for it
        return JobSteps((Step(COMPUTE, compute),), compute, io, 0)
    ckpt_size = job.nodes * memory_per_node
    k = int(math.ceil(job.data / ckpt_size - 1e-12)) if job.data > 0 else 0
    link = HPS if tier == HPS else LPS
    steps: list[Step] = []
    if tier == HPS and job.input > 0:
        steps.append(Step("stage-in", job.input, "stage"))
    if job.input > 0:
        steps.append(Step("read", job.input, link))
    seg = compute / (k + 1)
    if k:  # the k (segment, checkpoint) pairs are equal: one pair of (frozen) steps, k references
        steps.extend((Step(COMPUTE, seg), Step("write", job.data / k, link)) * k)
    steps.append(Step(COMPUTE, seg if k else compute))
    if job.output > 0:
        steps.append(Step("write", job.output, link))
    if tier == HPS and job.output > 0:
        steps.append(Step("stage-out", job.output, "stage"))
    if timed:
        steps = with_overheads(steps, overheads)
    return JobSteps(tuple(steps), compute, io, k)


def with_overheads(steps: list[Step], overheads) -> list[Step]:
    """``steps`` with the overhead steps inserted (each step numbered by its old position)."""
    app = [i for i, st in enumerate(steps) if st.link != "stage"]
    out: list[Step] = []
    for i, st in enumerate(steps):
        if app and i == app[0] and overheads.launch > 0:
            out.append(Step(LAUNCH, overheads.launch, index=i))
        if st.kind in ("read", "write") and overheads.io_phase > 0:
            out.append(Step(FIXED, overheads.io_phase, index=i))
        out.append(replace(st, index=i))
        if app and i == app[-1] and overheads.exit > 0:
            out.append(Step(EXIT, overheads.exit, index=i))
    return out


__all__ = ["COMPUTE", "EXIT", "FIXED", "HPS", "LAUNCH", "LPS", "OVERHEADS", "JobSteps", "Step", "compute_seconds",
           "job_steps", "with_overheads"]
