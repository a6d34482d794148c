"""A real run whose scheduler (``scripted_scheduler.py``, mode ``reject-kill``) rejects a job and kills a running
one: the killed job's MPI processes stop, its nodes return, the rejected job never starts, the others end well."""

from __future__ import annotations

import math

import pytest

from iolab.batsim.run import run_batsim
from iolab.specs.batch import BatchExperiment

pytestmark = [pytest.mark.long, pytest.mark.mpi, pytest.mark.ray]


def test_a_kill_stops_a_real_job_and_a_reject_keeps_one_from_starting(start_scripted, tmp_path):
    spec = BatchExperiment.model_validate({
        "kind": "batch", "name": "w0",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "10 GB/s", "capacity": "50 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": "fcfs",
        "workload": [{"id": "a", "submit": 0, "nodes": 2, "walltime": 900, "runtime": 300},
                     {"id": "b", "submit": 0, "nodes": 2, "walltime": 900, "runtime": 800},
                     {"id": "c", "submit": 100, "nodes": 4, "walltime": 900, "runtime": 50}],
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4}})
    s = start_scripted("reject-kill")
    trace = run_batsim(spec, s.endpoint, real=True, strict=True, out=tmp_path / "r.h5", work_dir=tmp_path / "work")
    assert s.wait(30) == 0
    j = trace.jobs
    got = {str(i): (str(st), float(a), float(b)) for i, st, a, b in zip(j["id"], j["status"], j["start"], j["end"])}
    assert got["a"][0] == "ok"
    status, start, end = got["b"]
    assert status == "killed" and 100 <= end < 300  # killed when c came, long before its 800 s
    assert got["c"][0] == "killed" and math.isnan(got["c"][1])
    assert trace.attrs["batsim"]["sent_by_type"]["JOB_KILLED"] == 1
