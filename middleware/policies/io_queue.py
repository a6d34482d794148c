"""The waiting requests of one I/O node, in a list policy's order: who goes next.

One structure, used wherever a list policy decides, so that the choice is made by the same
code in every runtime:

- :class:`~.arbiter.IONodeArbiter` (one per I/O node in the I/O kernel,
  :class:`~.io_kernel.IOKernel`, which the Ray arbiter actor's state, the simulator's general
  loop and its fixed-step engine drive) keeps its waiting requests in one and adds the protocol
  around it (an app asks once at a time, a release must match a grant, ``shared``, cancel);
- the simulator's loop for list policies (``iolab.sim.io.event``) holds one per I/O node and
  keeps the protocol's books itself, by construction (strict mode's checker watches it).

::

    q = wait_queue(get_policy("fifo"))
    q.push(request)
    first = q.pop(now)   # the waiting request that comes first in the policy's order at ``now``

An order that does not change while a request waits (the policy declares it as ``wait_key``:
fifo, lowest-id, longest/shortest-io, longest/shortest-remaining) keeps the requests in a heap
on that key, computed once per request (:class:`KeyedQueue`).  A time-dependent order
(stretch, bandwidth) keeps them in arrival order and asks the policy's ``pick`` over all of
them at each pop (:class:`PickQueue`).  Equal keys go lowest rank first, as every built-in
key already says (its last fields are requested_at, rank); an app has one request at a time,
so two requests are never compared themselves.

Nothing here reads a clock: ``now`` is passed in.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Callable, Sequence

from iolab.middleware.policies.io_fast_paths import IOFastPaths, io_fast_paths
from iolab.middleware.policies.io_order import IORequest, ListPolicy


class KeyedQueue:
    """An order fixed while a request waits: a heap of ``(key(request), rank, request)``."""

    __slots__ = ("_heap", "_key")

    def __init__(self, key: Callable[[IORequest], tuple]):
        self._heap: list[tuple] = []
        self._key = key

    def push(self, req: IORequest) -> None:
        heappush(self._heap, (self._key(req), req[1], req))  # req[1]: rank (the per-request path)

    def pop(self, now: float) -> IORequest:
        """The first request in the order (the queue must not be empty); ``now`` is not needed."""
        return heappop(self._heap)[2]

    def remove(self, app: str) -> None:
        self._heap = [e for e in self._heap if e[2].app != app]
        heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)


class PickQueue:
    """A time-dependent order: the requests in arrival order, the policy's ``pick`` at each pop."""

    __slots__ = ("_items", "_pick")

    def __init__(self, pick: Callable[[Sequence[IORequest], float], IORequest]):
        self._items: list[IORequest] = []
        self._pick = pick

    def push(self, req: IORequest) -> None:
        self._items.append(req)

    def pop(self, now: float) -> IORequest:
        """The first request in the order at ``now`` (the queue must not be empty)."""
        req = self._pick(self._items, now)
        self._items.remove(req)
        return req

    def remove(self, app: str) -> None:
        self._items = [r for r in self._items if r.app != app]

    def __len__(self) -> int:
        return len(self._items)


def wait_queue(policy: ListPolicy, allows: IOFastPaths | None = None) -> KeyedQueue | PickQueue:
    """An empty queue in ``policy``'s order (a list policy: ``shared`` has no order); ``allows``: the
    policy's record (:func:`~.io_fast_paths.io_fast_paths`, read here if not given)."""
    if not isinstance(policy, ListPolicy):
        raise TypeError(f"policy {getattr(policy, 'name', policy)!r} is not a list policy: it has no order to queue in")
    if not (io_fast_paths(policy) if allows is None else allows).fixed_order:
        return PickQueue(policy.pick)
    key = policy.wait_key
    if key is None:  # a fixed order given as key(request, now): its value at the request
        order = policy.key
        key = lambda r: order(r, r.requested_at)  # noqa: E731
    return KeyedQueue(key)
