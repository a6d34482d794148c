"""The batch driver on its own: what happens at an instant, told to the kernel and to a runtime's
effectors (here a recorder standing in for the simulator's links or the real run's processes)."""

from __future__ import annotations

from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.driver import BatchDriver
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.batch.snapshot import BatchPolicy, Decision, Start
from iolab.specs.batch import BatchExperiment
from iolab.workloads import load_workload


class Effects:
    """Records every call; ``pause`` and ``unpause`` answer as told."""

    def __init__(self, kernel, can_pause=True):
        self.kernel, self.can_pause, self.calls, self.paused = kernel, can_pause, [], set()

    def begin(self, s, t):
        self.calls.append(("begin", s.id, t, s.state))

    def halt(self, s, t, state, message):
        self.calls.append(("halt", s.id, t, state, message, self.kernel.free_nodes))  # before the nodes return

    def pause(self, s, t):
        self.calls.append(("pause", s.id, t))
        if self.can_pause:
            self.paused.add(s.id)
        return self.can_pause

    def unpause(self, s, t):
        self.calls.append(("unpause", s.id, t))
        if s.id not in self.paused:
            return False
        self.paused.discard(s.id)
        return True


def make(jobs, scheduler=None, name="easy"):
    s = BatchExperiment.model_validate({
        "platform": {"nodes": 4, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "100 GB"},
                     "stage_rate": "5 GB/s"},
        "scheduler": name, "workload": jobs})
    k = BatchKernel.from_spec(s, load_workload(s), observer=BatchChecker(), scheduler=scheduler)
    fx = Effects(k)
    return k, fx, BatchDriver(k, fx)


def test_every_start_begins_and_an_end_halts_before_the_nodes_return():
    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 3, "walltime": 100, "runtime": 50},
                     {"id": "b", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 50}])
    a, b = k.jobs
    assert d.decide(0.0) is False  # nothing changed: the policy is not asked
    k.submit(a, 0.0)
    k.submit(b, 0.0)
    assert d.decide(0.0) is True
    assert fx.calls == [("begin", "a", 0.0, "running")] and b.state == "queued"
    d.end(a, 50.0)
    assert fx.calls[-1] == ("halt", "a", 50.0, "done", "", 1)  # halted while it still held its 3 nodes
    assert (a.state, a.status, k.free_nodes, k.changed) == ("done", "ok", 4, True)
    d.decide(50.0)
    assert fx.calls[-1] == ("begin", "b", 50.0, "running")


def test_a_policy_kill_ends_the_job_through_the_effectors():
    class StartThenKill(BatchPolicy):
        name = "start-then-kill"

        def decide(self, snap):
            if snap.running:
                return Decision(snap.now, kills=(snap.running[0].id,))
            q = snap.queue[0]
            return Decision(snap.now, starts=(Start(q.id, "lps", q.nodes, snap.now + q.walltime),))

    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50},
                     {"id": "b", "submit": 5, "nodes": 1, "walltime": 100, "runtime": 50}],
                    scheduler=StartThenKill())
    a, b = k.jobs
    k.submit(a, 0.0)
    d.decide(0.0)
    k.submit(b, 5.0)
    d.decide(5.0)
    assert fx.calls[1] == ("halt", "a", 5.0, "killed", "killed by the scheduler start-then-kill", 3)
    assert (a.status, a.end) == ("killed", 5.0)


def test_suspend_and_resume_move_the_kernel_only_when_the_effect_took_place():
    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50},
                     {"id": "b", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50}])
    a, b = k.jobs
    for s in (a, b):
        k.submit(s, 0.0)
    d.decide(0.0)
    rows = d.act([("suspend", "a", "lps", "volume loaded"), ("resume", "b", "lps", "volume free")], 10.0)
    assert rows == [(10.0, "a", "suspend", "lps", "volume loaded")]  # b was not stopped: no row, no change
    assert (a.state, b.state) == ("suspended", "running")
    assert d.release(20.0, "run ends", ["a"]) == [(20.0, "a", "resume", "", "run ends")]
    assert (a.state, a.suspensions, a.expected_end) == ("running", ((10.0, 20.0),), 110.0)
    fx.can_pause = False
    assert d.suspend(a, 30.0) is False and a.state == "running"  # a process already gone stops nothing
    assert d.resume(a, 31.0) is False and a.state == "running"  # not stopped: nothing to resume


def test_a_job_ended_while_suspended_ends_its_suspension_with_it():
    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50}])
    (a,) = k.jobs
    k.submit(a, 0.0)
    d.decide(0.0)
    d.suspend(a, 10.0)
    d.end(a, 15.0, "killed", "interrupted")
    assert (a.status, a.suspensions, k.free_nodes) == ("killed", ((10.0, 15.0),), 4)
    assert fx.calls[-1][:5] == ("halt", "a", 15.0, "killed", "interrupted")


def test_a_retry_begins_only_a_job_still_allocating():
    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50}])
    (a,) = k.jobs
    k.submit(a, 0.0)
    d.decide(0.0)
    assert d.retry(a, 5.0) is False and fx.calls == [("begin", "a", 0.0, "running")]


def test_the_resume_kind_is_the_controllers():
    from iolab.middleware.policies.batch import driver
    from iolab.middleware.policies.controller import RESUME

    assert driver.RESUME == RESUME  # the driver holds it by value (its package is not imported by every run)


def test_only_a_running_job_is_suspended_in_either_runtime():
    # a stage copy is the storage manager's, not the job's processes: the real run cannot stop it, so the
    # simulator does not either; the driver refuses before any effect, the kernel and the checker likewise
    import pytest

    from iolab.invariants import InvariantViolation

    k, fx, d = make([{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50, "input": "10GB",
                      "output": "10GB", "storage": "20GB"}], name="sas")
    (a,) = k.jobs
    k.submit(a, 0.0)
    d.decide(0.0)
    assert a.state == "stage-in"
    assert d.act([("suspend", "a", "hps", "volume loaded")], 1.0) == []
    assert a.state == "stage-in" and not any(c[0] == "pause" for c in fx.calls)  # no effect was asked
    with pytest.raises(InvariantViolation) as err:
        k.suspend(a, 1.0)
    assert err.value.rule == "job-state" and "suspend of a stage-in job" in str(err.value)
    with pytest.raises(InvariantViolation):
        k.observer.suspended("a", 1.0)  # the checker's own books say the same
    k.enter(a, "running", 3.0)
    assert d.act([("suspend", "a", "hps", "volume loaded")], 4.0) == [(4.0, "a", "suspend", "hps", "volume loaded")]

