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


def queues_twice(policy, allows=None):
    """In place of ``wait_queue`` for an order given as a ``wait_key`` (fifo)."""
    return QueuesTwice(policy.wait_key)


# -- bugs planted in the I/O kernel's books (iolab.middleware.policies.io_kernel) -----------------
def kernel_forgets_the_arbiters_release(monkeypatch):
    """The kernel releases a transfer in every book but its I/O node's arbiter, which still
    shows the transfer: the node is never handed to the next app."""
    from iolab.middleware.policies.io_kernel import IOKernel

    def forgetful(real):
        def release(self, rank, *args):
            arb = self.arbiters[self.apps[rank].io_node]
            holding = dict(arb.active)
            real(self, rank, *args)
            arb.active.update(holding)
        return release

    # the real run's release and the simulator's (io_done releases and records the phase)
    monkeypatch.setattr(IOKernel, "release", forgetful(IOKernel.release))
    monkeypatch.setattr(IOKernel, "io_done", forgetful(IOKernel.io_done))


def kernel_forgets_to_touch_a_released_node(monkeypatch):
    """The kernel (the simulator's io_done) releases a transfer but does not mark its I/O node
    for dispatch."""
    from iolab.middleware.policies.io_kernel import IOKernel

    real = IOKernel.io_done

    def io_done(self, rank, t):
        before = set(self.touched)
        real(self, rank, t)
        self.touched.intersection_update(before)

    monkeypatch.setattr(IOKernel, "io_done", io_done)


def kernel_forgets_a_phase_index(monkeypatch):
    """The kernel begins an app's second compute phase but keeps its phase index on the phase
    before."""
    from iolab.middleware.policies.io_kernel import COMPUTE_PHASE, IOKernel

    real = IOKernel.advance

    def advance(self, rank, t):
        before = self.idx[rank]
        what, x = real(self, rank, t)
        if what == COMPUTE_PHASE and x > 0:
            self.idx[rank] = before
        return what, x

    monkeypatch.setattr(IOKernel, "advance", advance)


def checker_forgets_an_end(monkeypatch):
    """The checker sees the first app end normally but keeps it as not ended: only the run's close (every app
    ended) catches it."""
    from iolab.middleware.policies.io_checker import IOChecker

    real = IOChecker.end

    def end(self, rank, t):
        real(self, rank, t)
        if rank == 0:
            self.ended[rank] = False

    monkeypatch.setattr(IOChecker, "end", end)
