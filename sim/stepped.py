"""The time-stepped engine: time advances in fixed increments dt (carretero2020 §6.2.1).

At every step boundary t = k*dt: phases whose work ran out during the last
step end (at t), apps start their next phase, packs whose apps all ended let
the next pack start, and every I/O node dispatches.  Then each running phase
progresses by one step: a compute phase by dt seconds, an exclusive transfer
by b*dt units, a shared transfer by (b/k)*dt units.

So every phase lasts a whole number of steps: a phase boundary is rounded up
to the next multiple of dt.  When every duration is a multiple of dt the
result equals the event engine's exactly; otherwise each phase can end up
to one step late, and the gap to the event engine shrinks with dt.
"""

from __future__ import annotations

import math

from iolab.middleware.policies import IONodeArbiter, IORequest, get_policy

from .recorder import Recorder
from .scenario import COMPUTE, Scenario

_TOL = 1e-9


class SteppedEngine:
    def __init__(self, scenario: Scenario, policy: str, dt: float, rows: bool = True):
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
        self.state = ["new"] * n  # new, compute, wait, io, done
        self.done = [0.0] * n
        self.io_recv = [0.0] * n
        self.phase_start = [0.0] * n
        self.req_time = [0.0] * n
        self.grant_time = [0.0] * n
        self.start_at = [math.inf] * n  # when each app may start
        self._pack_queue = [list(seq) for seq in scenario.plan.nodes]
        self._pack_left = [0] * scenario.io_nodes

    def _open_pack(self, node: int, t: float) -> None:
        if not self._pack_queue[node]:
            return
        ranks = self._pack_queue[node].pop(0)
        at = max([t] + [self.sc.apps[r].release for r in ranks])
        self._pack_left[node] = len(ranks)
        for r in ranks:
            self.start_at[r] = at

    def _begin_next(self, rank: int, t: float) -> None:
        app = self.sc.apps[rank]
        i = self.idx[rank] + 1
        while i < len(app.kinds):
            if app.kinds[i] == COMPUTE:
                self.idx[rank], self.left[rank] = i, app.amounts[i]
                self.state[rank], self.phase_start[rank] = "compute", t
                if self.left[rank] <= _TOL:  # empty compute phase ends at once
                    self._end_phase(rank, t)
                return
            if app.amounts[i] > 0:
                self.idx[rank], self.left[rank] = i, app.amounts[i] * app.factor(i)
                self.state[rank], self.req_time[rank] = "wait", t
                self.arbiters[app.io_node].submit(IORequest(
                    app.id, rank, t, app.amounts[i], app.amounts[i] / self.sc.bandwidth,
                    app.min_time - self.done[rank], app.min_time, self.rec.start[rank],
                    self.done[rank], self.io_recv[rank]))
                return
            self.rec.phase(rank, i, app.kinds[i], t, t, 0.0)
            i += 1
        self.idx[rank], self.state[rank] = i, "done"
        self.rec.end[rank] = t
        if self.sc.plan.packed:
            self._pack_left[app.io_node] -= 1
            if self._pack_left[app.io_node] == 0:
                self._open_pack(app.io_node, t)

    def _end_phase(self, rank: int, t: float) -> None:
        app = self.sc.apps[rank]
        i = self.idx[rank]
        if self.state[rank] == "compute":
            self.rec.phase(rank, i, COMPUTE, self.phase_start[rank], t, 0.0)
            self.done[rank] += app.amounts[i]
        else:
            self.rec.phase(rank, i, app.kinds[i], self.grant_time[rank], t, app.amounts[i])
            self.rec.grant(rank, i, self.req_time[rank], self.grant_time[rank], t)
            self.arbiters[app.io_node].release(app.id)
            self.done[rank] += app.amounts[i] / self.sc.bandwidth
            self.io_recv[rank] += t - self.grant_time[rank]
        self._begin_next(rank, t)

    def run(self) -> Recorder:
        sc, dt = self.sc, self.dt
        for node, seq in enumerate(sc.plan.nodes):
            if sc.plan.packed:
                self._open_pack(node, 0.0)
            else:
                self._pack_queue[node] = []
                for pack in seq:
                    for r in pack:
                        self.start_at[r] = sc.apps[r].release
        n = len(sc.apps)
        k = 0
        steps = 0
        while True:
            t = k * dt
            # 1. phases that ran out during the last step end now, in rank order.
            for r in range(n):
                if self.state[r] in ("compute", "io") and self.left[r] <= _TOL * max(1.0, dt):
                    self._end_phase(r, t)
            # 2. apps whose start time has come start (a pack opened in 1 may start now).
            for r in range(n):
                if self.state[r] == "new" and self.start_at[r] <= t + _TOL * dt:
                    self.rec.start[r] = t
                    self._begin_next(r, t)
            # 3. every I/O node dispatches.
            for arb in self.arbiters:
                for req in arb.dispatch(t):
                    self.state[req.rank], self.grant_time[req.rank] = "io", t
            if all(s == "done" for s in self.state):
                break
            # 4. progress by one step.
            active = False
            for node, arb in enumerate(self.arbiters):
                if arb.active:
                    share = sc.bandwidth * dt / (1 if arb.policy.exclusive else len(arb.active))
                    for req in arb.active.values():
                        self.left[req.rank] -= share
                    active = True
            for r in range(n):
                if self.state[r] == "compute":
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
