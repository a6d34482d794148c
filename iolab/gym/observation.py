"""What a learned batch scheduler sees and does at one decision: the observation of a snapshot, and an action
turned into a start.  Pure (numpy), shared by the Gymnasium environment (:mod:`.env`) and by the policy that runs a
trained agent in any run (:mod:`.agent`), so that an agent sees the same numbers in both.

Observation (a dict of float32 arrays; times in hours, so that a workload of seconds to days stays near 1):

- ``jobs`` (K x 7): the first K waiting jobs in queue order, one row each: ``present`` (1, or 0 for an empty
  slot), ``nodes`` (share of the machine), ``walltime`` (hours, the estimate schedulers plan with), ``wait``
  (hours waited so far), ``io`` (its stated input + output + checkpoint bytes, as hours at R_lps), ``hps`` (its
  HPS request, share of the HPS capacity), ``fits`` (1 if it can start now: its nodes are free, and on a platform
  whose agent chooses tiers, on LPS);
- ``machine`` (3): free nodes (share), free HPS (share of the capacity), log(1 + jobs waiting);
- ``tiers`` (2): the LPS and HPS load: the running jobs' stated I/O bytes per second of walltime on each tier,
  over the tier's rate (of the jobs this agent started);
- ``io_nodes`` (R, 1 without I/O nodes): each I/O node's load (:attr:`Snapshot.io_node_loads`), over R_lps.

Action: an integer.  ``0 <= a < K`` starts the job of slot ``a`` on LPS; with ``tiers``, ``K <= a < 2K`` starts
the job of slot ``a - K`` on HPS; the last action (``K``, or ``2K`` with tiers) waits.  An action that cannot be
done now (an empty slot, a job whose nodes are not free, HPS for a job that asks for none or whose bytes are not
free) waits too (:func:`start_of` returns None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from iolab.middleware.policies.batch.snapshot import HPS, LPS, QueuedJob, Snapshot, Start

HOUR = 3600.0
JOB_FEATURES = ("present", "nodes", "walltime", "wait", "io", "hps", "fits")


@dataclass
class View:
    """One decision instant as the agent sees it, changed by each start it makes there."""

    snap: Snapshot
    queue: list[QueuedJob]
    free: int
    hps_free: float
    io_rates: dict[str, float]  # the stated I/O bytes per second of walltime of each job started (the tier loads)
    started: list[Start] = field(default_factory=list)

    @classmethod
    def of(cls, snap: Snapshot, io_rates: dict[str, float]) -> "View":
        hps = snap.hps_free if snap.hps_free is not None else snap.hps_capacity
        return cls(snap, list(snap.queue), snap.free_nodes, float(hps), io_rates)

    def can_start(self, job: QueuedJob, tier: str) -> bool:
        if job.nodes > self.free:
            return False
        return tier == LPS or (job.storage > 0 and job.storage <= self.hps_free * (1 + 1e-12))

    def any_fits(self, k: int) -> bool:
        free = self.free
        return any(q.nodes <= free for q in self.queue[:k])

    def start(self, job: QueuedJob, tier: str) -> Start:
        st = self.snap.start(job, tier)
        self.queue.remove(job)
        self.free -= job.nodes
        self.hps_free -= st.storage
        self.started.append(st)
        io = job.input + job.output + job.data
        if io > 0:
            self.io_rates[job.id] = io / job.walltime
        return st


@dataclass(frozen=True)
class Encoding:
    """The observation's shapes: ``k`` job slots, whether the agent chooses tiers, ``io_nodes`` loads."""

    k: int = 16
    tiers: bool = False
    io_nodes: int = 1

    def __post_init__(self) -> None:
        if not (isinstance(self.k, int) and 1 <= self.k <= 10_000):
            raise ValueError(f"k: the job slots, an integer from 1 to 10000, got {self.k!r}")

    @property
    def actions(self) -> int:
        return (2 if self.tiers else 1) * self.k + 1

    @property
    def wait(self) -> int:
        return self.actions - 1

    def observe(self, view: View) -> dict[str, np.ndarray]:
        snap = view.snap
        now, total = snap.now, snap.total_nodes
        rates = snap.rates
        lps = rates.lps if rates is not None else math.inf
        cap = snap.hps_capacity if snap.hps_capacity > 0 else math.inf
        jobs = np.zeros((self.k, len(JOB_FEATURES)), dtype=np.float32)
        for i, q in enumerate(view.queue[:self.k]):
            jobs[i] = (1.0, q.nodes / total, q.walltime / HOUR, max(now - q.submit, 0.0) / HOUR,
                       (q.input + q.output + q.data) / lps / HOUR, q.storage / cap, float(q.nodes <= view.free))
        machine = np.array([view.free / total, view.hps_free / cap if cap < math.inf else 0.0,
                            math.log1p(len(view.queue))], dtype=np.float32)
        tiers = np.zeros(2, dtype=np.float32)
        if rates is not None and view.io_rates:
            load = {LPS: 0.0, HPS: 0.0}
            for r in snap.running:
                load[r.tier] += view.io_rates.get(r.id, 0.0)
            tiers[:] = (load[LPS] / rates.lps, load[HPS] / rates.hps)
        io = np.zeros(max(self.io_nodes, 1), dtype=np.float32)
        loads = snap.io_node_loads
        if loads and rates is not None:
            io[:len(loads)] = np.asarray(loads[:len(io)], dtype=np.float64) / rates.lps
        return {"jobs": jobs, "machine": machine, "tiers": tiers, "io_nodes": io}

    def start_of(self, view: View, action: int) -> tuple[QueuedJob, str] | None:
        """The (job, tier) ``action`` starts in ``view``, or None: a wait, or an action that cannot be done now."""
        a = int(action)
        if not 0 <= a < self.wait:
            return None
        slot, tier = (a - self.k, HPS) if a >= self.k else (a, LPS)
        if slot >= len(view.queue) or slot >= self.k:
            return None
        job = view.queue[slot]
        return (job, tier) if view.can_start(job, tier) else None

    def mask(self, view: View) -> np.ndarray:
        """Which actions do something now (the wait always does)."""
        m = np.zeros(self.actions, dtype=np.int8)
        for i, q in enumerate(view.queue[:self.k]):
            m[i] = view.can_start(q, LPS)
            if self.tiers:
                m[self.k + i] = view.can_start(q, HPS)
        m[self.wait] = 1
        return m


__all__ = ["Encoding", "HOUR", "JOB_FEATURES", "View"]
