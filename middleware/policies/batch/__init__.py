"""Batch schedulers as pure policies: snapshot in, decision (starts + plan) out.

    policy = get_scheduler("easy")
    decision = policy.decide(Snapshot(now=t, total_nodes=128, free_nodes=..., queue=..., running=...))
    for s in decision.starts: ...         # start these jobs now, on s.tier
    policy.plan()                         # expected start of every job that was waiting

FCFS, EASY and conservative backfilling plan compute nodes only (LPS);
SAS and random-tier also choose the storage tier (lackner2019).  The schedulers by name:
:mod:`.registry`.
"""

from __future__ import annotations

from iolab.middleware.policies.batch.backfill import EASY, FCFS, Conservative, ConservativeReinsert
from iolab.middleware.policies.batch.profile import Profile
from iolab.middleware.policies.batch.registry import SCHEDULERS, get_scheduler
from iolab.middleware.policies.batch.sas import SAS, Option, RandomTier, choose_tier, sjf_key, tier_options
from iolab.middleware.policies.batch.snapshot import (
    HPS, LPS, TIERS, BatchPolicy, Decision, PlanEntry, QueuedJob, RunningJob, Snapshot, Start, TierRates,
)

__all__ = [
    "EASY", "FCFS", "HPS", "LPS", "SAS", "SCHEDULERS", "TIERS", "BatchPolicy", "Conservative",
    "ConservativeReinsert", "Decision",
    "Option", "PlanEntry", "Profile", "QueuedJob", "RandomTier", "RunningJob", "Snapshot", "Start",
    "TierRates", "choose_tier", "get_scheduler", "sjf_key", "tier_options",
]
