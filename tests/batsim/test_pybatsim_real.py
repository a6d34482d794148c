"""A real batch run decided by an unmodified pybatsim scheduler: iolab's real runtime (MPI jobs under mpiexec, the
Ray storage manager) starts each job on the nodes pybatsim's EXECUTE_JOB named, over an ipc:// socket (a real run
lives in a network namespace of its own: docs/batsim.md)."""

from __future__ import annotations

import pytest

from iolab.batsim.run import run_batsim
from iolab.specs.batch import BatchExperiment

pytestmark = [pytest.mark.long, pytest.mark.mpi, pytest.mark.ray]


def test_filler_sched_decides_a_real_run(start_pybatsim, tmp_path):
    spec = BatchExperiment.model_validate({
        "kind": "batch", "name": "w0",
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "10 GB/s", "capacity": "50 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": "fcfs",
        "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 300, "runtime": 100, "output": "1GB"},
                     {"id": "b", "submit": 0, "nodes": 1, "walltime": 300, "runtime": 150},
                     {"id": "c", "submit": 10, "nodes": 2, "walltime": 300, "runtime": 50}],
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4}})
    # -t 0: pybatsim waits for Batsim's next message without its 2 s limit (a real run has quiet spells)
    s = start_pybatsim("fillerSched", endpoint=f"ipc://{tmp_path}/sched.sock", timeout_ms=0)
    trace = run_batsim(spec, s.endpoint, real=True, strict=True, out=tmp_path / "r.h5", work_dir=tmp_path / "work")
    assert s.wait(30) == 0
    j = trace.jobs
    got = {str(i): (str(st), float(a), float(b), str(n)) for i, st, a, b, n in
           zip(j["id"], j["status"], j["start"], j["end"], j["node_ids"])}
    assert {v[0] for v in got.values()} == {"ok"}, got
    assert got["a"][3] == "0" and got["b"][3] == "1" and got["c"][3] == "0-1"  # the allocs pybatsim gave
    assert got["c"][1] >= max(got["a"][2], got["b"][2])  # c waited for both nodes
    assert trace.attrs["scheduler"] == f"batsim({s.endpoint})" and trace.attrs["runtime"] == "emulator-batch"
    assert trace.attrs["batsim"]["sent_by_type"]["JOB_COMPLETED"] == 3
