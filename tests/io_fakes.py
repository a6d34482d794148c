"""Deliberately broken parts of the I/O level, for the strict-mode tests to catch."""

from __future__ import annotations

from iolab.middleware.policies import IONodeArbiter
from iolab.middleware.policies.io_queue import KeyedQueue


class GrantsTwice(IONodeArbiter):
    """A broken arbiter: hands a busy I/O node to the next waiting request too."""

    def dispatch(self, now):
        granted = super().dispatch(now)
        if self.active and self._waiting:
            req = self._queue.pop(now)
            del self._waiting[req.app]
            self.active[req.app] = req
            granted.append(req)
        return granted


class QueuesTwice(KeyedQueue):
    """A broken wait queue: every request goes in twice, so an app is chosen again later."""

    def push(self, req):
        super().push(req)
        super().push(req)


def queues_twice(policy):
    """In place of ``wait_queue`` for an order given as a ``wait_key`` (fifo)."""
    return QueuesTwice(policy.wait_key)
