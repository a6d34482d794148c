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
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

from iolab.tiers import HPS, LPS

COMPUTE = "compute"
LAUNCH, EXIT, FIXED = "launch", "exit", "fixed"
OVERHEADS = frozenset((LAUNCH, EXIT, FIXED))  # timed steps without a link or a phase row of their own
# step kinds -> (trace phase kind, link)
LINKS = {"stage-in": "stage", "stage-out": "stage"}


class Step(NamedTuple):
    """One step of a job.  A named tuple, not a frozen dataclass: a run builds a few per job (a
    million jobs, several million steps), and a tuple is built in a fifth of the time."""

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


def compute_times(runtimes: Sequence[float], io: Sequence[float], lps_rate: float) -> list[float]:
    """:func:`compute_seconds` of many jobs at once, from their runtimes and their ``input + output + data``
    (a jobs table's columns): the same floats, without a call per job."""
    # max(0.0, c) of every c, NaN -> 0.0 as max gives
    return [c if c > 0.0 else 0.0 for c in [r - x / lps_rate for r, x in zip(runtimes, io)]]


def job_steps(job, tier: str, lps_rate: float, memory_per_node: float, overheads=None) -> JobSteps:
    """The step list of ``job`` (an ``iolab.specs.batch.Job``) on ``tier``; ``overheads`` (an
    :class:`iolab.specs.batch.Overheads`) adds the launch, exit and fixed per-phase steps."""
    return JobSteps(*_build(job, tier, lps_rate, memory_per_node, overheads))


def step_list(job, tier: str, lps_rate: float, memory_per_node: float, overheads=None) -> tuple[Step, ...]:
    """``job_steps(...).steps`` without the summary: what the simulator reads at every job start."""
    return _build(job, tier, lps_rate, memory_per_node, overheads)[0]


_new = tuple.__new__  # a Step from its four fields in order, without the named tuple's own __new__ (a call)


def step_lists(lps_rate: float, memory_per_node: float, overheads=None) -> Callable[[Any, str], tuple[Step, ...]]:
    """:func:`step_list` with the run's platform bound once: ``f(job, tier)`` is ``step_list(job, tier,
    lps_rate, memory_per_node, overheads)``, the same steps.  What a simulator calls at every job start.
    (A list is built per start, not shared between jobs of the same compute time: on KTH-SP2 the 9 720
    kept lists made the run slower than the fresh ones, which reuse the memory the last job freed.)"""
    timed = _timed(overheads)  # (the overheads are a frozen model: read once)

    def steps(job, tier: str) -> tuple[Step, ...]:
        io = job.input + job.output + job.data
        if io == 0 and not timed:  # _build's one compute step of a job without I/O, its float, inline
            compute = job.runtime - io / lps_rate
            return (_new(Step, (COMPUTE, compute if compute > 0.0 else 0.0, "", -1)),)
        return _build(job, tier, lps_rate, memory_per_node, overheads)[0]

    return steps


def _timed(overheads) -> bool:
    """Whether ``overheads`` add timed steps (launch, exit or a fixed cost per phase)."""
    return overheads is not None and (overheads.launch > 0 or overheads.exit > 0 or overheads.io_phase > 0)


def _build(job, tier: str, lps_rate: float, memory_per_node: float, overheads) -> tuple:
    """(steps, compute seconds, I/O bytes, checkpoints) of ``job`` on ``tier``."""
    inp, out, data = job.input, job.output, job.data
    io = inp + out + data
    compute = job.runtime - io / lps_rate
    if not compute > 0.0:  # max(0.0, ...), as compute_seconds
        compute = 0.0
    timed = _timed(overheads)
    if io == 0 and not timed:
        # a job without I/O (every SWF job): one compute step, what the general path below builds for it
        return (_new(Step, (COMPUTE, compute, "", -1)),), compute, io, 0
    k = int(math.ceil(data / (job.nodes * memory_per_node) - 1e-12)) if data > 0 else 0
    link = HPS if tier == HPS else LPS
    steps: list[Step] = []
    if tier == HPS and inp > 0:
        steps.append(_new(Step, ("stage-in", inp, "stage", -1)))
    if inp > 0:
        steps.append(_new(Step, ("read", inp, link, -1)))
    seg = compute / (k + 1)
    if k:  # the k (segment, checkpoint) pairs are equal: one pair of (immutable) steps, k references
        steps.extend((_new(Step, (COMPUTE, seg, "", -1)), _new(Step, ("write", data / k, link, -1))) * k)
    steps.append(_new(Step, (COMPUTE, seg if k else compute, "", -1)))
    if out > 0:
        steps.append(_new(Step, ("write", out, link, -1)))
    if tier == HPS and out > 0:
        steps.append(_new(Step, ("stage-out", out, "stage", -1)))
    if timed:
        steps = with_overheads(steps, overheads)
    return tuple(steps), compute, io, k


def with_overheads(steps: list[Step], overheads) -> list[Step]:
    """``steps`` with the overhead steps inserted (each step numbered by its old position)."""
    app = [i for i, st in enumerate(steps) if st.link != "stage"]
    out: list[Step] = []
    for i, st in enumerate(steps):
        if app and i == app[0] and overheads.launch > 0:
            out.append(Step(LAUNCH, overheads.launch, index=i))
        if st.kind in ("read", "write") and overheads.io_phase > 0:
            out.append(Step(FIXED, overheads.io_phase, index=i))
        out.append(st._replace(index=i))
        if app and i == app[-1] and overheads.exit > 0:
            out.append(Step(EXIT, overheads.exit, index=i))
    return out


__all__ = ["COMPUTE", "EXIT", "FIXED", "HPS", "LAUNCH", "LPS", "OVERHEADS", "JobSteps", "Step", "compute_seconds",
           "compute_times", "job_steps", "step_list", "step_lists", "with_overheads"]
