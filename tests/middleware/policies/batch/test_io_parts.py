"""A batch phase's parts on the I/O nodes and the facts its requests give the list policies."""

from __future__ import annotations

import pytest

from iolab.middleware.policies.batch.io_parts import JobIOFacts, split_parts, through_io_nodes
from iolab.workloads.steps import Step

GB = 1e9


def test_parts_split_the_volume_by_the_jobs_nodes_on_each_io_node():
    # ids 2, 3 (I/O node 0 of span 4), 4, 5, 6 (I/O node 1), 9 (I/O node 2): 2/6, 3/6, 1/6 of 12 GB
    mask = sum(1 << i for i in (2, 3, 4, 5, 6, 9))
    assert split_parts(12 * GB, mask, 4) == [(0, 4 * GB), (1, 6 * GB), (2, 2 * GB)]
    assert split_parts(5.0, 0b1, 4) == [(0, 5.0)]
    with pytest.raises(ValueError):
        split_parts(1.0, 0, 4)


def test_staging_does_not_go_through_io_nodes():
    assert through_io_nodes("lps") and through_io_nodes("hps")
    assert not through_io_nodes("stage") and not through_io_nodes("")


def test_request_facts_come_from_the_steps():
    # stage-in 10 GB at 2 GB/s (5 s), read 10 GB on HPS at min(10, io 4) GB/s (2.5 s), compute 20 s,
    # write 8 GB at 4 GB/s (2 s), stage-out 8 GB (4 s): 33.5 s in all
    steps = (Step("stage-in", 10 * GB, "stage"), Step("read", 10 * GB, "hps"), Step("compute", 20.0),
             Step("write", 8 * GB, "hps"), Step("stage-out", 8 * GB, "stage"))
    f = JobIOFacts("j", 3, steps, {"lps": 1 * GB, "hps": 10 * GB, "stage": 2 * GB}, io_rate=4 * GB)
    assert f.total == pytest.approx(33.5)
    r = f.request(3, 3, 2 * GB, now=50.0, start=10.0, io_received=7.5)  # a 2 GB part of the write
    assert (r.app, r.rank, r.requested_at, r.volume, r.phase) == ("j", 3, 50.0, 2 * GB, 3)
    assert r.io_time == pytest.approx(0.5)  # 2 GB at 4 GB/s
    assert r.done == pytest.approx(27.5) and r.remaining == pytest.approx(6.0) and r.total == pytest.approx(33.5)
    assert (r.start, r.io_received) == (10.0, 7.5)
