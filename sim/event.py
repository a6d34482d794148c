"""The exact next-event engine: time jumps from one phase boundary to the next.

Everything that happens at one instant is recorded first, then every I/O node
touched at that instant dispatches once (so all requests present compete).
Under a list policy an I/O node serves one transfer at a time at bandwidth b,
without preemption; under ``shared`` its transfers split b equally.  With
``platform.overheads.io_phase`` = c, a granted transfer first holds its I/O node
for c seconds (a shared one joins its link after c): a list policy's transfer of
v units lasts c + v/b.  Its ``launch``, ``gap`` and ``exit`` delay an app's first
phase after its start, each next phase after the end of the one before, and the
app's end after its last phase (a ``_NEXT`` event begins the phase); all 0, no
event is added and the run is what it was without them.
"""

from __future__ import annotations

import heapq
import itertools
import math

from iolab.invariants import strict_default
from iolab.middleware.policies import IONodeArbiter, get_policy
from iolab.middleware.policies.io_apps import COMPUTE
from iolab.middleware.policies.io_checker import IOChecker
from iolab.middleware.policies.io_queue import wait_queue

from .fairshare import FairShareLink
from .recorder import Recorder
from .scenario import Scenario

_START, _COMPUTE_END, _IO_END, _SHARED, _JOIN, _NEXT = 0, 1, 2, 3, 4, 5


class EventEngine:
    def __init__(self, scenario: Scenario, policy: str, rows: bool = True, strict: bool | None = None):
        self.sc = scenario
        self.policy = get_policy(policy)
        self.exclusive = self.policy.exclusive
        self.rec = Recorder(scenario, rows)
        self.arbiters = [IONodeArbiter(self.policy, n) for n in range(scenario.io_nodes)]
        self.links = [FairShareLink(scenario.bandwidth, scenario.law) for _ in range(scenario.io_nodes)]
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
        self.fixed = scenario.io_fixed  # platform.overheads.io_phase
        self.delayed = scenario.launch > 0 or scenario.gap > 0 or scenario.exit > 0
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
    def _after(self, rank: int, t: float, started: bool = False) -> None:
        """The app's phase ended (or, ``started``, the app started) at t: begin its next phase
        after the platform's gap, exit or launch delay (at once without one)."""
        if self.delayed:
            sc = self.sc
            d = sc.launch if started else (sc.gap if self.idx[rank] + 1 < len(sc.apps[rank].kinds) else sc.exit)
            if d > 0:
                self._push(t + d, _NEXT, rank)
                return
        self._advance(rank, t)

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
            if self.delayed:
                d = self.sc.gap if i < len(kinds) else self.sc.exit
                if d > 0:
                    self.idx[rank] = i - 1
                    self._push(t + d, _NEXT, rank)
                    return
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
        self._after(rank, t)

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
                self._push(t + self.fixed + req.io_time * f, _IO_END, req.rank)
            elif self.fixed > 0:  # its bytes join the link after the fixed cost
                self._push(t + self.fixed, _JOIN, (node, req.rank, req.volume * f))
            else:
                link.add(req.rank, req.volume * f, t)
        if not self.exclusive and (granted or self._changed_link[node]):
            nxt = link.next_completion()
            if nxt < math.inf:
                self._push(nxt, _SHARED, (node, link.version))

    # -- main loop --------------------------------------------------------
    def run(self) -> Recorder:
        if self.exclusive:
            return self._run_exclusive()
        return self._run_general()

    def _run_general(self) -> Recorder:
        """Any policy (``shared`` needs it); list policies run :meth:`_run_exclusive`."""
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
                    self._after(arg, t)
                elif ev == _IO_END:
                    self._finish_io(arg, t)
                elif ev == _START:
                    self.rec.start[arg] = t
                    if check is not None:
                        check.start(arg, t)
                    self._after(arg, t, started=True)
                elif ev == _NEXT:
                    self._advance(arg, t)
                elif ev == _JOIN:  # a shared transfer's fixed cost is over: its bytes join the link
                    node, rank, amount = arg
                    self.links[node].add(rank, amount, t)
                    self._changed_link[node] = True
                    self._touched.add(node)
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

    def _run_exclusive(self) -> Recorder:
        """The loop for list policies (one transfer at a time per I/O node).

        The same transitions as :meth:`_run_general` with :meth:`_advance`, :meth:`_finish_io`
        and :meth:`_dispatch`, in the same order and with the same float operations (so the
        same times, bit for bit; ``tests/sim/test_event_loops.py`` runs both on random
        specs), written out in one function: a call per transition was most of the
        simulator's time (docs/performance.md, "The I/O simulator's loop").

        Who goes next on an I/O node is chosen by the arbiter's own queue
        (:func:`~iolab.middleware.policies.io_queue.wait_queue`, the same policy objects);
        the arbiter's protocol books (an app asks once at a time, a release matches a grant)
        are kept here as one busy flag per node, since this loop submits and releases by
        construction (strict mode's checker keeps its own books and watches every grant).
        """
        sc = self.sc
        apps = sc.apps
        rec = self.rec
        rows = rec.rows
        check = self.check
        turns = self.turns
        due = turns.due
        factors = self.factors
        fixed = self.fixed
        delayed = self.delayed
        launch, gap, exit_ = sc.launch, sc.gap, sc.exit
        queues = [wait_queue(self.policy) for _ in range(sc.io_nodes)]  # the waiting requests
        queued = [0] * sc.io_nodes  # how many wait on each node
        busy = [False] * sc.io_nodes  # a transfer holds the node
        idx, io_recv, phase_start = self.idx, self.io_recv, self.phase_start
        req_time, grant_time = self.req_time, self.grant_time
        start_t, end_t, wait, io_busy = rec.start, rec.end, rec.wait, rec.io_busy
        kinds_of = [a.kinds for a in apps]
        amounts_of = [a.amounts for a in apps]
        node_of = [a.io_node for a in apps]
        heap = self._heap  # with whatever was pushed before the run (tests inject events)
        push, pop = heapq.heappush, heapq.heappop
        seq = seq0 = next(self._seq)
        given = len(heap)
        for r in turns.initial():
            push(heap, (due(r), seq, _START, r))
            seq += 1
        touched: list[int] = []  # I/O nodes touched at this instant, each once
        flagged = [False] * sc.io_nodes
        while heap:
            t, _, ev, rank = pop(heap)
            while True:  # every event at t, in the order they were pushed
                kinds, amounts = kinds_of[rank], amounts_of[rank]
                if ev == _COMPUTE_END:
                    i = idx[rank]
                    if rows:
                        rec.phase(rank, i, COMPUTE, phase_start[rank], t, 0.0)
                    if check is not None:
                        check.phase(rank, i, COMPUTE, 0.0, t)
                elif ev == _IO_END:  # _finish_io
                    i = idx[rank]
                    g = grant_time[rank]
                    if rows:
                        rec.phase(rank, i, kinds[i], g, t, amounts[i])
                        rec.grant(rank, i, req_time[rank], g, t)
                    else:  # Recorder.grant's sums
                        wait[rank] += g - req_time[rank]
                        io_busy[rank] += t - g
                    node = node_of[rank]
                    busy[node] = False
                    if check is not None:
                        check.release(rank, i, t)
                        check.phase(rank, i, kinds[i], amounts[i], t)
                    if not flagged[node]:
                        flagged[node] = True
                        touched.append(node)
                    io_recv[rank] += t - g
                elif ev == _START:
                    start_t[rank] = t
                    if check is not None:
                        check.start(rank, t)
                # (_NEXT: a delay is over; nothing ended)
                i = idx[rank] + 1
                n = len(kinds)
                if delayed and ev != _NEXT:  # _after: begin the next phase after a delay
                    d = launch if ev == _START else (gap if i < n else exit_)
                    if d > 0:
                        push(heap, (t + d, seq, _NEXT, rank))
                        seq += 1
                        i = -1  # nothing begins now
                # _advance: begin the app's next phase at t
                if i >= 0:
                    while i < n:
                        amount = amounts[i]
                        if kinds[i] == COMPUTE:
                            idx[rank] = i
                            phase_start[rank] = t
                            f = factors[rank]
                            push(heap, (t + (amount * f[i] if f else amount), seq, _COMPUTE_END, rank))
                            seq += 1
                            break
                        if amount > 0:
                            idx[rank] = i
                            req_time[rank] = t
                            req = apps[rank].request(i, t, start_t[rank], io_recv[rank])
                            if check is not None:
                                check.request(req, t)
                            node = node_of[rank]
                            queues[node].push(req)
                            queued[node] += 1
                            if not flagged[node]:
                                flagged[node] = True
                                touched.append(node)
                            break
                        if rows:  # empty I/O phase: nothing to arbitrate
                            rec.phase(rank, i, kinds[i], t, t, 0.0)
                        if check is not None:
                            check.phase(rank, i, kinds[i], 0.0, t)
                        i += 1
                        if delayed:
                            d = gap if i < n else exit_
                            if d > 0:
                                idx[rank] = i - 1
                                push(heap, (t + d, seq, _NEXT, rank))
                                seq += 1
                                break
                    else:  # the app has no phase left
                        idx[rank] = i
                        end_t[rank] = t
                        if check is not None:
                            check.end(rank, t)
                        for r in turns.end(rank, t):
                            push(heap, (due(r), seq, _START, r))
                            seq += 1
                if heap and heap[0][0] == t:
                    _, _, ev, rank = pop(heap)
                else:
                    break
            if touched:  # _dispatch, in node order
                if len(touched) > 1:
                    touched.sort()
                for node in touched:
                    flagged[node] = False
                    if busy[node] or not queued[node]:  # no grant before a transfer's end
                        continue
                    req = queues[node].pop(t)
                    queued[node] -= 1
                    busy[node] = True
                    if check is not None:
                        check.grant(node, [req], t)
                    r = req.rank
                    grant_time[r] = t
                    f = factors[r]
                    push(heap, (t + fixed + req.io_time * (f[req.phase] if f else 1.0), seq, _IO_END, r))
                    seq += 1
                touched.clear()
        rec.events = given + seq - seq0  # every event pushed was taken (none goes stale here)
        return rec
