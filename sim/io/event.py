"""The exact next-event engine: time jumps from one phase boundary to the next.

Everything that happens at one instant is recorded first, then every I/O node
touched at that instant dispatches once (so all requests present compete).
Under a list policy an I/O node serves one transfer at a time at bandwidth b,
without preemption; under ``shared`` its transfers split b equally.  With
``platform.overheads.io_phase`` = c, a granted transfer first holds its I/O node
for c seconds (a shared one joins its link after c): a list policy's transfer of
v units lasts c + v/b.  Under any other sharing policy (``job-fair``, a TBF, a user's
:class:`~iolab.middleware.policies.io_order.Sharing`) each transfer moves at its share of the I/O node's
aggregate rate (:class:`~iolab.sim.weighted_link.WeightedLink`), the shares asked again whenever a
transfer joins or leaves the link.  Its ``launch``, ``gap`` and ``exit`` delay an app's first
phase after its start, each next phase after the end of the one before, and the
app's end after its last phase (a ``_NEXT`` event begins the phase); all 0, no
event is added and the run is what it was without them.

What happens at an instant is the I/O level's driver's
(:class:`~iolab.middleware.policies.io_driver.IODriver`, the real run's arbiter calls it too); this
engine is its clock (the heap) and its effectors (a phase's end timed, a grant's transfer timed or
put on its link).  Under a list policy :meth:`EventEngine._run_exclusive` writes the driver's
instants out in one loop, its hot path.
"""

from __future__ import annotations

import heapq
import itertools
import math

from iolab.invariants import strict_default
from iolab.middleware.policies.io_guard import io_policy
from iolab.middleware.policies.io_apps import COMPUTE
from iolab.middleware.policies.io_driver import IODriver
from iolab.middleware.policies.io_kernel import IOKernel
from iolab.middleware.policies.io_queue import wait_queue

from iolab.sim.fairshare import FairShareLink
from iolab.sim.weighted_link import WeightedLink
from iolab.sim.io.recorder import Recorder
from iolab.sim.io.scenario import Scenario

_START, _COMPUTE_END, _IO_END, _SHARED, _JOIN, _NEXT = 0, 1, 2, 3, 4, 5


class EventEngine:
    """The next-event clock around one :class:`~iolab.middleware.policies.io_kernel.IOKernel`
    (``kernel``: the apps' phases, requests, grants, pack turns and strict mode's checker): the
    event heap, the phases' durations (jitter and overheads) and the shared links."""

    def __init__(self, scenario: Scenario, policy: str, rows: bool = True, strict: bool | None = None):
        self.sc = scenario
        self.policy = io_policy(policy, rate=scenario.bandwidth, law=scenario.law)
        self.rec = Recorder(scenario, rows)
        self.kernel = k = IOKernel(scenario.apps, self.policy, scenario.io_nodes, scenario.plan.nodes,
                                   scenario.plan.packed, strict=strict_default(strict), launch=scenario.launch,
                                   gap=scenario.gap, exit=scenario.exit, record=self.rec)
        self.rec.start, self.rec.end = k.start, k.end  # the trace's starts and ends are the kernel's
        self.exclusive = k.allows.exclusive  # the loop for list policies (_run_exclusive)
        # ``shared`` (and the list policies, which never share) on fair-share links; any other sharing asked
        self.weighted = k.allows.asks_shares
        if self.weighted:
            self.links = [WeightedLink(scenario.bandwidth, scenario.law, self.policy, scenario.stream_fields)
                          for _ in range(scenario.io_nodes)]
        else:
            self.links = [FairShareLink(scenario.bandwidth, scenario.law) for _ in range(scenario.io_nodes)]
        self._heap: list[tuple] = []
        self._seq = itertools.count()
        self.factors = scenario.factors  # jitter: actual vs stated duration of each phase
        self.fixed = scenario.io_fixed  # platform.overheads.io_phase
        self.delayed = scenario.launch > 0 or scenario.gap > 0 or scenario.exit > 0
        self._changed_link = [False] * scenario.io_nodes  # a shared link whose transfers changed at this instant
        self.driver = IODriver(k, self)  # what happens at an instant; this engine is its effectors

    # -- the effectors (:class:`~iolab.middleware.policies.io_driver.AppEffects`) --------
    def _push(self, t: float, ev: int, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), ev, arg))

    def due(self, ranks: list[int], t: float) -> None:
        """These apps start at their due time."""
        due = self.kernel.due
        for r in ranks:
            self._push(due(r), _START, r)

    def compute(self, rank: int, phase: int, t: float) -> None:
        """A compute phase began at t: its end, jitter included."""
        amount = self.sc.apps[rank].amounts[phase]
        factors = self.factors[rank]
        heapq.heappush(self._heap, (t + (amount * factors[phase] if factors else amount), next(self._seq),
                                    _COMPUTE_END, rank))

    asked = None  # the request waits on its I/O node, which dispatches at the end of the instant

    def delay(self, rank: int, seconds: float, t: float) -> None:
        self._push(t + seconds, _NEXT, rank)

    def ended(self, rank: int, t: float) -> None:
        """The trace's end is the kernel's."""

    def granted(self, node: int, granted: list, t: float) -> None:
        """The kernel's grants on ``node`` at t: their transfers timed."""
        link = self.links[node]
        if granted:
            exclusive, fixed, factors_of = self.exclusive, self.fixed, self.factors
            for req in granted:
                factors = factors_of[req.rank]
                f = factors[req.phase] if factors else 1.0
                if exclusive:
                    self._push(t + fixed + req.io_time * f, _IO_END, req.rank)
                elif fixed > 0:  # its bytes join the link after the fixed cost
                    self._push(t + fixed, _JOIN, (node, req.rank, req.volume * f, req.volume))
                elif self.weighted:  # the policy is told the nominal volume (as its requests state it)
                    link.add(req.rank, req.volume * f, t, req.volume)
                else:
                    link.add(req.rank, req.volume * f, t)
        if not self.exclusive and (granted or self._changed_link[node]):
            nxt = link.next_completion()
            if nxt < math.inf:
                self._push(nxt, _SHARED, (node, link.version))
        self._changed_link[node] = False

    # -- main loop --------------------------------------------------------
    def run(self) -> Recorder:
        if self.exclusive:
            return self._run_exclusive()
        return self._run_general()

    def _run_general(self) -> Recorder:
        """Any policy (``shared`` needs it); list policies run :meth:`_run_exclusive`.

        The driver's instants, two of them written out here (a call less per event each): a phase's
        end is the kernel's ``compute_done`` or ``io_done`` then the driver's ``next`` (the driver's
        ``compute_done``, ``io_done``), and an instant that touched one I/O node dispatches it here."""
        sc = self.sc
        k, drv = self.kernel, self.driver
        touched = k.touched
        self._changed_link = changed = [False] * sc.io_nodes
        drv.open(0.0)
        heap = self._heap
        pop = heapq.heappop
        compute_done, io_done, nxt, dispatch = k.compute_done, k.io_done, drv.next, drv.dispatch
        dispatch_one, granted = k.dispatch, self.granted
        events = 0
        t = 0.0
        while heap:
            t = heap[0][0]
            while heap and heap[0][0] == t:
                _, _, ev, arg = pop(heap)
                events += 1
                if ev == _COMPUTE_END:
                    compute_done(arg, t)
                    nxt(arg, t)
                elif ev == _IO_END:
                    io_done(arg, t)
                    nxt(arg, t)
                elif ev == _START:
                    drv.start(arg, t)
                elif ev == _NEXT:
                    nxt(arg, t, wait=False)
                elif ev == _JOIN:  # a shared transfer's fixed cost is over: its bytes join the link
                    node, rank, amount, volume = arg
                    if self.weighted:
                        self.links[node].add(rank, amount, t, volume, k.grant_time[rank])
                    else:
                        self.links[node].add(rank, amount, t)
                    changed[node] = True
                    touched.add(node)
                else:  # _SHARED completion check
                    node, version = arg
                    link = self.links[node]
                    if version != link.version:
                        continue
                    for rank in link.pop_finished(t):
                        io_done(rank, t)
                        nxt(rank, t)
                    changed[node] = True
                    touched.add(node)
            if touched:  # every I/O node touched at t dispatches, in node order
                if len(touched) == 1:
                    node = touched.pop()
                    granted(node, dispatch_one(node, t), t)
                else:
                    dispatch(t)
        drv.close(t)
        self.rec.events = events
        return self.rec

    def _run_exclusive(self) -> Recorder:
        """The loop for list policies (one transfer at a time per I/O node).

        The same instants as :meth:`_run_general` drives through the driver
        (:class:`~iolab.middleware.policies.io_driver.IODriver`: ``open``, ``start``, ``next``,
        ``compute_done``, ``io_done``, ``dispatch``), with the kernel's ``advance`` and ``io_done`` and
        this engine's effectors (``compute``, ``delay``, ``granted``), in the same order and with the
        same float operations (so the same times, bit for bit; ``tests/sim/io/test_event_loops.py``
        runs both on random specs), written out in one function: a call per transition was most of
        the simulator's time (docs/performance.md, "The I/O simulator's loop").

        It keeps the kernel's books (its phase index, times, starts and ends, pack turns and
        checker: ``self.kernel``'s lists, written in place) except the request/grant books: who
        goes next on an I/O node is chosen by the arbiters' own queue
        (:func:`~iolab.middleware.policies.io_queue.wait_queue`, the same policy objects), and
        the arbiters' protocol books (an app asks once at a time, a release matches a grant)
        are one busy flag per node here, since this loop submits and releases by construction
        (strict mode's checker keeps its own books and watches every dispatch).
        """
        sc = self.sc
        apps = sc.apps
        rec = self.rec
        rows = rec.rows
        k = self.kernel
        check = k.check
        due = k.due
        factors = self.factors
        fixed = self.fixed
        delayed = self.delayed
        launch, gap, exit_ = sc.launch, sc.gap, sc.exit
        queues = [wait_queue(self.policy, k.allows) for _ in range(sc.io_nodes)]  # the waiting requests
        queued = [0] * sc.io_nodes  # how many wait on each node
        busy = [False] * sc.io_nodes  # a transfer holds the node
        idx, io_recv, phase_start = k.idx, k.io_recv, k.phase_start
        req_time, grant_time = k.req_time, k.grant_time
        wait, io_busy = rec.wait, rec.io_busy
        kinds_of = [a.kinds for a in apps]
        amounts_of = [a.amounts for a in apps]
        node_of = [a.io_node for a in apps]
        heap = self._heap  # with whatever was pushed before the run (tests inject events)
        push, pop = heapq.heappush, heapq.heappop
        seq = seq0 = next(self._seq)
        given = len(heap)
        for r in k.initial():
            push(heap, (due(r), seq, _START, r))
            seq += 1
        touched: list[int] = []  # I/O nodes touched at this instant, each once
        flagged = [False] * sc.io_nodes
        t = 0.0
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
                elif ev == _IO_END:  # io_done
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
                    k.begin(rank, t)
                # (_NEXT: a delay is over; nothing ended)
                i = idx[rank] + 1
                n = len(kinds)
                if delayed and ev != _NEXT:  # next: begin the next phase after a delay
                    d = launch if ev == _START else (gap if i < n else exit_)
                    if d > 0:
                        push(heap, (t + d, seq, _NEXT, rank))
                        seq += 1
                        i = -1  # nothing begins now
                # advance: begin the app's next phase at t
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
                            req = apps[rank].request(i, t, k.start[rank], io_recv[rank])
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
                        for r in k.finish(rank, t):
                            push(heap, (due(r), seq, _START, r))
                            seq += 1
                if heap and heap[0][0] == t:
                    _, _, ev, rank = pop(heap)
                else:
                    break
            if touched:  # dispatch, in node order
                if len(touched) > 1:
                    touched.sort()
                for node in touched:
                    flagged[node] = False
                    if busy[node] or not queued[node]:  # no grant before a transfer's end
                        if check is not None:
                            check.dispatched(node, [], t)
                        continue
                    req = queues[node].pop(t)
                    queued[node] -= 1
                    busy[node] = True
                    if check is not None:
                        check.dispatched(node, [req], t)
                    r = req.rank
                    grant_time[r] = t
                    f = factors[r]
                    push(heap, (t + fixed + req.io_time * (f[req.phase] if f else 1.0), seq, _IO_END, r))
                    seq += 1
                touched.clear()
        k.close(t)
        rec.events = given + seq - seq0  # every event pushed was taken (none goes stale here)
        return rec
