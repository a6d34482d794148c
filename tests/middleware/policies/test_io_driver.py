"""The I/O driver by hand: what it tells the kernel and the effectors at an instant, in order."""

from __future__ import annotations

from iolab.middleware.policies import get_policy
from iolab.middleware.policies.io_apps import IOApp
from iolab.middleware.policies.io_driver import IODriver
from iolab.middleware.policies.io_kernel import IOKernel


class Effects:
    """Effectors that note every call."""

    def __init__(self):
        self.calls = []

    def due(self, ranks, t):
        self.calls.append(("due", list(ranks), t))

    def compute(self, rank, phase, t):
        self.calls.append(("compute", rank, phase, t))

    def asked(self, rank, phase, t):
        self.calls.append(("asked", rank, phase, t))

    def delay(self, rank, seconds, t):
        self.calls.append(("delay", rank, seconds, t))

    def ended(self, rank, t):
        self.calls.append(("ended", rank, t))

    def granted(self, node, granted, t):
        self.calls.append(("granted", node, [r.rank for r in granted], t))


def two_apps(launch=0.0, packs=None, strict=True):
    apps = [IOApp(id=i, rank=r, nodes=1, release=0.0, kinds=["compute", "write"], amounts=[1.0, 2.0],
                  bandwidth=1.0) for r, i in enumerate("AB")]
    k = IOKernel(apps, get_policy("fifo"), 1, packs or [[[0, 1]]], packs is not None, strict=strict,
                 launch=launch)
    fx = Effects()
    return IODriver(k, fx), k, fx


def test_the_simulators_apps_walk_through_the_driver_and_the_touched_node_dispatches_last():
    drv, k, fx = two_apps()
    drv.open(0.0)
    drv.start(0, 0.0)
    drv.start(1, 0.0)
    drv.compute_done(0, 1.0)
    drv.compute_done(1, 1.0)
    drv.dispatch(1.0)  # both requests compete: FIFO grants A's, B waits
    drv.io_done(0, 3.0)  # A has no phase left: it ends
    drv.dispatch(3.0)
    assert fx.calls == [("due", [0, 1], 0.0), ("compute", 0, 0, 0.0), ("compute", 1, 0, 0.0),
                        ("asked", 0, 1, 1.0), ("asked", 1, 1, 1.0), ("granted", 0, [0], 1.0),
                        ("ended", 0, 3.0), ("granted", 0, [1], 3.0)]
    assert k.end[0] == 3.0 and not k.touched


def test_a_launch_delay_is_the_effectors_then_next_begins_the_phase():
    drv, k, fx = two_apps(launch=0.5)
    drv.start(0, 0.0)
    assert fx.calls == [("delay", 0, 0.5, 0.0)]
    drv.next(0, 0.5, wait=False)
    assert fx.calls[-1] == ("compute", 0, 0, 0.5)


def test_a_real_runs_apps_walk_their_own_phases_and_a_dropped_grant_passes_on():
    drv, k, fx = two_apps(packs=[[[0, 1]]], strict=False)  # the apps report no phase here
    drv.walks = False
    drv.start(0, 0.0)
    drv.start(1, 0.0)
    k.request(0, 1, 1.0)
    k.request(1, 1, 1.0)
    drv.dispatch(1.0)
    drv.end(0, 2.0, ok=False)  # A fails holding the grant: its I/O node dispatches again
    drv.dispatch(2.0)
    assert fx.calls == [("granted", 0, [0], 1.0), ("ended", 0, 2.0), ("granted", 0, [1], 2.0)]


def test_an_end_opens_the_next_pack_when_due():
    drv, k, fx = two_apps(packs=[[[0], [1]]], strict=False)
    drv.walks = False
    drv.open(0.0)
    drv.start(0, 0.0)
    drv.end(0, 4.0)
    assert fx.calls == [("due", [0], 0.0), ("ended", 0, 4.0), ("due", [1], 4.0)]
    assert k.due(1) == 4.0
