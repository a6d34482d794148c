"""The wait queue (``io_queue``) against the plainest statement of a list policy.

The reference: keep the waiting requests in a list and, at each grant, take the first of
``sorted(waiting, key=policy.key(., now))`` (ties: arrival order, as Python's sort is stable).
The queue must hand out the same request at every pop, for every list policy, over random
interleavings of arrivals, pops at moving times and cancellations.
"""

from __future__ import annotations

import random

import pytest

from iolab.middleware.policies import IONodeArbiter, IORequest, get_policy
from iolab.middleware.policies.io_order import POLICIES, ListPolicy
from iolab.middleware.policies.io_queue import KeyedQueue, PickQueue, wait_queue

LIST = sorted(name for name, p in POLICIES.items() if p.exclusive)


def _random_request(rng: random.Random, rank: int, now: float) -> IORequest:
    io_time = rng.choice([0.5, 1.0, 2.0, rng.uniform(0.1, 5.0)])
    total = rng.choice([50.0, 100.0])
    done = rng.choice([0.0, 5.0, rng.uniform(0.0, 40.0)])
    start = rng.choice([0.0, rng.uniform(0.0, now)])
    return IORequest(f"a{rank}", rank, now, io_time, io_time, total - done, total, start, done,
                     rng.choice([0.0, rng.uniform(0.0, 10.0)]), 2 * rank + 1)


@pytest.mark.parametrize("policy", LIST)
@pytest.mark.parametrize("seed", range(5))
def test_every_pop_is_the_first_of_a_fresh_sort_of_the_waiting(policy, seed):
    rng = random.Random(seed)
    pol = get_policy(policy)
    q = wait_queue(pol)
    assert isinstance(q, PickQueue if pol.time_dependent else KeyedQueue)
    waiting: list[IORequest] = []
    now = 0.0
    free = list(range(40))
    rng.shuffle(free)
    pops = 0
    for _ in range(400):
        now += rng.choice([0.0, 0.0, 0.5, rng.uniform(0.0, 3.0)])  # many requests at one instant
        roll = rng.random()
        if roll < 0.5 and free:
            req = _random_request(rng, free.pop(), now)
            q.push(req)
            waiting.append(req)
        elif roll < 0.9 and waiting:
            expected = sorted(waiting, key=lambda r: pol.key(r, now))[0]
            got = q.pop(now)
            assert got == expected
            waiting.remove(got)
            free.append(got.rank)
            pops += 1
        elif waiting:
            gone = rng.choice(waiting)
            q.remove(gone.app)
            waiting.remove(gone)
            free.append(gone.rank)
        assert len(q) == len(waiting)
    assert pops > 50


def test_equal_keys_go_lowest_rank_first_whatever_the_arrival_order():
    by_io = ListPolicy("by-io", wait_key=lambda r: (r.io_time,))  # a key that does not end with rank
    q = wait_queue(by_io)
    for rank in (3, 1, 2):
        q.push(IORequest(f"a{rank}", rank, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0))
    assert [q.pop(0.0).rank for _ in range(3)] == [1, 2, 3]


def test_a_fixed_order_given_as_key_is_taken_at_the_request_time():
    # only ``key(request, now)``, not time-dependent: evaluated once, at requested_at
    seen = []
    pol = ListPolicy("by-rank", key=lambda r, now: (seen.append(now) or r.rank,))
    q = wait_queue(pol)
    q.push(IORequest("b", 1, 7.0, 1.0, 1.0, 1.0, 1.0, 0.0))
    q.push(IORequest("a", 0, 9.0, 1.0, 1.0, 1.0, 1.0, 0.0))
    assert q.pop(100.0).app == "a"
    assert seen == [7.0, 9.0]


def test_shared_has_no_queue():
    with pytest.raises(TypeError, match="'shared' is not a list policy"):
        wait_queue(get_policy("shared"))


@pytest.mark.parametrize("policy", LIST)
def test_the_arbiter_grants_in_its_queue_order(policy):
    """IONodeArbiter (the Ray actor's state) decides through the same queue."""
    rng = random.Random(11)
    reqs = [_random_request(rng, rank, 2.0) for rank in range(12)]
    arb, q = IONodeArbiter(get_policy(policy)), wait_queue(get_policy(policy))
    for r in reqs:
        arb.submit(r)
        q.push(r)
    for k in range(12):
        (granted,) = arb.dispatch(3.0 + k)
        assert granted == q.pop(3.0 + k)
        arb.release(granted.app)
