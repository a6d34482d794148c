"""The batch kernel on its own: driven by hand (no simulator, no clock), its state machine,
suspend/resume, and its purity (both runtimes import it)."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch import kernel as kernel_module
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.workloads import load_workload
from iolab.specs.batch import BatchExperiment


def make(jobs, scheduler="easy") -> BatchKernel:
    s = BatchExperiment.model_validate({
        "platform": {"nodes": 4, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "100 GB"},
                     "stage_rate": "5 GB/s"},
        "scheduler": scheduler, "workload": jobs})
    return BatchKernel.from_spec(s, load_workload(s), observer=BatchChecker())


def test_driven_by_hand_through_every_state():
    k = make([{"id": "a", "submit": 0, "nodes": 3, "walltime": 100, "runtime": 50, "input": "10GB",
               "output": "10GB", "storage": "20GB"},
              {"id": "b", "submit": 1, "nodes": 2, "walltime": 100, "runtime": 50}], scheduler="sas")
    a, b = k.jobs
    k.submit(a, 0.0)
    assert [s.id for s in k.decide(0.0)] == ["a"]
    assert (a.state, a.tier, a.parts, k.free_nodes, k.hps_free) == ("stage-in", "hps", (("hps", 20e9),), 1, 80e9)
    k.submit(b, 1.0)
    assert k.decide(1.0) == [] and b.state == "queued"  # 2 nodes needed, 1 free
    k.enter(a, "running", 3.0)
    k.suspend(a, 10.0)
    assert (a.state, k.free_nodes, k.hps_free) == ("suspended", 1, 80e9)  # keeps nodes and space
    with pytest.raises(InvariantViolation) as err:
        k.suspend(a, 11.0)
    assert (err.value.rule, err.value.subject) == ("job-state", "a")
    k.resume(a, 20.0)
    assert a.state == "running"
    k.enter(a, "stage-out", 60.0)
    k.finish(a, 64.0)
    assert (a.state, a.status, a.end, k.free_nodes, k.hps_free, k.changed) == ("done", "ok", 64.0, 4, 100e9, True)
    assert k.allocation_rows() == [("a", "hps", 20e9, 0.0, 64.0, "allocated")]
    assert [s.id for s in k.decide(64.0)] == ["b"] and k.never_started() == []
    k.finish(b, 70.0, "killed", "interrupted")
    assert (b.status, b.message) == ("killed", "interrupted")


def test_the_policy_is_built_once_and_projects_only_for_plans():
    k = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 10, "runtime": 5}])
    assert k.policy.name == "easy" and k.policy.project is False
    s = BatchExperiment.model_validate({"platform": {"nodes": 4, "lps": {"rate": "1 GB/s"},
                                                     "hps": {"rate": "15 GB/s", "capacity": "100 GB"},
                                                     "stage_rate": "5 GB/s"},
                                        "scheduler": "easy", "workload": [{"id": "a", "submit": 0, "nodes": 1,
                                                                           "walltime": 10, "runtime": 5}]})
    assert BatchKernel.from_spec(s, load_workload(s), record_plans=True).policy.project is True


HEAVY = {"ray", "mpi4py", "h5py", "time", "subprocess", "asyncio", "threading"}


@pytest.mark.parametrize("module", ["kernel", "checker", "io_node_book"])
def test_the_kernel_reads_no_clock_and_imports_no_runtime(module):
    path = Path(kernel_module.__file__).with_name(f"{module}.py")
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & HEAVY, imported & HEAVY
    out = subprocess.run([sys.executable, "-c", "import sys, iolab.middleware.policies.batch.kernel; "
                          "print(sorted(m for m in ('ray', 'mpi4py', 'h5py') if m in sys.modules))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_job_never_started_is_named():
    k = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 10, "runtime": 5}])
    assert k.never_started() == ["a"] and math.isnan(k.jobs[0].start)
