"""The time-stepped engine: time advances in fixed increments dt (carretero2020 §6.2.1).

At every step boundary t = k*dt: phases whose work ran out during the last
step end (at t), apps start their next phase, packs whose apps all ended let
the next pack start, and every I/O node dispatches.  Then each running phase
progresses by one step: a compute phase by dt seconds, an exclusive transfer
by b*dt units, a shared transfer by (b/k)*dt units; under another sharing policy a transfer
moves b*f(k)*share*dt units, its share the policy's answer when the transfers moving on its I/O
node last changed.

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
from iolab.middleware.policies.io_guard import io_policy
from iolab.middleware.policies.io_order import Stream
from iolab.middleware.policies.io_driver import IODriver
from iolab.middleware.policies.io_kernel import IOKernel

from iolab.sim.io.recorder import Recorder
from iolab.sim.io.scenario import Scenario

_TOL = 1e-9


class SteppedEngine:
    """The fixed-step clock around one :class:`~iolab.middleware.policies.io_kernel.IOKernel`
    (``kernel``: the apps' phases, requests, grants, pack turns and strict mode's checker): the
    step grid and each running phase's work left.  What happens at a step's instant is the driver's
    (:class:`~iolab.middleware.policies.io_driver.IODriver`); this engine is its effectors."""

    def __init__(self, scenario: Scenario, policy: str, dt: float, rows: bool = True,
                 strict: bool | None = None):
        if dt <= 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        self.sc = scenario
        self.dt = dt
        self.policy = io_policy(policy, rate=scenario.bandwidth, law=scenario.law)
        self.rec = Recorder(scenario, rows)
        self.kernel = k = IOKernel(scenario.apps, self.policy, scenario.io_nodes, scenario.plan.nodes,
                                   scenario.plan.packed, strict=strict_default(strict), slack=_TOL * dt,
                                   launch=scenario.launch, gap=scenario.gap, exit=scenario.exit, record=self.rec)
        self.rec.start, self.rec.end = k.start, k.end  # the trace's starts and ends are the kernel's
        self.weighted = k.allows.asks_shares  # a sharing asked its shares (weighted), else 1/k or exclusive
        n = len(scenario.apps)
        self.left = [0.0] * n  # remaining seconds (compute) or units (I/O) of the current phase
        self.fixed_left = [0.0] * n  # seconds of a granted transfer's fixed cost still to pay
        self.state = ["new"] * n  # new, compute, wait, io, delay, done
        self.start_at = [math.inf] * n  # when each app may start
        self.amount = [0.0] * n  # what the current transfer moves in all (its volume, jitter included)
        self.shares: dict[int, tuple[tuple, list[float]]] = {}  # node -> (moving transfers, their shares)
        self.driver = IODriver(k, self)  # what happens at an instant; this engine is its effectors

    # -- the effectors (:class:`~iolab.middleware.policies.io_driver.AppEffects`) --------
    def due(self, ranks: list[int], t: float) -> None:
        for r in ranks:
            self.start_at[r] = self.kernel.due(r)

    def compute(self, rank: int, phase: int, t: float) -> None:
        self.left[rank] = self.sc.apps[rank].amounts[phase] * self.sc.factor(rank, phase)
        self.state[rank] = "compute"
        if self.left[rank] <= _TOL:  # empty compute phase ends at once
            self.driver.compute_done(rank, t)

    def asked(self, rank: int, phase: int, t: float) -> None:
        self.left[rank] = self.amount[rank] = self.sc.apps[rank].amounts[phase] * self.sc.factor(rank, phase)
        self.state[rank] = "wait"

    def delay(self, rank: int, seconds: float, t: float) -> None:
        self.state[rank], self.left[rank] = "delay", seconds

    def ended(self, rank: int, t: float) -> None:
        self.state[rank] = "done"

    def granted(self, node: int, granted: list, t: float) -> None:
        for req in granted:
            self.state[req.rank] = "io"
            self.fixed_left[req.rank] = self.sc.io_fixed

    def _shares(self, node: int, moving: list[int], t: float) -> list[float]:
        """The policy's shares of the transfers ``moving`` on ``node`` (in the order they were granted: the
        arbiter's), asked again only when that set of transfers changed since the last step."""
        k, apps = self.kernel, self.sc.apps
        key = tuple((r, k.idx[r]) for r in moving)
        kept = self.shares.get(node)
        if kept is not None and kept[0] == key:
            return kept[1]
        streams = []
        for r in moving:
            app_id, job, rank, nodes, user = self.sc.stream_fields(r)
            volume = apps[r].amounts[k.idx[r]]
            done = 1.0 - max(self.left[r], 0.0) / self.amount[r] if self.amount[r] > 0 else 1.0
            streams.append(Stream(app_id, job, rank, nodes, volume, volume * done, k.grant_time[r], user))
        shares = list(self.policy.shares(streams, t))
        self.shares[node] = (key, shares)
        return shares

    def run(self) -> Recorder:
        sc, dt, kernel, drv = self.sc, self.dt, self.kernel, self.driver
        drv.open(0.0)
        n = len(sc.apps)
        k = 0
        steps = 0
        while True:
            t = k * dt
            # 1. phases that ran out during the last step end now, in rank order.
            for r in range(n):
                if self.state[r] in ("compute", "io", "delay") and self.left[r] <= _TOL * max(1.0, dt):
                    if self.state[r] == "delay":
                        drv.next(r, t, wait=False)
                    elif self.state[r] == "compute":
                        drv.compute_done(r, t)
                    else:
                        drv.io_done(r, t)
            # 2. apps whose start time has come start (a pack opened in 1 may start now).
            for r in range(n):
                if self.state[r] == "new" and self.start_at[r] <= t + _TOL * dt:
                    drv.start(r, t)
            # 3. every I/O node with news (a request, a release) dispatches; the others would
            #    grant nothing (their waiting requests and transfers are those of their last dispatch).
            drv.dispatch(t)
            if all(s == "done" for s in self.state):
                drv.close(t)
                break
            # 4. progress by one step.
            active = False
            fixed_left = self.fixed_left
            for arb in kernel.arbiters:
                if arb.active:
                    moving = [req.rank for req in arb.active.values() if fixed_left[req.rank] <= _TOL * dt]
                    for req in arb.active.values():
                        if fixed_left[req.rank] > _TOL * dt:
                            fixed_left[req.rank] -= dt
                    if moving and self.weighted:  # b x f(ns) split as the policy says
                        step = sc.bandwidth * sc.law.factor(len(moving)) * dt
                        for r, share in zip(moving, self._shares(arb.node, moving, t)):
                            self.left[r] -= step * share
                    elif moving:
                        ns = 1 if kernel.exclusive else len(moving)  # shared: b x f(ns) split ns ways
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
