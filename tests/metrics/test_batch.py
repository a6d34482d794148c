"""Batch metrics (lackner2019 Eq. 3) and StorAlloc Table 3 metrics on hand-made data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from iolab.metrics.batch import (
    batch_metrics, hps_jobs, hps_utilisation, makespan, mean_turnaround, node_utilisation, pooled_utilisation,
    storage_metrics, total_completion, total_flow, used_hps_byte_seconds,
)
from iolab.metrics.batch_trace import batch_report, total_io_time
from iolab.middleware.policies.placement import AllocationRecord, DiskInfo, StorageAllocator
from iolab.sim.batch.run import simulate_batch
from iolab.specs import load_spec

REPO = Path(__file__).resolve().parents[2]

# Two jobs on a 4-node machine: A 2 nodes [0, 10) on HPS with 50 B, B 4 nodes [10, 20) on LPS.
SUBMIT, START, END, NODES = [0, 5], [0, 10], [10, 20], [2, 4]
TIER, HPSB = ["hps", "lps"], [50, 0]


def test_batch_metrics_by_hand():
    assert makespan(SUBMIT, END) == 20
    assert mean_turnaround(SUBMIT, END) == pytest.approx((10 + 15) / 2)
    assert node_utilisation(SUBMIT, START, END, NODES, 4) == pytest.approx((20 + 40) / 80)
    assert hps_utilisation(SUBMIT, START, END, TIER, HPSB, 100) == pytest.approx(500 / 2000)
    m = batch_metrics(SUBMIT, START, END, NODES, 4, TIER, HPSB, 100)
    assert (m.jobs, m.hps_jobs, m.makespan) == (2, 1, 20)


def test_eq3_pools_experiments():
    assert pooled_utilisation([60, 30], [80, 120]) == pytest.approx(90 / 200)
    rng = np.random.default_rng(1)
    used, avail = rng.uniform(0, 1e6, 40), rng.uniform(1e6, 2e6, 40)
    assert pooled_utilisation(used, avail) == pytest.approx(math.fsum(used) / math.fsum(avail), rel=1e-13)


def test_hps_byte_seconds_and_jobs_on_hps_job_by_job():
    rng = np.random.default_rng(2)
    start = rng.uniform(0, 100, 50)
    end = start + rng.uniform(0, 100, 50)
    tier = rng.choice(["hps", "lps"], 50)
    hb = rng.uniform(0, 1e9, 50)
    hps = [i for i in range(50) if tier[i] == "hps"]
    assert used_hps_byte_seconds(start, end, tier, hb) == pytest.approx(
        math.fsum((end[i] - start[i]) * hb[i] for i in hps), rel=1e-13)
    assert hps_jobs(tier) == len(hps)


def test_totals_of_a_simulated_run_agree_with_its_report():
    """dheenadayalan2017's totals against the report's means times the jobs, and the total I/O time against
    the jobs' I/O seconds one by one."""
    trace = simulate_batch(load_spec(REPO / "examples" / "combined-small.yaml"), strict=False, phases="jobs")
    r = batch_report(trace)
    j = trace.jobs
    assert r.finished == len(j)  # every job of the example ends: the totals are over all of them
    assert total_completion(j["start"], j["end"]) == pytest.approx(r.run["mean"] * r.finished, rel=1e-12)
    assert total_flow(j["release"], j["end"]) == pytest.approx(r.turnaround["mean"] * r.finished, rel=1e-12)
    assert total_io_time(trace) == pytest.approx(math.fsum(x for x in j["io_time"].tolist() if x == x), rel=1e-12)
    assert total_io_time(trace) > 0


def test_storage_metrics_by_hand():
    log = [
        AllocationRecord("a", "d0", 60, 0, 10, "allocated"),
        AllocationRecord("b", "", 80, 0, None, "split"),
        AllocationRecord("b", "d0", 40, 0, 20, "allocated"),
        AllocationRecord("b", "d1", 40, 0, 20, "allocated"),
        AllocationRecord("c", "", 50, 5, 305, "requeued"),
        AllocationRecord("c", "", 50, 305, None, "refused"),
        AllocationRecord("d", "d1", 70, 10, None, "failed"),
    ]
    m = storage_metrics(log, {"d0": 100, "d1": 100}, end_time=20)
    assert m.sum_cap == 60 + 80 + 50 + 70
    assert m.allocated_bytes == 140
    assert m.pct_sum_cap_allocated == pytest.approx(100 * 140 / 260)
    assert m.max_disk_use == pytest.approx(1.0)  # d0 holds 60 + 40 during [0, 10)
    assert (m.refused, m.failed, m.split, m.requeued, m.requeue_delay) == (1, 1, 1, 1, 300)
    assert m.max_concurrent == 2
    assert m.per_disk["d0"]["mean_concurrent"] == pytest.approx((2 * 10 + 1 * 10) / 20)
    assert m.per_disk["d1"]["mean_concurrent"] == pytest.approx(1.0)
    assert m.mean_concurrent == pytest.approx(1.25)
    # d0 holds 60 B on [0, 10) and 40 B on [0, 20), d1 40 B on [0, 20), of 100 B each, over [0, 20]
    assert m.mean_disk_use == pytest.approx(((60 * 10 + 40 * 20) / 20 / 100 + 40 * 20 / 20 / 100) / 2)
    # The same log as columns gives the same numbers.
    cols = {c: [getattr(r, c) for r in log] for c in ("job", "disk", "bytes", "alloc", "free", "status")}
    assert storage_metrics(cols, {"d0": 100, "d1": 100}, end_time=20) == m


def test_storage_metrics_from_an_allocator_log():
    disks = [DiskInfo(f"d{i}", "n0", "s0", 100, 1e9, 1e9, 1e10) for i in range(2)]
    a = StorageAllocator(disks, "round-robin", split_threshold=60)
    a.request("x", 100, now=0)
    a.request("y", 150, now=1)  # refused: only 100 B free
    a.release("x", now=10)
    m = storage_metrics(a.log(), {d.id: d.capacity for d in disks})
    assert (m.split, m.refused, m.allocated_bytes, m.sum_cap) == (2, 1, 100, 250)
    assert m.max_disk_use == pytest.approx(0.5)
