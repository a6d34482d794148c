"""From an experiment to a plan: which app runs on which I/O node, in which pack.

Both runtimes start from the same plan, computed by the mapping policies of
``iolab.middleware.policies.mapping``:

- mapping ``none``: each app runs on the I/O node it names, from its release;
- ``first-fit`` / ``make-pack``: Make-Pack (carretero2020 Alg. 1) builds packs;
  LPT places them on the I/O nodes; the packs of one I/O node run one after
  the other and the apps of a pack start together, once the previous pack
  has ended and every app of the pack is released.
"""

from __future__ import annotations

from dataclasses import dataclass

from iolab.specs.io import IOExperiment

from iolab.middleware.policies.mapping import Pack, PackJob, lpt_assign, make_pack


@dataclass(frozen=True)
class Plan:
    """``nodes[io_node]`` is the sequence of packs on that I/O node; a pack is a
    list of app ranks (positions in ``spec.apps``).  ``packed`` says whether
    packs are barriers (make-pack / first-fit) or not (mapping none)."""

    packed: bool
    nodes: tuple[tuple[tuple[int, ...], ...], ...]
    sensibility: float

    def location(self) -> dict[int, tuple[int, int]]:
        """rank -> (io_node, pack id); pack ids are global, in plan order."""
        out: dict[int, tuple[int, int]] = {}
        pid = 0
        for node, packs in enumerate(self.nodes):
            for pack in packs:
                for rank in pack:
                    out[rank] = (node, pid)
                pid += 1
        return out

    @property
    def pack_count(self) -> int:
        return sum(len(p) for p in self.nodes)


def make_plan(spec: IOExperiment) -> Plan:
    p = spec.platform
    if spec.mapping.kind == "none":
        per_node: list[list[int]] = [[] for _ in range(p.io_nodes)]
        for rank, app in enumerate(spec.apps):
            per_node[app.io_node or 0].append(rank)
        return Plan(False, tuple((tuple(r),) if r else () for r in per_node), float("nan"))
    s = spec.resolved_sensibility()
    packs = make_packs(spec, s)
    return packed_plan(spec, packs, lpt_assign([pk.length for pk in packs], p.io_nodes), s)


def make_packs(spec: IOExperiment, sensibility: float) -> list[Pack]:
    """Make-Pack (carretero2020 Alg. 1) over the spec's apps with sensibility S."""
    b = spec.platform.bandwidth
    jobs = [PackJob(a.id, a.nodes, a.io_total(), a.min_time(b)) for a in spec.apps]
    return make_pack(jobs, spec.platform.nodes_per_io_node, b, sensibility)


def packed_plan(spec: IOExperiment, packs: list[Pack], placement: list[list[int]], sensibility: float) -> Plan:
    """The plan that runs ``packs`` on the I/O nodes as ``placement`` says
    (``placement[node]`` = pack indices, in execution order)."""
    index = spec.app_index()
    nodes = tuple(tuple(tuple(index[j] for j in packs[k].ids) for k in seq) for seq in placement)
    return Plan(True, nodes, sensibility)
