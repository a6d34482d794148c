"""``iolab emulate`` inside a real Slurm allocation, and suspend/resume of one app's step.

* ``sbatch --wait --nodes=4 slurm/templates/emulate.sbatch SPEC OUT``: a Ray cluster over
  the 4 virtual nodes (head n1, workers n2-n4, srun steps), 2 apps on 2 I/O partitions of
  2 nodes each, each app one ``srun --mpi=pmi2`` step on its partition's nodes; the trace
  says where every app's ranks really ran (``hosts``, from ``SLURMD_NODENAME``).
* :mod:`iolab.emulator.slurm_control` stops one app's step (SIGSTOP through ``scancel``): its
  phase reports stop; resume continues them.

Skipped without a cluster (see conftest). About 30-40 s on 2 loaded cores.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from iolab.emulator.launchers import srun_command
from iolab.emulator.shell import kill_tree, spawn
from iolab.emulator.slurm_control import find_step, resume, suspend
from iolab.trace import read_trace
from listening import processes, wait_until_stopped

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.ray]

REPO = Path(__file__).resolve().parents[2]

SPEC = {
    "name": "srun-small",
    "platform": {"io_nodes": 2, "nodes_per_io_node": 2, "bandwidth": 1.0},
    "apps": [
        {"id": "A", "nodes": 2, "io_node": 0, "iterations": 3, "compute": 0.6, "io_volume": 0.5},
        {"id": "B", "nodes": 1, "io_node": 1, "iterations": 2, "compute": 0.6, "io_volume": 0.5},
    ],
    "emulator": {"ranks_per_app": "nodes", "unit_bytes": 1 << 20, "grid": 32, "lease": 20},
}


def test_sbatch_emulation_runs_each_app_on_its_partition(cluster, job_name, tmp_path):
    t = time.monotonic()
    out, text, nodes = cluster.emulate(SPEC, tmp_path, job_name)
    wall = time.monotonic() - t

    trace = read_trace(out)
    assert trace.attrs["launcher"] == "srun" and trace.attrs["complete"] is True
    assert list(trace.jobs["id"]) == ["A", "B"]
    assert list(trace.jobs["status"]) == ["ok", "ok"], text[-3000:]
    partitions = [nodes[0:2], nodes[2:4]]
    hosts = {j: h.split(",") for j, h in zip(trace.jobs["id"], trace.jobs["hosts"])}
    assert hosts["A"] == partitions[0]            # 2 ranks: one on each node of partition 0
    assert hosts["B"] == partitions[1][:1]        # 1 rank: the first node of partition 1
    assert len(trace.phases) == 2 * 3 + 2 * 2
    launch = trace.attrs["app_launch_seconds"]
    assert set(launch) == {"A", "B"} and all(0 < v < 60 for v in launch.values())
    # the Ray cluster really spanned the allocation: one log per Ray node, workers joined
    logs = out.parent / "run.work" / "logs"
    assert sorted(p.name for p in logs.glob("ray-*.log")) == [f"ray-{n}.log" for n in nodes]
    assert wall < 120


def test_suspending_an_app_step_pauses_its_phases_and_resume_continues(cluster, job_name, tmp_path):
    record = tmp_path / "calls.jsonl"
    phases = [["compute", 0.25]] * 40
    argv = [sys.executable, "-m", "iolab.apps.jacobi", "--app-id", "S", "--grid", "32",
            "--phases-json", json.dumps(phases), "--coordinator", "recording_coordinator:factory",
            "--coordinator-config", json.dumps({"directory": str(tmp_path / "io"), "record": str(record)}),
            "--out-dir", str(tmp_path / "out")]
    cmd = srun_command(2, argv, nodes=2, nodelist=list(cluster.idle_nodes[:2]), job_name=job_name)
    env = {**cluster.env, "PYTHONPATH": str(REPO / "tests" / "apps")}
    step = spawn(cmd, env=env, log_path=tmp_path / "srun.log")
    ranks = lambda c: (Path(c.split()[0]).name != "srun"  # noqa: E731  the step's ranks, not the srun client
                       and "iolab.apps.jacobi" in c and str(record) in c)
    try:
        _wait(lambda: _reports(record) >= 1, "a first phase report", step, tmp_path)
        t1 = time.monotonic()
        _wait(lambda: _reports(record) >= 3, "3 phase reports", step, tmp_path)
        per_report = (time.monotonic() - t1) / max(1, _reports(record) - 1)  # measured on this machine now
        rc, out, err = cluster.run(["squeue", "-h", f"--name={job_name}", "-o", "%i"])
        jobid = out.split()[0]
        step_id = find_step(jobid, job_name, env=cluster.env)
        assert step_id == f"{jobid}.0"

        suspend(step_id, env=cluster.env)
        wait_until_stopped(ranks)                 # the event: every rank is stopped (state T)
        frozen = _reports(record)
        time.sleep(6 * per_report)                # six reports at the rate just measured, were it running
        assert _reports(record) == frozen
        assert step.poll() is None and all(st in ("T", "t") for st in processes(ranks).values())  # not dead

        resume(step_id, env=cluster.env)
        _wait(lambda: _reports(record) >= frozen + 3, "reports after resume", step, tmp_path)
    finally:
        kill_tree(step, grace=5)


def _reports(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"report"' in line)


def _wait(ok, what: str, step, tmp_path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if step.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what} (srun rc={step.poll()}): "
                        f"{(tmp_path / 'srun.log').read_text()[-2000:]}")
        time.sleep(0.05)
