"""What a batch scheduler may do beyond starting jobs, as an external decision process needs (Batsim's REJECT_JOB
and KILL_JOB): reject a waiting job, kill a running one, be asked at every change (``sees_every_change``) and read
how a job ended (``job_state``); the guard's rules for a broken reject or kill."""

from __future__ import annotations

import math

import pytest

from iolab.invariants import InvariantViolation
from iolab.sim.batch.run import simulate_batch

from policy_files import batch_spec, jobs, write

POLICIES = '''
from iolab.policy import BatchScheduler, Decision


class RejectAndKill(BatchScheduler):
    """FCFS that rejects job b and kills job a at t=10 (when nothing waits: it asks to see every change)."""

    sees_every_change = True

    def decide(self, snap):
        rejects = tuple(q.id for q in snap.queue if q.id == "b")
        kills = ("a",) if snap.now >= 10 and any(r.id == "a" for r in snap.running) else ()
        free, starts = snap.free_nodes, []
        for q in snap.queue:
            if q.id in rejects:
                continue
            if q.nodes > free:
                break
            starts.append(snap.start(q))
            free -= q.nodes
        wake = 10.0 if snap.now < 10 else None
        return Decision(snap.now, tuple(starts), rejects=rejects, kills=kills, wake_at=wake)


class Watcher(BatchScheduler):
    """Starts what fits; records every call and how each job that left the running set ended."""

    sees_every_change = True
    job_state = None

    def __init__(self):
        self.calls, self.ended, self.running = [], {}, set()

    def decide(self, snap):
        self.calls.append((snap.now, len(snap.queue)))
        now_running = {r.id for r in snap.running}
        for job in self.running - now_running:
            self.ended[job] = (snap.now, self.job_state(job))
        self.running = now_running
        free, starts = snap.free_nodes, []
        for q in snap.queue:
            if q.nodes <= free:
                starts.append(snap.start(q))
                free -= q.nodes
                self.running.add(q.id)
        return starts


class KillQueued(BatchScheduler):
    def decide(self, snap):
        return Decision(snap.now, kills=(snap.queue[-1].id,))


class RejectRunning(BatchScheduler):
    def decide(self, snap):
        if snap.running:
            return Decision(snap.now, rejects=(snap.running[0].id,))
        return [snap.queue[0].id]


class StartAndReject(BatchScheduler):
    def decide(self, snap):
        q = snap.queue[0]
        return Decision(snap.now, (snap.start(q),), rejects=(q.id,))


class KillUnknown(BatchScheduler):
    def decide(self, snap):
        return Decision(snap.now, kills=("zz",))
'''

THREE = jobs(("a", 0, 2, 100, 50), ("b", 1, 2, 100, 80), ("c", 2, 2, 10, 5))


def _run(tmp_path, cls, workload=THREE):
    write(tmp_path, "p.py", POLICIES)
    return simulate_batch(batch_spec(tmp_path, f"p.py:{cls}", workload), strict=True)


def _jobs(trace):
    j = trace.jobs
    return {str(i): (str(s), float(a), float(b)) for i, s, a, b in zip(j["id"], j["status"], j["start"], j["end"])}


def test_a_rejected_job_never_runs_and_a_killed_one_ends_at_its_kill(tmp_path):
    got = _jobs(_run(tmp_path, "RejectAndKill"))
    assert got["a"] == ("killed", 0.0, 10.0)  # ran 0..10 of its 50 s
    status, start, end = got["b"]
    assert status == "killed" and math.isnan(start) and math.isnan(end)  # rejected at its submission: never ran
    assert got["c"] == ("ok", 2.0, 7.0)


def test_a_scheduler_that_sees_every_change_is_asked_with_nothing_waiting_and_reads_how_jobs_ended(tmp_path):
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.sim.batch.engine import BatchEngine
    from iolab.middleware.policies.guard import GuardedScheduler
    from iolab.middleware.policies.loader import load_policy

    write(tmp_path, "p.py", POLICIES)
    spec = batch_spec(tmp_path, "p.py:Watcher", THREE)
    guard = GuardedScheduler(load_policy(spec.scheduler, "scheduler"), "Watcher")
    kernel = BatchKernel.from_spec(spec, list(spec.workload.jobs), scheduler=guard)
    BatchEngine.around(kernel, memory_per_node=spec.platform.memory_per_node).run()
    user = guard.user
    # a (0..50) and b (1..81) run side by side on 4 nodes; c waits until 50; every end is seen when it happens,
    # the last ones with nothing waiting
    assert user.ended == {"a": (50.0, "done"), "c": (55.0, "done"), "b": (81.0, "done")}
    assert (81.0, 0) in user.calls and (55.0, 0) in user.calls


@pytest.mark.parametrize("cls, rule", [("KillQueued", "kill-not-running"), ("RejectRunning", "reject-not-queued"),
                                       ("StartAndReject", "reject-not-queued"), ("KillUnknown", "unknown-job")])
def test_a_broken_reject_or_kill_is_stopped_by_its_rule(tmp_path, cls, rule):
    with pytest.raises(InvariantViolation) as err:
        _run(tmp_path, cls)
    assert err.value.rule == rule, str(err.value)
    assert cls in str(err.value)
