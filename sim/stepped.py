"""The time-stepped engine: time advances in fixed increments dt (carretero2020 §6.2.1).

At every step boundary t = k*dt: phases whose work ran out during the last
step end (at t), apps start their next phase, packs whose apps all ended let
the next pack start, and every I/O node dispatches.  Then each running phase
progresses by one step: a compute phase by dt seconds, an exclusive transfer
by b*dt units, a shared transfer by (b/k)*dt units.

With ``platform.overheads.io_phase`` = c, a granted transfer first spends c
seconds (whole steps, like every duration here) before its bytes move; a shared
transfer in its fixed cost takes no share of b.  Its ``launch``, ``gap`` and
``exit`` are delays counted like compute seconds: before an app's first phase,
between two of its phases, after its last.

So every phase lasts a whole number of steps: a phase boundary is rounded up
to the next multiple of dt.  When every duration is a multiple of dt the
result equals the event engine's exactly; otherwise each phase can end up
to one step late, and the gap to the event engine shrinks with dt.
"""

from __future__ import annotations

import math

from iolab.invariants import strict_default
from iolab.middleware.policies import IONodeArbiter, get_policy
from iolab.middleware.policies.io_apps import COMPUTE
from iolab.middleware.policies.io_checker import IOChecker

from .recorder import Recorder
from .scenario import Scenario

_TOL = 1e-9


class SteppedEngine:
    def __init__(self, scenario: Scenario, policy: str, dt: float, rows: bool = True,
                 strict: bool | None = None):
        if dt <= 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        self.sc = scenario
        self.dt = dt
        self.policy = get_policy(policy)
        self.rec = Recorder(scenario, rows)
        self.arbiters = [IONodeArbiter(self.policy, n) for n in range(scenario.io_nodes)]
        n = len(scenario.apps)
        self.idx = [-1] * n
        self.left = [0.0] * n  # remaining seconds (compute) or units (I/O) of the current phase
        self.fixed_left = [0.0] * n  # seconds of a granted transfer's fixed cost still to pay
        self.state = ["new"] * n  # new, compute, wait, io, delay, done
        self.io_recv = [0.0] * n
        self.phase_start = [0.0] * n
        self.req_time = [0.0] * n
        self.grant_time = [0.0] * n
        self.start_at = [math.inf] * n  # when each app may start
        self.turns = scenario.turns()
        self.check = (IOChecker(scenario.apps, scenario.plan.nodes, packed=scenario.plan.packed,
                                exclusive=self.policy.exclusive, slack=_TOL * dt)
                      if strict_default(strict) else None)

    def _may_start(self, ranks: list[int]) -> None:
        for r in ranks:
            self.start_at[r] = self.turns.due(r)

    def _begin_next(self, rank: int, t: float) -> None:
        app = self.sc.apps[rank]
        check = self.check
        i = self.idx[rank] + 1
        while i < len(app.kinds):
            if app.kinds[i] == COMPUTE:
                self.idx[rank], self.left[rank] = i, app.amounts[i] * self.sc.factor(rank, i)
                self.state[rank], self.phase_start[rank] = "compute", t
                if self.left[rank] <= _TOL:  # empty compute phase ends at once
                    self._end_phase(rank, t)
                return
            if app.amounts[i] > 0:
                self.idx[rank], self.left[rank] = i, app.amounts[i] * self.sc.factor(rank, i)
                self.state[rank], self.req_time[rank] = "wait", t
                req = app.request(i, t, self.rec.start[rank], self.io_recv[rank])
                if check is not None:
                    check.request(req, t)
                self.arbiters[app.io_node].submit(req)
                return
            self.rec.phase(rank, i, app.kinds[i], t, t, 0.0)
            if check is not None:
                check.phase(rank, i, app.kinds[i], 0.0, t)
            i += 1
            d = self.sc.gap if i < len(app.kinds) else self.sc.exit
            if d > 0:
                self.idx[rank], self.state[rank], self.left[rank] = i - 1, "delay", d
                return
        self.idx[rank], self.state[rank] = i, "done"
        self.rec.end[rank] = t
        if check is not None:
            check.end(rank, t)
        self._may_start(self.turns.end(rank, t))

    def _end_phase(self, rank: int, t: float) -> None:
        app = self.sc.apps[rank]
        i = self.idx[rank]
        check = self.check
        if self.state[rank] == "compute":
            self.rec.phase(rank, i, COMPUTE, self.phase_start[rank], t, 0.0)
            if check is not None:
                check.phase(rank, i, COMPUTE, 0.0, t)
        else:
            self.rec.phase(rank, i, app.kinds[i], self.grant_time[rank], t, app.amounts[i])
            self.rec.grant(rank, i, self.req_time[rank], self.grant_time[rank], t)
            self.arbiters[app.io_node].release(app.id)
            if check is not None:
                check.release(rank, i, t)
                check.phase(rank, i, app.kinds[i], app.amounts[i], t)
            self.io_recv[rank] += t - self.grant_time[rank]
        self._after(rank, t)

    def _after(self, rank: int, t: float, started: bool = False) -> None:
        """A phase of the app ended (``started``: the app started) at t: its next phase begins
        after the platform's gap, exit or launch delay, at once without one."""
        sc = self.sc
        d = sc.launch if started else (sc.gap if self.idx[rank] + 1 < len(sc.apps[rank].kinds) else sc.exit)
        if d > 0:
            self.state[rank], self.left[rank] = "delay", d
            return
        self._begin_next(rank, t)

    def run(self) -> Recorder:
        sc, dt, check = self.sc, self.dt, self.check
        self._may_start(self.turns.initial())
        n = len(sc.apps)
        k = 0
        steps = 0
        while True:
            t = k * dt
            # 1. phases that ran out during the last step end now, in rank order.
            for r in range(n):
                if self.state[r] in ("compute", "io", "delay") and self.left[r] <= _TOL * max(1.0, dt):
                    if self.state[r] == "delay":
                        self._begin_next(r, t)
                    else:
                        self._end_phase(r, t)
            # 2. apps whose start time has come start (a pack opened in 1 may start now).
            for r in range(n):
                if self.state[r] == "new" and self.start_at[r] <= t + _TOL * dt:
                    self.rec.start[r] = t
                    if check is not None:
                        check.start(r, t)
                    self._after(r, t, started=True)
            # 3. every I/O node dispatches.
            for node, arb in enumerate(self.arbiters):
                granted = arb.dispatch(t)
                if granted and check is not None:
                    check.grant(node, granted, t)
                for req in granted:
                    self.state[req.rank], self.grant_time[req.rank] = "io", t
                    self.fixed_left[req.rank] = sc.io_fixed
            if all(s == "done" for s in self.state):
                break
            # 4. progress by one step.
            active = False
            fixed_left = self.fixed_left
            for node, arb in enumerate(self.arbiters):
                if arb.active:
                    moving = [req.rank for req in arb.active.values() if fixed_left[req.rank] <= _TOL * dt]
                    for req in arb.active.values():
                        if fixed_left[req.rank] > _TOL * dt:
                            fixed_left[req.rank] -= dt
                    if moving:
                        ns = 1 if arb.policy.exclusive else len(moving)  # shared: b x f(ns) split ns ways
                        share = sc.bandwidth * sc.law.factor(ns) * dt / ns
                        for r in moving:
                            self.left[r] -= share
                    active = True
            for r in range(n):
                if self.state[r] == "compute" or self.state[r] == "delay":
                    self.left[r] -= dt
                    active = True
            steps += 1
            if active:
                k += 1
            else:  # nothing runs: jump to the step of the next start
                nxt = min((self.start_at[r] for r in range(n) if self.state[r] == "new"), default=math.inf)
                if nxt == math.inf:
                    raise RuntimeError("stepped engine: no phase runs and no app is left to start")
                k = max(k + 1, math.ceil(nxt / dt - _TOL))
        self.rec.events = steps
        return self.rec
