"""The batch simulator honours the spec's ``placement`` (monniot2023 §4.2) through the batch kernel.

Hand case, worked out before running (4 nodes; HPS = two disks of 100 GB on two storage
nodes; best-bandwidth, split above 60 GB, requeue 2 retries every 100 s; random-tier with
p = 1 sends every job that asks for space to HPS):

- ``x`` (0 s, 100 GB) is split into 2 x 50 GB: the first part on d0 (ties: more free
  bytes, then the lower index), the second on d1 (d0 now shares its bandwidth);
- ``y`` (10 s, 55 GB, not split): the policy sees 100 GB free and starts it on HPS, but no
  disk has 55 GB free: requeued at 10 (retry at 110), again at 110 (retry at 210), refused
  at 210: it falls back to LPS and runs its 100 s there, 210 -> 310, holding its node
  from 10;
- ``z`` (20 s, 30 GB): on d0 (both disks share their bandwidth with one part, both have
  50 GB free: lower index).
"""

from __future__ import annotations

import math

import pytest

from iolab.sim.batch.run import simulate_batch
from iolab.specs.batch import BatchExperiment

GB = 10**9
D0, D1 = "s0.n0-0.d0", "s0.n0-1.d0"


def spec(placement: dict | None = None, **emulator) -> BatchExperiment:
    return BatchExperiment.model_validate({
        "name": "placement-small",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "servers": [{"nodes": [
                         {"network_bw": "15 GB/s", "count": 2,
                          "disks": [{"capacity": "100GB", "read_bw": "15 GB/s", "write_bw": "15 GB/s"}]}]}]},
                     "stage_rate": "5 GB/s"},
        "scheduler": {"kind": "random-tier", "p": 1.0},
        "placement": placement or {"strategy": "best-bandwidth", "split": "60GB",
                                   "requeue": {"enabled": True, "retries": 2, "period": 100}},
        "workload": [
            {"id": "x", "submit": 0, "nodes": 1, "walltime": 1000, "runtime": 900, "storage": "100GB"},
            {"id": "y", "submit": 10, "nodes": 1, "walltime": 200, "runtime": 100, "storage": "55GB"},
            {"id": "z", "submit": 20, "nodes": 1, "walltime": 300, "runtime": 200, "storage": "30GB"},
        ],
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4, **emulator},
    })


def test_the_hand_case_places_splits_requeues_and_falls_back():
    t = simulate_batch(spec())
    jobs = {r["id"]: r for r in t.jobs.rows()}
    assert {j: (r["tier"], r["start"], r["end"]) for j, r in jobs.items()} == {
        "x": ("hps", 0.0, 900.0), "y": ("lps", 10.0, 310.0), "z": ("hps", 20.0, 220.0)}
    rows = [(r["job"], r["disk"], r["bytes"], r["alloc"], r["free"], r["status"]) for r in t.allocations.rows()]
    nan = [r[:4] + ("nan" if math.isnan(r[4]) else r[4], r[5]) for r in rows]
    assert sorted(nan, key=str) == sorted([
        ("x", "", 100 * GB, 0.0, "nan", "split"),
        ("x", D0, 50 * GB, 0.0, 900.0, "allocated"), ("x", D1, 50 * GB, 0.0, 900.0, "allocated"),
        ("y", "", 55 * GB, 10.0, 110.0, "requeued"), ("y", "", 55 * GB, 110.0, 210.0, "requeued"),
        ("y", "", 55 * GB, 210.0, "nan", "refused"),
        ("z", D0, 30 * GB, 20.0, 220.0, "allocated")], key=str)


def test_without_requeue_a_refused_placement_falls_back_at_its_start():
    t = simulate_batch(spec({"strategy": "best-bandwidth", "split": "60GB"}))
    jobs = {r["id"]: r for r in t.jobs.rows()}
    assert (jobs["y"]["tier"], jobs["y"]["start"], jobs["y"]["end"]) == ("lps", 10.0, 110.0)


def test_without_disks_the_hps_is_one_pool():
    s = spec()
    pool = s.model_copy(update={"platform": s.platform.model_copy(update={"hps": s.platform.hps.model_copy(
        update={"servers": [], "capacity": 200 * GB})})})
    t = simulate_batch(pool)
    assert {r["job"]: (r["disk"], r["bytes"]) for r in t.allocations.rows()} == {
        "x": ("hps", 100 * GB), "y": ("hps", 55 * GB), "z": ("hps", 30 * GB)}


def allocated(trace) -> list[tuple]:
    return sorted((r["job"], r["disk"], round(r["bytes"] / GB, 3), r["status"]) for r in trace.allocations.rows())


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_simulator_and_real_run_allocate_the_same_disks_and_bytes(tmp_path):
    """One spec with placement in both runtimes: the same allocation table (disks, bytes per job
    to the bytes scale's rounding, statuses) and the same tiers."""
    from iolab.emulator.batch.run import run_batch_emulation

    sim = simulate_batch(spec())
    real = run_batch_emulation(spec(), out=tmp_path / "run.h5", work_dir=tmp_path / "w")
    assert allocated(real) == allocated(sim)
    assert {r["id"]: (r["tier"], r["status"]) for r in real.jobs.rows()} == {
        r["id"]: (r["tier"], r["status"]) for r in sim.jobs.rows()}
    # the storage manager really held the parts the kernel placed (real bytes, its own per-disk books)
    held = {(r["job"], r["disk"]): r["bytes"] for r in real.allocations.rows() if r["status"] == "allocated"}
    assert held[("x", D0)] == pytest.approx(50 * GB, abs=1 / 1e-4)
    assert real.attrs["hps_free_end"] == real.attrs["hps_capacity_bytes"]
