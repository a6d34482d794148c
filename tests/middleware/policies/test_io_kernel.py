"""The I/O kernel by hand: what advance begins, the books of a request, grant and release,
packs opened by an end or a drop, suspension; the rows it records."""

from __future__ import annotations

import math

import pytest

from iolab.middleware.policies import get_policy
from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.policies.io_kernel import COMPUTE_PHASE, DELAY, ENDED, IO_WAIT, IOKernel


class Rows:
    """A recorder: the rows the kernel hands it, as given."""

    def __init__(self):
        self.phases, self.grants = [], []

    def phase(self, *row):
        self.phases.append(row)

    def grant(self, *row):
        self.grants.append(row)


def one_app(gap=0.0, strict=True):
    app = IOApp(id="A", rank=0, nodes=1, release=0.0, kinds=["compute", "write", "write", "read"],
                amounts=[1.0, 0.0, 2.0, 0.0], bandwidth=0.5)
    rows = Rows()
    k = IOKernel([app], get_policy("fifo"), 1, [[[0]]], False, strict=strict, gap=gap, record=rows)
    return k, rows


def test_advance_walks_the_phases_and_records_the_empty_ones_at_once():
    k, rows = one_app()
    assert k.initial() == [0] and k.due(0) == 0.0
    k.begin(0, 0.0)
    assert k.advance(0, 0.0) == (COMPUTE_PHASE, 0)
    k.compute_done(0, 1.0)
    assert k.advance(0, 1.0) == (IO_WAIT, 2)  # the empty write 1 ended at 1 on the way
    assert k.waits(0) and k.touched == {0}
    [req] = k.dispatch(0, 1.0)
    assert (req.phase, req.volume, req.io_time, req.requested_at) == (2, 2.0, 4.0, 1.0)
    k.touched.clear()  # the driver's: it dispatched the node
    assert k.holds_grant(0) and not k.touched
    k.io_done(0, 5.0)
    assert not k.holds_grant(0) and k.io_recv[0] == 4.0 and k.touched == {0}
    assert k.advance(0, 5.0) == (ENDED, [])  # the empty read ends with the app
    assert (k.start[0], k.end[0], k.idx[0]) == (0.0, 5.0, 4)
    assert rows.phases == [(0, 0, "compute", 0.0, 1.0, 0.0), (0, 1, "write", 1.0, 1.0, 0.0),
                           (0, 2, "write", 1.0, 5.0, 2.0), (0, 3, "read", 5.0, 5.0, 0.0)]
    assert rows.grants == [(0, 2, 1.0, 1.0, 5.0)]
    k.close(5.0)  # every app ended: strict mode is content


def test_a_gap_after_an_empty_phase_is_a_delay_and_the_next_advance_goes_on():
    k, rows = one_app(gap=0.5)
    k.begin(0, 0.0)
    assert k.delay(0, started=True) == 0.0 and k.advance(0, 0.0) == (COMPUTE_PHASE, 0)
    k.compute_done(0, 1.0)
    assert k.delay(0) == 0.5
    assert k.advance(0, 1.5) == (DELAY, 0.5)  # the empty write 1 ended at 1.5; the gap comes first
    assert k.advance(0, 2.0) == (IO_WAIT, 2)


def test_a_request_twice_and_a_release_without_a_grant_are_refused():
    k, _ = one_app(strict=False)  # the kernel's own protocol, strict mode or not
    k.begin(0, 0.0)
    k.request(0, 2, 1.0)
    with pytest.raises(RuntimeError, match="already has an I/O request"):
        k.request(0, 2, 1.0)
    with pytest.raises(RuntimeError, match="holds no grant"):
        k.release(0, 2, 1.0)
    assert [r.app for r in k.dispatch(0, 1.0)] == ["A"]
    with pytest.raises(RuntimeError, match="releases phase 1"):
        k.release(0, 1, 2.0)
    k.release(0, 2, 3.0)
    assert k.io_recv[0] == 2.0 and k.asking[0] is None


def test_a_request_names_a_phase_of_its_kind_and_an_empty_one_asks_nothing():
    k, _ = one_app(strict=False)  # the kernel's own protocol (the app reports no phase here)
    k.begin(0, 0.0)
    with pytest.raises(ValueError, match="'A': phase 0 is not a write phase of its spec"):
        k.request(0, 0, 1.0, kind="write")  # phase 0 computes
    with pytest.raises(ValueError, match="phase 4 is not a read phase"):
        k.request(0, 4, 1.0, kind="read")  # the app has 4 phases
    assert k.request(0, 1, 1.0, kind="write") is None  # empty: no request, no I/O node touched
    assert k.asking[0] is None and not k.touched
    assert k.request(0, 2, 1.0, 10, 5, kind="write").phase == 2 and k.touched == {0}


def test_an_end_or_a_drop_opens_the_next_pack_of_its_io_node():
    apps = [IOApp(id=a, rank=i, nodes=1, release=r, kinds=["compute"], amounts=[1.0], bandwidth=1.0)
            for i, (a, r) in enumerate([("A", 0.0), ("B", 0.5), ("C", 9.0)])]
    k = IOKernel(apps, get_policy("fifo"), 1, [[[0], [1], [2]]], True, strict=True)
    assert k.initial() == [0] and k.due(1) == math.inf
    k.begin(0, 0.0)
    assert k.drop(0, 2.0) == [1] and k.due(1) == 2.0  # a failed app frees its pack too
    k.begin(1, 2.0)
    assert k.advance(1, 2.0) == (COMPUTE_PHASE, 0)
    k.compute_done(1, 3.0)
    assert k.advance(1, 3.0) == (ENDED, [2]) and k.due(2) == 9.0  # C's own release comes later


def test_suspension_holds_a_waiting_request_and_resume_submits_it_again():
    apps = [IOApp(id=a, rank=i, nodes=1, release=0.0, kinds=["write"], amounts=[1.0], bandwidth=1.0)
            for i, a in enumerate("AB")]
    k = IOKernel(apps, get_policy("fifo"), 1, [[[0, 1]]], False, strict=True)
    for r in (0, 1):
        k.begin(r, 0.0)
    k.suspend(0)
    k.request(0, 0, 0.0)
    k.request(1, 0, 0.5)
    assert list(k.held) == [0] and [r.app for r in k.arbiters[0].waiting] == ["B"]
    assert [r.app for r in k.dispatch(0, 0.5)] == ["B"]
    k.release(1, 0, 1.5)
    assert k.dispatch(0, 1.5) == []  # A's request is held: nothing to grant, nothing wrong
    k.resume(0)
    assert not k.held and k.touched == {0}
    assert [r.app for r in k.dispatch(0, 2.0)] == ["A"]
