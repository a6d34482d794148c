"""The state of one I/O node's arbiter: who waits, who transfers, who goes next.

A pure state machine; the I/O kernel (:class:`~.io_kernel.IOKernel`) holds one per I/O
node, for the simulator and the Ray arbiter actor alike:

    node = IONodeArbiter(get_policy("fifo"))
    node.submit(request)          # an app asks for I/O
    node.release("A")             # an app finished its transfer
    granted = node.dispatch(now)  # grants decided now (possibly none)

``submit`` and ``release`` only record; ``dispatch`` decides.  A runtime that
sees several things happen at one instant (the simulator at a phase boundary)
records them all, then dispatches once, so that every request present at that
instant competes.  Under a list policy at most one app transfers at a time and
a transfer is never preempted; under ``shared`` every request is granted at once.

Who goes next under a list policy is the wait queue's choice (``io_queue.wait_queue``);
the arbiter adds the protocol around it (an app asks once at a time, a release must
match a grant, ``cancel``).  The event engine's loop for list policies holds the same
queues and keeps those books itself.
"""

from __future__ import annotations

from iolab.middleware.policies.io_fast_paths import IOFastPaths, io_fast_paths
from iolab.middleware.policies.io_order import IORequest, ListPolicy, SharedPolicy
from iolab.middleware.policies.io_queue import wait_queue


class IONodeArbiter:
    def __init__(self, policy: ListPolicy | SharedPolicy, node: int = 0, allows: IOFastPaths | None = None):
        self.policy = policy
        self.node = node
        allows = io_fast_paths(policy) if allows is None else allows  # (its runtime's record, if given)
        self._exclusive = allows.exclusive
        # a list policy's waiting requests in its order (io_queue: the same queue the
        # simulator's loop for list policies holds); ``shared`` grants them all, in arrival order
        self._queue = wait_queue(policy, allows) if self._exclusive else None
        self._waiting: dict[str, IORequest] = {}  # every waiting request, by app
        self.active: dict[str, IORequest] = {}

    # -- recording -------------------------------------------------------
    def submit(self, req: IORequest) -> None:
        app = req.app
        if app in self._waiting or app in self.active:
            raise RuntimeError(f"app {app!r} already has an I/O request on node {self.node}")
        self._waiting[app] = req
        if self._queue is not None:
            self._queue.push(req)

    def release(self, app: str) -> IORequest:
        try:
            return self.active.pop(app)
        except KeyError:
            raise RuntimeError(f"app {app!r} releases node {self.node} but holds no grant") from None

    def cancel(self, app: str) -> IORequest | None:
        """Forget an app entirely (it died or its lease expired)."""
        req = self.active.pop(app, None)
        waiting = self._waiting.pop(app, None)
        if waiting is not None and self._queue is not None:
            self._queue.remove(app)
        return req or waiting

    # -- deciding --------------------------------------------------------
    def dispatch(self, now: float) -> list[IORequest]:
        """Grant what the policy allows at time ``now``; returns the new grants."""
        if not self._waiting:
            return []
        if not self._exclusive:
            granted = sorted(self._waiting.values(), key=lambda r: (r.requested_at, r.rank))
            self._waiting.clear()
            for r in granted:
                self.active[r.app] = r
            return granted
        if self.active:
            return []
        req = self._queue.pop(now)
        del self._waiting[req.app]
        self.active[req.app] = req
        return [req]

    # -- inspection ------------------------------------------------------
    @property
    def waiting(self) -> list[IORequest]:
        return list(self._waiting.values())

    def waiting_in_order(self, now: float) -> list[IORequest]:
        """The waiting requests in the order they would be granted at ``now`` (a list policy's order;
        arrival order under ``shared``): what a live view shows."""
        if self._exclusive:
            return self.policy.order(self.waiting, now)
        return sorted(self._waiting.values(), key=lambda r: (r.requested_at, r.rank))

    @property
    def busy(self) -> bool:
        return bool(self.active)

    def __len__(self) -> int:
        return len(self._waiting)
