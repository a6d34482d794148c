"""A compiled experiment: what both simulation modes execute.

Phases are flattened into per-app lists of kinds and amounts, and the plan
(I/O node and pack of every app) is fixed, so the engines only move time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iolab.plan import Plan, make_plan
from iolab.specs.io import IOExperiment

COMPUTE, WRITE, READ = 0, 1, 2
KIND_NAMES = ("compute", "write", "read")
_KIND = {"compute": COMPUTE, "write": WRITE, "read": READ}


@dataclass
class SimApp:
    rank: int
    id: str
    nodes: int
    release: float
    kinds: list[int]
    amounts: list[float]
    min_time: float
    compute_time: float
    io_volume: float
    io_node: int
    pack: int
    # duration factor of each phase (transfers take ``amount / b * factor``); compute
    # jitter is applied to the compute amounts themselves.  All 1.0 without jitter.
    factors: list[float] = field(default_factory=list)

    def factor(self, i: int) -> float:
        return self.factors[i] if self.factors else 1.0


@dataclass
class Scenario:
    apps: list[SimApp]
    plan: Plan
    io_nodes: int
    nodes_per_io_node: int
    bandwidth: float

    @classmethod
    def from_spec(cls, spec: IOExperiment, plan: Plan | None = None) -> "Scenario":
        plan = plan or make_plan(spec)
        where = plan.location()
        b = spec.platform.bandwidth
        apps = []
        for rank, a in enumerate(spec.apps):
            phases = a.phase_list()
            node, pack = where[rank]
            apps.append(SimApp(
                rank=rank, id=a.id, nodes=a.nodes, release=a.release,
                kinds=[_KIND[k] for k, _ in phases], amounts=[float(x) for _, x in phases],
                min_time=a.min_time(b), compute_time=a.compute_time(), io_volume=a.io_total(),
                io_node=node, pack=pack,
            ))
        if spec.sim.jitter.active:
            _apply_jitter(apps, spec.sim.jitter.compute, spec.sim.jitter.io, spec.seed)
        return cls(apps, plan, spec.platform.io_nodes, spec.platform.nodes_per_io_node, b)

    def packs(self) -> list[tuple[int, list[int]]]:
        """(io_node, ranks) of every pack, in global pack-id order."""
        out = []
        for node, seq in enumerate(self.plan.nodes):
            for pack in seq:
                out.append((node, list(pack)))
        return out


def _apply_jitter(apps: list[SimApp], compute_sd: float, io_sd: float, seed: int) -> None:
    """Draw one factor per phase, app by app in rank order (seeded: same seed, same run).

    Compute amounts are scaled in place (they are durations); transfers get a
    duration factor, their volume stays nominal (the trace records what the app
    moved, the policies see what the app states).  Factors are kept >= 0.05.
    """
    rng = np.random.default_rng([seed, 0x6A17])
    for a in apps:
        z = rng.standard_normal(len(a.kinds))
        _scale(a, [1.0 + (compute_sd if k == COMPUTE else io_sd) * float(z[i]) for i, k in enumerate(a.kinds)])


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
        _scale(a, [float(picks[k == COMPUTE][i]) for i, k in enumerate(a.kinds)])


def _scale(a: SimApp, factors: list[float]) -> None:
    """Apply one duration factor per phase (>= 0.05): compute amounts in place, transfers as factors."""
    a.factors = [1.0] * len(a.kinds)
    for i, k in enumerate(a.kinds):
        f = max(0.05, factors[i])
        if k == COMPUTE:
            a.amounts[i] *= f
        else:
            a.factors[i] = f
