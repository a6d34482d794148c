"""The storage load controller's decision (dheenadayalan2017 §4.2-4.3), one object for both clocks.

:class:`LoadController` keeps one :class:`~.window.ResponseWindow` per volume
and one :class:`~.handler.JobStateHandler`.  A runtime

1. every ``d`` seconds feeds each volume's predicted response time
   (:meth:`LoadController.observe`; the model, a random forest in a real run
   or the simulator's response model, is the caller's);
2. at a rescheduling cycle calls :meth:`LoadController.cycle` with the jobs'
   open files and each volume's forecast of the next ``t`` seconds; it gets
   the suspensions/resumptions to carry out and the sleep Psi (Eq. 9) until
   the next cycle;
3. when it stops (or its controller crashes) carries out
   :meth:`LoadController.release_all`: every job it suspended is resumed.

All times are the runtime's seconds (spec seconds in both runtimes); nothing
here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from iolab.middleware.policies.controller.handler import Action, JobStateHandler, JobUsage
from iolab.middleware.policies.controller.window import ResponseWindow, sleep_interval, window_size

__all__ = ["ControllerParams", "Cycle", "LoadController"]


@dataclass(frozen=True)
class ControllerParams:
    """The parameters of §5 (spec units: seconds, bytes); ``beta`` from Eq. 5 when 0."""

    d: float = 10.0  # seconds between samples
    r_threshold: float = 60.0  # seconds: a higher benchmark-unit write time is "high"
    ws: float = 3.0  # minutes of the window
    alpha: float = 0.75
    t: float = 180.0  # seconds forecast ahead, and the long sleep of Eq. 9
    p: float = 1e9  # bytes of the benchmark unit
    omega: float = 4000e6  # bytes: smaller files are left alone
    beta: int = 0  # window entries; 0: ws * 60 / d (Eq. 5)
    recent: float = 60.0  # seconds: files unchanged for longer are left alone
    short_sleep: float = 60.0  # seconds: the other branch of Eq. 9

    @property
    def window(self) -> int:
        return self.beta if self.beta > 0 else window_size(self.ws, self.d)

    @classmethod
    def from_spec(cls, c) -> "ControllerParams":
        """From an ``iolab.specs.controller.ControllerSpec`` (duck-typed; its ``ws`` is in seconds, its ``beta``
        None when not given: then :attr:`window` is Eq. 5's)."""
        return cls(d=c.d, r_threshold=c.r_threshold, ws=c.ws / 60.0, alpha=c.alpha, t=c.t, p=c.p, omega=c.omega,
                   beta=c.beta or 0, recent=c.recent, short_sleep=c.short_sleep)


@dataclass(frozen=True)
class Cycle:
    actions: tuple[Action, ...]
    sleep: float  # seconds until the next cycle (Eq. 9)
    loaded: dict  # volume -> S(alpha, beta)


class LoadController:
    """``handler``: who decides the suspensions at a cycle (a :class:`~.handler.ControllerPolicy`: the
    paper's :class:`~.handler.JobStateHandler` by default, or a user's behind its guard)."""

    def __init__(self, params: ControllerParams = ControllerParams(), handler=None):
        self.params = params
        self.windows: dict[str, ResponseWindow] = {}
        self.handler = handler if handler is not None else JobStateHandler(params.omega, params.recent)
        self.cycles = 0

    def window(self, volume: str) -> ResponseWindow:
        w = self.windows.get(volume)
        if w is None:
            p = self.params
            w = self.windows[volume] = ResponseWindow(p.window, p.alpha, p.r_threshold)
        return w

    def observe(self, volume: str, r_out: float) -> int:
        """One predicted response time of ``volume`` (every ``d`` seconds); returns its window entry."""
        return self.window(volume).push(r_out)

    def score(self, volume: str) -> float:
        """``volume``'s window score (the left side of Eq. 8), as each runtime's sample rows record it."""
        return self.window(volume).score()

    def loaded(self) -> dict[str, bool]:
        return {v: w.loaded() for v, w in sorted(self.windows.items())}

    def cycle(self, now: float, jobs: Mapping[str, JobUsage], forecasts: Mapping[str, float]) -> Cycle:
        """One rescheduling cycle at ``now``: ``forecasts`` is each volume's forecast response time
        over the next ``t`` seconds (the largest forecast value)."""
        self.cycles += 1
        loaded = self.loaded()
        actions = self.handler.cycle(now, jobs, loaded)
        p = self.params
        return Cycle(tuple(actions), sleep_interval(forecasts.values(), p.r_threshold, p.t, p.short_sleep), loaded)

    def suspended(self) -> list[str]:
        return self.handler.suspended()

    def forget(self, job: str) -> None:
        self.handler.forget(job)

    def release_all(self, reason: str = "controller stops") -> list[Action]:
        return self.handler.release_all(reason)
