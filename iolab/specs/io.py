"""The I/O experiment: platform of I/O nodes, periodic applications, policies.

This is carretero2020's model (§4): R I/O nodes, each with bandwidth ``b``
shared by the ``P`` compute nodes of its partition; applications made of
non-overlapping compute phases (a duration) and I/O phases (a volume of data
units transferred at ``b`` units per second when alone).

A minimal spec::

    platform: {io_nodes: 1, nodes_per_io_node: 64, bandwidth: 1.0}
    policy: fifo
    apps:
      - {id: A, nodes: 16, release: 0, iterations: 2, compute: 10, io_volume: 5}
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from iolab.names import MAX_NAME, NAME_PATTERN
from iolab.specs.base import StrictModel, finite_sum, raise_if
from iolab.specs.emulation import EmulatorSettings
from iolab.specs.interference import INTERFERENCE_HELP, Interference
from iolab.specs.io_policies import (  # noqa: F401 (re-exported)
    IO_POLICIES, LIST_POLICIES, IOPolicyChoice, IOPolicyName, io_policy_value, normalise_policy,
)


AppId = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
]
SpecName = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=NAME_PATTERN,
                                description="the experiment's name (becomes part of file names)")]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class IOOverheads(StrictModel):
    """Costs of a real run the simulator adds (spec seconds; all 0 by default, carretero2020's
    model).  Measured by ``iolab validate`` from a real run's trace (docs/validation.md) and
    settable by hand; the emulator ignores them (it pays the real ones)."""

    io_phase: NonNegFloat = Field(
        0.0, le=1e9, description="fixed cost of every granted transfer: the I/O node is held this long "
                                 "before the bytes move (a shared transfer joins the link after it)")
    launch: NonNegFloat = Field(0.0, le=1e9, description="from an app's start to the start of its first phase")
    gap: NonNegFloat = Field(0.0, le=1e9, description="from the end of one phase of an app to the start of its "
                                                      "next (an I/O phase starts when its request reaches the arbiter)")
    exit: NonNegFloat = Field(0.0, le=1e9, description="from the end of an app's last phase to the app's end")

    @property
    def any(self) -> bool:
        return bool(self.io_phase or self.launch or self.gap or self.exit)


class Platform(StrictModel):
    """R I/O nodes, each serving a partition of P compute nodes at bandwidth b."""

    io_nodes: int = Field(1, ge=1, le=100_000, description="R: number of I/O nodes")
    nodes_per_io_node: int = Field(
        ..., ge=1, le=10_000_000, description="P: compute nodes in the partition behind each I/O node"
    )
    bandwidth: PosFloat = Field(
        ..., description="b: data units per second one I/O node transfers"
    )
    overheads: IOOverheads = Field(default_factory=IOOverheads,
                                   description="costs of a real transfer the simulator models (spec s)")
    interference: Interference = Field(None, description="each I/O node's law under `shared` (k = the apps "
                                                         "transferring on it at once): " + INTERFERENCE_HELP)

    @property
    def compute_nodes(self) -> int:
        return self.io_nodes * self.nodes_per_io_node


class Phase(StrictModel):
    """One phase: ``{compute: seconds}``, ``{write: units}`` or ``{read: units}``."""

    compute: NonNegFloat | None = None
    write: NonNegFloat | None = None
    read: NonNegFloat | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "Phase":
        given = [k for k in ("compute", "write", "read") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "a phase has exactly one of compute (seconds), write or read (data units); "
                f"got {given or 'none'}"
            )
        return self

    @property
    def kind(self) -> str:
        for k in ("compute", "write", "read"):
            if getattr(self, k) is not None:
                return k
        raise AssertionError("unreachable")

    @property
    def amount(self) -> float:
        return float(getattr(self, self.kind))


class App(StrictModel):
    """An application: Q nodes, a release time and its phases.

    Either ``phases`` (an explicit list) or the periodic form ``iterations``
    x (``compute`` seconds, then an I/O phase of ``io_volume`` units).
    """

    id: AppId
    nodes: int = Field(..., ge=1, le=10_000_000, description="Q: compute nodes")
    release: NonNegFloat = Field(0.0, description="r: earliest start, seconds")
    phases: list[Phase] | None = Field(None, min_length=1)
    iterations: int | None = Field(None, ge=1, le=10_000_000)
    compute: NonNegFloat | None = Field(None, description="w: seconds per compute phase")
    io_volume: NonNegFloat | None = Field(None, description="v: data units per I/O phase")
    io_kind: Literal["write", "read"] = "write"
    io_node: int | None = Field(
        None, ge=0, description="I/O node to run on when the mapping is 'none'"
    )

    @model_validator(mode="after")
    def _one_form(self) -> "App":
        periodic = [self.iterations, self.compute, self.io_volume]
        if self.phases is not None:
            if any(x is not None for x in periodic):
                raise ValueError(
                    "give either phases or the periodic form (iterations, compute, io_volume), not both"
                )
        else:
            missing = [
                n for n, x in zip(("iterations", "compute", "io_volume"), periodic) if x is None
            ]
            if missing:
                raise ValueError(
                    "missing " + ", ".join(missing)
                    + " (an app needs phases, or iterations + compute + io_volume)"
                )
        return self

    def phase_list(self) -> list[tuple[str, float]]:
        """The phases in order as ``(kind, amount)``; kind is compute/write/read."""
        return list(zip(*self.phase_columns()))

    def phase_columns(self) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """The phases as two columns, kinds and amounts (what :meth:`phase_list` zips);
        the periodic form repeats its pattern without a loop (thousands of phases)."""
        if self.phases is not None:
            return tuple(p.kind for p in self.phases), tuple(p.amount for p in self.phases)
        n = self.iterations or 0
        return ("compute", self.io_kind) * n, (float(self.compute), float(self.io_volume)) * n

    def compute_time(self) -> float:
        if self.phases is None:
            return (self.iterations or 0) * float(self.compute or 0.0)
        return sum(a for k, a in self.phase_list() if k == "compute")

    def io_total(self) -> float:
        if self.phases is None:
            return (self.iterations or 0) * float(self.io_volume or 0.0)
        return sum(a for k, a in self.phase_list() if k != "compute")

    def min_time(self, bandwidth: float) -> float:
        """T_i(b), carretero2020 Eq. 1: the contention-free execution time."""
        return self.compute_time() + self.io_total() / bandwidth


class Mapping(StrictModel):
    """How apps are mapped onto I/O nodes (carretero2020 §5.2, §6.2.4).

    ``none``: every app runs from its release on the I/O node it names
    (``io_node``, default 0).  ``first-fit``: Make-Pack with S = infinity.
    ``make-pack``: Algorithm 1 with sensibility S, packs placed on the I/O nodes by LPT.
    """

    kind: Literal["none", "first-fit", "make-pack"] = "none"
    sensibility: PosFloat | Literal["alpha"] = Field(
        1.0,
        description="S of Algorithm 1 (make-pack only); 'alpha' uses the workload's I/O load (Eq. 6)",
    )

    @field_validator("kind", mode="before")
    @classmethod
    def _norm(cls, v: object) -> object:
        return normalise_policy(v)


class Jitter(StrictModel):
    """Relative standard deviation of phase durations around their nominal value.

    Real runs are not exactly periodic (docs/validation.md measured ~1 % on
    compute phases and ~4 % on transfers); a deterministic simulator can lock
    into a starvation that this noise breaks.  Drawn once per phase from the
    experiment's ``seed``; 0 (the default) keeps every duration nominal.
    """

    compute: float = Field(0.0, ge=0, le=0.5)
    io: float = Field(0.0, ge=0, le=0.5)

    @property
    def active(self) -> bool:
        return self.compute > 0 or self.io > 0


class SimSettings(StrictModel):
    mode: Literal["event", "step"] = "event"
    dt: PosFloat = Field(1.0, description="step of the time-stepped mode, seconds")
    jitter: Jitter = Jitter()


class IOExperiment(StrictModel):
    """An I/O experiment: the platform, the apps and the policies to apply."""

    kind: Literal["io"] = "io"
    name: SpecName = "experiment"
    platform: Platform
    policy: IOPolicyChoice = Field("fifo", description="the I/O nodes' policy: one of carretero2020's eight "
                                   "list orders, shared, or your own (kind: python; docs/policies.md)")
    mapping: Mapping = Mapping()
    seed: int = Field(0, ge=0, le=2**63 - 1)
    sim: SimSettings = SimSettings()
    emulator: EmulatorSettings = EmulatorSettings()
    apps: list[App] = Field(..., min_length=1)

    @field_validator("policy", mode="before")
    @classmethod
    def _norm_policy(cls, v: object) -> object:
        return io_policy_value(v)

    @field_validator("mapping", mode="before")
    @classmethod
    def _mapping_shorthand(cls, v: object) -> object:
        # ``mapping: make-pack`` is short for ``mapping: {kind: make-pack}``.
        if isinstance(v, str):
            return {"kind": v}
        return v

    @model_validator(mode="after")
    def _cross_checks(self) -> "IOExperiment":
        p = self.platform
        problems: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        for i, app in enumerate(self.apps):
            if app.id in seen:
                problems.append((f"apps[{i}].id", f"duplicate id {app.id!r} (also apps[{seen[app.id]}])"))
            seen.setdefault(app.id, i)
            if app.nodes > p.nodes_per_io_node:
                problems.append((
                    f"apps[{i}].nodes",
                    f"app {app.id!r} asks for {app.nodes} nodes but a partition "
                    f"(platform.nodes_per_io_node) has only {p.nodes_per_io_node}",
                ))
            if app.io_node is not None and app.io_node >= p.io_nodes:
                problems.append((
                    f"apps[{i}].io_node",
                    f"I/O node {app.io_node} does not exist (platform.io_nodes = {p.io_nodes})",
                ))
        if self.mapping.kind == "none":
            used: dict[int, int] = {}
            for app in self.apps:
                used[app.io_node or 0] = used.get(app.io_node or 0, 0) + app.nodes
            for node, n in sorted(used.items()):
                if n > p.nodes_per_io_node:
                    problems.append((
                        "apps",
                        f"with mapping 'none' the apps on I/O node {node} need {n} nodes at once "
                        f"but its partition has {p.nodes_per_io_node}; use mapping first-fit or make-pack",
                    ))
        # values whose results overflow: even one after the other the apps must end in finite time
        terms: list[tuple[str, float]] = [(f"apps[{i}].release", a.release) for i, a in enumerate(self.apps)]
        for i, a in enumerate(self.apps):
            io = a.io_total() / p.bandwidth
            own = f"apps[{i}].compute" if a.phases is None else f"apps[{i}].phases"
            vol = f"apps[{i}].io_volume" if a.phases is None else f"apps[{i}].phases"
            terms += [(own, a.compute_time()), ("platform.bandwidth" if a.io_total() <= 1e15 else vol, io)]
            o = p.overheads
            if o.any:
                kinds, amounts = a.phase_columns()
                n_io = sum(k != "compute" and v > 0 for k, v in zip(kinds, amounts))
                terms.append(("platform.overheads", o.io_phase * n_io + o.launch + o.gap * len(kinds) + o.exit))
        problems += finite_sum(terms, "the run's times would overflow")
        if self.sim.mode == "step" and not problems:
            total = sum(a.min_time(p.bandwidth) for a in self.apps)
            if total / self.sim.dt > 5e8:
                problems.append(("sim.dt", f"step {self.sim.dt} s is too small for a workload of {total:.3g} s"))
        raise_if(problems)
        return self

    def app_index(self) -> dict[str, int]:
        return {a.id: i for i, a in enumerate(self.apps)}

    def io_load(self) -> float:
        """alpha, carretero2020 Eq. 6: P * sum(v/b) / sum(Q_i * T_i(b))."""
        b = self.platform.bandwidth
        num = self.platform.nodes_per_io_node * sum(a.io_total() / b for a in self.apps)
        den = sum(a.nodes * a.min_time(b) for a in self.apps)
        return num / den if den > 0 else 0.0

    def resolved_sensibility(self) -> float:
        if self.mapping.kind == "first-fit":
            return math.inf
        s = self.mapping.sensibility
        return self.io_load() if s == "alpha" else float(s)

