"""A compiled experiment: what both simulation modes execute.

Phases are flattened into per-app lists of kinds and amounts, and the plan
(I/O node and pack of every app) is fixed, so the engines only move time.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        return cls(apps, plan, spec.platform.io_nodes, spec.platform.nodes_per_io_node, b)

    def packs(self) -> list[tuple[int, list[int]]]:
        """(io_node, ranks) of every pack, in global pack-id order."""
        out = []
        for node, seq in enumerate(self.plan.nodes):
            for pack in seq:
                out.append((node, list(pack)))
        return out
