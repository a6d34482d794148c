"""A small batch trace whose metrics are computed by hand in the tests (4 nodes, HPS of 100 B).

    job  nodes  submit  start  end   tier  status
    A    2      0       0      100   lps   ok
    B    3      10      100    105   lps   ok       (runs 5 s: the bounded slowdown uses tau = 10 s)
    C    1      20      20     60    hps   ok       (50 B on the HPS from 20 to 60)
    D    1      30      -      -     lps   pending  (never started)

The fixtures ``small_trace`` and ``small_trace_file`` are registered by tests/conftest.py; iolab.trace is
imported when a test asks for them, not when the conftest loads.
"""

from __future__ import annotations

import math

import pytest


def small_batch_trace():
    from iolab.trace import TraceBuilder

    tb = TraceBuilder()
    nan = math.nan
    rows = [("A", 2, 0.0, 0.0, 100.0, "lps", "ok"), ("B", 3, 10.0, 100.0, 105.0, "lps", "ok"),
            ("C", 1, 20.0, 20.0, 60.0, "hps", "ok"), ("D", 1, 30.0, nan, nan, "lps", "pending")]
    for i, (jid, n, sub, st, en, tier, status) in enumerate(rows):
        tb.add_job(id=jid, rank=i, nodes=n, release=sub, start=st, end=en, io_node=-1, pack=-1, status=status,
                   tier=tier, min_time=en - st if st == st else 10.0, compute_time=0.0, io_volume=0.0)
    tb.add_phase(job="C", index=0, kind="stage-in", start=20.0, end=25.0, volume=50.0, io_node=-1, tier="stage")
    tb.add_phase(job="C", index=1, kind="compute", start=25.0, end=60.0, volume=0.0, io_node=-1, tier="hps")
    tb.add_allocation(job="C", disk="hps", bytes=50.0, alloc=20.0, free=60.0, status="allocated")
    return tb.build(runtime="sim-batch", scheduler="fcfs", policy="fcfs", seed=0, total_nodes=4,
                    hps_capacity=100.0, lps_rate=1.0, hps_rate=10.0, stage_rate=5.0, unit_bytes=1)


@pytest.fixture
def small_trace():
    return small_batch_trace()


@pytest.fixture
def small_trace_file(tmp_path):
    from iolab.trace import write_trace

    return write_trace(small_batch_trace(), tmp_path / "small.h5")
