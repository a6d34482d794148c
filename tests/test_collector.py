"""iolab.collector.paused: the cyclic collector is off inside the block and as it was after it."""

from __future__ import annotations

import gc

import pytest

from iolab import collector


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_turns_the_collector_off_and_back_on(collector_state):
    gc.enable()
    with collector.paused():
        assert not gc.isenabled()
        before = gc.get_count()[0]
        junk = [[i] for i in range(5000)]  # container objects: a pass would have run and reset the count
        assert gc.get_count()[0] >= before + 4000
        del junk
    assert gc.isenabled()


def test_paused_leaves_a_paused_collector_paused_and_restores_after_an_error(collector_state):
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError):
        with collector.paused():
            raise RuntimeError("boom")
    assert gc.isenabled()
