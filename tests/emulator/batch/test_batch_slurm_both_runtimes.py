"""The ``slurm`` scheduler in both runtimes: one spec simulated and run for real (MPI jobs, Ray, the
wall clock), the same jobs started in the same order on the same node ids, at the same times up to the
real jobs' launch costs.

Four nodes: ``a`` and ``b`` start at the background loop's pass half a second after their submission;
``c``
(every node) waits
for ``a``; ``d`` (one node) is submitted behind ``c``: at ``b``'s end the main scheduler stops at ``c``
and ``d`` waits for the backfill cycle at 60 s (the cycles are every ``bf_interval`` = 30 s from the
first decision; ``b`` ends at 35.5 s, off the grid, and for real before 60 s), where it starts on node 2
(cons_tres's best fit of the free nodes 2-3) because it ends before ``c``'s reservation at ``a``'s limit
(240 s).  Textbook EASY starts ``d`` at ``b``'s end.
"""

from __future__ import annotations

import pytest

from iolab.specs.batch import BatchExperiment

TS = 0.25  # 100 spec s = 25 wall s: a real job's launch and exit (a few wall seconds) stay within 25 spec s


def the_spec(scheduler="slurm") -> BatchExperiment:
    def job(id, submit, nodes, walltime, runtime):
        return {"id": id, "submit": submit, "nodes": nodes, "walltime": walltime, "runtime": runtime}
    return BatchExperiment.model_validate({
        "name": "slurm-both", "scheduler": scheduler,
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "1 TB"}, "stage_rate": "5 GB/s"},
        "workload": [job("a", 0, 2, 240, 100), job("b", 0, 2, 60, 35), job("c", 5, 4, 60, 20),
                     job("d", 10, 1, 60, 20)],
        "emulator": {"time_scale": TS},
    })


def table(trace) -> dict[str, tuple[float, str]]:
    return {r["id"]: (float(r["start"]), r["node_ids"]) for r in trace.jobs.rows()}


def test_the_simulated_slurm_decisions_are_the_ones_the_test_is_about():
    from iolab.sim.batch.run import simulate_batch

    sim = table(simulate_batch(the_spec(), strict=True))
    assert sim == {"a": (0.5, "0-1"), "b": (0.5, "2-3"), "c": (100.5, "0-3"), "d": (60.0, "2")}
    assert table(simulate_batch(the_spec("easy"), strict=True))["d"][0] == 35.0  # b's end (EASY starts at once)


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_slurm_starts_the_same_jobs_on_the_same_nodes_in_both_runtimes(tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    sim = table(simulate_batch(the_spec(), strict=True))
    trace = run_batch_emulation(the_spec(), work_dir=tmp_path / "w", strict=True)
    assert [r["status"] for r in trace.jobs.rows()] == ["ok"] * 4
    real = table(trace)
    assert {j: n for j, (_, n) in real.items()} == {j: n for j, (_, n) in sim.items()}
    assert sorted(real, key=lambda j: real[j][0]) == sorted(sim, key=lambda j: sim[j][0])
    # a and b start at the background loop's pass and d at the backfill cycle, on the policy's clock (the real
    # loop polls it: a wall second at most); c follows a's real end, later by a's launch and exit costs
    for j in ("a", "b", "d"):
        assert abs(real[j][0] - sim[j][0]) <= 1.0 / TS, (j, real, sim)
    assert 0 <= real["c"][0] - sim["c"][0] <= 8 / TS, (real, sim)
