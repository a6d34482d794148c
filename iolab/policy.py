"""The public policy API: what a policy of your own implements, for every decision iolab makes.

A policy is a small class with one method over plain data; the simulator and the real run call the
same object (docs/policies.md).  Name it in a spec (``scheduler: my_sched.py:MySched``, or
``{kind: python, path: my_sched.py, class: MySched, options: {...}}``), from an installed module
(``mypkg.mod:MySched``) or by the name an installed package registered under an entry-point group
(``iolab.schedulers``, ``iolab.io_policies``, ``iolab.placements``, ``iolab.allocators``,
``iolab.controllers``).  ``iolab policy new KIND NAME`` writes a commented template, ``iolab policy check
FILE:CLASS`` runs it on small scenarios under strict mode.

Decision points and their classes (``API_VERSION`` 1):

- **batch scheduler**: :class:`BatchScheduler`, ``decide(snapshot: Snapshot) -> Decision | [Start | id]``;
- more decision points are listed in docs/policies.md.

The built-in policies are subclasses of the same classes.  The kernels' speed flags and fast paths are
theirs and stay private: a policy that sets none of them is correct.
"""

from __future__ import annotations

from iolab.middleware.policies.batch.allocation import NodeAllocator, NodeView
from iolab.middleware.policies.batch.profile import Profile
from iolab.middleware.policies.controller.handler import RESUME, SUSPEND, Action, ControllerPolicy, JobUsage, OpenFile
from iolab.middleware.policies.placement.disks import DiskInfo, DiskState
from iolab.middleware.policies.placement.strategies import PlacementPolicy
from iolab.middleware.policies.batch.snapshot import (
    HPS, LPS, TIERS, BatchScheduler, Decision, PlanEntry, QueuedJob, RunningJob, Snapshot, Start, TierRates,
)
from iolab.middleware.policies.io_order import IOOrder, IORequest, Sharing, Stream
from iolab.middleware.policies.loader import API_VERSION, PolicyLoadError, PolicySource, load_policy

__all__ = [
    "API_VERSION", "HPS", "LPS", "RESUME", "SUSPEND", "TIERS", "Action", "BatchScheduler", "ControllerPolicy",
    "Decision", "DiskInfo", "DiskState", "IOOrder", "IORequest", "JobUsage", "NodeAllocator", "NodeView", "OpenFile",
    "PlacementPolicy", "PlanEntry", "PolicyLoadError", "PolicySource", "Profile", "QueuedJob", "RunningJob", "Sharing",
    "Snapshot", "Start", "Stream", "TierRates", "load_policy",
]
