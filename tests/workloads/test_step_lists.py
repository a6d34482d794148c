"""The simulator's per-start step lists and the jobs table's compute times, against the general path.

``step_lists`` binds the platform once and gives a job without I/O its one compute step without the
general path; ``compute_times`` is ``compute_seconds`` over columns.  Both must give the very floats of
``job_steps`` and ``compute_seconds`` (the traces' digests depend on them), on jobs with and without I/O,
of runtime 0, whose I/O at R_lps exceeds the runtime, on both tiers, with and without timed overheads.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from iolab.specs.batch import Overheads
from iolab.workloads.steps import compute_seconds, compute_times, job_steps, step_lists

GB = 10**9


def _jobs(rng: random.Random, n: int) -> list:
    """Job-like objects (the attributes the steps read), ints and floats mixed as sources give them."""
    out = []
    for _ in range(n):
        io = rng.random() < 0.5
        out.append(SimpleNamespace(
            nodes=rng.randint(1, 8),
            runtime=rng.choice([0, 0.0, 1, 40, 3600.0, rng.uniform(0, 500), rng.randint(0, 10**6)]),
            input=rng.choice([0, 0.0, rng.randint(1, 20) * GB, rng.uniform(0, 50 * GB)]) if io else 0.0,
            output=rng.choice([0, rng.randint(1, 20) * GB, rng.uniform(0, 50 * GB)]) if io else 0,
            data=rng.choice([0.0, rng.randint(1, 40) * GB, rng.uniform(0, 90 * GB)]) if io else 0.0))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overheads", [None, Overheads(), Overheads(io_phase=0.5), Overheads(launch=1, exit=2.5)])
def test_step_lists_are_job_steps(seed, overheads):
    rng = random.Random(seed)
    lps, memory = rng.choice([1 * GB, 3.3 * GB, 100 * GB]), rng.choice([1 * GB, 8 * GB])
    steps_of = step_lists(lps, memory, overheads)
    for job in _jobs(rng, 300):
        for tier in ("lps", "hps"):
            want = job_steps(job, tier, lps, memory, overheads).steps
            got = steps_of(job, tier)
            assert repr(got) == repr(want)  # the same steps, float for float (repr: 0.0 and 0 differ)
            assert all(type(a.amount) is type(b.amount) for a, b in zip(got, want))


def test_a_job_without_io_gets_one_compute_step_of_its_runtime_and_no_less_than_zero():
    steps_of = step_lists(1 * GB, 8 * GB)
    job = SimpleNamespace(nodes=2, runtime=90, input=0, output=0.0, data=0)
    assert [(s.kind, s.amount, s.link) for s in steps_of(job, "hps")] == [("compute", 90.0, "")]
    assert type(steps_of(job, "lps")[0].amount) is float
    assert steps_of(SimpleNamespace(nodes=1, runtime=0, input=0, output=0, data=0), "lps")[0].amount == 0.0


def test_compute_times_are_compute_seconds():
    rng = random.Random(3)
    jobs = _jobs(rng, 2000) + [SimpleNamespace(nodes=1, runtime=r, input=i, output=0, data=0)
                               for r, i in ((5, 10 * GB), (0, 0), (10, 17 * GB), (math.nan, 0), (1e300, 1e300))]
    lps = 1.7 * GB
    want = [compute_seconds(j, lps) for j in jobs]
    got = compute_times([j.runtime for j in jobs], [j.input + j.output + j.data for j in jobs], lps)
    assert repr(got) == repr(want)
    assert got[-5:-1] == [0.0, 0.0, 0.0, 0.0]  # I/O past the runtime, runtime 0, exactly filled, NaN: 0
