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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iolab.middleware.policies.batch import HPS, LPS

COMPUTE = "compute"
# step kinds -> (trace phase kind, link)
LINKS = {"stage-in": "stage", "stage-out": "stage"}


@dataclass(frozen=True)
class Step:
    kind: str  # compute, read, write, stage-in, stage-out
    amount: float  # seconds (compute) or bytes
    link: str = ""  # lps, hps or stage for transfers


@dataclass(frozen=True)
class JobSteps:
    steps: tuple[Step, ...]
    compute_time: float
    io_bytes: float
    checkpoints: int


def job_steps(job, tier: str, lps_rate: float, memory_per_node: float) -> JobSteps:
    """The step list of ``job`` (an ``iolab.specs.batch.Job``) on ``tier``."""
    io = job.input + job.output + job.data
    compute = max(0.0, job.runtime - io / lps_rate)
    ckpt_size = job.nodes * memory_per_node
    k = int(math.ceil(job.data / ckpt_size - 1e-12)) if job.data > 0 else 0
    link = HPS if tier == HPS else LPS
    steps: list[Step] = []
    if tier == HPS and job.input > 0:
        steps.append(Step("stage-in", job.input, "stage"))
    if job.input > 0:
        steps.append(Step("read", job.input, link))
    seg = compute / (k + 1)
    for _ in range(k):
        steps.append(Step(COMPUTE, seg))
        steps.append(Step("write", job.data / k, link))
    steps.append(Step(COMPUTE, seg if k else compute))
    if job.output > 0:
        steps.append(Step("write", job.output, link))
    if tier == HPS and job.output > 0:
        steps.append(Step("stage-out", job.output, "stage"))
    return JobSteps(tuple(steps), compute, io, k)


__all__ = ["COMPUTE", "HPS", "LPS", "JobSteps", "Step", "job_steps"]
