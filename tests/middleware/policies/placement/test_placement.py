"""StorAlloc placement (monniot2023 §4.2): properties and the published code's bugs.

Each ``test_bug_*`` would fail on the corresponding defect of the published
StorAlloc code (hephtaicie/storalloc):

- split into ``floor(size/block)`` blocks of ``block`` bytes plus a remainder,
  instead of equal parts (paper: "sub-allocations of equal size");
- split parts scheduled as independent requests, so some land and others
  are refused: a partial allocation left behind;
- worst-fit puts the disk with the most free space twice in its candidate
  list, biasing the tie-break towards it;
- worst-fit ranks disks by free *percentage*, so a big disk with more free
  bytes loses to a small one that cannot hold the request.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.metrics.batch import storage_metrics
from iolab.middleware.policies.placement import (
    ALLOCATED, FAILED, REFUSED, RETRY, DiskInfo, StorageAllocator, split_sizes,
)

GB = 10**9


def disk(id, cap, node=None, bw=1e9, net=1e10):
    return DiskInfo(id=id, node=node or id, server="s0", capacity=cap, read_bw=bw, write_bw=bw, network_bw=net)


# ---------------------------------------------------------------- split


def test_bug_split_parts_are_equal():

    parts = split_sizes(500 * GB, 200 * GB)
    assert len(parts) == 3 and sum(parts) == 500 * GB
    assert max(parts) - min(parts) <= 1 and max(parts) <= 200 * GB
    assert split_sizes(500, 200) == [167, 167, 166]
    assert split_sizes(400, 200) == [200, 200]
    assert split_sizes(200, 200) == [200]


@given(st.integers(1, 10**13), st.integers(1, 10**12))
def test_split_sizes_property(size, threshold):
    if size / threshold > 10_000:
        threshold = size // 10_000 + 1
    parts = split_sizes(size, threshold)
    assert sum(parts) == size
    assert len(parts) == max(1, math.ceil(size / threshold))
    assert max(parts) - min(parts) <= 1
    assert max(parts) <= threshold or parts == [size]


def test_split_refuses_absurd_part_counts():
    with pytest.raises(ValueError, match="parts"):
        split_sizes(10**12, 1)


@pytest.mark.parametrize("strategy,status", [("round-robin", REFUSED), ("best-bandwidth", REFUSED),
                                             ("random", FAILED), ("worst-fit", FAILED)])
def test_bug_split_all_or_nothing(strategy, status):
    # Two disks of 250 B; 600 B split at 200 B: three parts of 200, only two fit.
    a = StorageAllocator([disk("a", 250), disk("b", 250)], strategy, split_threshold=200, rng=1)
    out = a.request("j", 600, now=0)
    assert out.status == status and out.parts == ()
    assert a.state.used == [0, 0] and a.state.count == [0, 0] and not a.state.live
    assert [r.status for r in a.log()] == ["split", status]


# ---------------------------------------------------------------- worst-fit


def test_bug_worst_fit_tie_break_is_uniform():
    a = StorageAllocator([disk(f"d{i}", 100) for i in range(3)], "worst-fit", rng=42)
    hits = {f"d{i}": 0 for i in range(3)}
    n = 3000
    for k in range(n):
        out = a.request(f"j{k}", 10, now=k)
        hits[out.parts[0][0]] += 1
        a.release(f"j{k}", now=k + 0.5)
    sigma = math.sqrt(n * (1 / 3) * (2 / 3))
    assert all(abs(h - n / 3) < 4 * sigma for h in hits.values()), hits  # the bug gives d0 ~ n/2


def test_bug_worst_fit_uses_absolute_free_bytes():
    small, big = disk("small", 1000), disk("big", 4000)
    a = StorageAllocator([small, big], "worst-fit", rng=0)
    a.state.commit("pre-small", [(0, 400)])  # 60 % free, 600 B
    a.state.commit("pre-big", [(1, 2000)])  # 50 % free, 2000 B
    out = a.request("j", 800, now=0)
    assert out.status == ALLOCATED and out.parts == (("big", 800),)


def test_worst_fit_spreads_parts_of_one_request():
    a = StorageAllocator([disk("a", 500), disk("b", 500)], "worst-fit", split_threshold=200, rng=0)
    out = a.request("j", 600, now=0)
    assert out.status == ALLOCATED
    assert sorted(a.state.used) == [200, 400]  # 200 on each, the third part on either


# ---------------------------------------------------------------- the other strategies


def test_round_robin_cycles_and_skips_full_disks():
    a = StorageAllocator([disk("a", 100), disk("b", 100), disk("c", 100)], "round-robin")
    got = [a.request(f"j{i}", 60, now=0).parts[0][0] for i in range(3)]
    assert got == ["a", "b", "c"]
    out = a.request("j3", 60, now=0)  # every disk has 40 B left
    assert out.status == REFUSED
    a.release("j1", now=1)
    assert a.request("j4", 60, now=1).parts == (("b", 60),)


def test_best_bandwidth_prefers_the_least_shared_disk_and_node():
    # Node n0 has two disks, node n1 one; n0.d0 already serves one allocation.
    disks = [disk("n0.d0", 1000, "n0", bw=2e9, net=2e9), disk("n0.d1", 1000, "n0", bw=2e9, net=2e9),
             disk("n1.d0", 1000, "n1", bw=1.5e9, net=10e9)]
    a = StorageAllocator(disks, "best-bandwidth")
    a.state.commit("x", [(0, 100)])
    # n0.d1: min(2/1, 2/2) = 1 GB/s; n1.d0: min(1.5/1, 10/1) = 1.5 GB/s.
    assert a.request("j", 100, now=0).parts == (("n1.d0", 100),)
    # Now n1.d0: min(1.5/2, 10/2) = 0.75; n0.d1: 1.0 -> n0.d1.
    assert a.request("k", 100, now=0).parts == (("n0.d1", 100),)


def test_best_bandwidth_refuses_what_cannot_fit():
    a = StorageAllocator([disk("a", 100)], "best-bandwidth")
    assert a.request("j", 101, now=0).status == REFUSED


def test_random_may_fail_but_never_refuses():
    a = StorageAllocator([disk("a", 100), disk("b", 10)], "random", rng=3)
    statuses = set()
    for k in range(200):
        out = a.request(f"j{k}", 50, now=k)
        statuses.add(out.status)
        if out.status == ALLOCATED:
            a.release(f"j{k}", now=k + 0.5)
    assert statuses == {ALLOCATED, FAILED}


# ---------------------------------------------------------------- requeue


def test_requeue_returns_retry_times_then_refuses():
    a = StorageAllocator([disk("a", 100)], "round-robin", requeue_retries=5, requeue_period=300)
    assert a.request("big", 100, now=0).status == ALLOCATED
    times = []
    t = 10.0
    while True:
        out = a.request("j", 50, now=t)
        if out.status != RETRY:
            break
        times.append(out.retry_at)
        t = out.retry_at
    assert times == [310, 610, 910, 1210, 1510]
    assert out.status == REFUSED and out.attempt == 5
    m = storage_metrics(a.log(), {"a": 100}, end_time=2000)
    assert (m.requeued, m.requeue_events, m.refused, m.requeue_delay) == (1, 5, 1, 1500)


def test_requeue_succeeds_when_space_frees():
    a = StorageAllocator([disk("a", 100)], "best-bandwidth", requeue_retries=5, requeue_period=300)
    a.request("big", 100, now=0)
    out = a.request("j", 50, now=0)
    assert out.status == RETRY and out.retry_at == 300
    a.release("big", now=200)
    out = a.request("j", 50, now=300)
    assert out.status == ALLOCATED and out.attempt == 1


def test_requeue_needs_a_refusing_strategy():
    with pytest.raises(ValueError, match="requeue"):
        StorageAllocator([disk("a", 100)], "random", requeue_retries=2)


# ---------------------------------------------------------------- properties over many requests


@settings(max_examples=40, deadline=None)
@given(strategy=st.sampled_from(["random", "round-robin", "worst-fit", "best-bandwidth"]),
       nodes=st.integers(1, 4), per_node=st.integers(1, 3), cap=st.integers(50, 2000),
       threshold=st.one_of(st.none(), st.integers(20, 600)), seed=st.integers(0, 2**32 - 1))
def test_capacity_never_exceeded_and_splits_all_or_nothing(strategy, nodes, per_node, cap, threshold, seed):
    rng = np.random.default_rng(seed)
    caps = rng.integers(cap // 2 + 1, cap + 1, size=nodes * per_node)
    disks = [DiskInfo(f"n{i // per_node}.d{i % per_node}", f"n{i // per_node}", "s0", int(c), 1e9,
                      float(rng.uniform(0.5e9, 2e9)), float(rng.uniform(1e9, 4e9))) for i, c in enumerate(caps)]
    a = StorageAllocator(disks, strategy, split_threshold=threshold, rng=rng)
    total_cap = int(sum(caps))
    live: dict[str, int] = {}
    for k in range(300):  # 40 examples x 300 = 12000 requests
        if live and rng.random() < 0.4:
            job = list(live)[int(rng.integers(len(live)))]
            a.release(job, now=k)
            del live[job]
        size = int(rng.integers(1, 2 * cap))
        before = list(a.state.used)
        out = a.request(f"j{k}", size, now=k)
        if out.status == ALLOCATED:
            assert sum(b for _, b in out.parts) == size
            expected = split_sizes(size, threshold)
            assert sorted(b for _, b in out.parts) == sorted(expected)
            live[f"j{k}"] = size
        else:  # refused or failed: nothing of it anywhere
            assert out.parts == () and a.state.used == before and f"j{k}" not in a.state.live
        for i, d in enumerate(a.disks):
            assert 0 <= a.state.used[i] <= d.capacity
        assert a.state.total_used == sum(live.values()) <= total_cap
        per_disk = [0] * len(disks)
        for parts in a.state.live.values():
            for i, b in parts:
                per_disk[i] += b
        assert per_disk == a.state.used
    if strategy in ("round-robin", "best-bandwidth"):
        assert not any(r.status == "failed" for r in a.log())
    else:
        assert not any(r.status == "refused" for r in a.log())


def test_layout_from_spec():
    from iolab.specs.batch import HPSTier

    hps = HPSTier.model_validate({"rate": "15GB/s", "servers": [{"nodes": [
        {"network_bw": "10GB/s", "count": 2, "disks": [{"capacity": "1TB", "read_bw": "2GB/s",
                                                         "write_bw": "1GB/s", "count": 2}]}]}]})
    assert hps.total_capacity == 4e12
    a = StorageAllocator(hps.layout(), "round-robin", split_threshold=200 * GB)
    assert [d.id for d in a.disks] == ["s0.n0-0.d0-0", "s0.n0-0.d0-1", "s0.n0-1.d0-0", "s0.n0-1.d0-1"]
    out = a.request("j", 500 * GB, now=0)
    assert out.status == ALLOCATED and len(out.parts) == 3 and len({d for d, _ in out.parts}) == 3
