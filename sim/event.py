"""The exact next-event engine: time jumps from one phase boundary to the next.

Everything that happens at one instant is recorded first, then every I/O node
touched at that instant dispatches once (so all requests present compete).
Under a list policy an I/O node serves one transfer at a time at bandwidth b,
without preemption; under ``shared`` its transfers split b equally.
"""

from __future__ import annotations

import heapq
import itertools
import math

from iolab.invariants import strict_default
from iolab.middleware.policies import IONodeArbiter, get_policy
from iolab.middleware.policies.io_apps import COMPUTE
from iolab.middleware.policies.io_checker import IOChecker

from .fairshare import FairShareLink
from .recorder import Recorder
from .scenario import Scenario

_START, _COMPUTE_END, _IO_END, _SHARED = 0, 1, 2, 3


class EventEngine:
    def __init__(self, scenario: Scenario, policy: str, rows: bool = True, strict: bool | None = None):
        self.sc = scenario
        self.policy = get_policy(policy)
        self.exclusive = self.policy.exclusive
        self.rec = Recorder(scenario, rows)
        self.arbiters = [IONodeArbiter(self.policy, n) for n in range(scenario.io_nodes)]
        self.links = [FairShareLink(scenario.bandwidth) for _ in range(scenario.io_nodes)]
        n = len(scenario.apps)
        self.idx = [-1] * n
        self.io_recv = [0.0] * n
        self.phase_start = [0.0] * n
        self.req_time = [0.0] * n
        self.grant_time = [0.0] * n
        self._heap: list[tuple] = []
        self._seq = itertools.count()
        self._touched: set[int] = set()
        self.factors = scenario.factors  # jitter: actual vs stated duration of each phase
        self.turns = scenario.turns()
        self.check = (IOChecker(scenario.apps, scenario.plan.nodes, packed=scenario.plan.packed,
                                exclusive=self.exclusive) if strict_default(strict) else None)

    # -- scheduling helpers ---------------------------------------------
    def _push(self, t: float, ev: int, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), ev, arg))

    def _start_when_due(self, ranks: list[int]) -> None:
        due = self.turns.due
        for r in ranks:
            self._push(due(r), _START, r)

    # -- transitions ------------------------------------------------------
    def _advance(self, rank: int, t: float) -> None:
        """Finish nothing; begin the app's next phase at time t."""
        app = self.sc.apps[rank]
        kinds, amounts = app.kinds, app.amounts
        check = self.check
        i = self.idx[rank] + 1
        while i < len(kinds):
            amount = amounts[i]
            if kinds[i] == COMPUTE:
                self.idx[rank] = i
                self.phase_start[rank] = t
                factors = self.factors[rank]
                self._push(t + (amount * factors[i] if factors else amount), _COMPUTE_END, rank)
                return
            if amount > 0:
                self.idx[rank] = i
                self.req_time[rank] = t
                req = app.request(i, t, self.rec.start[rank], self.io_recv[rank])
                if check is not None:
                    check.request(req, t)
                self.arbiters[app.io_node].submit(req)
                self._touched.add(app.io_node)
                return
            self.rec.phase(rank, i, kinds[i], t, t, 0.0)  # empty I/O phase: nothing to arbitrate
            if check is not None:
                check.phase(rank, i, kinds[i], 0.0, t)
            i += 1
        self.idx[rank] = i
        self.rec.end[rank] = t
        if check is not None:
            check.end(rank, t)
        opened = self.turns.end(rank, t)
        if opened:
            self._start_when_due(opened)

    def _finish_io(self, rank: int, t: float) -> None:
        app = self.sc.apps[rank]
        i = self.idx[rank]
        volume = app.amounts[i]
        self.rec.phase(rank, i, app.kinds[i], self.grant_time[rank], t, volume)
        self.rec.grant(rank, i, self.req_time[rank], self.grant_time[rank], t)
        self.arbiters[app.io_node].release(app.id)
        if self.check is not None:
            self.check.release(rank, i, t)
            self.check.phase(rank, i, app.kinds[i], volume, t)
        self._touched.add(app.io_node)
        self.io_recv[rank] += t - self.grant_time[rank]
        self._advance(rank, t)

    def _dispatch(self, node: int, t: float) -> None:
        granted = self.arbiters[node].dispatch(t)
        if granted and self.check is not None:
            self.check.grant(node, granted, t)
        link = self.links[node]
        for req in granted:
            self.grant_time[req.rank] = t
            factors = self.factors[req.rank]
            f = factors[req.phase] if factors else 1.0
            if self.exclusive:
                self._push(t + req.io_time * f, _IO_END, req.rank)
            else:
                link.add(req.rank, req.volume * f, t)
        if not self.exclusive and (granted or self._changed_link[node]):
            nxt = link.next_completion()
            if nxt < math.inf:
                self._push(nxt, _SHARED, (node, link.version))

    # -- main loop --------------------------------------------------------
    def run(self) -> Recorder:
        sc = self.sc
        check = self.check
        self._start_when_due(self.turns.initial())
        heap = self._heap
        pop = heapq.heappop
        events = 0
        self._changed_link = [False] * sc.io_nodes
        while heap:
            t = heap[0][0]
            while heap and heap[0][0] == t:
                _, _, ev, arg = pop(heap)
                events += 1
                if ev == _COMPUTE_END:
                    i = self.idx[arg]
                    self.rec.phase(arg, i, COMPUTE, self.phase_start[arg], t, 0.0)
                    if check is not None:
                        check.phase(arg, i, COMPUTE, 0.0, t)
                    self._advance(arg, t)
                elif ev == _IO_END:
                    self._finish_io(arg, t)
                elif ev == _START:
                    self.rec.start[arg] = t
                    if check is not None:
                        check.start(arg, t)
                    self._advance(arg, t)
                else:  # _SHARED completion check
                    node, version = arg
                    link = self.links[node]
                    if version != link.version:
                        continue
                    for rank in link.pop_finished(t):
                        self._finish_io(rank, t)
                    self._changed_link[node] = True
                    self._touched.add(node)
            touched = sorted(self._touched)
            self._touched.clear()
            for node in touched:
                self._dispatch(node, t)
                self._changed_link[node] = False
        self.rec.events = events
        return self.rec
