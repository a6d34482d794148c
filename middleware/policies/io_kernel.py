"""The I/O kernel: the books of one run of the I/O level, shared by every driver.

One kernel, several clocks (like :class:`~.batch.kernel.BatchKernel` for the batch level).
:class:`IOKernel` holds every decision-relevant state of an I/O run and reads no clock:
each call passes ``t``, spec seconds.

- ``iolab.sim.io.event`` (the next-event engine) and ``iolab.sim.io.stepped`` (the fixed-step
  engine) advance it on simulated time and add only their clock: the event heap or the step
  grid, the phases' durations (jitter, overheads) and the fair-share links;
- ``iolab.middleware.arbiter_state.ArbiterState`` (the Ray arbiter actor's state) advances it on spec
  time converted from the wall clock and adds only the start gates, the leases and the token
  buckets; its apps drive their own phases and ask for each I/O phase themselves.

What the kernel owns:

- the apps (:class:`~.io_apps.IOApp`) and their pack turns (:class:`~.io_apps.PackTurns`);
- each app's phase index (``idx``), start and end, and the times of its current phase
  (``phase_start``, ``req_time``, ``grant_time``) and transfers done (``io_recv``);
- the request/grant/release books: one :class:`~.arbiter.IONodeArbiter` per I/O node (who
  waits, who transfers, who goes next), each app's current request (``asking``) and whether
  it is granted, the requests set aside while an app is suspended (``held``), and the I/O
  nodes touched since their last dispatch (``touched``);
- strict mode's calls: with ``strict`` an :class:`~.io_checker.IOChecker` sees every
  decision and state change (start, request, grant, release, phase, end, drop) as an event
  and keeps its own books; ``check`` is None otherwise.

What happens at an instant (the order of these calls, and what a runtime does around them) is
the I/O level's driver's, :class:`~.io_driver.IODriver`, which every runtime calls.  It calls,
at spec time ``t``::

    k.initial(), k.due(rank)        # which apps may start, and when
    k.begin(rank, t)                # an app starts
    k.advance(rank, t)              # simulator: begin its next phase -> (what, value)
    k.request(rank, phase, t)       # real run: the app asks for its I/O phase ``phase``
    k.dispatch(node, t)             # the grants its arbiter decides now (nodes in ``touched``
                                    # had news since their last dispatch)
    k.io_done(rank, t)              # simulator: the transfer ended (release and rows)
    k.release(rank, phase, t)       # real run: the transfer ended
    k.compute_done(rank, t)         # simulator: a compute phase ended
    k.finish(rank, t) / k.drop(rank, t)  # the app ended / failed or was killed
    k.close(t)                      # the run is over (strict: every app ended)

Mutators only record; ``dispatch`` decides, so everything that happens at one instant
competes.  ``record``, if given, receives the trace's rows (``phase(rank, index, kind,
start, end, volume)``, only if its ``rows`` is true, and every ``grant(rank, index, request,
grant, release)``: ``iolab.sim.io.recorder.Recorder``).
"""

from __future__ import annotations

import math
from typing import Sequence

from iolab.middleware.policies.arbiter import IONodeArbiter
from iolab.middleware.policies.io_apps import COMPUTE, IOApp, PackTurns
from iolab.middleware.policies.io_checker import IOChecker
from iolab.middleware.policies.io_fast_paths import IOFastPaths, io_fast_paths
from iolab.middleware.policies.io_order import IORequest, ListPolicy, SharedPolicy

# what advance() began: (COMPUTE_PHASE, phase index), (IO_WAIT, phase index),
# (DELAY, seconds before the next phase), (ENDED, ranks whose pack opened)
COMPUTE_PHASE, IO_WAIT, DELAY, ENDED = 0, 1, 2, 3


class IOKernel:
    """The books of one I/O run (see the module doc).

    ``packs[node]``: the sequence of packs of each I/O node (lists of ranks); ``packed``:
    the packs of a node run one after the other.  ``launch``, ``gap``, ``exit``: the
    platform's delays before an app's first phase, between two phases, after its last
    (``platform.overheads``; a real run has its own).  ``ordered``, ``slack``: the checker's
    (phases reported in order; the absolute time tolerance of a fixed-step clock).
    """

    def __init__(self, apps: Sequence[IOApp], policy: ListPolicy | SharedPolicy, io_nodes: int,
                 packs: Sequence[Sequence[Sequence[int]]], packed: bool, *, strict: bool = False,
                 ordered: bool = True, slack: float = 0.0, launch: float = 0.0, gap: float = 0.0,
                 exit: float = 0.0, record=None):
        self.apps = list(apps)
        self.policy = policy
        # what the policy allows the runtimes to skip (io_fast_paths.py), read once: the kernel, its
        # arbiters and the engines around it read this record, never the policy's attributes
        self.allows: IOFastPaths = io_fast_paths(policy)
        self.exclusive = self.allows.exclusive
        self.packed = bool(packed)
        self.arbiters = [IONodeArbiter(policy, n, self.allows) for n in range(io_nodes)]
        self.turns = PackTurns(packs, [a.release for a in self.apps], self.packed)
        self.check = (IOChecker(self.apps, packs, packed=self.packed, exclusive=self.exclusive,
                                ordered=ordered, slack=slack) if strict else None)
        self.record = record
        self._rows = record is not None and getattr(record, "rows", True)  # phase rows wanted
        self.launch, self.gap, self.exit = float(launch), float(gap), float(exit)
        n = len(self.apps)
        self.idx = [-1] * n
        self.start = [math.nan] * n
        self.end = [math.nan] * n
        self.phase_start = [0.0] * n
        self.req_time = [0.0] * n
        self.grant_time = [0.0] * n
        self.io_recv = [0.0] * n  # seconds of transfers done
        self.asking: list[IORequest | None] = [None] * n  # the current request (waiting, held or granted)
        self.granted = [False] * n
        self.held: dict[int, IORequest] = {}  # requests set aside while their app is suspended
        self.suspended: set[int] = set()
        self.touched: set[int] = set()  # I/O nodes with news since their last dispatch

    # -- starts ----------------------------------------------------------------------------
    def initial(self) -> list[int]:
        """Ranks that may start without waiting for any app to end, in plan order."""
        return self.turns.initial()

    def due(self, rank: int) -> float:
        """The earliest time ``rank`` may start (inf until its pack's turn)."""
        return self.turns.due(rank)

    def begin(self, rank: int, t: float) -> None:
        """The app starts at ``t``."""
        if self.check is not None:
            self.check.start(rank, t)
        self.start[rank] = t

    def delay(self, rank: int, started: bool = False) -> float:
        """The platform's delay before the app's next phase: ``launch`` after its start
        (``started``), ``gap`` after a phase that has a next one, ``exit`` after its last."""
        if started:
            return self.launch
        return self.gap if self.idx[rank] + 1 < len(self.apps[rank].kinds) else self.exit

    # -- phases (the simulator: the kernel walks the phases) ----------------------------------
    def advance(self, rank: int, t: float) -> tuple[int, object]:
        """Begin the app's next phase at ``t``; returns what began:

        - ``(COMPUTE_PHASE, i)``: compute phase i (the driver times it and calls
          :meth:`compute_done`);
        - ``(IO_WAIT, i)``: I/O phase i asked its I/O node (now in ``touched``);
        - ``(DELAY, d)``: an empty I/O phase ended at once and the platform's gap (or exit)
          of ``d`` seconds comes first: the driver calls ``advance`` again after it;
        - ``(ENDED, opened)``: no phase is left: the app ended at ``t``; ``opened`` are the
          ranks of the pack(s) its end opened.

        An empty I/O phase has nothing to arbitrate: it is recorded and ends at ``t``.
        """
        app = self.apps[rank]
        kinds, amounts = app.kinds, app.amounts
        check = self.check
        n = len(kinds)
        i = self.idx[rank] + 1
        while i < n:
            if kinds[i] == COMPUTE:
                self.idx[rank] = i
                self.phase_start[rank] = t
                return COMPUTE_PHASE, i
            if amounts[i] > 0:
                self._ask(rank, i, t)
                return IO_WAIT, i
            if self._rows:
                self.record.phase(rank, i, kinds[i], t, t, 0.0)
            if check is not None:
                check.phase(rank, i, kinds[i], 0.0, t)
            i += 1
            d = self.gap if i < n else self.exit
            if d > 0:
                self.idx[rank] = i - 1
                return DELAY, d
        self.idx[rank] = i
        return ENDED, self.finish(rank, t)

    def compute_done(self, rank: int, t: float) -> None:
        """The app's current (compute) phase ended at ``t``."""
        i = self.idx[rank]
        if self._rows:
            self.record.phase(rank, i, COMPUTE, self.phase_start[rank], t, 0.0)
        if self.check is not None:
            self.check.phase(rank, i, COMPUTE, 0.0, t)

    def io_done(self, rank: int, t: float) -> None:
        """The app's current transfer ended at ``t``: its grant is released and its phase recorded."""
        app = self.apps[rank]
        i = self.idx[rank]
        volume = app.amounts[i]
        g = self.grant_time[rank]
        record = self.record
        if record is not None:
            if self._rows:
                record.phase(rank, i, app.kinds[i], g, t, volume)
            record.grant(rank, i, self.req_time[rank], g, t)
        self._release(rank, i, t)  # the simulator releases only what it was granted
        if self.check is not None:
            self.check.phase(rank, i, app.kinds[i], volume, t)

    def recorded(self, rank: int, index: int, kind: str, volume: float, t: float) -> None:
        """A real app reported its phase ``index`` ended at ``t`` (the checker sees it)."""
        if self.check is not None:
            self.check.phase(rank, index, kind, volume, t)

    # -- requests, grants, releases --------------------------------------------------------
    def request(self, rank: int, phase: int, t: float, nbytes: int | None = None, unit_bytes: int = 1,
                kind: str | None = None) -> IORequest | None:
        """A real app asks for its I/O phase ``phase`` at ``t`` (``nbytes``: what it will move; ``kind``: the
        phase's kind as the app names it, refused if its spec's phase ``phase`` is not one).  None: the phase is
        empty, nothing to arbitrate (no request is made)."""
        app = self.apps[rank]
        held = self.asking[rank]
        if held is not None:
            raise RuntimeError(f"app {app.id!r} already has an I/O request (phase {held.phase})")
        if kind is not None and not (0 <= phase < len(app.kinds) and app.kinds[phase] == kind):
            raise ValueError(f"app {app.id!r}: phase {phase} is not a {kind} phase of its spec")
        if app.amounts[phase] <= 0:
            return None
        if nbytes is not None and self.check is not None:
            self.check.bytes_asked(rank, phase, int(nbytes), unit_bytes, t)
        return self._ask(rank, phase, t)

    def _ask(self, rank: int, phase: int, t: float) -> IORequest:
        """The books of a request, the simulator's (:meth:`advance`) and a real app's (:meth:`request`): the
        app's I/O phase ``phase`` asks its I/O node at ``t`` (set aside while the app is suspended)."""
        app = self.apps[rank]
        self.idx[rank] = phase
        self.req_time[rank] = t
        req = app.request(phase, t, self.start[rank], self.io_recv[rank])
        if self.check is not None:
            self.check.request(req, t)
        self.asking[rank] = req
        self.granted[rank] = False
        if rank in self.suspended:
            self.held[rank] = req
        else:
            node = app.io_node
            self.arbiters[node].submit(req)
            self.touched.add(node)
        return req

    def dispatch(self, node: int, t: float) -> list[IORequest]:
        """The grants I/O node ``node``'s arbiter decides at ``t`` (possibly none)."""
        granted = self.arbiters[node].dispatch(t)
        grant_time, flags = self.grant_time, self.granted
        for req in granted:
            grant_time[req.rank] = t
            flags[req.rank] = True
        if self.check is not None:
            self.check.dispatched(node, granted, t)
        return granted

    def release(self, rank: int, phase: int, t: float) -> None:
        """The app's transfer of phase ``phase`` ended at ``t``: its I/O node is free."""
        req = self.asking[rank]
        if req is None or req.phase != phase or not self.granted[rank]:
            raise RuntimeError(f"app {self.apps[rank].id!r} releases phase {phase} but holds no grant for it")
        self._release(rank, phase, t)

    def _release(self, rank: int, phase: int, t: float) -> None:
        """The books of a release, the simulator's (:meth:`io_done`) and a real app's (:meth:`release`): the
        app's transfer of phase ``phase`` ended at ``t``, its I/O node is free (dispatched at the instant's end)."""
        app = self.apps[rank]
        node = app.io_node
        self.arbiters[node].release(app.id)
        if self.check is not None:
            self.check.release(rank, phase, t)
        self.touched.add(node)
        self.io_recv[rank] += t - self.grant_time[rank]
        self.asking[rank] = None
        self.granted[rank] = False

    def holds_grant(self, rank: int) -> bool:
        return self.granted[rank]

    def waits(self, rank: int) -> bool:
        """The app asked for I/O and has no grant yet (also while its request is held)."""
        return self.asking[rank] is not None and not self.granted[rank]

    # -- endings -----------------------------------------------------------------------------
    def finish(self, rank: int, t: float) -> list[int]:
        """The app ended normally at ``t``; returns the ranks of the pack(s) its end opened."""
        self.end[rank] = t
        if self.check is not None:
            self.check.end(rank, t)
        return self.turns.end(rank, t)

    def drop(self, rank: int, t: float) -> list[int]:
        """The app failed or was killed at ``t``: what it waited for or held is cancelled, and
        its pack's turn passes on as if it had ended (its I/O node, which a cancelled grant may
        have freed, dispatches at the instant's end)."""
        node = self.apps[rank].io_node
        self.arbiters[node].cancel(self.apps[rank].id)
        self.touched.add(node)
        self.asking[rank] = None
        self.granted[rank] = False
        self.held.pop(rank, None)
        self.suspended.discard(rank)
        if self.check is not None:
            self.check.drop(rank, t)
        return self.turns.end(rank, t)

    def close(self, t: float) -> None:
        """The run is over at ``t`` (the simulator's last event): strict mode checks that every
        app ended."""
        if self.check is not None:
            self.check.close(t)

    # -- load-controller hooks -----------------------------------------------------------------
    def suspend(self, rank: int) -> None:
        """Stop arbitrating for the app: a waiting request is set aside (a transfer in progress
        keeps its grant)."""
        if rank in self.suspended:
            return
        self.suspended.add(rank)
        if self.check is not None:
            self.check.suspend(rank)
        if self.waits(rank):
            req = self.arbiters[self.apps[rank].io_node].cancel(self.apps[rank].id)
            if req is not None:
                self.held[rank] = req

    def resume(self, rank: int) -> None:
        if rank not in self.suspended:
            return
        self.suspended.discard(rank)
        if self.check is not None:
            self.check.resume(rank)
        req = self.held.pop(rank, None)
        if req is not None:
            node = self.apps[rank].io_node
            self.arbiters[node].submit(req)
            self.touched.add(node)
