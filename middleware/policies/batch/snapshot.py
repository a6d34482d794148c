"""What a batch policy sees and what it answers: snapshot in, decision out.

The caller (a discrete-event simulator or a real-clock batch loop) builds a
:class:`Snapshot` whenever something changes (a submission, a job end) and
asks the policy to :meth:`~BatchPolicy.decide`.  The answer is a
:class:`Decision`: the jobs to start *now* (with their tier) and the policy's
*plan*, the expected start of every job that was waiting.  Nothing here reads
a clock; ``now`` is a field of the snapshot.

Vocabulary (lackner2019 §III): a job runs on ``nodes`` compute nodes for its
requested ``walltime``; with HPS it also holds ``storage`` bytes of the
high-performance tier from the start of its stage-in to the end of its
stage-out.  Tiers are the strings ``"lps"`` and ``"hps"``.
"""

from __future__ import annotations

from abc import abstractmethod

import math
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, NamedTuple, Sequence

from iolab.tiers import HPS, LPS, TIERS  # noqa: F401  (re-exported: the policies name tiers by these)


_new_tuple = tuple.__new__


class QueuedJob(NamedTuple):
    """A waiting job as the scheduler knows it (user-stated values, not the truth).

    A named tuple (immutable; ``_replace`` gives a changed copy), not a frozen dataclass: the kernel
    builds one per job of a workload (243 306 on SDSC-BLUE), and a tuple is built in a fraction of
    the time."""

    id: str
    submit: float
    nodes: int
    walltime: float
    storage: float = 0.0  # requested HPS bytes
    input: float = 0.0
    output: float = 0.0
    data: float = 0.0  # intermediate (checkpoint) bytes read and written at runtime
    user: str = ""

    @classmethod
    def from_job(cls, job: Any) -> "QueuedJob":
        """From an ``iolab.specs.batch.Job``: the scheduler sees ``job.stated``."""
        s = job.stated
        return _new_tuple(cls, (job.id, float(job.submit), int(job.nodes), float(job.walltime), float(s.storage),
                                float(s.input), float(s.output), float(s.data), job.user))


_QUEUED_FIELDS = slice(0, len(QueuedJob._fields))


def cut_queued(jobs: Sequence[Any]) -> list[QueuedJob] | None:
    """``QueuedJob.from_job`` of each job, for jobs all of one tuple type whose first nine items are a
    ``QueuedJob``'s fields in order, the stated values as floats and ints (``queued_prefix`` true on the
    type: an SWF trace's rows, ``iolab.workloads.swf.SWFJob``): each cut to those nine, not read field by
    field.  None for any other jobs (``from_job`` reads each)."""
    kinds = set(map(type, jobs))
    if len(kinds) == 1 and getattr(next(iter(kinds)), "queued_prefix", False):
        return list(map(_new_tuple, repeat(QueuedJob), map(itemgetter(_QUEUED_FIELDS), jobs)))
    return None


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running job: nodes and HPS bytes held until ``expected_end``."""

    id: str
    nodes: int
    expected_end: float
    tier: str = LPS
    storage: float = 0.0  # HPS bytes held (0 on LPS)


@dataclass(frozen=True, slots=True)
class TierRates:
    """R_lps, R_hps and R_stage in bytes per second (lackner2019 §III-A)."""

    lps: float
    hps: float
    stage: float

    def __post_init__(self) -> None:
        for name in ("lps", "hps", "stage"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"rate {name} must be > 0 and finite, got {v}")

    def io_time_lps(self, job: QueuedJob) -> float:
        """Seconds of the walltime spent on I/O at R_lps (capped by the walltime)."""
        return min(job.walltime, (job.input + job.output + job.data) / self.lps)

    def run_time(self, job: QueuedJob, tier: str) -> float:
        """Time on the compute nodes.  With LPS: the walltime.  With HPS: the
        walltime with its I/O done at R_hps instead of R_lps (lackner2019 §IV-B)."""
        if tier == LPS:
            return job.walltime
        io = self.io_time_lps(job)
        return job.walltime - io + io * self.lps / self.hps

    def stage_in(self, job: QueuedJob) -> float:
        return job.input / self.stage

    def stage_out(self, job: QueuedJob) -> float:
        return job.output / self.stage

    def duration(self, job: QueuedJob, tier: str) -> float:
        """Length of the job's reservation on ``tier`` (HPS: stage-in + run + stage-out)."""
        if tier == LPS:
            return job.walltime
        return self.stage_in(job) + self.run_time(job, HPS) + self.stage_out(job)


@dataclass(frozen=True)
class Snapshot:
    """The state a policy decides on.

    - ``queue``: waiting jobs in submit order (ties: the caller's order).
    - ``running``: jobs holding nodes (and HPS bytes) until their expected end.
    - ``free_nodes``: nodes free now; ``free_nodes + sum(running nodes)`` may
      be less than ``total_nodes`` (nodes down), never more.
    - ``hps_free``: HPS bytes free now; default ``hps_capacity`` minus what
      the running jobs hold.
    - ``overrun_grace``: a running job past its expected end is assumed to end
      this many seconds after ``now`` (its estimate was wrong; correcting it
      is the caller's business, e.g. soysal2019's doubling).
    """

    now: float
    total_nodes: int
    free_nodes: int
    queue: tuple[QueuedJob, ...] = ()
    running: tuple[RunningJob, ...] = ()
    hps_capacity: float = 0.0
    hps_free: float | None = None
    rates: TierRates | None = None
    overrun_grace: float = 1.0
    #: optional: the running jobs' releases, sorted, as ``(expected_end, start order, nodes, HPS bytes)``
    #: tuples (HPS bytes 0.0 on LPS), in the order a stable sort of ``running`` by expected end gives.  A
    #: runtime that keeps them as jobs start and end (the batch kernel) hands them over so that a policy
    #: reads the next releases without sorting every running job at every decision; None: the policies sort.
    #: The amounts are never negative (a release frees): the policies' profiles rely on it (Profile.rising).
    #: A ``profile.KeptReleases`` (the batch kernel's) also carries the profile they make, kept as they change.
    releases: Any = None
    #: optional: the free node ids as a mask (bit i = node i); :attr:`free_node_ids` reads them.  None: the
    #: runtime gives no ids (the lowest ``free_nodes`` ids are then assumed free)
    free_ids: int | None = None
    #: optional: the platform's I/O nodes, as what :attr:`io_node_loads` and :meth:`io_node_of` read
    #: (``(span, loads)``: compute node i forwards through I/O node ``i // span``; ``loads()`` each I/O
    #: node's I/O load in bytes/s); None: the platform has no I/O nodes
    io: Any = None

    @classmethod
    def trusted(cls, *, now: float, total_nodes: int, free_nodes: int, queue: tuple[QueuedJob, ...],
                running: tuple[RunningJob, ...], hps_capacity: float = 0.0, hps_free: float | None = None,
                rates: TierRates | None = None, overrun_grace: float = 1.0, releases: Any = None,
                free_ids: int | None = None, io: Any = None) -> "Snapshot":
        """A snapshot built without the per-job checks of ``__post_init__``.

        For an engine that keeps its own state consistent and has checked every
        job once (``Snapshot.check_jobs``): the checks cost O(queue) at every
        decision, 40 % of a FCFS run over KTH-SP2.  ``queue`` and ``running``
        must already be tuples; ``hps_free`` defaults as in the checked path.
        """
        snap = object.__new__(cls)
        if hps_free is None:
            hps_free = max(0.0, hps_capacity - sum(r.storage for r in running if r.tier == HPS))
        # the fields straight into the instance's dict (a frozen dataclass without slots): one call, not
        # one object.__setattr__ per field (a snapshot per decision)
        snap.__dict__.update(now=now, total_nodes=total_nodes, free_nodes=free_nodes, queue=queue, running=running,
                             hps_capacity=hps_capacity, hps_free=hps_free, rates=rates, overrun_grace=overrun_grace,
                             releases=releases, free_ids=free_ids, io=io)
        return snap

    @staticmethod
    def check_jobs(queue, total_nodes: int) -> set[str]:
        """The per-job checks of a queue (unique ids, nodes within the machine, walltime > 0);
        returns the ids.  The columns are checked first (a set, a min and a max, one pass over the
        walltimes: a workload's 10^5-10^6 jobs); the loop below runs only to name the first bad job."""
        names = [j.id for j in queue]
        ids: set[str] = set(names)
        nodes = [j.nodes for j in queue]
        if len(ids) == len(names) and (not nodes or (min(nodes) >= 1 and max(nodes) <= total_nodes)) and all(
                [w > 0 and w < math.inf for w in [j.walltime for j in queue]]):  # (NaN fails both)
            return ids
        ids = set()
        for j in queue:
            if j.id in ids:
                raise ValueError(f"job {j.id!r} is twice in the queue")
            ids.add(j.id)
            if j.nodes < 1 or j.nodes > total_nodes:
                raise ValueError(f"job {j.id!r} needs {j.nodes} nodes; the machine has {total_nodes}")
            if not (j.walltime > 0 and math.isfinite(j.walltime)):
                raise ValueError(f"job {j.id!r}: walltime must be > 0, got {j.walltime}")
        return ids

    def __post_init__(self) -> None:
        object.__setattr__(self, "queue", tuple(self.queue))
        object.__setattr__(self, "running", tuple(self.running))
        if not math.isfinite(self.now):
            raise ValueError(f"now must be finite, got {self.now}")
        if self.free_nodes < 0 or self.total_nodes < 1:
            raise ValueError(f"bad node counts: total {self.total_nodes}, free {self.free_nodes}")
        busy = sum(r.nodes for r in self.running)
        if self.free_nodes + busy > self.total_nodes:
            raise ValueError(f"free ({self.free_nodes}) + running ({busy}) nodes exceed the total ({self.total_nodes})")
        if self.overrun_grace <= 0:
            raise ValueError("overrun_grace must be > 0")
        held = sum(r.storage for r in self.running if r.tier == HPS)
        if self.hps_free is None:
            object.__setattr__(self, "hps_free", max(0.0, self.hps_capacity - held))
        elif self.hps_free < 0 or self.hps_free > self.hps_capacity * (1 + 1e-12):
            raise ValueError(f"hps_free {self.hps_free} outside [0, capacity {self.hps_capacity}]")
        ids = self.check_jobs(self.queue, self.total_nodes)
        for r in self.running:
            if r.id in ids:
                raise ValueError(f"job {r.id!r} is both running and waiting")
            if r.tier not in TIERS:
                raise ValueError(f"running job {r.id!r}: unknown tier {r.tier!r}")


    # -- what a policy written against the public API reads (iolab.policy) ------------------------------
    @property
    def free_node_ids(self) -> tuple[int, ...]:
        """The ids of the free compute nodes, in increasing order (computed on each read: O(nodes))."""
        mask = self.free_ids
        if mask is None:
            return tuple(range(self.free_nodes))
        out = []
        i = 0
        while mask:
            low = mask & -mask
            i = low.bit_length() - 1
            out.append(i)
            mask ^= low
        return tuple(out)

    @property
    def tier_free(self) -> dict[str, float]:
        """Each tier's free capacity in bytes: LPS is unlimited (``inf``), HPS holds :attr:`hps_free`."""
        return {LPS: math.inf, HPS: float(self.hps_free if self.hps_free is not None else self.hps_capacity)}

    @property
    def io_node_loads(self) -> tuple[float, ...]:
        """Each I/O node's I/O load in bytes/s: the running jobs' stated I/O bytes over their walltime,
        shared out over the I/O nodes of their compute nodes; ``()`` on a platform without I/O nodes."""
        return () if self.io is None else tuple(self.io[1]())

    def io_node_of(self, node: int) -> int:
        """The I/O node that compute node ``node`` forwards its I/O through (-1 without I/O nodes)."""
        return -1 if self.io is None else int(node) // self.io[0]

    def duration(self, job: QueuedJob, tier: str = LPS) -> float:
        """How long ``job`` holds its nodes on ``tier``: its walltime on LPS; on HPS stage-in, the run at
        R_hps and stage-out (lackner2019 §IV-B; needs the tier rates)."""
        if tier == LPS:
            return job.walltime
        if self.rates is None:
            raise ValueError("an HPS start needs the platform's tier rates in the snapshot")
        return self.rates.duration(job, tier)

    def start(self, job: "QueuedJob | str", tier: str = LPS, node_ids=None) -> "Start":
        """The :class:`Start` of the waiting ``job`` (a :class:`QueuedJob` or its id) now on ``tier``:
        its nodes, its HPS bytes on HPS, and its expected end (now + :meth:`duration`).  ``node_ids``:
        the compute nodes it runs on (as many as it needs; default: the runtime's node allocation)."""
        if isinstance(job, str):
            found = self.job(job)
            if found is None:
                raise KeyError(f"job {job!r} is not waiting")
            job = found
        return Start(job.id, tier, job.nodes, self.now + self.duration(job, tier),
                     job.storage if tier == HPS else 0.0,
                     None if node_ids is None else tuple(int(i) for i in node_ids))

    def job(self, job_id: str) -> "QueuedJob | None":
        """The waiting job ``job_id`` (None if it is not waiting); O(queue) on the first call, then O(1)."""
        index = self.__dict__.get("_by_id")
        if index is None:
            index = {q.id: q for q in self.queue}
            self.__dict__["_by_id"] = index
        return index.get(job_id)


class PlanEntry(NamedTuple):
    """Where a waiting job stands in the policy's plan.

    ``reserved`` tells a commitment (conservative: every job; EASY and SAS:
    the head job) from a projection (the other jobs of EASY and SAS, whose
    start is only what the policy would do if nothing changed).

    A named tuple, not a frozen dataclass: a plan holds every waiting job at
    every decision (3.7 million entries in a FCFS run over KTH-SP2 with plan
    tracking), and a tuple is built in a fifth of the time.
    """

    job: str
    start: float
    end: float
    nodes: int
    tier: str = LPS
    storage: float = 0.0
    reserved: bool = True


@dataclass(frozen=True, slots=True)
class Start:
    """Start ``job`` now on ``tier``; it holds its nodes and bytes until ``expected_end``.
    ``node_ids``: the compute nodes it runs on (None: the runtime's node allocation chooses them)."""

    job: str
    tier: str
    nodes: int
    expected_end: float
    storage: float = 0.0
    node_ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Decision:
    """What a batch scheduler answers: the jobs to start now, optionally its plan (the expected start of
    the jobs it does not start, read by the metrics of planned starts and by advance stage-in), and
    optionally ``wake_at``: a later time at which it wants to be asked again even if nothing happens by
    then (Batsim's CALL_ME_LATER; a periodic backfill pass).  Without it a scheduler is asked at every
    submission and every job end.

    ``rejects``: waiting jobs it refuses (they leave the queue, ``killed``, never run: Batsim's REJECT_JOB);
    ``kills``: running jobs it ends now (``killed``: Batsim's KILL_JOB).  Both are applied after the starts."""

    now: float
    starts: tuple[Start, ...] = ()
    plan: tuple[PlanEntry, ...] = field(default=())
    wake_at: float | None = None
    rejects: tuple[str, ...] = ()
    kills: tuple[str, ...] = ()

    @property
    def started(self) -> list[str]:
        return [s.job for s in self.starts]

    def start_of(self, job: str) -> float:
        """Planned start of ``job`` (``now`` if it starts now)."""
        for e in self.plan:
            if e.job == job:
                return e.start
        raise KeyError(job)


class BatchScheduler:
    """The public base of a batch scheduler (``iolab.policy.BatchScheduler``): one method,
    :meth:`decide`, called at every submission, every job end and every time the scheduler asked for
    (:attr:`Decision.wake_at`), with the :class:`Snapshot` of that instant.

    It answers the jobs to start now: a :class:`Decision` (starts, an optional plan, an optional
    ``wake_at``), or simply a list of :class:`Start` (``snapshot.start(job, tier, node_ids)`` builds one),
    of job ids (on LPS, nodes chosen by the run's allocation) or of ``(job id, tier)`` pairs; None starts
    nothing.  A scheduler reads no clock and changes nothing in the snapshot; it may keep state of its own
    between calls.  ``name`` is what traces call it (default: the class's name); ``api_version`` the
    version of the policy API it was written for.  The built-in schedulers are subclasses
    (:class:`BatchPolicy`).

    A scheduler that has an attribute ``job_state`` gets it bound by the run to a function: job id -> that
    job's state (``future``, ``queued``, ``running``, ..., ``done``, ``failed``, ``killed``; None for an id the
    workload does not have), e.g. to tell how a job that left the running set ended."""

    name: str = ""
    api_version: int = 1
    #: True: also asked when nothing waits (at every job end and every time it asked for), so that it sees
    #: every change as it happens (an external decision process that must be told of each job's end)
    sees_every_change: bool = False

    @abstractmethod  # (no ABCMeta: marks the method a subclass must define; iolab's loader reads it)
    def decide(self, snap: Snapshot) -> "Decision | Any":  # pragma: no cover - the subclass's
        raise NotImplementedError(f"{type(self).__name__} must define decide(snapshot)")


class BatchPolicy(BatchScheduler):
    """Base of the built-in batch schedulers: ``decide(snapshot) -> Decision``.

    Subclasses implement ``_decide``.  The last plan stays available through
    :meth:`plan` so that a runtime can record plans over time (walltime
    quality, soysal2019's T_NAP) without recomputing them.
    """

    name: str = ""
    #: compute the starts of the jobs it does not start now (the plan's projection); a runtime
    #: that reads no plan sets it False.  Policies whose decisions need the whole plan ignore it.
    project: bool = True
    #: backfilling policies (EASY, SAS, random-tier): try at most this many waiting jobs behind the
    #: head, in the policy's backfill order (Slurm's ``bf_max_job_test``); None: every one of them
    backfill_depth: int | None = None
    #: whether its decisions build a profile from the snapshot's releases (a runtime that keeps the
    #: releases keeps the profile's columns with them only then); False is a promise about speed only:
    #: a profile built from releases without the columns is the same
    reads_profile: bool = True
    #: whether :meth:`quick_starts` decides now (a policy whose decision, in its current settings, is
    #: only the jobs to start, each on LPS until ``now + walltime``, and that has that entry)
    quick: bool = False
    #: whether :meth:`quick_starts` reads ``releases`` (False: a runtime need not keep them for it)
    quick_reads_releases: bool = True

    def __init__(self) -> None:
        self._plan: tuple[PlanEntry, ...] = ()

    def decide(self, snap: Snapshot) -> Decision:
        d = self._decide(snap)
        self._plan = d.plan
        return d

    def quick_starts(self, now: float, free: int, queue, releases, grace: float) -> list | None:
        """The jobs to start now, for a runtime that keeps its queue and the running jobs' releases and
        reads no plan: what :meth:`decide` starts on the snapshot of ``now``, ``free`` nodes, ``queue``
        (the waiting jobs in queue order, any iterable of :class:`QueuedJob`), ``releases`` (sorted, as
        :attr:`Snapshot.releases` says; None if :attr:`quick_reads_releases` is False) and
        ``overrun_grace``, with the default HPS (nothing held) and no early copies, each job on LPS until
        ``now + walltime``, in the decision's order; no snapshot, no plan and no decision object is
        made (:meth:`plan` is then empty).  Only while :attr:`quick`; ``None``: decide on a snapshot.
        The same code as :meth:`decide`'s (each policy's entry and its ``decide`` call one function)."""
        return None

    def plan(self) -> tuple[PlanEntry, ...]:
        """The plan of the last decision (immutable)."""
        return self._plan

    def _decide(self, snap: Snapshot) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
