"""The event engine's two loops on one scenario, and the check that they recorded the same run."""

from __future__ import annotations

from iolab.sim.io.event import EventEngine


def both(sc_of, policy: str):
    """(exclusive loop, general loop) runs of ``sc_of()`` (a fresh scenario each) under a list policy."""
    fast = EventEngine(sc_of(), policy, rows=True, strict=True)
    assert fast.exclusive
    slow = EventEngine(sc_of(), policy, rows=True, strict=True)
    return fast.run(), slow._run_general()


def same(a, b) -> None:
    """Two recorders hold the same run, bit for bit."""
    # repr: NaN (an app that never started) equals itself, and 0.1 + 0.2 != 0.3 is seen
    for name in ("start", "end", "wait", "io_busy"):
        assert repr(getattr(a, name)) == repr(getattr(b, name)), name
    assert a.phases == b.phases
    assert a.grants == b.grants
    assert a.events == b.events
