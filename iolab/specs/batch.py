"""The batch experiment: compute nodes, two storage tiers, jobs, scheduler, placement.

This is lackner2019's model (§III): homogeneous compute nodes sharing a
low-performance storage tier (LPS, unlimited, rate R_lps), a high-performance
tier (HPS, limited capacity, rate R_hps) and a staging link between the two
(R_stage).  The HPS may be described down to monniot2023's storage hierarchy
(§4.3): servers -> nodes (network bandwidth) -> disks (capacity, read and
write bandwidth); its capacity is then the sum of its disks.

Units are bytes, bytes per second and seconds inside the models.  A YAML file
may write sizes with a decimal or binary suffix (``200GB`` = 200e9,
``16GiB`` = 16 * 2**30), rates with ``/s`` (``1.5 GB/s``) and durations with
``s``, ``m``/``min``, ``h`` or ``d`` (``5m`` = 300): the grammar of
:mod:`iolab.units`.  A minimal spec::

    kind: batch
    platform:
      nodes: 128
      lps: {rate: 1 GB/s}
      hps: {rate: 15 GB/s, capacity: 2048 GB}
      stage_rate: 5 GB/s
    scheduler: sas                       # or {kind: random-tier, p: 0.4}
    workload: {source: feitelson, jobs: 500}
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pathlib import Path

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationError, ValidationInfo, field_validator, model_validator

from iolab.names import NAME_PATTERN
from iolab.units import GB, parse_duration, parse_rate, parse_size
from iolab.specs.base import FieldProblems, StrictModel, finite_sum, nested_options, problems_of, raise_if, resolve_input
from iolab.specs.batch_emulation import BatchEmulatorSettings
from iolab.specs.controller import ControllerSpec
from iolab.specs.interference import INTERFERENCE_HELP, Interference
from iolab.specs.io_policies import IOPolicyChoice, io_policy_value, normalise_policy
from iolab.specs.policy_ref import BUILTIN, USER, PolicyRef, builtin_or_user, parse_policy
from iolab.specs.slurm_conf import SlurmConf

# ---------------------------------------------------------------- units


def _quantity(parse):
    """A field validator: a string is a quantity with a unit (:mod:`iolab.units`); anything
    else is left to the field's own type check."""
    return BeforeValidator(lambda v: parse(v) if isinstance(v, str) else v)


Bytes = Annotated[float, _quantity(parse_size), Field(ge=0, allow_inf_nan=False)]
PosBytes = Annotated[float, _quantity(parse_size), Field(gt=0, allow_inf_nan=False)]
Rate = Annotated[float, _quantity(parse_rate), Field(gt=0, allow_inf_nan=False)]
Seconds = Annotated[float, _quantity(parse_duration), Field(ge=0, allow_inf_nan=False)]
PosSeconds = Annotated[float, _quantity(parse_duration), Field(gt=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=NAME_PATTERN)]


def _norm(value: object) -> object:
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    return value


# ---------------------------------------------------------------- platform


class Disk(StrictModel):
    """A disk of a storage node (monniot2023 §4.3)."""

    id: Name | None = None
    capacity: PosBytes
    read_bw: Rate = Field(..., description="bytes/s")
    write_bw: Rate = Field(..., description="bytes/s")
    count: int = Field(1, ge=1, le=10_000, description="identical disks described by this entry")


class StorageNode(StrictModel):
    id: Name | None = None
    network_bw: Rate = Field(..., description="bytes/s of the node's network link")
    disks: list[Disk] = Field(..., min_length=1)
    count: int = Field(1, ge=1, le=10_000, description="identical nodes described by this entry")


class StorageServer(StrictModel):
    id: Name | None = None
    nodes: list[StorageNode] = Field(..., min_length=1)


class LPSTier(StrictModel):
    """Low-performance storage: unlimited capacity, rate R_lps (lackner2019 §III-A)."""

    rate: Rate
    interference: Interference = Field(None, description=INTERFERENCE_HELP)


class HPSTier(StrictModel):
    """High-performance storage: limited capacity, rate R_hps.

    Give ``capacity`` (one pool), or ``servers`` (capacity = sum of the disks),
    or both if they agree.
    """

    rate: Rate
    capacity: PosBytes | None = None
    interference: Interference = Field(None, description=INTERFERENCE_HELP)
    # a function, not the builtin `list`: pydantic reads a default factory's signature, and a builtin's is parsed
    # by inspect's tokenizer, whose first use compiles its regular expressions (2 ms of every command's start)
    servers: list[StorageServer] = Field(default_factory=lambda: [])

    @model_validator(mode="after")
    def _capacity(self) -> "HPSTier":
        problems: list[tuple[str, str]] = []
        if self.capacity is None and not self.servers:
            problems.append(("capacity", "give the HPS capacity, or servers with disks"))
        if self.capacity is not None and self.servers:
            total = self.disk_capacity()
            if not math.isclose(total, self.capacity, rel_tol=1e-9):
                problems.append(("capacity", f"{self.capacity:.6g} B differs from the sum of the disks "
                                             f"{total:.6g} B; give one or make them agree"))
        seen: dict[str, str] = {}
        for path, ident in self._ids():
            if ident in seen:
                problems.append((path, f"duplicate id {ident!r} (also {seen[ident]})"))
            seen.setdefault(ident, path)
        raise_if(problems)
        return self

    def _ids(self) -> list[tuple[str, str]]:
        out = []
        for i, s in enumerate(self.servers):
            if s.id is not None:
                out.append((f"servers[{i}].id", s.id))
        return out

    def disk_capacity(self) -> float:
        return sum(n.count * d.count * d.capacity for s in self.servers for n in s.nodes for d in n.disks)

    @property
    def total_capacity(self) -> float:
        return float(self.capacity) if self.capacity is not None else self.disk_capacity()

    def layout(self) -> list[dict[str, Any]]:
        """Flat list of disks: ``{id, server, node, capacity, read_bw, write_bw, network_bw}``.

        Ids are ``server.node.disk``, from the given ids or positions
        (``s0.n1.d2``); ``count`` replicas get a ``-k`` suffix.
        """
        out: list[dict[str, Any]] = []
        for si, s in enumerate(self.servers):
            sid = s.id or f"s{si}"
            for ni, n in enumerate(s.nodes):
                for nk in range(n.count):
                    nid = f"{sid}.{n.id or f'n{ni}'}" + (f"-{nk}" if n.count > 1 else "")
                    for di, d in enumerate(n.disks):
                        for dk in range(d.count):
                            did = f"{nid}.{d.id or f'd{di}'}" + (f"-{dk}" if d.count > 1 else "")
                            out.append(dict(id=did, server=sid, node=nid, capacity=d.capacity,
                                            read_bw=d.read_bw, write_bw=d.write_bw, network_bw=n.network_bw))
        return out


class DeliveredRates(StrictModel):
    """Shares of each link's spec rate a real run delivered (1: the spec's rate).  The simulator's
    links run at ``share x rate``; its scheduler still plans with the spec's rates."""

    lps: float = Field(1.0, gt=0, le=2, description="R_lps delivered / R_lps")
    hps: float = Field(1.0, gt=0, le=2, description="R_hps delivered / R_hps")
    stage: float = Field(1.0, gt=0, le=2, description="R_stage delivered / R_stage")


class Overheads(StrictModel):
    """Costs of a real job the simulator adds to its steps (spec seconds; all 0 by default, the
    lackner2019 model).  Measured by a real run (its trace's ``calibration`` attribute, wall
    seconds) and applied with ``iolab simulate --calibration TRACE``; the emulator ignores them
    (it pays the real ones)."""

    launch: Seconds = Field(0.0, description="from the job's start on its nodes (after its stage-in) to its "
                                             "first phase: process launch")
    exit: Seconds = Field(0.0, description="from the job's last phase to the end of its processes "
                                           "(before its stage-out)")
    io_phase: Seconds = Field(0.0, description="fixed cost of every read or write phase of the job, before "
                                               "its bytes move (not of staging)")
    delivered: DeliveredRates = Field(default_factory=DeliveredRates,
                                      description="shares of the link rates a real run delivered")


class IONodeSpec(StrictModel):
    """Each I/O (forwarding) node of a batch platform: its bandwidth, the policy its arbiter applies to the
    jobs' I/O phases (carretero2020 §5.1's eight list policies, or ``shared``) and its interference law
    (under ``shared``: the aggregate with k concurrent streams)."""

    rate: Rate = Field(..., description="bandwidth of one I/O node, bytes/s")
    policy: IOPolicyChoice = Field("fifo", description="the arbiter's policy: one of carretero2020's eight list "
                                   "policies (one job transfers at a time), shared, or your own (kind: python; "
                                   "docs/policies.md)")
    interference: Interference = Field(None, description=INTERFERENCE_HELP)

    @field_validator("policy", mode="before")
    @classmethod
    def _norm_policy(cls, v: object) -> object:
        return io_policy_value(v)


class BatchPlatform(StrictModel):
    """Compute nodes plus the two tiers and the staging link (lackner2019 Fig. 1), and optionally I/O nodes
    between the compute nodes and the tiers (carretero2020 §4: compute node ``i`` forwards its I/O through
    I/O node ``i // nodes_per_io_node``)."""

    nodes: int = Field(..., ge=1, le=10_000_000, description="homogeneous compute nodes")
    memory_per_node: PosBytes = Field(16 * GB, description="checkpoint size per node (lackner2019 §IV-A)")
    lps: LPSTier
    hps: HPSTier
    stage_rate: Rate = Field(..., description="R_stage, bytes/s between LPS and HPS")
    overheads: Overheads = Field(default_factory=Overheads,
                                 description="launch, exit and per-phase costs the simulator models (spec s)")
    io_nodes: int | None = Field(None, ge=1, le=100_000, description="I/O nodes between the compute nodes and "
                                 "the tiers; absent: the jobs' I/O goes straight onto the tiers' links")
    nodes_per_io_node: int | None = Field(None, ge=1, le=10_000_000, description="compute nodes served by each "
                                          "I/O node, by contiguous ranges of ids; default ceil(nodes / io_nodes)")
    io_node: IONodeSpec | None = Field(None, description="every I/O node's rate, policy and law (needed with io_nodes)")

    @model_validator(mode="after")
    def _io_nodes(self) -> "BatchPlatform":
        problems: list[tuple[str, str]] = []
        if self.io_nodes is None:
            for name in ("nodes_per_io_node", "io_node"):
                if getattr(self, name) is not None:
                    problems.append((name, "applies only to a platform with I/O nodes: give io_nodes too"))
        else:
            if self.io_node is None:
                problems.append(("io_node", "a platform with io_nodes needs io_node: {rate: B/s, policy: fifo}"))
            per = self.io_nodes_span
            if self.io_nodes * per < self.nodes:
                problems.append(("nodes_per_io_node", f"{self.io_nodes} I/O nodes x {per} nodes serve "
                                                      f"{self.io_nodes * per} compute nodes; platform.nodes is {self.nodes}"))
            elif (self.io_nodes - 1) * per >= self.nodes:
                problems.append(("io_nodes", f"I/O node {self.io_nodes - 1} would serve no compute node "
                                             f"({self.nodes} nodes, {per} per I/O node)"))
        raise_if(problems)
        return self

    @property
    def io_nodes_span(self) -> int:
        """Compute nodes per I/O node (the given ``nodes_per_io_node``, else ``ceil(nodes / io_nodes)``)."""
        if self.io_nodes is None:
            return self.nodes
        return self.nodes_per_io_node or -(-self.nodes // self.io_nodes)

    def io_node_of(self, node: int) -> int:
        """The I/O node that compute node ``node`` (0-based id) forwards its I/O through."""
        return node // self.io_nodes_span


# ---------------------------------------------------------------- jobs


class IOEstimate(StrictModel):
    """What the user states about a job's I/O when it differs from the truth (lackner2019 §V-B)."""

    input: Bytes = 0.0
    output: Bytes = 0.0
    data: Bytes = 0.0
    storage: Bytes = 0.0


class Job(StrictModel):
    """A batch job (lackner2019 §III-B, plus the actual runtime of a trace).

    ``walltime`` is the requested time the schedulers plan with; ``runtime``
    the time the job really runs (a simulator's business).  With LPS the
    walltime includes the job's I/O at R_lps (lackner2019 §IV-B).  ``input``,
    ``output`` and ``data`` (intermediate / checkpoint bytes) are the true
    volumes; ``storage`` the requested HPS capacity.  ``estimate``, when
    given, is what the user stated instead (the scheduler sees it).
    """

    id: Name
    user: str = Field("0", max_length=64)
    submit: Seconds
    nodes: int = Field(..., ge=1, le=10_000_000)
    walltime: PosSeconds
    runtime: Seconds
    input: Bytes = 0.0
    output: Bytes = 0.0
    data: Bytes = 0.0
    storage: Bytes = 0.0
    estimate: IOEstimate | None = None

    @field_validator("id", "user", mode="before")
    @classmethod
    def _str_id(cls, v: object) -> object:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _storage_holds_io(self) -> "Job":
        """An HPS request (``storage`` > 0) must hold the job's input and its output: a job
        on HPS stages its input in and writes its output there, and cannot write past its
        allocation (docs/storage.md, quota on disk).  ``storage: 0`` asks for no HPS."""
        problems = []
        for where, io in (("", self), ("estimate.", self.estimate)):
            if io is None or io.storage <= 0:
                continue
            need = max(io.input, io.output)
            if io.storage < need:
                what = "input" if io.input >= io.output else "output"
                problems.append((f"{where}storage", f"{io.storage:g} B cannot hold the job's {what} of {need:g} B "
                                                    "(an HPS allocation must hold the larger of input and output)"))
        raise_if(problems)
        return self

    @property
    def stated(self) -> IOEstimate | Job:
        """The I/O the scheduler is told (``input``, ``output``, ``data``, ``storage``): the
        estimate if any, else the truth, the job itself (no model built per job: 243 k SWF jobs)."""
        return self.estimate if self.estimate is not None else self


# ---------------------------------------------------------------- workload sources


class InlineWorkload(StrictModel):
    source: Literal["inline"] = "inline"
    jobs: list[Job] = Field(..., min_length=1)


class YoungDalySpec(StrictModel):
    """The Young-Daly checkpoint interval ``sqrt(2 C M)`` (Young 1974, Daly 2006's first order):
    ``C`` the time to write one checkpoint at the job's I/O rate (``io_rate``), ``M`` the job's
    MTBF, ``node_mtbf / nodes`` (independent node failures)."""

    node_mtbf: PosSeconds = Field(..., description="mean time between failures of one node (e.g. 5y)")


class CheckpointSpec(StrictModel):
    """How often a job checkpoints, instead of lackner2019's ``checkpoint_fraction`` rule: one
    checkpoint every ``interval`` seconds of the job's runtime, or at the Young-Daly interval
    (``daly: {node_mtbf: 5y}``).  A job of runtime T writes ``k = floor(T / interval)``
    checkpoints (none if T < ``checkpoint_min_runtime``); docs/batch-policies.md."""

    interval: PosSeconds | None = Field(None, description="seconds of runtime between checkpoints")
    daly: YoungDalySpec | None = Field(None, description="the Young-Daly interval from a node MTBF")

    @model_validator(mode="after")
    def _one(self) -> "CheckpointSpec":
        if (self.interval is None) == (self.daly is None):
            raise_if([("interval", "give one of interval (seconds) or daly ({node_mtbf: DURATION}), "
                                   + ("not both" if self.daly is not None else "neither was given"))])
        return self


IORate = Annotated[Literal["link", "share"], BeforeValidator(_norm)]
IO_RATE_DOC = ("the rate the I/O fractions are filled at: link (R_lps, lackner2019) or share "
               "(R_lps x nodes / platform.nodes, the job's share of the link)")
CHECKPOINT_DOC = "checkpoint interval or Young-Daly rule; absent: lackner2019's checkpoint_fraction rule"


# lackner2019 §IV-B's I/O model: the fields a FeitelsonWorkload and an IOModelSpec share, each written once
# (its default, bounds and description), in the order both models list them
IOFraction = Annotated[float, Field(0.10, ge=0, lt=1, description="mean share of runtime reading input + writing output")]
IOFractionSD = Annotated[float, Field(0.02, ge=0, le=1)]
CheckpointFraction = Annotated[float, Field(0.10, ge=0, lt=1, description="share of runtime spent checkpointing")]
CheckpointMinRuntime = Annotated[Seconds, Field(3600.0, description="no checkpoints for shorter jobs")]
IORateField = Annotated[IORate, Field("link", description=IO_RATE_DOC)]
CheckpointField = Annotated[CheckpointSpec | None, Field(None, description=CHECKPOINT_DOC)]


def io_model_problems(m: Any) -> list[tuple[str, str]]:
    """Cross-field problems of the I/O fields a FeitelsonWorkload and an IOModelSpec share."""
    if m.checkpoint is not None and "checkpoint_fraction" in m.model_fields_set:
        return [("checkpoint_fraction", "applies to lackner2019's rule, not with checkpoint (which sets how "
                                        "often a job checkpoints); give one of them")]
    return []


class FeitelsonWorkload(StrictModel):
    """Feitelson-1996 model with lackner2019 Table I defaults and the §IV-B I/O model."""

    source: Literal["feitelson"] = "feitelson"
    jobs: int = Field(500, ge=1, le=10_000_000)
    max_repetitions: int = Field(2, ge=1, le=1000)
    arrival_factor: PosSeconds = Field(500.0, description="mean inter-arrival of new jobs, seconds")
    shortest: PosSeconds = Field(1800.0)
    longest: PosSeconds = Field(86400.0)
    io_fraction: IOFraction
    io_fraction_sd: IOFractionSD
    checkpoint_fraction: CheckpointFraction
    checkpoint_min_runtime: CheckpointMinRuntime
    io_rate: IORateField
    checkpoint: CheckpointField
    theta: float = Field(0.0, ge=0, le=10, description="relative sd of the user's I/O estimates (§V-B)")
    users: int = Field(32, ge=1, le=10_000_000)

    @model_validator(mode="after")
    def _bounds(self) -> "FeitelsonWorkload":
        raise_if(([("longest", f"must exceed shortest ({self.shortest:g} s)")] if self.longest <= self.shortest
                  else []) + io_model_problems(self))
        return self


class IOModelSpec(StrictModel):
    """I/O volumes drawn for jobs that carry none (an SWF trace has no I/O): lackner2019 §IV-B's
    model, the one of ``source: feitelson`` (``iolab.workloads.feitelson.lackner_io``), applied
    to each job's nodes and real runtime and seeded from the experiment's ``seed`` (and the workload's
    ``skip``, so two windows of a trace draw from different streams).  The volumes
    fill fractions of the runtime at R_lps (or at the job's share of it, ``io_rate: share``), so on
    an idle LPS a job still runs its recorded runtime; its walltime (the request) is left as the
    trace has it.  ``checkpoint`` replaces the checkpoint rule (docs/batch-policies.md).  Short
    form: ``io: lackner``."""

    model: Literal["lackner"] = "lackner"
    io_fraction: IOFraction
    io_fraction_sd: IOFractionSD
    checkpoint_fraction: CheckpointFraction
    checkpoint_min_runtime: CheckpointMinRuntime
    io_rate: IORateField
    checkpoint: CheckpointField

    @model_validator(mode="before")
    @classmethod
    def _short(cls, v: object) -> object:
        return {"model": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _rules(self) -> "IOModelSpec":
        raise_if(io_model_problems(self))
        return self


class SWFWorkload(StrictModel):
    source: Literal["swf"] = "swf"
    path: str = Field(..., min_length=1, description="SWF file (.gz allowed), relative to the spec's folder")
    limit: int | None = Field(None, ge=1, le=100_000_000, description="read only the first jobs (after ``skip``)")
    skip: int = Field(0, ge=0, le=100_000_000, description="leave out the trace's first jobs: with ``limit``, a "
                                                          "window of the trace (jobs skip+1 .. skip+limit)")
    strict: bool = Field(True, description="raise on a malformed line instead of skipping it (skipped "
                                           "lines are counted and reported)")
    io: IOModelSpec | None = Field(None, description="give the jobs I/O volumes from a model (``io: lackner``); "
                                                     "absent: the jobs do no I/O")

    @field_validator("path")
    @classmethod
    def _exists(cls, v: str, info: ValidationInfo) -> str:
        return resolve_input(v, info, "SWF file")


class ThetaWorkload(StrictModel):
    source: Literal["theta"] = "theta"
    path: str = Field(..., min_length=1, description="Theta job list (YAML), relative to the spec's folder")

    @field_validator("path")
    @classmethod
    def _exists(cls, v: str, info: ValidationInfo) -> str:
        return resolve_input(v, info, "Theta job file")


Workload = Union[InlineWorkload, FeitelsonWorkload, SWFWorkload, ThetaWorkload]
WORKLOAD_SOURCES: dict[str, type[StrictModel]] = {
    "inline": InlineWorkload, "feitelson": FeitelsonWorkload, "swf": SWFWorkload, "theta": ThetaWorkload,
}


def _validate_workload(v: object, info: ValidationInfo | None = None) -> object:
    """Dispatch on ``source`` by hand so that error paths read ``workload.jobs[3].nodes``.

    (A pydantic discriminated union would insert the tag: ``workload.inline.jobs[3]``.)
    """
    if isinstance(v, list):  # a bare list of jobs is an inline workload
        v = {"source": "inline", "jobs": v}
    if isinstance(v, StrictModel):
        return v
    if not isinstance(v, dict):
        raise ValueError("a workload is a list of jobs or a mapping with a source (inline, feitelson, swf, theta)")
    source = _norm(v.get("source", "inline"))
    model = WORKLOAD_SOURCES.get(source) if isinstance(source, str) else None  # type: ignore[arg-type]
    if model is None:
        raise FieldProblems([("source", f"unknown workload source {v.get('source')!r}; "
                                        f"known: {', '.join(WORKLOAD_SOURCES)}")])
    try:
        return model.model_validate({**v, "source": source}, **nested_options(info))
    except ValidationError as err:
        raise FieldProblems(problems_of(err)) from None


# ---------------------------------------------------------------- policies

SCHEDULERS: tuple[str, ...] = ("fcfs", "easy", "conservative", "conservative-reinsert", "sas", "random-tier")
PLACEMENTS: tuple[str, ...] = ("random", "round-robin", "worst-fit", "best-bandwidth")
REFUSING_PLACEMENTS: tuple[str, ...] = ("round-robin", "best-bandwidth")


HPS_REQUEST_SCHEDULERS = ("fcfs", "conservative", "conservative-reinsert")
SCHEDULER_NAMES = ("fcfs", "easy", "conservative", "conservative-reinsert", "sas", "random-tier", "slurm")


class SchedulerSpec(StrictModel):
    """``fcfs | easy | conservative | conservative-reinsert | sas | random-tier | slurm`` (p = P[HPS] for
    random-tier; ``conf``, the slurm.conf settings, for slurm)."""

    kind: Literal[SCHEDULER_NAMES]
    p: float | None = Field(None, ge=0, le=1, description="random-tier: probability of HPS")
    hps_requests: bool = Field(False, description="fcfs, conservative, conservative-reinsert: a job that "
                               "asks for HPS (storage > 0) runs on HPS (stage-in, run at R_hps, "
                               "stage-out, its storage held throughout); default: every job on LPS")
    start_now: bool = Field(False, description="sas: a backfilled job whose best schedule waits for HPS "
                            "starts now on LPS if it can without delaying j1 (a reading of lackner2019 Alg. 1 "
                            "the paper leaves open; default: the literal one, it waits)")
    backfill_depth: int | None = Field(None, ge=0, le=100_000_000, description="a decision considers the "
                                       "head and at most this many waiting jobs behind it (Slurm's "
                                       "bf_max_job_test): easy, sas, random-tier backfill only those (in their "
                                       "backfill order), the conservative variants reserve only those, and "
                                       "every scheduler plans only those (queue order; the others have no "
                                       "planned start: plan tracking and advance stage-in skip them); fcfs "
                                       "starts the same jobs; default: all of them")

    conf: SlurmConf | None = Field(None, description="slurm: the slurm.conf settings it follows, named as "
                                   "slurm.conf names them (SchedulerParameters, PriorityType, PriorityWeight*, ...; "
                                   "docs/slurm-scheduler.md); default Slurm 22.05's")

    @field_validator("kind", mode="before")
    @classmethod
    def _n(cls, v: object) -> object:
        return _norm(v)

    @model_validator(mode="after")
    def _p(self) -> "SchedulerSpec":
        if self.conf is not None and self.kind != "slurm":
            raise_if([("conf", f"conf (slurm.conf settings) applies to slurm, not {self.kind}")])
        if self.kind == "slurm" and self.backfill_depth is not None:
            raise_if([("backfill_depth", "slurm reads its depth from conf: SchedulerParameters: "
                                         "bf_max_job_test=N")])
        if self.kind == "random-tier" and self.p is None:
            raise_if([("p", "random-tier needs p, the probability of assigning HPS (0..1)")])
        if self.kind != "random-tier" and self.p is not None:
            raise_if([("p", f"p only applies to random-tier, not {self.kind}")])
        if self.start_now and self.kind != "sas":
            raise_if([("start_now", f"start_now applies to sas, not {self.kind}")])
        if self.hps_requests and self.kind not in HPS_REQUEST_SCHEDULERS:
            raise_if([("hps_requests", f"hps_requests applies to {', '.join(HPS_REQUEST_SCHEDULERS)}, not "
                                       f"{self.kind} ({'it chooses tiers itself' if self.kind in ('sas', 'random-tier') else 'not built for it yet'})")])
        return self


    @property
    def label(self) -> str:
        """The scheduler's name as runs and traces show it."""
        return self.kind


def _policy_or_builtin(point: str, builtins: tuple[str, ...], short=None):
    """A field validator (mode before) for a decision point that takes a built-in or a user's policy:
    a user policy's short forms become its mapping (:func:`~iolab.specs.policy_ref.parse_policy`), a
    mapping's ``kind`` is normalised (``EASY``, ``random_tier``), and ``short`` turns a built-in's bare
    name into its mapping."""
    def validate(v: object) -> object:
        v = parse_policy(v, point, builtins)
        if isinstance(v, dict) and "kind" in v:
            v = {**v, "kind": _norm(v["kind"])}
        elif short is not None and isinstance(v, str):
            v = short(v)
        return v
    return validate


SchedulerChoice = Annotated[Union[Annotated[SchedulerSpec, Tag(BUILTIN)], Annotated[PolicyRef, Tag(USER)]],
                            Discriminator(builtin_or_user)]


MAX_SPLIT_PARTS = 100_000  # parts one request may be split into: a threshold this small is a unit mistake


class SplitSpec(StrictModel):
    enabled: bool = False
    threshold: PosBytes = Field(200 * GB, description="requests above this are split (monniot2023 Table 2)")


class RequeueSpec(StrictModel):
    enabled: bool = False
    retries: int = Field(5, ge=0, le=100_000)
    period: PosSeconds = Field(300.0)


class PlacementSpec(StrictModel):
    """StorAlloc disk placement (monniot2023 §4.2) with its split and requeue strategies."""

    strategy: Annotated[Union[Annotated[Literal["random", "round-robin", "worst-fit", "best-bandwidth"], Tag(BUILTIN)],
                              Annotated[PolicyRef, Tag(USER)]], Discriminator(builtin_or_user)] = Field(
        "best-bandwidth", description="random, round-robin, worst-fit, best-bandwidth, or your own (kind: python; "
                                      "docs/policies.md)")
    split: SplitSpec = SplitSpec()
    requeue: RequeueSpec = RequeueSpec()

    @field_validator("strategy", mode="before")
    @classmethod
    def _n(cls, v: object) -> object:
        return _norm(parse_policy(v, "placement", PLACEMENTS))

    @field_validator("split", mode="before")
    @classmethod
    def _split_short(cls, v: object) -> object:
        # ``split: 200GB`` enables splitting at that threshold; ``split: false`` disables.
        if isinstance(v, bool):
            return {"enabled": v}
        if isinstance(v, (int, float, str)):
            return {"enabled": True, "threshold": v}
        return v

    @field_validator("requeue", mode="before")
    @classmethod
    def _requeue_short(cls, v: object) -> object:
        return {"enabled": v} if isinstance(v, bool) else v

    @model_validator(mode="after")
    def _requeue_applies(self) -> "PlacementSpec":
        if self.requeue.enabled and isinstance(self.strategy, str) and self.strategy not in REFUSING_PLACEMENTS:
            raise_if([("requeue.enabled", f"requeue only applies to strategies that refuse requests "
                                          f"({', '.join(REFUSING_PLACEMENTS)}), not {self.strategy} "
                                          "(monniot2023 §4.2)")])
        return self


class EstimateSpec(StrictModel):
    """The walltime the scheduler plans with (soysal2019 §3.2, §3.4.2): ``request`` (the job's
    ``walltime``), ``refined`` (Eq. 1 with ``lam``: runtime + lam x (request - runtime)) or
    ``predictor`` (the per-user predictor, Eqs. 2-3).  Jobs always run their real runtime.

    Short forms: ``estimate: request``, ``estimate: predictor``, ``estimate: {refined: 0.3}``."""

    kind: Literal["request", "refined", "predictor"] = "request"
    lam: float = Field(1.0, ge=0, le=1, description="refined: lambda of Eq. 1 (0 = perfect estimates)")

    @model_validator(mode="before")
    @classmethod
    def _short(cls, v: object) -> object:
        if isinstance(v, str):
            return {"kind": _norm(v)}
        if isinstance(v, dict) and set(v) == {"refined"}:
            return {"kind": "refined", "lam": v["refined"]}
        return v


class AdvanceStageInSpec(StrictModel):
    """Advance stage-in (beyond soysal2019; docs/batch-policies.md): a waiting job that asks for HPS (storage and input > 0)
    whose planned start and planned node set are unchanged for ``theta_stable`` and whose start
    is within its stage-in time + ``margin`` starts its stage-in early."""

    enabled: bool = False
    theta_stable: Seconds = Field(600.0, description="plan stable this long (soysal2019's long-term class)")
    margin: Seconds = Field(60.0, description="begin this much before the planned start minus the stage-in time")

    @model_validator(mode="before")
    @classmethod
    def _short(cls, v: object) -> object:
        return {"enabled": v} if isinstance(v, bool) else v


ALLOCATIONS = ("lowest", "io-aware")


class AllocationSpec(StrictModel):
    """How a starting job's node ids are chosen: ``lowest`` (the lowest free ids, or the ids its plan
    reserved) or ``io-aware`` (among the free nodes, those whose I/O nodes carry the least I/O load, keeping
    each I/O node's load below its bandwidth x ``sensibility`` where it can: carretero2020's Make-Pack idea at
    the batch level; needs ``platform.io_nodes``; docs/batch-policies.md)."""

    kind: Literal[ALLOCATIONS] = "lowest"
    sensibility: float = Field(1.0, gt=0, allow_inf_nan=True, description="io-aware: S, the share of an I/O "
                               "node's bandwidth its jobs' I/O load may use (carretero2020 Eq. 4; inf = no limit)")

    @model_validator(mode="before")
    @classmethod
    def _short(cls, v: object) -> object:
        return {"kind": _norm(v)} if isinstance(v, str) else v

    @field_validator("kind", mode="before")
    @classmethod
    def _n(cls, v: object) -> object:
        return _norm(v)

    @property
    def label(self) -> str:
        return self.kind


AllocationChoice = Annotated[Union[Annotated[AllocationSpec, Tag(BUILTIN)], Annotated[PolicyRef, Tag(USER)]],
                             Discriminator(builtin_or_user)]


class BatchExperiment(StrictModel):
    kind: Literal["batch"] = "batch"
    name: Name = Field("batch", description="the experiment's name (becomes part of file names)")
    platform: BatchPlatform
    scheduler: SchedulerChoice = Field(description="a built-in scheduler (fcfs, easy, conservative, "
                                       "conservative-reinsert, sas, random-tier, slurm) or your own (kind: python; "
                                       "docs/policies.md)")
    placement: PlacementSpec = PlacementSpec()
    allocation: AllocationChoice = Field(default_factory=AllocationSpec,
                                         description="how a starting job's node ids are chosen (lowest | io-aware | "
                                                     "your own: kind: python, docs/policies.md)")
    seed: int = Field(0, ge=0, le=2**63 - 1)
    workload: Workload
    emulator: BatchEmulatorSettings = Field(default_factory=BatchEmulatorSettings,
                                            description="real runs only (iolab emulate); the simulator ignores it")
    controller: ControllerSpec | None = Field(None, description="dheenadayalan2017's storage load controller "
                                                                "(iolab.specs.controller); off when absent")
    estimate: EstimateSpec = Field(default_factory=EstimateSpec,
                                   description="the walltime the scheduler plans with (soysal2019)")
    track_predictions: bool = Field(False, description="record the predictions table (planned start and "
                                                       "node set of every waiting job, changes only)")
    advance_stage_in: AdvanceStageInSpec = Field(default_factory=AdvanceStageInSpec,
                                                 description="stage in early on stable plans (beyond soysal2019; docs/batch-policies.md)")

    @field_validator("scheduler", mode="before")
    @classmethod
    def _sched_short(cls, v: object) -> object:
        return _policy_or_builtin("scheduler", SCHEDULER_NAMES, lambda name: {"kind": _norm(name)})(v)

    @model_validator(mode="before")
    @classmethod
    def _one_rank_per_node_behind_io_nodes(cls, data: object) -> object:
        # a real run's part on an I/O node is carried by the job's ranks there: every node of a job needs
        # one, and one per node is the default that gives each (ranks_per_job: 1 would not)
        if isinstance(data, dict) and isinstance(data.get("platform"), dict) \
                and data["platform"].get("io_nodes") is not None:
            emu = data.get("emulator")
            if emu is None or (isinstance(emu, dict) and "ranks_per_job" not in emu):
                data = {**data, "emulator": {**(emu or {}), "ranks_per_job": "nodes"}}
        return data

    @field_validator("allocation", mode="before")
    @classmethod
    def _alloc_short(cls, v: object) -> object:
        return _policy_or_builtin("allocation", ALLOCATIONS, lambda name: {"kind": _norm(name)})(v)

    @field_validator("placement", mode="before")
    @classmethod
    def _place_short(cls, v: object) -> object:
        return {"strategy": v} if isinstance(v, str) else v

    @field_validator("controller", mode="before")
    @classmethod
    def _controller_short(cls, v: object) -> object:
        # ``controller: true`` turns it on with the paper's parameters; ``false`` (or absent) off
        return {"enabled": v} if isinstance(v, bool) else v

    @field_validator("workload", mode="before")
    @classmethod
    def _wl(cls, v: object, info: ValidationInfo) -> object:
        return _validate_workload(v, info)

    @model_validator(mode="after")
    def _cross(self) -> "BatchExperiment":
        problems: list[tuple[str, str]] = []
        p = self.platform
        if isinstance(self.workload, InlineWorkload):
            seen: dict[str, int] = {}
            for i, job in enumerate(self.workload.jobs):
                if job.id in seen:
                    problems.append((f"workload.jobs[{i}].id", f"duplicate id {job.id!r} (also jobs[{seen[job.id]}])"))
                seen.setdefault(job.id, i)
                if job.nodes > p.nodes:
                    problems.append((f"workload.jobs[{i}].nodes",
                                     f"job {job.id!r} needs {job.nodes} nodes; platform.nodes is {p.nodes}"))
            problems += self._overflow(self.workload.jobs)
        if self.allocation.kind == "io-aware" and p.io_nodes is None:
            problems.append(("allocation.kind", "io-aware allocation needs I/O nodes: give platform.io_nodes "
                                                "and platform.io_node, or use allocation: lowest"))
        c = self.controller
        if c is not None and c.model is not None and c.model.gamma > 0:
            for v in c.volumes:
                if getattr(p, v).interference is not None:
                    problems.append(("controller.model.gamma",
                                     f"the volume law is given twice (platform.{v}.interference too); drop "
                                     f"gamma and knee from controller.model and keep platform.{v}.interference"))
        raise_if(problems)
        return self


    def _overflow(self, jobs: list[Job]) -> list[tuple[str, str]]:
        """Values whose results overflow: the run's times must stay finite even if every job ran one
        after the other, with all its I/O on the slowest tier (lackner2019 §IV-B times)."""
        p = self.platform
        slowest = min(p.lps.rate, p.hps.rate, p.stage_rate)
        terms: list[tuple[str, float]] = []
        for i, job in enumerate(jobs):
            at = f"workload.jobs[{i}]"
            terms += [(f"{at}.submit", job.submit), (f"{at}.runtime", job.runtime),
                      (f"{at}.walltime", job.walltime)]
            for field in ("input", "output", "data", "storage"):
                terms.append((f"{at}.{field}", getattr(job, field) / slowest * 3))
            o = p.overheads
            if o.launch or o.exit or o.io_phase:  # one launch and exit, a fixed cost per read/write phase
                phases = 2 + math.ceil(job.data / (job.nodes * p.memory_per_node))
                terms.append((f"{at} with platform.overheads", o.launch + o.exit + o.io_phase * phases))
        return finite_sum(terms, "the run's times would overflow (not finite)")


__all__ = [
    "ALLOCATIONS", "MAX_SPLIT_PARTS", "AdvanceStageInSpec", "AllocationSpec", "IONodeSpec", "BatchExperiment", "BatchPlatform", "CheckpointSpec", "Disk", "EstimateSpec", "FeitelsonWorkload", "HPSTier", "IOEstimate",
    "IOModelSpec", "InlineWorkload", "Job", "LPSTier", "Overheads", "PLACEMENTS", "PlacementSpec", "REFUSING_PLACEMENTS",
    "RequeueSpec", "SCHEDULERS", "SWFWorkload", "SchedulerSpec", "SplitSpec", "StorageNode",
    "StorageServer", "ThetaWorkload", "YoungDalySpec",
]
