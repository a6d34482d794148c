"""Strict mode of the batch level: deliberately broken decisions and state changes are
stopped with the rule, the job and the time (iolab.invariants.InvariantViolation).

Each case feeds the batch kernel something a correct policy, allocator or runtime never
produces; the run must stop at that decision, not later and not with another rule.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch import BatchPolicy, Decision, Start
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.io_node_book import IONodeBook
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.placement import StorageAllocator
from iolab.sim.batch.engine import BatchEngine
from iolab.sim.batch.run import run_batch
from iolab.workloads import load_workload
from iolab.specs.batch import BatchExperiment

GB = 10**9


def spec(jobs, servers: bool = False) -> BatchExperiment:
    hps = ({"rate": "15 GB/s", "servers": [{"nodes": [{"network_bw": "15 GB/s", "count": 2, "disks": [
        {"capacity": "100GB", "read_bw": "15 GB/s", "write_bw": "15 GB/s"}]}]}]} if servers
           else {"rate": "15 GB/s", "capacity": "100 GB"})
    return BatchExperiment.model_validate({
        "platform": {"nodes": 8, "lps": {"rate": "1 GB/s"}, "hps": hps, "stage_rate": "5 GB/s"},
        "scheduler": "fcfs", "workload": jobs})


JOBS = [{"id": "a", "submit": 0, "nodes": 4, "walltime": 100, "runtime": 50},
        {"id": "b", "submit": 5, "nodes": 4, "walltime": 100, "runtime": 50, "storage": "60GB"},
        {"id": "c", "submit": 7, "nodes": 2, "walltime": 100, "runtime": 50, "storage": "60GB"}]


class Scripted(BatchPolicy):
    """Starts what ``script(snapshot)`` returns: a stand-in for a buggy policy."""

    name = "scripted"

    def __init__(self, script):
        super().__init__()
        self.script = script

    def _decide(self, snap):
        return Decision(snap.now, tuple(self.script(snap)))


def fcfs_all(tier="lps"):
    def script(snap):
        return [Start(q.id, tier, q.nodes, snap.now + q.walltime, q.storage if tier == "hps" else 0.0)
                for q in snap.queue]
    return script


def violation(policy, jobs=JOBS, servers=False, allocator=None) -> InvariantViolation:
    s = spec(jobs, servers)
    with pytest.raises(InvariantViolation) as err:
        if allocator is None:
            run_batch(s, scheduler=policy, strict=True)
        else:
            p = s.platform
            k = BatchKernel(load_workload(s), policy, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                            rates=BatchKernel.from_spec(s, load_workload(s)).rates, allocator=allocator,
                            observer=BatchChecker())
            BatchEngine.around(k, memory_per_node=p.memory_per_node).run()
    return err.value


def test_a_job_started_twice_in_one_decision():
    v = violation(Scripted(lambda snap: [Start(q.id, "lps", q.nodes, snap.now + 100) for q in snap.queue] * 2))
    assert (v.rule, v.subject, v.time) == ("start-not-queued", "a", 0.0)
    assert "twice in one decision" in str(v)


def test_a_running_job_started_again():
    started = []

    def script(snap):
        out = [Start(q.id, "lps", q.nodes, snap.now + 100) for q in snap.queue]
        out += [Start(j, "lps", 4, snap.now + 100) for j in started]  # "a" again at b's submission
        started.extend(s.job for s in out)
        return out

    v = violation(Scripted(script))
    assert (v.rule, v.subject, v.time) == ("start-not-queued", "a", 5.0)
    assert "job is running" in str(v)


def test_a_job_started_before_its_submission():
    v = violation(Scripted(lambda snap: [Start("c", "lps", 2, snap.now + 100)] if snap.now == 0 else []))
    assert (v.rule, v.subject, v.time) == ("start-not-queued", "c", 0.0)
    assert "job is future" in str(v)


def test_a_tier_that_does_not_exist():
    v = violation(Scripted(fcfs_all("ssd")))
    assert (v.rule, v.subject, v.time) == ("tier-illegal", "a", 0.0)


def test_a_start_on_other_nodes_than_the_job_asks():
    v = violation(Scripted(lambda snap: [Start(q.id, "lps", 1, snap.now + 100) for q in snap.queue]))
    assert (v.rule, v.subject, v.time) == ("start-mismatch", "a", 0.0)


def test_nodes_double_booked():
    jobs = [dict(j, submit=0) for j in JOBS]
    v = violation(Scripted(fcfs_all()), jobs)
    assert (v.rule, v.subject, v.time) == ("node-double-booked", "c", 0.0)


def test_hps_overcommitted_in_total():
    jobs = [dict(j, submit=0, nodes=2) for j in JOBS[1:]]  # 2 x 60 GB on a 100 GB HPS
    v = violation(Scripted(fcfs_all("hps")), jobs)
    assert (v.rule, v.subject, v.time) == ("hps-overcommit", "c", 0.0)


class LossyAllocator(StorageAllocator):
    """Answers with the first part only: the job's bytes are not all placed."""

    def request(self, job, size, now):
        out = super().request(job, size, now)
        return replace(out, parts=out.parts[:1])


class OverfillingAllocator(StorageAllocator):
    """Books a byte more on the first disk than the parts it commits."""

    def request(self, job, size, now):
        out = super().request(job, size, now)
        self.state.used[0] += 1
        return out


def test_bytes_not_conserved_by_the_placement():
    s = spec(JOBS, servers=True)
    alloc = LossyAllocator(s.platform.hps.layout(), "best-bandwidth", split_threshold=40 * GB)
    v = violation(Scripted(lambda snap: [Start(q.id, "hps" if q.storage else "lps", q.nodes, snap.now + 100,
                                               q.storage) for q in snap.queue]), servers=True, allocator=alloc)
    assert (v.rule, v.subject, v.time) == ("bytes-conserved", "b", 5.0)


def test_a_disk_whose_books_do_not_add_up():
    s = spec(JOBS, servers=True)
    alloc = OverfillingAllocator(s.platform.hps.layout(), "best-bandwidth")
    v = violation(Scripted(lambda snap: [Start(q.id, "hps" if q.storage else "lps", q.nodes, snap.now + 100,
                                               q.storage) for q in snap.queue]), servers=True, allocator=alloc)
    assert (v.rule, v.subject, v.time) == ("disk-overcommit", "b", 5.0)


def kernel(strict=True) -> BatchKernel:
    s = spec(JOBS)
    return BatchKernel.from_spec(s, load_workload(s), observer=BatchChecker() if strict else None)


def test_a_runtime_that_queues_a_job_early_or_moves_it_illegally():
    k = kernel()
    with pytest.raises(InvariantViolation) as err:
        k.submit(k.by_id["b"], 1.0)
    assert (err.value.rule, err.value.subject, err.value.time) == ("submit-early", "b", 1.0)
    k.submit(k.by_id["a"], 0.0)
    (a,) = k.decide(0.0)
    with pytest.raises(InvariantViolation) as err:
        k.enter(a, "stage-in", 3.0)  # a running job does not go back to staging in
    assert (err.value.rule, err.value.subject, err.value.time) == ("job-state", "a", 3.0)
    k.finish(a, 50.0)
    with pytest.raises(InvariantViolation) as err:
        k.finish(a, 60.0)  # ends twice
    assert (err.value.rule, err.value.subject, err.value.time) == ("job-state", "a", 60.0)


def test_a_running_job_changed_behind_the_kernels_back():
    """The kernel keeps what the policies see of its running jobs; a change it was not told of
    (here an expected end moved by hand) is caught at the next decision, in strict mode."""
    k = kernel()
    k.submit(k.by_id["a"], 0.0)
    (a,) = k.decide(0.0)
    assert k.snapshot(1.0).running[0].expected_end == 100.0
    k.submit(k.by_id["b"], 5.0)
    a.expected_end += 500.0  # not through resume or extend_estimate
    with pytest.raises(InvariantViolation) as err:
        k.decide(5.0)
    assert (err.value.rule, err.value.time) == ("running-view", 5.0)
    # told through the kernel (a suspension and its resume), the kept tuple follows
    k = kernel()
    k.submit(k.by_id["a"], 0.0)
    (a,) = k.decide(0.0)
    assert k.snapshot(1.0).running[0].expected_end == 100.0
    k.suspend(a, 1.0)
    k.resume(a, 3.0)
    k.submit(k.by_id["b"], 5.0)
    k.decide(5.0)
    assert k.snapshot(5.0).running[0].expected_end == a.expected_end == 102.0


def test_without_strict_the_decision_checks_are_off_but_the_books_still_refuse_double_booking():
    s = spec([dict(j, submit=0) for j in JOBS])
    with pytest.raises(InvariantViolation) as err:
        run_batch(s, scheduler=Scripted(fcfs_all()), strict=False)
    assert (err.value.rule, err.value.subject) == ("node-double-booked", "c")


def test_iolab_strict_is_read_where_a_run_starts_and_what_it_builds_is_told(monkeypatch):
    made = []

    class Counted(BatchChecker):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr("iolab.sim.batch.run.BatchChecker", Counted)
    s = spec(JOBS)
    for env, strict, checks in (("1", None, True), ("0", None, False), ("0", True, True), ("1", False, False)):
        monkeypatch.setenv("IOLAB_STRICT", env)
        made.clear()
        run_batch(s, strict=strict)
        assert len(made) == int(checks), (env, strict)
        if checks:
            assert sorted(made[0].jobs) == ["a", "b", "c"]  # it watched the run
    # the pure layer never reads the environment: built alone, it checks only when told
    monkeypatch.setenv("IOLAB_STRICT", "1")
    assert IONodeBook(1, "fifo", 1.0).checker is None
    assert IONodeBook(1, "fifo", 1.0, strict=True).checker is not None


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative", "sas"])
def test_normal_runs_pass_strict(scheduler):
    s = spec({"source": "feitelson", "jobs": 60, "arrival_factor": 50}).model_copy(
        update={"scheduler": spec(JOBS).scheduler.model_copy(update={"kind": scheduler})})
    rec = run_batch(s, strict=True)
    assert all(j.state == "done" for j in rec.jobs)


def test_staging_that_moves_other_bytes_than_the_job_holds():
    s = spec([{"id": "h", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 50, "input": "10GB",
               "output": "5GB", "storage": "20GB"}])
    s = s.model_copy(update={"scheduler": s.scheduler.model_copy(update={"kind": "sas"})})
    k = BatchKernel.from_spec(s, load_workload(s), observer=BatchChecker())
    (h,) = k.jobs
    k.submit(h, 0.0)
    k.decide(0.0)
    assert (h.tier, h.state) == ("hps", "stage-in")
    with pytest.raises(InvariantViolation) as err:
        k.staged(h, "stage-in", 9e9, 2.0)  # a copy that lost a GB
    assert (err.value.rule, err.value.subject, err.value.time) == ("bytes-conserved", "h", 2.0)
    k.staged(h, "stage-in", 10e9 + 5, 2.0, tol=10)  # within the runtime's rounding
    with pytest.raises(InvariantViolation) as err:
        k.staged(h, "stage-out", 5e9, 3.0)  # stages out while still staging in
    assert (err.value.rule, err.value.subject, err.value.time) == ("bytes-conserved", "h", 3.0)
    # the simulator reports every staging it does, and a normal run passes
    rec = run_batch(s, strict=True)
    assert rec.jobs[0].tier == "hps" and rec.jobs[0].state == "done"
