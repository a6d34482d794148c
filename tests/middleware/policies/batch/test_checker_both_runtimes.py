"""One checker, one vocabulary of events, both runtimes: the real batch run (``emulator/batch/run.py``)
drives the same kernel as the simulator, so strict mode's checker sees the same events from both and
stops a real run whose kernel books are broken, naming the job and the rule.

Each test makes one real run (Ray, the storage manager actor, ``mpiexec``): a few seconds of wall time.
"""

from __future__ import annotations

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.specs.batch import BatchExperiment

pytestmark = [pytest.mark.ray, pytest.mark.mpi]


def spec(jobs, scheduler="fcfs") -> BatchExperiment:
    return BatchExperiment.model_validate({
        "name": "checker-both-runtimes",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "150 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": scheduler, "workload": jobs,
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4},
    })


class Recorder(BatchChecker):
    """The strict checker, also noting each job's events in order (the event's name)."""

    runs: list[dict[str, list[str]]] = []

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[str]] = {}
        Recorder.runs.append(self.seen)

    def _note(self, name: str, job: str) -> None:
        self.seen.setdefault(job, []).append(name)


for _name in ("submitted", "started", "placed", "fell_back", "entered", "staged", "suspended", "resumed", "ended",
              "withdrawn"):
    def _event(self, job, *args, _name=_name, **kw):
        self._note(_name, job)
        return getattr(BatchChecker, _name)(self, job, *args, **kw)
    setattr(Recorder, _name, _event)


def test_the_real_run_and_the_simulator_send_the_checker_the_same_events(monkeypatch, tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    jobs = [{"id": "h", "submit": 0, "nodes": 2, "walltime": 300, "runtime": 100, "input": "10GB",
             "output": "5GB", "storage": "20GB"},
            {"id": "l", "submit": 0, "nodes": 2, "walltime": 300, "runtime": 150, "output": "1GB"}]
    s = spec(jobs, "sas")
    Recorder.runs = []
    monkeypatch.setattr("iolab.sim.batch.run.BatchChecker", Recorder)
    monkeypatch.setattr("iolab.emulator.batch.run.BatchChecker", Recorder)
    sim = simulate_batch(s, strict=True)
    real = run_batch_emulation(s, work_dir=tmp_path / "w", strict=True)
    assert {r["id"]: r["tier"] for r in real.jobs.rows()} == {r["id"]: r["tier"] for r in sim.jobs.rows()} \
        == {"h": "hps", "l": "lps"}
    sim_events, real_events = Recorder.runs[0], Recorder.runs[-1]  # (the real run's pre-run estimate simulates too)
    hps_life = ["submitted", "started", "placed", "staged", "entered", "entered", "staged", "ended"]
    assert sim_events == real_events == {"h": hps_life, "l": ["submitted", "started", "ended"]}


def test_a_real_run_whose_kernel_loses_a_jobs_node_ids_stops_at_that_jobs_end(monkeypatch, tmp_path):
    """The bug of tests/middleware/policies/batch/test_checker_books.py, in a real run: x's end (x runs 100 spec s, y 400)."""
    from iolab.emulator.batch.run import run_batch_emulation

    original = BatchKernel._give_nodes

    def leaks_ids(self, s, t):
        original(self, s, t)
        self.free_ids &= ~s.node_ids

    monkeypatch.setattr(BatchKernel, "_give_nodes", leaks_ids)
    jobs = [{"id": "x", "submit": 0, "nodes": 2, "walltime": 300, "runtime": 100},
            {"id": "y", "submit": 0, "nodes": 2, "walltime": 600, "runtime": 400}]
    with pytest.raises(InvariantViolation) as err:
        run_batch_emulation(spec(jobs), work_dir=tmp_path / "w", strict=True)
    assert (err.value.rule, err.value.subject) == ("node-books", "x")
    assert err.value.time >= 100.0
