"""The load controller in a real batch run: real SIGSTOP/SIGCONT of MPI jobs, the actor's death.

Three one-rank Jacobi jobs checkpoint to HPS (the first run: each holds 5 GB of it) or to LPS.  The controller's threshold is
set so low that every benchmark write counts as high (omega, 500 MB of spec
bytes, is passed once a job's first 1 GB checkpoint is on disk: 100 kB real): the volume is loaded
after two samples, so the handler suspends the newest jobs one per cycle
(after the first five samples the window is fed a random forest's prediction, trained online on
them: above the threshold too), keeps the oldest running, and resumes the others when the volume has no
running job (§4.3).  A second run kills the controller actor after its first
suspension: every suspended job must be resumed and finish.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from controller_runs import all_stopped, intervals, kill_controller_when, spec, summaries
from iolab.middleware.volume_probe import device_of


def serial_residual(n: int, sweeps: int) -> float:
    """The reference: the max-norm residual of ``sweeps`` Jacobi sweeps done on one process."""
    from iolab.apps.stencil import serial_initial, serial_sweeps

    u = serial_initial(n)
    u[1:-1, 1:-1] = serial_sweeps(n, sweeps)
    return float(np.abs(4 * u[1:-1, 1:-1] - (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])).max())


# online forest: trained after 5 samples on every counter that varies (|r| >= 0), used from then on
FOREST = {"prediction": "forest", "warmup": 5, "correlation_threshold": 0.0}


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_the_controller_suspends_the_newest_for_real_and_every_job_finishes(tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation

    stopped_seen: dict[str, set] = {}
    procs = {}

    def watch():  # the processes, on /proc: a suspended job's whole tree is in state T
        from iolab.emulator.suspension import process_tree
        while not done.is_set():
            for job, p in list(procs.items()):
                tree = process_tree(p.pid)
                if all_stopped(tree):
                    stopped_seen.setdefault(job, set()).update(tree)
            time.sleep(0.1)

    done = threading.Event()
    threading.Thread(target=watch, daemon=True).start()
    # on tmpfs (no block device to read): the byte rate comes from the storage manager's counters
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path) as work:
        try:
            trace = run_batch_emulation(spec("hps", **FOREST), work_dir=Path(work) / "w",
                                        on_launch=lambda j, p: procs.__setitem__(j, p), strict=True)
        finally:
            done.set()
        on_tmpfs = device_of(work) is None
        results = summaries(Path(work) / "w")
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: r["status"] for j, r in jobs.items()} == {"a": "ok", "b": "ok", "c": "ok"}
    # the clock starts once the controller actor answers: the first job starts at its submission, not
    # late by the actor's creation (it was: 137 spec s, 7 213 on a loaded machine)
    assert jobs["a"]["start"] < 0.25 / 0.02, jobs["a"]
    sus = intervals(trace)
    assert sus and {j for j, _, _ in sus} <= {"b", "c"}  # never the oldest
    assert all(not math.isnan(b) and b > a for _, a, b in sus)  # every suspension ended
    assert set(stopped_seen) == {j for j, _, _ in sus}  # stopped for real: mpiexec, proxy and rank
    assert all(len(pids) >= 3 for pids in stopped_seen.values())
    # no progress while suspended: none of the job's phases ends inside a suspension
    for job, a, b in sus:
        inside = [p for p in trace.phases.rows() if p["job"] == job and a + 1 < p["end"] < b - 1]
        assert not inside, (job, a, b, inside)
    # the controller's samples reach the trace: a timed benchmark write per volume and d
    samples = list(trace.samples.rows())
    assert len(samples) >= 5 and {r["volume"] for r in samples} == {"hps"}
    assert all(r["response"] > 0 for r in samples)
    assert max(r["writers"] for r in samples) >= 2
    if on_tmpfs:  # no device: the rate of the jobs' paced bytes, from the storage manager; some samples see them
        assert trace.attrs["monitoring"]["devices"] == {"hps": None}
        rates = [r["bytes_rate"] for r in samples if r["bytes_rate"] == r["bytes_rate"]]
        assert rates and max(rates) > 0
    # the volume's write operations per second and the seconds of transfers queued on its link (the storage
    # manager's, which answered every sample)
    assert all(r["queued"] >= 0 for r in samples)
    ops = [r["ops_rate"] for r in samples[1:]]
    assert all(o >= 0 for o in ops) and any(o > 0 for o in ops)
    # its cost is in the trace: one benchmark unit (p x bytes_scale real bytes) written per sample
    mon = trace.attrs["monitoring"]
    s = spec()
    assert mon["samples"] == len(samples)
    assert mon["bytes_written"] == len(samples) * int(s.controller.p * s.emulator.bytes_scale)
    assert 0 < mon["write_seconds"] < trace.attrs["wall_seconds"] and 0 < mon["share_of_wall"] < 1
    # a suspended job comes back later: its run is longer than the oldest job's by about its suspension
    assert jobs["c"]["end"] - jobs["c"]["start"] > sum(b - a for j, a, b in sus if j == "c")
    # ... with a correct result: each job's residual is that of as many sweeps done on one process
    grid = s.emulator.grid
    for j, r in results.items():
        assert r is not None and r["ok"], (j, r)
        assert r["residual"] == pytest.approx(serial_residual(grid, r["sweeps"]), rel=1e-12, abs=1e-15), j
    # ... and its HPS space held all along: the storage manager measured, while it was stopped, the job's
    # allocation still live (5 GB of spec bytes) and its checkpoints still in its directory
    for job, a, b in sus:
        inside = [u for u in trace.tables["usage"].rows() if u["job"] == job and a < u["time"] < b]
        assert inside, (job, a, b)
        assert all(u["allocated"] == pytest.approx(5e9) and u["apparent"] > 0 for u in inside), inside
    # the window was fed a random forest trained online on the run's first samples (§4.2)
    pred = trace.attrs["prediction"]
    assert pred["prediction"] == "forest" and pred["online"] and pred["trained_at"][0] == FOREST["warmup"]
    first = len(samples) - pred["fed_predicted"]  # samples before the first forest that could be trained
    assert pred["fed_predicted"] > 0 and first in pred["trained_at"]
    assert all(r["predicted"] == r["response"] for r in samples[:first])
    seen = [r["response"] for r in samples[:first]]  # its training labels: a forest predicts between them
    assert all(min(seen) - 1e-9 <= r["predicted"] <= max(seen) + 1e-9 for r in samples[first:])


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_killing_the_controller_actor_resumes_every_suspended_job(tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.emulator.suspension import process_tree

    killed, procs = {}, {}

    def stopped_jobs():
        return [job for job, p in list(procs.items()) if all_stopped(process_tree(p.pid))]

    kill_controller_when(stopped_jobs, killed)
    t0 = time.time()
    # the actor forecasts with an AR(3) fitted online (Eq. 9): a failing forecast would lose the controller
    # before any job is stopped
    trace = run_batch_emulation(spec(forecast="ar"), work_dir=tmp_path / "w",
                                on_launch=lambda j, p: procs.__setitem__(j, p))
    assert trace.attrs["spec"]["controller"]["forecast"] == "ar"
    assert killed, "no job was stopped, or the controller actor was never found"
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: r["status"] for j, r in jobs.items()} == {"a": "ok", "b": "ok", "c": "ok"}
    sus = intervals(trace)
    assert set(killed["stopped"]) <= {j for j, _, _ in sus}
    kill_spec = (killed["at"] - t0) / 0.02  # an upper bound on the run's spec clock at the kill
    # every suspension ended, none after the kill, and all ended soon after it (one loop turn + Ray's notice)
    assert all(not math.isnan(b) for _, _, b in sus)
    assert all(a < kill_spec for _, a, _ in sus)
