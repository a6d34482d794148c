"""Advance stage-in in a real batch run: the storage manager copies a waiting job's inputs into its
HPS directory before its start, from the kernel's decision (issue 9 §5).

Two nodes: ``a`` holds both until its walltime, 1 000 spec seconds (10 s wall), and ends at 990 in
the simulator (later for real: a launch and an exit take ~1 s of wall time each, ~100 spec seconds
at time scale 0.01); ``b`` (10 GB of input, 1 MB real at bytes scale 1e-4) waits on a plan that
never changes, so its copy begins at 1 000 - 2 - 60 spec seconds and is done when it starts: at
its launch its input files are already in its HPS directory, whole.  The simulator, given the
same spec, counts the same copy.  (With a walltime of 1 100 the copy would begin at 1 038, after
the simulated end of ``a`` at 1 000 but before its real end: the two runtimes disagreed, and only
the real run's launch and exit costs had made the copy happen.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.specs.batch import BatchExperiment

BS = 1e-4


def spec(scheduler=None) -> BatchExperiment:
    return BatchExperiment.model_validate({
        "name": "advance",
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "50 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": scheduler or {"kind": "random-tier", "p": 1.0},
        "advance_stage_in": {"enabled": True, "theta_stable": 100, "margin": 60},
        "workload": [
            {"id": "a", "submit": 0, "nodes": 2, "walltime": 1000, "runtime": 990},
            {"id": "b", "submit": 1, "nodes": 2, "walltime": 300, "runtime": 200, "input": "10GB",
             "storage": "10GB"},
        ],
        "emulator": {"time_scale": 0.01, "bytes_scale": BS},
    })


@pytest.mark.ray
@pytest.mark.mpi
@pytest.mark.parametrize("scheduler", [None, {"kind": "fcfs", "hps_requests": True}],
                         ids=["random-tier-hps", "fcfs-hps-requests"])
@pytest.mark.long
def test_a_stable_plan_has_the_data_in_the_hps_directory_at_the_start(tmp_path, scheduler):
    """Under a tier-choosing policy and under FCFS with ``hps_requests``; the simulator, given
    the same spec, counts the same early copy and hidden time and runs b on HPS too."""
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    work = tmp_path / "w"
    at_launch: dict[str, dict[str, int]] = {}

    def on_launch(job, proc):
        d = work / "hps" / "jobs" / job
        at_launch[job] = {str(p.relative_to(d)): p.stat().st_size for p in d.rglob("*") if p.is_file()}

    trace = run_batch_emulation(spec(scheduler), out=tmp_path / "run.h5", work_dir=work, on_launch=on_launch)
    inputs = sorted((work / "lps" / "inputs" / "b").glob("rank-*.h5"))
    want = {f"input/{p.name}": p.stat().st_size for p in inputs}
    assert want and sum(want.values()) >= 0.9 * 10e9 * BS
    assert at_launch["b"] == want  # real files, whole, before the job's processes started
    adv = trace.attrs["advance_stage_in"]
    assert adv["early_copies"] == 1 and adv["wasted_copies"] == 0 and adv["hidden_seconds"] == 2.0
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert jobs["b"]["status"] == "ok" and jobs["b"]["tier"] == "hps" and jobs["b"]["node_ids"] == "0-1"
    ph = [r for r in trace.phases.rows() if r["job"] == "b" and r["kind"] == "stage-in"]
    assert len(ph) == 1 and ph[0]["start"] < jobs["b"]["start"]  # the copy began while b waited
    assert not Path(work / "hps" / "jobs" / "b").exists()  # freed at its end
    sim = simulate_batch(spec(scheduler), strict=True)
    assert {k: sim.attrs["advance_stage_in"][k] for k in ("early_copies", "wasted_copies", "hidden_seconds")} == {
        k: adv[k] for k in ("early_copies", "wasted_copies", "hidden_seconds")}
    assert {r["id"]: r["tier"] for r in sim.jobs.rows()} == {j: r["tier"] for j, r in jobs.items()}
