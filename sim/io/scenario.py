"""A compiled experiment: what both simulation modes execute.

The apps are the I/O kernel's :class:`~iolab.middleware.policies.io_apps.IOApp` (the
same view the Ray arbiter has), placed by the plan (I/O node and pack of every app),
so the engines only move time.  Jitter adds one duration factor per phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iolab.middleware.policies.interference import NO_INTERFERENCE, InterferenceLaw, law_of
from iolab.middleware.policies.io_apps import COMPUTE, IOApp, PackTurns, io_apps
from iolab.middleware.policies.plan import Plan, make_plan
from iolab.specs.io import IOExperiment


@dataclass
class Scenario:
    apps: list[IOApp]
    plan: Plan
    io_nodes: int
    nodes_per_io_node: int
    bandwidth: float
    # duration factor of every phase of every app (a phase lasts its contention-free
    # time times its factor); empty lists without jitter.  Apps and policies keep the
    # nominal amounts: the trace records what the app moved, the policies see what it states.
    factors: list[list[float]] = field(default_factory=list)
    # platform.overheads (not scaled by jitter): io_fixed, the seconds every granted transfer
    # holds its I/O node before its bytes move (a shared transfer joins its link after them);
    # launch, from an app's start to its first phase; gap, from the end of a phase to the start
    # of the app's next (an I/O phase starts with its request); exit, from the last phase's end
    # to the app's end
    io_fixed: float = 0.0
    launch: float = 0.0
    gap: float = 0.0
    exit: float = 0.0
    # platform.interference: each I/O node's aggregate rate with k shared transfers is b x law.factor(k)
    law: InterferenceLaw = NO_INTERFERENCE

    @classmethod
    def from_spec(cls, spec: IOExperiment, plan: Plan | None = None) -> "Scenario":
        plan = plan or make_plan(spec)
        apps = io_apps(spec, plan)
        sc = cls(apps, plan, spec.platform.io_nodes, spec.platform.nodes_per_io_node, spec.platform.bandwidth,
                 [[] for _ in apps])
        o = spec.platform.overheads
        sc.io_fixed, sc.launch, sc.gap, sc.exit = o.io_phase, o.launch, o.gap, o.exit
        sc.law = law_of(spec.platform.interference)
        if spec.sim.jitter.active:
            _apply_jitter(sc, spec.sim.jitter.compute, spec.sim.jitter.io, spec.seed)
        return sc

    def factor(self, rank: int, i: int) -> float:
        f = self.factors[rank]
        return f[i] if f else 1.0

    def stream_fields(self, rank: int) -> tuple:
        """``(id, job, rank, nodes, user)`` of app ``rank``'s transfers as a sharing policy sees them
        (:class:`~iolab.middleware.policies.io_order.Stream`): an app is its own job; apps have no user."""
        a = self.apps[rank]
        return (a.id, a.id, rank, a.nodes, "")

    def turns(self) -> PackTurns:
        """Fresh pack turns of this plan (one per run)."""
        return PackTurns(self.plan.nodes, [a.release for a in self.apps], self.plan.packed)

    def packs(self) -> list[tuple[int, list[int]]]:
        """(io_node, ranks) of every pack, in global pack-id order."""
        out = []
        for node, seq in enumerate(self.plan.nodes):
            for pack in seq:
                out.append((node, list(pack)))
        return out


def _apply_jitter(scenario: Scenario, compute_sd: float, io_sd: float, seed: int) -> None:
    """Draw one duration factor per phase, app by app in rank order (seeded: same seed,
    same run), kept >= 0.05."""
    rng = np.random.default_rng([seed, 0x6A17])
    for a in scenario.apps:
        z = rng.standard_normal(len(a.kinds))
        scenario.factors[a.rank] = _floor([1.0 + (compute_sd if k == COMPUTE else io_sd) * float(z[i])
                                           for i, k in enumerate(a.kinds)])


def resample_jitter(scenario: "Scenario", compute_ratios, io_ratios, seed: int) -> None:
    """Empirical jitter: every phase's duration factor drawn, with replacement, from measured
    ratios (real duration / nominal duration, e.g. of an emulated run); in place, seeded.

    Keeps what a normal law loses: real compute phases in ``duration`` mode never end early
    but sometimes late, and transfers have tails (docs/validation.md).  An empty list of
    ratios leaves that kind of phase nominal.
    """
    rng = np.random.default_rng([seed, 0x5A3B])
    pools = {True: np.asarray(compute_ratios, dtype=float), False: np.asarray(io_ratios, dtype=float)}
    for a in scenario.apps:
        picks = {c: (pool[rng.integers(0, pool.size, len(a.kinds))] if pool.size else np.ones(len(a.kinds)))
                 for c, pool in pools.items()}
        scenario.factors[a.rank] = _floor([float(picks[k == COMPUTE][i]) for i, k in enumerate(a.kinds)])


def _floor(factors: list[float]) -> list[float]:
    return [max(0.05, f) for f in factors]
