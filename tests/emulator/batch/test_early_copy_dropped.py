"""A real run's early copies (advance stage-in) follow the kernel's books: a copy the kernel wasted is deleted
and its space given back to the storage manager, also when the job was withdrawn before its start (rejected
by its scheduler), as the simulator gives that space back.  (The job's state is then ``killed``, which the
effectors did not take for a job that never started: the copy went on holding its HPS bytes.)

The effectors' part alone, on a local Ray (a copy is a Ray task's reference): a kernel's books as the loop
leaves them, and a storage manager that records what it is asked (the actor's own freeing is tested with
the actor)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iolab.emulator.batch.effectors import JobEffectors
from iolab.middleware.policies.batch.kernel import FUTURE, KILLED, QUEUED, RUNNING

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_up():
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


class Manager:
    def __init__(self):
        self.freed: list[str] = []

    def free(self, job: str) -> None:
        self.freed.append(job)


class Effectors(JobEffectors):
    def __init__(self, ray, states: dict[str, str]):
        self.kernel = SimpleNamespace(early={}, by_id={j: SimpleNamespace(state=st) for j, st in states.items()})
        self.early_runs = {j: {"ref": ray.put(0), "pending": "stage", "dir": f"/hps/{j}"} for j in states}
        self.mgr = Manager()
        self.s = SimpleNamespace(bytes_scale=1.0)
        self.progress = SimpleNamespace(note=lambda line: None)


@pytest.mark.parametrize("state,dropped", [(KILLED, True), (QUEUED, True), (FUTURE, True), (RUNNING, False)])
def test_a_copy_the_kernel_no_longer_counts_is_deleted_unless_its_job_began(ray_up, state, dropped):
    e = Effectors(ray_up, {"b": state})
    e._advance_early(100.0)
    assert (e.mgr.freed == ["b"]) is dropped and ("b" not in e.early_runs) is dropped


def test_a_copy_the_kernel_still_counts_is_kept(ray_up):
    e = Effectors(ray_up, {"b": QUEUED})
    e.kernel.early["b"] = (0.0, 0.0, 0)
    e._advance_early(100.0)
    assert e.mgr.freed == [] and "b" in e.early_runs
