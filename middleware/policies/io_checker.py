"""Strict mode for the I/O level: every decision and state change of a run, checked.

The I/O kernel (:class:`~.io_kernel.IOKernel`, driven by the simulator's engines on
simulated time and by :class:`iolab.middleware.arbiter_state.ArbiterState` on spec time converted
from the wall clock) calls the hooks of one :class:`IOChecker` when strict mode is on
(``iolab.invariants.strict_default``): it sees the kernel's decisions and state changes as
events (start, request, dispatch and its grants, release, phase, end, drop) and keeps its
own books (who waits on which I/O node, which requests each I/O node granted, which apps
ended, what was moved) rather than reading the kernel's structures, so that a bug in the
kernel's books shows as a broken rule.  It and raises
:class:`~iolab.invariants.InvariantViolation` at the first broken rule, naming the app
or I/O node, the spec time and the rule:

- ``start-twice``: an app starts a second time;
- ``start-before-release``: an app starts before its release (with packs: before every
  app of its pack is released);
- ``pack-turn``: an app starts while an app of an earlier pack of its I/O node has
  not ended;
- ``phase-order``: a phase or a request out of order (not the app's next phase, a
  phase of another kind than the spec's, I/O asked before the app started or after
  it ended), or an app that ends before all its phases are done;
- ``grant-not-waiting``: a grant to an app with no waiting request on that I/O node
  (or one set aside while the app is suspended);
- ``exclusive-io``: under a list policy, a grant while the I/O node serves another
  app (``shared`` grants everyone: not checked);
- ``release-not-granted``: a transfer ends that holds no grant;
- ``idle-while-waiting``: an I/O node's dispatch grants nothing although, by the checker's
  own books, a request waits on it and no transfer holds it (under ``shared``: although a
  request waits), e.g. a kernel that forgot a release;
- ``unfinished``: the run is over (the simulator's last event) while an app has not ended;
- ``bytes-conserved``: what a request (a real app: its bytes), a grant, a recorded phase or a whole app moved
  is not what the app's phases state.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from iolab.invariants import InvariantViolation

from iolab.middleware.policies.io_apps import COMPUTE, IOApp
from iolab.middleware.policies.io_order import IORequest

REL = 1e-9  # relative tolerance on times and volumes (sums in another order)


class IOChecker:
    """The books of one run of the I/O level (see the module doc).

    ``ordered``: phases are reported in order as they end (the simulator); the arbiter
    gets phase reports fire-and-forget, so only their content and count are checked.
    ``slack``: absolute time tolerance (the stepped engine's grid tolerance).
    """

    def __init__(self, apps: Sequence[IOApp], packs: Sequence[Sequence[Sequence[int]]], *, packed: bool,
                 exclusive: bool, ordered: bool = True, slack: float = 0.0):
        self.apps = list(apps)
        self.exclusive = bool(exclusive)
        self.packed = bool(packed)
        self.ordered = ordered
        self.slack = float(slack)
        n = len(self.apps)
        self.seq = [[tuple(p) for p in node if len(p)] for node in packs]
        self.where: dict[int, tuple[int, int]] = {}
        for node, seq in enumerate(self.seq):
            for k, pack in enumerate(seq):
                for r in pack:
                    self.where[r] = (node, k)
        self.started = [False] * n
        self.ended = [False] * n
        self.waiting: dict[int, IORequest] = {}
        self.queued: list[dict[int, IORequest]] = [{} for _ in self.seq]  # waiting requests per I/O node
        self.active: list[dict[int, IORequest]] = [{} for _ in self.seq]
        self.suspended: set[int] = set()
        self.last = [-1] * n  # last phase recorded (ordered)
        self.seen: list[set[int]] = [set() for _ in range(n)]
        self.last_io = [-1] * n  # last I/O phase released
        self.granted: list[dict[int, float]] = [{} for _ in range(n)]  # phase -> volume moved
        self.moved = [0.0] * n

    # -- helpers -----------------------------------------------------------------------------
    def _app(self, rank: int) -> str:
        return f"app {self.apps[rank].id}"

    def _late(self, t: float, bound: float) -> bool:
        """t is before ``bound`` beyond the tolerance."""
        return t < bound - REL * max(1.0, abs(bound)) - self.slack

    @staticmethod
    def _differ(a: float, b: float) -> bool:
        return abs(a - b) > REL * max(1.0, abs(a), abs(b))

    # -- starts ------------------------------------------------------------------------------
    def start(self, rank: int, t: float) -> None:
        app = self.apps[rank]
        if self.started[rank]:
            raise InvariantViolation("start-twice", t, self._app(rank), "it had already started")
        node, k = self.where[rank]
        pack = self.seq[node][k]
        bound = max(self.apps[r].release for r in pack) if self.packed else app.release
        if self._late(t, bound):
            what = "every app of its pack is released" if self.packed and bound > app.release else "its release"
            raise InvariantViolation("start-before-release", t, self._app(rank),
                                     f"starts before {what} at t={bound:.6g}")
        if self.packed:
            for j in range(k):
                for r in self.seq[node][j]:
                    if not self.ended[r]:
                        raise InvariantViolation("pack-turn", t, self._app(rank),
                                                 f"pack {k} of I/O node {node} starts while {self._app(r)} "
                                                 f"of pack {j} has not ended")
        self.started[rank] = True

    # -- requests, grants, releases ------------------------------------------------------------
    def request(self, req: IORequest, t: float) -> None:
        rank, app = req.rank, self.apps[req.rank]
        if req.app != app.id:
            raise InvariantViolation("phase-order", t, self._app(rank), f"request names app {req.app!r}")
        if not self.started[rank] or self.ended[rank]:
            state = "ended" if self.ended[rank] else "not started"
            raise InvariantViolation("phase-order", t, self._app(rank), f"asks for I/O while {state}")
        i = req.phase
        if not 0 <= i < app.phases or app.kinds[i] == COMPUTE:
            raise InvariantViolation("phase-order", t, self._app(rank), f"asks for I/O for phase {i}, "
                                     "which is not an I/O phase of its spec")
        if i <= self.last_io[rank] or (self.ordered and i != self.last[rank] + 1):
            raise InvariantViolation("phase-order", t, self._app(rank),
                                     f"asks for phase {i} after phase {max(self.last[rank], self.last_io[rank])}")
        if req.volume != app.amounts[i]:
            raise InvariantViolation("bytes-conserved", t, self._app(rank),
                                     f"phase {i} states {app.amounts[i]:g} units, the request asks {req.volume:g}")
        self.waiting[rank] = req
        self.queued[app.io_node][rank] = req

    def bytes_asked(self, rank: int, phase: int, nbytes: int, unit_bytes: int, t: float) -> None:
        """A real app asks to move ``nbytes`` in ``phase``: its phase states amount x unit_bytes."""
        stated = int(round(self.apps[rank].amounts[phase] * unit_bytes))
        if nbytes != stated:
            raise InvariantViolation("bytes-conserved", t, self._app(rank),
                                     f"asks to move {nbytes} B in phase {phase}, its spec states {stated} B")

    def grant(self, node: int, granted: Iterable[IORequest], t: float) -> None:
        active = self.active[node]
        for req in granted:
            rank = req.rank
            if self.waiting.get(rank) != req or self.apps[rank].io_node != node or rank in self.suspended:
                why = ("it is suspended" if rank in self.suspended else
                       f"it has no waiting request for phase {req.phase} on this I/O node")
                raise InvariantViolation("grant-not-waiting", t, f"I/O node {node}",
                                         f"grants {self._app(rank)} phase {req.phase}, but {why}")
            if self.exclusive and active:
                holders = ", ".join(self.apps[r].id for r in active)
                raise InvariantViolation("exclusive-io", t, f"I/O node {node}",
                                         f"grants {self._app(rank)} while {holders} transfers")
            del self.waiting[rank]
            del self.queued[node][rank]
            active[rank] = req

    def dispatched(self, node: int, granted: list[IORequest], t: float) -> None:
        """I/O node ``node`` dispatched at ``t`` and granted ``granted`` (possibly nothing):
        the grants are checked (:meth:`grant`), then that the node left no request waiting
        that its policy had to grant (a list policy grants when no transfer holds the node,
        ``shared`` grants every request)."""
        if granted:
            self.grant(node, granted, t)
        queued = self.queued[node]
        if queued and (not self.exclusive or not self.active[node]):
            left = [r for r in queued if r not in self.suspended]
            if left:
                why = "no transfer holds it" if self.exclusive else "shared grants every request"
                raise InvariantViolation("idle-while-waiting", t, f"I/O node {node}",
                                         f"grants nothing to {', '.join(self.apps[r].id for r in left)} "
                                         f"waiting since t={queued[left[0]].requested_at:.6g}, although {why}")

    def release(self, rank: int, phase: int, t: float) -> None:
        node = self.apps[rank].io_node
        req = self.active[node].get(rank)
        if req is None or req.phase != phase:
            raise InvariantViolation("release-not-granted", t, self._app(rank),
                                     f"ends the transfer of phase {phase} on I/O node {node} without a grant")
        del self.active[node][rank]
        self.granted[rank][phase] = req.volume
        self.moved[rank] += req.volume
        self.last_io[rank] = phase

    # -- phases and endings ---------------------------------------------------------------------
    def phase(self, rank: int, index: int, kind: str, volume: float, t: float) -> None:
        app = self.apps[rank]
        if not 0 <= index < app.phases or app.kinds[index] != kind:
            raise InvariantViolation("phase-order", t, self._app(rank),
                                     f"records a {kind} phase {index} its spec does not have")
        if (self.ordered and index != self.last[rank] + 1) or index in self.seen[rank]:
            raise InvariantViolation("phase-order", t, self._app(rank),
                                     f"records phase {index} after phase {self.last[rank]}")
        stated = 0.0 if kind == COMPUTE else app.amounts[index]
        if volume != stated:
            raise InvariantViolation("bytes-conserved", t, self._app(rank),
                                     f"phase {index} records {volume:g} units, its spec states {stated:g}")
        if stated > 0 and self.granted[rank].get(index) != stated:
            raise InvariantViolation("bytes-conserved", t, self._app(rank),
                                     f"phase {index} records {stated:g} units, but "
                                     f"{self.granted[rank].get(index, 0.0):g} were granted and transferred")
        self.last[rank] = index
        self.seen[rank].add(index)

    def end(self, rank: int, t: float) -> None:
        """The app ended normally: every phase done, every unit it states moved."""
        app = self.apps[rank]
        if not self.started[rank] or self.ended[rank]:
            raise InvariantViolation("phase-order", t, self._app(rank),
                                     "ends twice" if self.ended[rank] else "ends before it started")
        if len(self.seen[rank]) != app.phases:
            raise InvariantViolation("phase-order", t, self._app(rank),
                                     f"ends after {len(self.seen[rank])} of its {app.phases} phases")
        if self._differ(self.moved[rank], app.io_volume):
            raise InvariantViolation("bytes-conserved", t, self._app(rank),
                                     f"moved {self.moved[rank]:g} units, its phases state {app.io_volume:g}")
        self.ended[rank] = True

    def drop(self, rank: int, t: float) -> None:
        """The app failed or was killed: whatever it waited for or held is cancelled."""
        self.waiting.pop(rank, None)
        self.queued[self.apps[rank].io_node].pop(rank, None)
        self.active[self.apps[rank].io_node].pop(rank, None)
        self.suspended.discard(rank)
        self.ended[rank] = True

    def close(self, t: float) -> None:
        """The run is over at ``t``: every app ended (normally or dropped)."""
        for rank, ended in enumerate(self.ended):
            if not ended:
                if not self.started[rank]:
                    state = "never started"
                elif rank in self.waiting:
                    state = f"waits for I/O phase {self.waiting[rank].phase}"
                elif any(rank in a for a in self.active):
                    state = "holds a grant"
                else:
                    state = "has not ended"
                raise InvariantViolation("unfinished", t, self._app(rank), f"the run is over while it {state}")

    # -- load-controller hooks ---------------------------------------------------------------------
    def suspend(self, rank: int) -> None:
        self.suspended.add(rank)

    def resume(self, rank: int) -> None:
        self.suspended.discard(rank)
