"""Batch specs (``kind: batch``) under Slurm: every job one ``srun`` step on the allocation nodes its
kernel node ids name, and the storage load controller suspending a job by signalling its step.

* ``sbatch --wait --nodes=4 slurm/templates/emulate.sbatch SPEC OUT`` of three FCFS jobs on 4 nodes,
  the third getting the non-contiguous node ids 0 and 3: every job ok, and each job's ``hosts`` (what
  its ranks read from ``SLURMD_NODENAME``) are the nodes its ids name (``n1,n4`` for the third).
* In an allocation made with ``salloc --no-shell`` this process runs the batch loop itself
  (``launcher="srun"``), so it can watch the steps' ranks on ``/proc`` (their pids from ``scontrol
  listpids``) and kill the controller actor: a suspended job's ranks are in state T and none of its
  phases ends while it is stopped, the controller resumes a job by itself, and its death resumes the
  one still stopped.
* Killing a job (the batch loop's ``kill``) ends its step, also while the step is stopped.

Skipped without a cluster (see conftest). Measured: see docs/cluster.md.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from controller_runs import all_stopped, intervals, kill_controller_when, spec
from iolab.emulator.launchers import expand_hostlist
from iolab.emulator.shell import spawn
from iolab.emulator.slurm_control import StepLever, find_step
from iolab.emulator.suspension import process_state
from iolab.middleware.policies.batch.nodes import parse_ranges
from iolab.middleware.policies.batch.nodes import ids as node_ids
from iolab.trace import read_trace

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.ray]


# FCFS on 4 nodes: b takes id 0, a ids 1-2; c (2 nodes) waits for b's end and gets ids 0 and 3
BATCH = {
    "kind": "batch", "name": "srun-batch-small",
    "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                 "hps": {"rate": "10 GB/s", "capacity": "100 GB"}, "stage_rate": "1 GB/s"},
    "scheduler": "fcfs",
    "workload": [
        {"id": "b", "submit": 0, "nodes": 1, "walltime": 400, "runtime": 100, "output": "1GB"},
        {"id": "a", "submit": 0, "nodes": 2, "walltime": 1200, "runtime": 250, "output": "1GB"},
        {"id": "c", "submit": 50, "nodes": 2, "walltime": 400, "runtime": 100, "output": "1GB"},
    ],
    "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4, "ranks_per_job": "nodes"},
}


def named_nodes(trace, nodes: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """job -> (its hosts column, the allocation nodes its node ids name)."""
    return {r["id"]: (r["hosts"].split(","), [nodes[k] for k in node_ids(parse_ranges(r["node_ids"]))])
            for r in trace.jobs.rows()}


def test_sbatch_batch_emulation_runs_each_job_on_the_nodes_its_ids_name(cluster, job_name, tmp_path):
    out, text, nodes = cluster.emulate(BATCH, tmp_path, job_name)

    trace = read_trace(out)
    assert trace.attrs["launcher"] == "srun" and trace.attrs["complete"] is True
    assert {r["id"]: r["status"] for r in trace.jobs.rows()} == {"a": "ok", "b": "ok", "c": "ok"}, text[-3000:]
    where = named_nodes(trace, nodes)
    assert all(hosts == named for hosts, named in where.values()), where
    assert where["c"][0] == [nodes[0], nodes[3]]  # ids 0 and 3: the mapping is by id, not by position
    logs = out.parent / "run.work" / "logs"
    assert sorted(p.name for p in logs.glob("*.log")) == sorted(
        [f"{j}.log" for j in "abc"] + [f"ray-{n}.log" for n in nodes] + ["reaper.log"])  # Ray over the spec's 4
    # nodes, and the reaper that would clean up after a killed driver (docs/emulator.md)


@pytest.fixture
def allocation(cluster, job_name, monkeypatch):
    """``allocation(n)``: an allocation of ``n`` nodes held by ``salloc --no-shell`` (cancelled after the
    test by ``job_name``), made this process's (SLURM_JOB_ID, SLURM_JOB_NODELIST); returns (job id, nodes)."""

    def make(n: int) -> tuple[str, list[str]]:
        if len(cluster.idle_nodes) < n:
            pytest.skip(f"needs {n} idle nodes, the cluster has {cluster.idle_nodes}")
        rc, out, err = cluster.run(["salloc", "--no-shell", f"--nodes={n}", f"--job-name={job_name}",
                                    "--time=10"], timeout=60)
        m = re.search(r"Granted job allocation (\d+)", out + err)
        assert rc == 0 and m, (rc, out, err)
        job = m.group(1)
        rc, out, err = cluster.run(["squeue", "-h", "-j", job, "-o", "%N"])
        assert rc == 0 and out.strip(), (rc, out, err)
        venv_bin = str(Path(sys.executable).parent)  # `ray start` of the Ray steps, as the templates' venv gives
        for key, value in {"SLURM_JOB_ID": job, "SLURM_JOB_NODELIST": out.strip(), "SLURM_CONF": str(cluster.conf),
                           "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}.items():
            monkeypatch.setenv(key, value)
        return job, expand_hostlist(out.strip())

    return make


def _wait(ok, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := ok()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


def gone(pids) -> bool:
    return all(process_state(p) in ("", "Z") for p in pids)


def test_killing_a_job_ends_its_step_also_while_it_is_stopped(allocation, tmp_path):
    from iolab.emulator.batch.launch import SrunJobs, make_job_launcher

    job, nodes = allocation(3)
    launcher = make_job_launcher(None, spec(), [], tmp_path, "mpiexec")  # srun: SLURM_JOB_ID is set
    assert isinstance(launcher, SrunJobs) and launcher.nodes == tuple(nodes)
    j = SimpleNamespace(queued=SimpleNamespace(id="k"), hosts=[2, 0], ranks=2, proc=None)
    cmd = launcher.command(j, [sys.executable, "-c", "import time; time.sleep(120)"], nice=10)
    assert f"--nodelist={nodes[2]},{nodes[0]}" in cmd and "--job-name=iolab-k" in cmd
    j.proc = spawn(cmd, log_path=tmp_path / "k.log")
    pids = _wait(lambda: (p := launcher.lever.pids("k", j.proc.pid)) and len(p) == 2 and p, "the step's 2 ranks")
    assert j.proc.pid not in pids  # the ranks are slurmstepd's children, not srun's
    assert launcher.lever.stop("k", j.proc.pid) == pids
    assert all_stopped(pids)  # at once: stop returns when the ranks are stopped, not when Slurm took the signal
    launcher.kill(j, grace=1.0)
    _wait(lambda: gone(pids) and find_step(job, "iolab-k") is None, "the step and its ranks gone", timeout=20)


@pytest.mark.long
def test_the_controller_suspends_job_steps_and_its_death_resumes_every_one(allocation, tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation

    job, nodes = allocation(3)
    lever = StepLever(job)  # the test's own view of the steps: their ranks' pids (scontrol listpids)
    procs, ranks = {}, {}
    seen, resumed, cmdlines = {}, set(), {}
    done = threading.Event()

    def pids(j: str) -> list[int]:
        if j not in ranks:
            found = lever.pids(j, 0)
            if not found:
                return []
            ranks[j] = found
            cmdlines[j] = [Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode() for p in found]
        return ranks[j]

    def watch():
        while not done.is_set():
            for j in list(procs):
                p = pids(j)
                if all_stopped(p):
                    seen.setdefault(j, set()).update(p)
                elif j in seen and p and not gone(p):
                    resumed.add(j)  # stopped before, running again: the controller resumed it
            time.sleep(0.1)

    killed: dict = {}
    threading.Thread(target=watch, daemon=True).start()
    # kill the actor once it has resumed a job by itself and another is still stopped
    kill_controller_when(lambda: [j for j in list(procs) if all_stopped(ranks.get(j, []))], killed,
                         ready=lambda: bool(resumed), timeout=120)
    t0 = time.time()
    try:
        trace = run_batch_emulation(spec(runtime=300), work_dir=tmp_path / "w", launcher="srun",
                                    on_launch=lambda j, p: procs.__setitem__(j, p))
    finally:
        done.set()
    assert trace.attrs["launcher"] == "srun"
    assert {r["id"]: r["status"] for r in trace.jobs.rows()} == {"a": "ok", "b": "ok", "c": "ok"}
    where = named_nodes(trace, nodes)
    assert all(hosts == named for hosts, named in where.values()), where
    assert all("iolab.apps.jacobi" in c for cs in cmdlines.values() for c in cs)  # listpids gave the ranks
    sus = intervals(trace)
    assert sus and {j for j, _, _ in sus} <= {"b", "c"}  # never the oldest
    assert set(seen) == {j for j, _, _ in sus}  # every suspension stopped the step's ranks for real (state T)
    for j, a, b in sus:  # no progress while suspended: none of the job's phases ends inside a suspension
        assert not math.isnan(b) and b > a
        inside = [p for p in trace.phases.rows() if p["job"] == j and a + 1 < p["end"] < b - 1]
        assert not inside, (j, a, b, inside)
    assert killed, f"no natural resume then stop seen (stopped {set(seen)}, resumed {resumed})"
    kill_spec = (killed["at"] - t0) / 0.02  # an upper bound on the run's spec clock at the kill
    assert any(b < kill_spec for _, _, b in sus)  # the controller resumed one by itself
    assert set(killed["stopped"]) <= {j for j, _, _ in sus}
    assert all(a < kill_spec for _, a, _ in sus)  # the dead controller suspended nothing more
    # nothing left behind: no step of a job, no rank alive
    assert all(find_step(job, f"iolab-{j}") is None for j in "abc")
    assert all(gone(p) for p in ranks.values())
