"""A job of runtime 0 (SWF runtime 0 or -1) ends at its own start: its nodes must be
decided on at that instant (issue "One kernel, two clocks", item 7a).

Hand case: 2 nodes; ``a`` (runtime 0) and ``b`` (runtime 5) both submitted at 0, both
on 2 nodes.  ``a`` starts at 0 and ends at 0, so ``b`` starts at 0 and ends at 5.
The old engine took no decision after ``a``'s instant end: ``b`` waited for an
unrelated event, or never started at all.
"""

from __future__ import annotations

import pytest

from iolab.sim.batch.run import simulate_batch
from iolab.specs.batch import BatchExperiment


def spec(scheduler: str, jobs: list[dict]) -> BatchExperiment:
    return BatchExperiment.model_validate({
        "platform": {"nodes": 2, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "100 GB"},
                     "stage_rate": "5 GB/s"},
        "scheduler": scheduler, "workload": jobs})


A = {"id": "a", "submit": 0, "nodes": 2, "walltime": 10, "runtime": 0}
B = {"id": "b", "submit": 0, "nodes": 2, "walltime": 10, "runtime": 5}


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative", "sas"])
def test_the_nodes_of_a_zero_runtime_job_are_reused_at_once(scheduler):
    jobs = {r["id"]: r for r in simulate_batch(spec(scheduler, [A, B])).jobs.rows()}
    assert (jobs["a"]["start"], jobs["a"]["end"]) == (0.0, 0.0)
    assert (jobs["b"]["start"], jobs["b"]["end"]) == (0.0, 5.0)


def test_a_later_submission_does_not_start_the_waiting_job_late():
    c = {"id": "c", "submit": 3, "nodes": 1, "walltime": 10, "runtime": 1}
    jobs = {r["id"]: r for r in simulate_batch(spec("easy", [A, B, c])).jobs.rows()}
    assert jobs["b"]["start"] == 0.0  # the old engine started b at 3, c's submission
    assert jobs["c"]["start"] == 5.0


def test_a_chain_of_zero_runtime_jobs_runs_at_one_instant():
    chain = [{"id": f"z{i}", "submit": 0, "nodes": 2, "walltime": 10, "runtime": 0} for i in range(5)] + [B]
    jobs = {r["id"]: r for r in simulate_batch(spec("fcfs", chain)).jobs.rows()}
    assert {j: (r["start"], r["end"]) for j, r in jobs.items()} == {
        **{f"z{i}": (0.0, 0.0) for i in range(5)}, "b": (0.0, 5.0)}
