"""The batch schedulers by name: :func:`get_scheduler` builds a fresh policy from a spec's
``scheduler`` (its kind and options), :data:`SCHEDULERS` lists the names."""

from __future__ import annotations

import numpy as np

from iolab.middleware.policies.batch.backfill import EASY, FCFS, Conservative, ConservativeReinsert
from iolab.middleware.policies.batch.sas import SAS, RandomTier
from iolab.middleware.policies.batch.slurm import SlurmScheduler
from iolab.middleware.policies.batch.snapshot import BatchPolicy

SCHEDULERS = ("fcfs", "easy", "conservative", "conservative-reinsert", "sas", "random-tier", "slurm")


def get_scheduler(name: str, *, p: float | None = None,
                  rng: np.random.Generator | int = 0, hps_requests: bool = False,
                  start_now: bool = False, backfill_depth: int | None = None, conf=None) -> BatchPolicy:
    """A fresh scheduler by name (``random-tier`` needs ``p``; ``hps_requests``: FCFS and the
    conservative variants run the jobs that ask for HPS on HPS; ``backfill_depth``: a decision
    considers the head and at most that many waiting jobs behind it, Slurm's ``bf_max_job_test``:
    EASY, SAS and random-tier try only those for backfilling, the conservative variants reserve only
    those, and every policy plans only those: the others have no planned start; ``conf``: the slurm
    scheduler's :class:`~iolab.specs.slurm_conf.SlurmConf`, default Slurm's defaults)."""
    key = name.strip().lower().replace("_", "-")
    if conf is not None and key != "slurm":
        raise ValueError(f"conf applies to slurm, not {name!r}")
    if key == "slurm":
        if backfill_depth is not None or hps_requests or start_now or p is not None:
            raise ValueError("slurm takes its settings from conf (SchedulerParameters=bf_max_job_test=...)")
        return SlurmScheduler(conf)
    if backfill_depth is not None:
        if backfill_depth < 0:
            raise ValueError(f"backfill_depth must be >= 0, got {backfill_depth}")
        policy = get_scheduler(name, p=p, rng=rng, hps_requests=hps_requests, start_now=start_now)
        policy.backfill_depth = backfill_depth
        return policy
    if hps_requests and key not in ("fcfs", "conservative", "conservative-reinsert"):
        raise ValueError(f"hps_requests applies to fcfs, conservative and conservative-reinsert, not {name!r}")
    if key == "fcfs":
        return FCFS(hps_requests=hps_requests)
    if key == "easy":
        return EASY()
    if key == "conservative":
        return Conservative(hps_requests=hps_requests)
    if key == "conservative-reinsert":
        return ConservativeReinsert(hps_requests=hps_requests)
    if start_now and key != "sas":
        raise ValueError(f"start_now applies to sas, not {name!r}")
    if key == "sas":
        return SAS(start_now=start_now)
    if key == "random-tier":
        if p is None:
            raise ValueError("random-tier needs p, the probability of HPS")
        return RandomTier(p, rng)
    raise ValueError(f"unknown batch scheduler {name!r}; known: {', '.join(SCHEDULERS)}")


__all__ = ["SCHEDULERS", "get_scheduler"]
