"""Strict mode's batch checker keeps its own books: bugs planted in the *kernel's* books are caught.

The checker (``middleware/policies/batch/checker.py``) sees only the kernel's events (the platform and
jobs once, then submissions, decisions, starts, placements, fallbacks, ends...) and keeps its own free
node ids, HPS bytes, bytes per disk and running set.  Each test here breaks one line of the kernel's
bookkeeping (not a policy: the policies are correct) and requires the run to stop at that change,
naming the job and the rule.  The node-id leak is a bug the former checker, which summed the kernel's
own running set against the kernel's own free count, could not see.
"""

from __future__ import annotations

import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch import Decision, Snapshot, Start
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.placement import StorageAllocator
from iolab.sim.batch.engine import BatchEngine
from iolab.sim.batch.run import run_batch
from iolab.workloads import load_workload

from .test_strict import JOBS, Scripted, spec

GB = 10**9


def plant(monkeypatch, method: str, bug) -> None:
    """After the kernel's ``method(self, s, ...)`` runs, ``bug(self, s)`` breaks its books."""
    original = getattr(BatchKernel, method)

    def broken(self, s, *args, **kw):
        out = original(self, s, *args, **kw)
        bug(self, s)
        return out

    monkeypatch.setattr(BatchKernel, method, broken)


def strict_run(jobs=JOBS, scheduler="fcfs", policy=None) -> InvariantViolation:
    s = spec(jobs)
    s = s.model_copy(update={"scheduler": s.scheduler.model_copy(update={"kind": scheduler})})
    with pytest.raises(InvariantViolation) as err:
        run_batch(s, scheduler=policy, strict=True)
    return err.value


def test_a_correct_kernel_passes_and_the_checker_saw_every_job_end():
    s = spec(JOBS)
    k = BatchKernel.from_spec(s, load_workload(s), observer=BatchChecker())
    rec = BatchEngine.around(k, memory_per_node=s.platform.memory_per_node).run()
    c = k.observer
    assert [j.state for j in rec.jobs] == ["done"] * 3
    assert {j.id: j.state for j in c.jobs.values()} == {"a": "done", "b": "done", "c": "done"}
    assert (c.free_nodes, c.free_ids, c.hps_free, c.running) == (8, 0xFF, 100 * GB, {})


def test_the_kernel_forgets_to_give_back_a_jobs_node_ids(monkeypatch):
    """Its free count is right, its set of free node ids is not: the next start would land on
    ids it believes busy (or find none).  Caught at a's end (t = 50), naming a."""
    plant(monkeypatch, "_give_nodes", lambda k, s: setattr(k, "free_ids", k.free_ids & ~s.node_ids))
    v = strict_run()
    assert (v.rule, v.subject, v.time) == ("node-books", "a", 50.0)
    assert "the kernel has 4 nodes free (ids none)" in str(v) and "checker's books 4 (ids 0-3)" in str(v)


def test_the_kernel_frees_a_jobs_nodes_twice(monkeypatch):
    plant(monkeypatch, "_give_nodes", lambda k, s: setattr(k, "free_nodes", k.free_nodes + s.queued.nodes))
    v = strict_run()
    assert (v.rule, v.subject, v.time) == ("node-books", "a", 50.0)
    assert "the kernel has 8 nodes free" in str(v)


def test_the_kernel_forgets_to_free_one_node(monkeypatch):
    plant(monkeypatch, "_give_nodes", lambda k, s: setattr(k, "free_nodes", k.free_nodes - 1))
    v = strict_run()
    assert (v.rule, v.subject, v.time) == ("node-books", "a", 50.0)


def test_the_kernel_undercounts_the_hps_bytes_a_start_holds(monkeypatch):
    """b starts on HPS at its submission (t = 5) with 60 GB; the kernel keeps 30 GB of them free."""
    plant(monkeypatch, "_take_nodes", lambda k, s: setattr(k, "hps_free", k.hps_free + s.storage / 2))
    hps_when_asked = Scripted(lambda snap: [Start(q.id, "hps" if q.storage else "lps", q.nodes,
                                                  snap.now + q.walltime, q.storage) for q in snap.queue])
    v = strict_run(policy=hps_when_asked)
    assert (v.rule, v.subject, v.time) == ("hps-books", "b", 5.0)
    assert "70000000000.0 B of HPS free" in str(v) and "checker's books 40000000000.0 B" in str(v)


def test_a_fallback_after_the_placement_gives_the_disk_bytes_back():
    """The real run's storage manager may refuse the parts the kernel placed: the job falls back to
    LPS and its parts must leave the allocator too, or the disk's bytes leak (the checker's books,
    which free the parts at the fallback, disagree with the allocator's)."""
    s = spec(JOBS, servers=True)
    alloc = StorageAllocator(s.platform.hps.layout(), "best-bandwidth")
    p = s.platform
    policy = Scripted(lambda snap: [Start(q.id, "hps" if q.storage else "lps", q.nodes, snap.now + 100, q.storage)
                                    for q in snap.queue])
    k = BatchKernel(load_workload(s), policy, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                    rates=BatchKernel.from_spec(s, load_workload(s)).rates, allocator=alloc, observer=BatchChecker())
    k.submit(k.by_id["b"], 5.0)
    (b,) = k.decide(5.0)
    assert b.state == "stage-in" and sum(alloc.state.used) == 60 * GB
    k.fall_back(b, 6.0, "storage manager: refused")
    assert (b.tier, b.state, sum(alloc.state.used)) == ("lps", "running", 0)
    k.finish(b, 60.0)
    assert k.observer.used == {d.id: 0 for d in alloc.state.disks}


# -- the checker alone, fed events by hand -------------------------------------------------------------
class _Job:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def checker(nodes=4) -> BatchChecker:
    from iolab.middleware.policies.batch import QueuedJob

    c = BatchChecker()
    c.opened(nodes, 10.0, (("hps", 10.0),),
             [(QueuedJob(j, 0.0, 2, 100.0), _Job(input=0.0, output=0.0)) for j in ("x", "y")])
    return c


def test_the_checker_alone_refuses_a_start_on_nodes_another_job_holds():
    c = checker()
    c.submitted("x", 0.0)
    c.submitted("y", 0.0)
    c.started("x", "lps", 2, 0b0011, 0.0, 0.0, (2, 0b1100, 10.0, None))
    with pytest.raises(InvariantViolation) as err:
        c.started("y", "lps", 2, 0b0110, 0.0, 1.0, (0, 0, 10.0, None))
    assert (err.value.rule, err.value.subject, err.value.time) == ("node-double-booked", "y", 1.0)
    assert "node(s) 1, held by x" in str(err.value)


def test_the_checker_alone_refuses_an_end_twice_and_a_snapshot_that_is_not_its_books():
    c = checker()
    c.submitted("x", 0.0)
    c.submitted("y", 0.0)
    snap = Snapshot(now=0.0, total_nodes=4, free_nodes=3, queue=(), running=())
    with pytest.raises(InvariantViolation) as err:
        c.decided(snap, Decision(0.0), "fcfs")
    assert (err.value.rule, err.value.subject) == ("node-books", "fcfs")
    c.started("x", "lps", 2, 0b0011, 0.0, 0.0, (2, 0b1100, 10.0, None))
    c.ended("x", "done", 5.0, (4, 0b1111, 10.0, None))
    with pytest.raises(InvariantViolation) as err:
        c.ended("x", "done", 6.0, (6, 0b1111, 10.0, None))
    assert (err.value.rule, err.value.subject, err.value.time) == ("job-state", "x", 6.0)


def test_split_requeue_and_fallback_leave_the_checkers_books_as_they_began():
    """The placement hand case (tests/sim/batch/test_placement_in_batch.py: a split over two disks, two
    requeues then a fallback to LPS, a third job on one disk): the checker follows it from the
    events alone; at the end its books are empty again and its job states are the kernel's."""
    from ....sim.batch.test_placement_in_batch import D0, D1
    from ....sim.batch.test_placement_in_batch import spec as placement_spec

    s = placement_spec()
    c = BatchChecker()
    k = BatchKernel.from_spec(s, load_workload(s), observer=c)
    rec = BatchEngine.around(k, memory_per_node=s.platform.memory_per_node).run()
    assert {j.id: (j.state, j.tier) for j in c.jobs.values()} == {s.queued.id: (s.state, s.tier) for s in rec.jobs} \
        == {"x": ("done", "hps"), "y": ("done", "lps"), "z": ("done", "hps")}
    assert (c.free_nodes, c.free_ids, c.hps_free, c.used, c.running) == (4, 0xF, 200 * GB, {D0: 0, D1: 0}, {})
    assert c.capacity == {D0: 100 * GB, D1: 100 * GB}
