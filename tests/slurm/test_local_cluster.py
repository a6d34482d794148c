"""The local Slurm really does what the emulator relies on.

Each test drives the cluster with command lines from :mod:`iolab.emulator.launchers`
run through :mod:`iolab.emulator.shell`, so the lines are checked against the real
``srun``/``sbatch``/``scontrol`` too. Skipped without a cluster (see conftest).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from iolab.emulator.launchers import expand_hostlist, scontrol_command, srun_command
from iolab.emulator.shell import kill_tree, spawn
from iolab.emulator.slurm_control import job_state
from iolab.emulator.slurm_state import SlurmJobState
from listening import processes, wait_until_stopped

pytestmark = pytest.mark.slurm

MPI_PROBE = """
import json, os
from mpi4py import MPI
comm = MPI.COMM_WORLD
me = {"rank": comm.rank, "size": comm.size, "node": os.environ["SLURMD_NODENAME"],
      "procid": int(os.environ["SLURM_PROCID"])}
everyone = comm.gather(me)
total = comm.allreduce(comm.rank)
if comm.rank == 0:
    print(json.dumps({"ranks": everyone, "sum": total}))
"""


def test_srun_pmi2_gives_one_communicator_across_two_nodes(cluster, job_name):
    nodes = list(cluster.idle_nodes[:2])
    cmd = srun_command(4, [sys.executable, "-c", MPI_PROBE], nodes=2, nodelist=nodes,
                       job_name=job_name, extra=["--ntasks-per-node=2", "--kill-on-bad-exit=1"])
    rc, out, err = cluster.run(cmd, timeout=120)
    assert rc == 0, err
    result = json.loads(out)
    ranks = result["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    assert {r["size"] for r in ranks} == {4}          # one communicator, not 4 singletons
    assert result["sum"] == 0 + 1 + 2 + 3              # a collective across both nodes
    assert all(r["procid"] == r["rank"] for r in ranks)
    assert sorted(r["node"] for r in ranks) == sorted(nodes * 2)  # 2 ranks on each node


def test_srun_pmi2_requests_fit_slurms_one_read(cluster, job_name):
    """Slurm's PMI-1 server takes each request in one read of at most 1024 bytes; a longer
    line is split and the step hangs in MPI_Init (seen in CI).  MPICH's own PMI trace
    (PMI_DEBUG) gives every line the ranks sent: with the launcher's environment the
    longest stays far below the limit (the UCX device sent 900-1000-byte lines)."""
    nodes = list(cluster.idle_nodes[:2])
    cmd = srun_command(2, [sys.executable, "-c", MPI_PROBE], nodes=2, nodelist=nodes,
                       job_name=job_name, env={"PMI_DEBUG": "1"}, extra=["--kill-on-bad-exit=1"])
    rc, out, err = cluster.run(cmd, timeout=120)
    assert rc == 0, err
    sent = [line.split(" pmi: ", 1)[1] for line in (out + err).splitlines() if "send to fd" in line]
    assert any(s.startswith("cmd=put") for s in sent), (out + err)[-2000:]   # the trace is there
    longest = max(len(s) + 1 for s in sent)                                  # + the newline
    assert longest < 512, f"longest PMI request {longest} bytes"


def test_sbatch_wait_runs_a_script_and_reports_its_state(cluster, job_name, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n"
                      'echo "job $SLURM_JOB_ID on $SLURMD_NODENAME nodes $SLURM_JOB_NODELIST"\n'
                      "exit ${IOLAB_EXIT:-0}\n")
    out_file = tmp_path / "job.out"
    rc, out, err = cluster.run(["sbatch", "--wait", "--parsable", f"--job-name={job_name}",
                                "-N2", f"--output={out_file}", str(script)])
    assert rc == 0, err
    jobid = out.strip().split(";")[0]
    words = out_file.read_text().split()
    assert words[:2] == ["job", jobid]
    assert words[3] in cluster.idle_nodes
    assert len(expand_hostlist(words[5])) == 2       # the batch host sees its 2-node allocation
    assert _final_state(cluster, jobid) is SlurmJobState.COMPLETED

    rc, out, _ = cluster.run(["sbatch", "--wait", "--parsable", f"--job-name={job_name}",
                              "--export=ALL,IOLAB_EXIT=3", "--output=/dev/null", str(script)])
    assert rc == 3                                   # sbatch --wait returns the job's code
    assert _final_state(cluster, out.strip().split(";")[0]) is SlurmJobState.FAILED


def test_scontrol_suspend_stops_a_step_and_resume_continues_it(cluster, job_name, tmp_path):
    ticks = tmp_path / "ticks"
    loop = f"i=0; while :; do echo $i >> {ticks}; i=$((i+1)); sleep 0.05; done"
    cmd = srun_command(1, ["sh", "-c", loop], nodes=1, mpi="none", job_name=job_name)
    step = spawn(cmd, env=cluster.env, log_path=tmp_path / "srun.log")
    # the step's task (whatever shell path or wrapper runs it), not srun, whose command line holds the loop too
    looping = lambda c: str(ticks) in c and "srun" not in c.split()[0]  # noqa: E731
    try:
        _wait_until(lambda: _lines(ticks) >= 1, "the step to start ticking", step, tmp_path)
        t1, n1 = time.monotonic(), _lines(ticks)
        _wait_until(lambda: _lines(ticks) >= n1 + 5, "five more ticks", step, tmp_path)
        tick = (time.monotonic() - t1) / (_lines(ticks) - n1)  # measured: seconds per tick on this machine now
        rc, jobid, err = cluster.run(["squeue", "-h", f"--name={job_name}", "-o", "%i"])
        assert rc == 0 and jobid.strip(), err
        jobid = jobid.strip()
        assert _state(cluster, jobid) is SlurmJobState.RUNNING

        rc, _, err = cluster.run(scontrol_command("suspend", jobid))
        assert rc == 0, err
        assert _state(cluster, jobid) is SlurmJobState.SUSPENDED
        wait_until_stopped(looping)                  # the event: the task is stopped (state T)
        frozen = _lines(ticks)
        time.sleep(10 * tick)                        # ten ticks at the rate just measured, were it running
        assert _lines(ticks) == frozen
        assert all(st in ("T", "t") for st in processes(looping).values())  # still stopped, not dead

        rc, _, err = cluster.run(scontrol_command("resume", jobid))
        assert rc == 0, err
        _wait_until(lambda: _lines(ticks) >= frozen + 5, "ticks after resume", step, tmp_path)
        assert _state(cluster, jobid) is SlurmJobState.RUNNING
    finally:
        kill_tree(step, grace=5)


def _state(cluster, jobid: str) -> SlurmJobState:
    return job_state(jobid, env=cluster.env)


def _final_state(cluster, jobid: str, deadline: float = 60.0) -> SlurmJobState:
    """The state a job ends in. ``sbatch --wait`` returns once the batch script has exited,
    and slurmctld may still show the job COMPLETING (its epilog and the nodes' clean-up,
    seen in CI under load): wait for the terminal state, or fail naming the last one."""
    end = time.monotonic() + deadline
    state = _state(cluster, jobid)
    while not state.is_terminal and time.monotonic() < end:
        time.sleep(0.2)
        state = _state(cluster, jobid)
    assert state.is_terminal, f"job {jobid} still {state.value} {deadline:.0f} s after sbatch --wait returned"
    return state


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _wait_until(ok, what: str, step, tmp_path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if step.poll() is not None or time.monotonic() > deadline:
            log = (tmp_path / "srun.log").read_text()
            pytest.fail(f"timed out waiting for {what} (srun rc={step.poll()}): {log}")
        time.sleep(0.05)


SEGMENT_HOLDER = """
import os, time
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()  # every rank has mapped its node's segment
if MPI.COMM_WORLD.rank == 0:
    print("step", os.environ["SLURM_JOB_ID"], os.environ["SLURM_STEP_ID"], flush=True)
time.sleep(600)
"""


def _fnv1a(text: str) -> str:
    """32-bit FNV-1a in hex, as MPICH hashes a step's KVS name into its segments' names (written
    independently of slurm/mpich-shm-epilog, which computes the same)."""
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 0x01000193) % 2**32
    return format(h, "x")


def test_a_killed_step_leaves_no_mpich_segment_in_dev_shm(cluster, job_name, tmp_path):
    """MPICH unlinks /dev/shm/mpich_shm_<hash of "job.step">_<node> only in MPI_Finalize: a killed step
    left them (a megabyte or more of memory each; a later job of the same id failed in MPI_Init on the stale
    one). The local cluster's Epilog (slurm/mpich-shm-epilog) removes the ending job's."""
    nodes = list(cluster.idle_nodes[:2])
    cmd = srun_command(2, [sys.executable, "-c", SEGMENT_HOLDER], nodes=2, nodelist=nodes, job_name=job_name,
                       extra=["--ntasks-per-node=1"])
    log = tmp_path / "srun.log"
    step = spawn(cmd, env=cluster.env, log_path=log)
    try:
        _wait_until(lambda: "step " in log.read_text(), "the ranks to pass MPI_Init", step, tmp_path)
        job, step_id = log.read_text().split("step ", 1)[1].split()[:2]
        segments = [Path(f"/dev/shm/mpich_shm_{_fnv1a(f'{job}.{step_id}')}_{node}") for node in (0, 1)]
        assert all(s.exists() for s in segments), (segments, sorted(Path("/dev/shm").iterdir())[-5:])
        rc, _, err = cluster.run(["scancel", job])  # the ranks die without MPI_Finalize
        assert rc == 0, err
        step.wait(timeout=60)
        deadline = time.monotonic() + 60
        while any(s.exists() for s in segments) and time.monotonic() < deadline:
            time.sleep(0.1)  # the Epilog runs once the job's processes are gone
        assert not any(s.exists() for s in segments), [s for s in segments if s.exists()]
    finally:
        kill_tree(step, grace=5)
