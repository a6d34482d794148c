"""What an I/O policy allows the runtimes (``io_fast_paths.IOFastPaths``): one record per policy object."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iolab.middleware.policies.io_fast_paths import IOFastPaths, io_fast_paths
from iolab.middleware.policies.io_guard import GuardedSharing, io_policy
from iolab.middleware.policies.io_order import POLICIES, IOOrder, Sharing
from iolab.middleware.policies.io_queue import KeyedQueue, PickQueue, wait_queue


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_built_in_orders_and_shared(name):
    p = POLICIES[name]
    a = io_fast_paths(p)
    if name == "shared":
        assert a == IOFastPaths(exclusive=False, equal_shares=True, fixed_order=False, asks_shares=False)
        return
    assert a.exclusive and not a.equal_shares and not a.asks_shares
    assert a.fixed_order == (name not in ("bandwidth", "stretch"))
    assert isinstance(wait_queue(p, a), KeyedQueue if a.fixed_order else PickQueue)


def test_an_object_that_sets_nothing_is_asked_its_shares():
    class Mine(Sharing):
        def shares(self, streams, now):
            return [1.0 / len(streams)] * len(streams)

    assert io_fast_paths(object()) == IOFastPaths() and IOFastPaths().asks_shares
    assert io_fast_paths(GuardedSharing(Mine(), "mine.py:Mine")).asks_shares
    assert io_fast_paths(io_policy("job-fair")).asks_shares


def test_a_users_order_is_a_list_policy_fixed_unless_time_dependent():
    class Key(IOOrder):
        def key(self, request, now):
            return request.io_time

    class Moving(Key):
        time_dependent = True

    from iolab.middleware.policies.io_guard import _guarded

    listed = IOFastPaths(exclusive=True, fixed_order=True, asks_shares=False)
    assert io_fast_paths(_guarded(Key(), "k.py:Key")) == listed
    assert io_fast_paths(_guarded(Moving(), "m.py:Moving")) == replace(listed, fixed_order=False)
