"""The campaign spec: a base experiment and the axes a study sweeps over.

A campaign names a base experiment (inline, or a spec file relative to the
campaign file) and axes; its runs are the cartesian product of the axes.  An I/O
base (``kind: io``, the default)::

    kind: campaign
    name: quick
    base: {platform: {io_nodes: 1, nodes_per_io_node: 64, bandwidth: 1.0}, mapping: first-fit}
    axes:
      policies: [fifo, stretch, shared]          # or "all" (8 list policies + shared) / "list"
      workloads:
        - ../carretero-table1.yaml               # a spec file: its apps and platform
        - {generate: carretero, alpha: [0.5, 4], count: 2, params: {iterations: [20, 50]}}
      seeds: [1, 2]
      platform: {io_nodes: [1, 3]}
      mappings: [first-fit, {kind: make-pack, sensibility: 1}]

Precedence, lowest first: the base, then what the workload brings (``apps``
and ``platform``), then the axes (policy, mapping, seed, platform sizes).

A batch base (``kind: batch``) sweeps its seeds and its schedulers (each a name or a
scheduler mapping such as ``{kind: random-tier, p: 0.4}``)::

    kind: campaign
    name: schedulers
    base: ../kth-sp2-easy.yaml
    axes: {schedulers: [fcfs, easy, sas], seeds: [1, 2]}
Only the shape of the file is checked here; :mod:`.expand` resolves the
files, generates the workloads and validates every run's experiment, so that
every problem is reported (path + reason) before anything runs.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError, field_validator, model_validator

from iolab.workloads.carretero import CarreteroParams
from iolab.specs.base import FieldProblems, StrictModel, problems_of, raise_if
from iolab.specs.batch import SchedulerSpec
from iolab.specs.io import IO_POLICIES, LIST_POLICIES, Mapping, normalise_policy
from iolab.specs.io_policies import BuiltinIOPolicy
from iolab.specs.load import MAX_APPS

Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PosInt = Annotated[int, Field(ge=1, le=10_000_000)]
Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]
Range = tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], Annotated[float, Field(ge=0, allow_inf_nan=False)]]
IntRange = tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]]

RUNTIMES: tuple[str, ...] = ("sim", "emulate")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def _as_list(v: object) -> object:
    """A scalar axis value is a one-element axis."""
    return [v] if v is not None and not isinstance(v, (list, tuple)) else v


def _duplicates(name: str, values: list) -> list[tuple[str, str]]:
    seen: dict[str, int] = {}
    out = []
    for i, v in enumerate(values):
        key = repr(v.model_dump() if hasattr(v, "model_dump") else v)
        if key in seen:
            out.append((f"{name}[{i}]", f"duplicate of {name}[{seen[key]}]"))
        seen.setdefault(key, i)
    return out


class CarreteroParamsSpec(StrictModel):
    """Overrides of :class:`iolab.workloads.carretero.CarreteroParams` (carretero2020 §6.2.2).

    ``nodes_per_io_node`` and ``bandwidth`` default to the run's platform.
    """

    nodes_per_io_node: PosInt | None = None
    bandwidth: PosFloat | None = None
    apps: IntRange | None = None
    iterations: IntRange | None = None
    compute: Range | None = None
    mu: Range | None = None
    sigma: Range | None = None
    load_bounds: Range | None = None

    @model_validator(mode="after")
    def _check(self) -> "CarreteroParamsSpec":
        problems = []
        for name in ("apps", "iterations", "compute", "load_bounds"):
            v = getattr(self, name)
            if v is not None and v[0] > v[1]:
                problems.append((name, f"need low <= high, got [{v[0]}, {v[1]}]"))
        if self.apps is not None and self.apps[0] < 1:
            problems.append(("apps", "a workload has at least one app"))
        if self.apps is not None and self.apps[1] > MAX_APPS:  # estimated before any workload is generated
            problems.append(("apps", f"up to {self.apps[1]} apps per generated workload, above the limit of "
                                     f"{MAX_APPS} apps of an I/O experiment (docs/specs.md, 'Limits')"))
        if self.iterations is not None and self.iterations[0] < 1:
            problems.append(("iterations", "an app has at least one iteration"))
        raise_if(problems)
        if self.nodes_per_io_node is not None:
            try:
                CarreteroParams(nodes_per_io_node=self.nodes_per_io_node)
            except ValueError as exc:
                raise_if([("nodes_per_io_node", str(exc))])
        return self

    def overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class GeneratedWorkload(StrictModel):
    """``count`` workloads per ``alpha`` (alpha_gen) from a generator, for every seed."""

    generate: Literal["carretero"]
    alpha: list[PosFloat] = Field(..., min_length=1)
    count: int = Field(1, ge=1, le=100_000, description="workloads per alpha and seed")
    params: CarreteroParamsSpec = CarreteroParamsSpec()
    label: Name | None = None

    _alpha_list = field_validator("alpha", mode="before")(classmethod(lambda cls, v: _as_list(v)))

    @model_validator(mode="after")
    def _unique(self) -> "GeneratedWorkload":
        raise_if(_duplicates("alpha", self.alpha))
        return self


class FileWorkload(StrictModel):
    """An experiment spec file (relative to the campaign file): its apps and platform."""

    spec: str = Field(..., min_length=1)
    label: Name | None = None


WorkloadEntry = Union[FileWorkload, GeneratedWorkload]


def _validate_workloads(v: object) -> object:
    """Dispatch by hand (``spec`` or ``generate``) so error paths read ``workloads[1].alpha[0]``."""
    v = _as_list(v)
    if not isinstance(v, list):
        return v
    out, problems = [], []
    for i, entry in enumerate(v):
        if isinstance(entry, str):
            entry = {"spec": entry}
        if isinstance(entry, StrictModel):
            out.append(entry)
            continue
        if not isinstance(entry, dict) or ("spec" in entry) == ("generate" in entry):
            problems.append((f"[{i}]", "a workload is a spec file path, {spec: PATH}, "
                                       "or {generate: carretero, alpha: [...], count: N}"))
            continue
        model = FileWorkload if "spec" in entry else GeneratedWorkload
        try:
            out.append(model.model_validate(entry))
        except ValidationError as err:
            problems += [(f"[{i}]" + (p if p.startswith("[") else "." + p), r) for p, r in problems_of(err)]
    raise_if(problems)
    return out


class PlatformAxes(StrictModel):
    """Platform sizes to sweep (carretero2020 §4: R, P, b)."""

    io_nodes: list[Annotated[int, Field(ge=1, le=100_000)]] | None = Field(None, min_length=1)
    nodes_per_io_node: list[PosInt] | None = Field(None, min_length=1)
    bandwidth: list[PosFloat] | None = Field(None, min_length=1)

    _lists = field_validator("io_nodes", "nodes_per_io_node", "bandwidth", mode="before")(
        classmethod(lambda cls, v: _as_list(v)))

    @model_validator(mode="after")
    def _unique(self) -> "PlatformAxes":
        raise_if([p for n in ("io_nodes", "nodes_per_io_node", "bandwidth")
                  for p in _duplicates(n, getattr(self, n) or [])])
        return self


class Axes(StrictModel):
    policies: list[BuiltinIOPolicy] | None = Field(None, min_length=1, description="built-in I/O policies: names "
                                                  "(fifo, shared, job-fair, ...) or {kind: tbf, rules: [...]}")
    workloads: list[WorkloadEntry] | None = Field(None, min_length=1)
    seeds: list[Seed] | None = Field(None, min_length=1)
    platform: PlatformAxes = PlatformAxes()
    mappings: list[Mapping] | None = Field(None, min_length=1)
    schedulers: list[SchedulerSpec] | None = Field(None, min_length=1, description="a batch base's schedulers")

    @field_validator("policies", mode="before")
    @classmethod
    def _policies(cls, v: object) -> object:
        if isinstance(v, str) and v.strip().lower() in ("all", "list"):
            return list(IO_POLICIES if v.strip().lower() == "all" else LIST_POLICIES)
        v = _as_list(v)
        return [normalise_policy(p) for p in v] if isinstance(v, list) else v

    @field_validator("workloads", mode="before")
    @classmethod
    def _workloads(cls, v: object) -> object:
        return _validate_workloads(v)

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v: object) -> object:
        return _as_list(v)

    @field_validator("mappings", mode="before")
    @classmethod
    def _mappings(cls, v: object) -> object:
        v = _as_list(v)
        return [{"kind": m} if isinstance(m, str) else m for m in v] if isinstance(v, list) else v

    @field_validator("schedulers", mode="before")
    @classmethod
    def _schedulers(cls, v: object) -> object:
        v = _as_list(v)
        return [{"kind": x} if isinstance(x, str) else x for x in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _unique(self) -> "Axes":
        problems = []
        for name in ("policies", "seeds", "mappings", "workloads", "schedulers"):
            problems += _duplicates(name, getattr(self, name) or [])
        raise_if(problems)
        return self


class Campaign(StrictModel):
    """A study as a list of independent runs (see docs/campaigns.md)."""

    kind: Literal["campaign"] = "campaign"
    name: Name
    description: str = ""
    base: str | dict[str, Any] | None = Field(
        None, description="base experiment: a mapping, or a spec file relative to the campaign file")
    runtime: str = Field("sim", description="sim, emulate, or module:function (a custom runtime)")
    mode: Literal["event", "step"] | None = Field(None, description="simulator engine (default: the base's sim.mode)")
    dt: PosFloat | None = Field(None, description="time step of mode step, seconds")
    cpus_per_run: float = Field(1.0, gt=0, le=4096, description="Ray CPUs one run reserves")
    axes: Axes = Axes()

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime(cls, v: object) -> object:
        if isinstance(v, str):
            v = v.strip()
            if v.lower() in RUNTIMES:
                return v.lower()
            if not _CALLABLE.match(v):
                raise ValueError(f"unknown runtime {v!r}; use sim, emulate or module:function")
        return v

    @model_validator(mode="after")
    def _base_needed(self) -> "Campaign":
        if self.base is None and not self.axes.workloads:
            raise FieldProblems([("base", "give a base experiment, or workloads in axes.workloads")])
        return self


__all__ = ["Axes", "Campaign", "CarreteroParamsSpec", "FileWorkload", "GeneratedWorkload", "PlatformAxes",
           "RUNTIMES", "WorkloadEntry"]
