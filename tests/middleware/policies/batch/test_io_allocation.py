"""I/O-aware node allocation: the lighter I/O node, the sensibility bound, and `lowest` as it was."""

from __future__ import annotations

import pytest

from iolab.middleware.policies.batch.io_allocation import IOAwareAllocator, io_load, io_node_masks
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.batch.nodes import ids
from iolab.specs import parse_spec

GB = 1e9


def spec(jobs, allocation=None, io_nodes=True):
    platform = {"nodes": 8, "memory_per_node": "1GB", "lps": {"rate": "1GB/s"},
                "hps": {"rate": "10GB/s", "capacity": "100GB"}, "stage_rate": "2GB/s"}
    if io_nodes:
        platform.update(io_nodes=2, io_node={"rate": "2GB/s", "policy": "fifo"})
    doc = {"kind": "batch", "platform": platform, "scheduler": "fcfs",
           "workload": {"source": "inline", "jobs": jobs}}
    if allocation is not None:
        doc["allocation"] = allocation
    return parse_spec(doc)


# a running job on 2 nodes with 100 GB of output over 100 s: 1 GB/s of I/O load; then a light job of 2 nodes
JOBS = [{"id": "heavy", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 100, "output": "100GB"},
        {"id": "light", "submit": 1, "nodes": 2, "walltime": 100, "runtime": 100, "output": "1GB"}]


def started_ids(sp) -> dict[str, list[int]]:
    jobs = sp.workload.jobs
    k = BatchKernel.from_spec(sp, jobs)
    for s in k.jobs:
        k.submit(s, s.queued.submit)
        while k.changed:
            k.decide(s.queued.submit)
    return {s.id: ids(s.node_ids) for s in k.jobs}


def test_masks_are_contiguous_ranges():
    assert [ids(m) for m in io_node_masks(10, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_io_aware_chooses_the_lighter_io_node():
    got = started_ids(spec(JOBS, {"kind": "io-aware"}))
    assert got["heavy"] == [0, 1]  # an empty machine: I/O node 0 first (tie: lower id)
    assert got["light"] == [4, 5]  # I/O node 0 carries heavy's 1 GB/s, I/O node 1 nothing


def test_lowest_is_unchanged_with_or_without_io_nodes():
    lowest = started_ids(spec(JOBS, "lowest"))
    assert lowest == {"heavy": [0, 1], "light": [2, 3]}
    assert started_ids(spec(JOBS, io_nodes=False)) == lowest
    k = BatchKernel.from_spec(spec(JOBS, "lowest"), spec(JOBS).workload.jobs)
    assert k.node_allocator is None  # the lowest path never reaches the io-aware allocator


def test_load_is_io_bytes_over_walltime_without_staging():
    q = spec([{"id": "a", "submit": 0, "nodes": 1, "walltime": 50, "runtime": 10, "input": "10GB",
               "output": "20GB", "data": "20GB", "storage": "60GB"}]).workload.jobs[0]
    k = BatchKernel.from_spec(spec(JOBS, {"kind": "io-aware"}), [q])
    assert io_load(k.jobs[0].queued) == pytest.approx(50 * GB / 50)


def test_sensibility_spreads_a_job_to_keep_io_nodes_within_the_bound():
    # 2 I/O nodes of 2 GB/s, 4 ids each; I/O node 1 already carries 0.5 GB/s; a job of 4 nodes and 2.4 GB/s
    a = IOAwareAllocator(8, 4, 2 * GB, sensibility=1.0)
    a.take("x", 1 << 7, 0.5 * GB)  # on id 7 (I/O node 1)
    free = 0b0111_1111
    # I/O node 0 (load 0) first: 4 nodes would put 2.4 GB/s > 2 there; 3 nodes: 1.8 GB/s; the 4th on I/O
    # node 1: 0.5 + 0.6 = 1.1 GB/s
    assert ids(a.choose(free, 4, 2.4 * GB)) == [0, 1, 2, 4]
    # no bound: fill the lighter I/O node
    b = IOAwareAllocator(8, 4, 2 * GB, sensibility=float("inf"))
    b.take("x", 1 << 7, 0.5 * GB)
    assert ids(b.choose(free, 4, 2.4 * GB)) == [0, 1, 2, 3]
    # a bound nothing can keep: the preference never refuses, the second pass fills in load order
    c = IOAwareAllocator(8, 4, 2 * GB, sensibility=0.1)
    c.take("x", 1 << 7, 0.5 * GB)
    assert ids(c.choose(free, 4, 2.4 * GB)) == [0, 1, 2, 3]


def test_loads_follow_starts_and_ends():
    a = IOAwareAllocator(8, 4, 2 * GB)
    a.take("x", 0b0000_0011, 1.0 * GB)  # 2 nodes on I/O node 0
    a.take("y", 0b0011_1000, 3.0 * GB)  # 1 node on I/O node 0, 2 on I/O node 1
    assert a.loads() == pytest.approx([1.0 * GB + 1.0 * GB, 2.0 * GB])
    a.release("x")
    assert a.loads() == pytest.approx([1.0 * GB, 2.0 * GB])
    # a job of 1 node: the lighter I/O node is now 0
    assert ids(a.choose(0b1100_0100, 1, 0.1 * GB)) == [2]
