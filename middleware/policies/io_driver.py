"""What happens to an I/O run's apps at an instant, written once for both clocks.

:class:`IODriver` is the I/O level's driver (the batch level's is :mod:`.batch.driver`): the simulator's
engines (``iolab.sim.io.event``, an event heap; ``iolab.sim.io.stepped``, a step grid) and the real run's
arbiter state (``iolab.middleware.arbiter_state``, on the wall clock inside the Ray actor) each find the
instant ``t`` and call it; it tells the kernel (:class:`~.io_kernel.IOKernel`: the apps' books, the I/O
nodes' arbiters, the pack turns, the checker) and the runtime's effectors (:class:`AppEffects`) what
happened, in the same order in every runtime:

- ``open``: the run begins: the apps that wait for no other app may start when due (``AppEffects.due``);
- ``start``: an app starts (its pack's turn and its release have come);
- ``next`` (the simulator's apps; a real run's apps walk their own phases and ask for each I/O phase):
  after the platform's launch, gap or exit delay, the kernel begins the app's next phase; a compute
  phase is timed, an I/O phase's request waits on its I/O node, an app with no phase left ends and the
  packs its end opened start when due;
- ``compute_done`` / ``io_done``: a phase ends (the kernel records its row, a transfer releases its
  I/O node), and what follows it (``next``);
- ``dispatch``, last at an instant: every I/O node touched at it (a request, a release, a cancelled
  grant) dispatches, in node order, so all requests present compete; each node's grants go to the
  effectors (a transfer timed, an app's wait answered);
- ``end``: an app ended (``ok``: the kernel's ``finish``) or failed or was killed (``drop``: what it
  held or waited for is cancelled); the packs its end opened start when due;
- ``suspend`` / ``resume``: the load controller's actions: a waiting request is set aside, then
  submitted again;
- ``close``: the run is over (strict mode: every app ended).

The runtime keeps only its clock and its effectors.  The event engine writes some of these inline,
its hot path: its loop for list policies (``EventEngine._run_exclusive``) every one (``open``,
``start``, ``next``, ``compute_done``, ``io_done``, ``dispatch``), with its own wait queues and busy
flags (``tests/sim/io/test_event_loops.py`` holds it to the driver-driven loop bit for bit); its
general loop a phase's end (the kernel's ``compute_done`` or ``io_done``, then ``next``) and the
dispatch of an instant that touched one I/O node.  Pure: no Ray, MPI, h5py or clock.
"""

from __future__ import annotations

from typing import Callable, Protocol

from iolab.middleware.policies.io_kernel import COMPUTE_PHASE, DELAY, IO_WAIT, IOKernel
from iolab.middleware.policies.io_order import IORequest

__all__ = ["AppEffects", "IODriver"]


class AppEffects(Protocol):
    """What a runtime does when the driver says so (``t``: spec seconds).  A real run's apps walk their own
    phases: it is told only ``due``, ``ended`` and ``granted``."""

    def due(self, ranks: list[int], t: float) -> None: ...  # these apps may start at the kernel's ``due``
    def compute(self, rank: int, phase: int, t: float) -> None: ...  # a compute phase began: time its end
    # an I/O phase's request waits (None: nothing to do, the request is the kernel's)
    asked: Callable[[int, int, float], None] | None
    def delay(self, rank: int, seconds: float, t: float) -> None: ...  # ``next(wait=False)`` after ``seconds``
    def ended(self, rank: int, t: float) -> None: ...  # the app has ended (in any way)
    def granted(self, node: int, granted: list[IORequest], t: float) -> None: ...  # a node dispatched


class IODriver:
    """The I/O kernel's instants, for a runtime's effectors (module doc).  ``walks``: the driver begins
    the apps' phases (the simulator); without it the apps walk their own and ask (a real run)."""

    __slots__ = ("kernel", "effects", "walks", "delayed", "_advance", "_dispatch", "_touched", "_compute", "_asked",
                 "_delay", "_granted")

    def __init__(self, kernel: IOKernel, effects: AppEffects, walks: bool = True):
        self.kernel = kernel
        self.effects = effects
        self.walks = walks
        self.delayed = kernel.launch > 0 or kernel.gap > 0 or kernel.exit > 0  # else no delay is asked
        # bound once: the simulator calls these at every phase and every instant
        self._advance, self._dispatch, self._touched = kernel.advance, kernel.dispatch, kernel.touched
        self._compute, self._asked, self._delay = effects.compute, effects.asked, effects.delay
        self._granted = effects.granted

    def open(self, t: float) -> None:
        """The run begins at ``t``: the apps that wait for no other app start when due."""
        self.effects.due(self.kernel.initial(), t)

    def start(self, rank: int, t: float) -> None:
        """The app starts at ``t``; the simulator's begins its first phase after the platform's launch."""
        self.kernel.begin(rank, t)
        if self.walks:
            self.next(rank, t, started=True)

    def next(self, rank: int, t: float, started: bool = False, wait: bool = True) -> None:
        """The app's phase ended (``started``: the app started) at ``t``: its next phase begins after the
        platform's gap, exit or launch delay (``wait=False``: at once, the delay is over).  What begins is
        the kernel's to say."""
        if wait and self.delayed:
            d = self.kernel.delay(rank, started)
            if d > 0:
                self._delay(rank, d, t)
                return
        what, x = self._advance(rank, t)
        if what == COMPUTE_PHASE:
            self._compute(rank, x, t)
        elif what == IO_WAIT:
            if self._asked is not None:
                self._asked(rank, x, t)
        elif what == DELAY:
            self._delay(rank, x, t)
        else:  # ENDED: the kernel's finish, and the packs it opened
            self.effects.ended(rank, t)
            if x:
                self.effects.due(x, t)

    def compute_done(self, rank: int, t: float) -> None:
        """The app's compute phase ended at ``t``."""
        self.kernel.compute_done(rank, t)
        self.next(rank, t)

    def io_done(self, rank: int, t: float) -> None:
        """The app's transfer ended at ``t``: its I/O node is released (dispatched at the instant's end)."""
        self.kernel.io_done(rank, t)
        self.next(rank, t)

    def dispatch(self, t: float) -> None:
        """Every I/O node touched at ``t`` dispatches, in node order; the effectors get each node's
        grants (possibly none)."""
        touched = self._touched
        if not touched:
            return
        if len(touched) == 1:
            node = touched.pop()
            self._granted(node, self._dispatch(node, t), t)
            return
        nodes = sorted(touched)
        touched.clear()
        dispatch, granted = self._dispatch, self._granted
        for node in nodes:
            granted(node, dispatch(node, t), t)

    def end(self, rank: int, t: float, ok: bool = True) -> None:
        """The app ended at ``t`` (``ok``), or failed or was killed (what it held or waited for is
        cancelled, its I/O node dispatched at the instant's end); the packs its end opened start when due."""
        k = self.kernel
        opened = k.finish(rank, t) if ok else k.drop(rank, t)
        self.effects.ended(rank, t)
        if opened:
            self.effects.due(opened, t)

    def suspend(self, rank: int, t: float) -> None:
        """The load controller stops arbitrating for the app: a waiting request is set aside (a transfer
        in progress keeps its grant)."""
        self.kernel.suspend(rank)

    def resume(self, rank: int, t: float) -> None:
        """The app's request set aside is submitted again (its I/O node dispatched at the instant's end)."""
        self.kernel.resume(rank)

    def close(self, t: float) -> None:
        """The run is over at ``t`` (strict mode: every app ended)."""
        self.kernel.close(t)
