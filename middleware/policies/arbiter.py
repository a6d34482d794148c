"""The state of one I/O node's arbiter: who waits, who transfers, who goes next.

A pure state machine shared by the simulator and the Ray arbiter actor:

    node = IONodeArbiter(get_policy("fifo"))
    node.submit(request)          # an app asks for I/O
    node.release("A")             # an app finished its transfer
    granted = node.dispatch(now)  # grants decided now (possibly none)

``submit`` and ``release`` only record; ``dispatch`` decides.  A runtime that
sees several things happen at one instant (the simulator at a phase boundary)
records them all, then dispatches once, so that every request present at that
instant competes.  Under a list policy at most one app transfers at a time and
a transfer is never preempted; under ``shared`` every request is granted at once.
"""

from __future__ import annotations

import heapq
import itertools

from .io_order import IORequest, ListPolicy, SharedPolicy


class IONodeArbiter:
    def __init__(self, policy: ListPolicy | SharedPolicy, node: int = 0):
        self.policy = policy
        self.node = node
        self._seq = itertools.count()
        self._heap: list[tuple[tuple, int, IORequest]] = []  # static-key policies
        self._waiting: dict[str, IORequest] = {}  # every waiting request, by app
        self.active: dict[str, IORequest] = {}
        # the policy's nature, read once (dispatch and submit run per request)
        self._exclusive = policy.exclusive
        self._static = policy.exclusive and not policy.time_dependent
        key = getattr(policy, "key", None)
        self._wait_key = getattr(policy, "wait_key", None) or (lambda r: key(r, r.requested_at))

    # -- recording -------------------------------------------------------
    def submit(self, req: IORequest) -> None:
        app = req.app
        if app in self._waiting or app in self.active:
            raise RuntimeError(f"app {app!r} already has an I/O request on node {self.node}")
        self._waiting[app] = req
        if self._static:
            heapq.heappush(self._heap, (self._wait_key(req), next(self._seq), req))

    def release(self, app: str) -> IORequest:
        try:
            return self.active.pop(app)
        except KeyError:
            raise RuntimeError(f"app {app!r} releases node {self.node} but holds no grant") from None

    def cancel(self, app: str) -> IORequest | None:
        """Forget an app entirely (it died or its lease expired)."""
        req = self.active.pop(app, None)
        waiting = self._waiting.pop(app, None)
        if waiting is not None and self._heap:
            self._heap = [e for e in self._heap if e[2].app != app]
            heapq.heapify(self._heap)
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
        if self._static:
            req = heapq.heappop(self._heap)[2]
        else:
            req = self.policy.pick(list(self._waiting.values()), now)
        del self._waiting[req.app]
        self.active[req.app] = req
        return [req]

    # -- inspection ------------------------------------------------------
    @property
    def waiting(self) -> list[IORequest]:
        return list(self._waiting.values())

    @property
    def busy(self) -> bool:
        return bool(self.active)

    def __len__(self) -> int:
        return len(self._waiting)
