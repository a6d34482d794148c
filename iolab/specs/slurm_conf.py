"""The slurm.conf settings the ``slurm`` batch scheduler models, named as slurm.conf names them.

    scheduler:
      kind: slurm
      conf:
        SchedulerParameters: bf_interval=5,bf_resolution=1     # or a mapping {bf_interval: 5, ...}
        PriorityType: priority/multifactor
        PriorityWeightAge: 1000

Every field has Slurm 22.05's default (``man slurm.conf``), so ``{kind: slurm}`` is a stock slurmctld.
``SchedulerParameters`` keys that Slurm knows but the model leaves out are accepted and listed in
:attr:`SchedParams.ignored` (a configuration copied from a real cluster carries many); an
unknown key is refused, naming it.  What each one does in the model: docs/slurm-scheduler.md.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from iolab.specs.base import StrictModel

__all__ = ["IGNORED_PARAMETERS", "SchedParams", "SlurmConf", "parse_scheduler_parameters",
           "parse_slurm_time", "slurm_time"]

# SchedulerParameters of Slurm 22.05 (man slurm.conf) that the model does not read: they concern
# features a replay of rigid whole-node jobs does not use (arrays' limits, licenses, reservations,
# preemption, heterogeneous jobs, burst buffers, per-user/partition limits, RPC throttling, ...) or the
# speed of a cycle (its yields, its time limit), which on a replay's queue of a few hundred jobs ends in
# milliseconds
IGNORED_PARAMETERS = frozenset("""
allow_zero_lic assoc_limit_stop batch_sched_delay_ms bb_array_stage_cnt bf_busy_nodes bf_hetjob_immediate
bf_hetjob_prio bf_job_part_count_reserve bf_licenses bf_max_job_array_resv bf_max_job_assoc bf_max_job_part
bf_max_job_start bf_max_job_user bf_max_job_user_part bf_max_time bf_min_age_reserve bf_min_prio_reserve
bf_node_space_size bf_one_resv_per_job bf_running_job_reserve bf_yield_interval bf_yield_sleep
build_queue_timeout correspond_after_task_cnt delay_boot disable_job_shrink disable_hetjob_steps
enable_hetjob_steps enable_user_top ignore_numa ignore_prefer_validation max_array_tasks max_rpc_cnt
max_sched_time max_script_size max_switch_wait no_backup_scheduling no_env_cache nohold_on_prolog_fail
pack_serial_at_end partition_job_depth preempt_reorder_count preempt_strict_order preempt_youngest_first
reduce_completing_frag requeue_setup_env_fail salloc_wait_nodes sbatch_wait_nodes sched_interval
sched_max_job_start sched_min_interval spec_cores_first step_retry_count step_retry_time whole_hetjob
""".split())


def parse_slurm_time(value: str) -> float:
    """Slurm's time string in seconds: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S`` (a bare
    number is minutes, as ``sbatch -t`` and slurm.conf read it)."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if not m:
        raise ValueError(f"not a Slurm time limit: {value!r} (M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)")
    d, a, b, c = (int(x) if x is not None else None for x in m.groups())
    if d is not None:  # D-H, D-H:M, D-H:M:S
        return float(d * 86400 + a * 3600 + (b or 0) * 60 + (c or 0))
    if c is not None:  # H:M:S
        return float(a * 3600 + b * 60 + c)
    if b is not None:  # M:S
        return float(a * 60 + b)
    return float(a * 60)


def slurm_time(value: object, unit: float = 60.0) -> object:
    """A field's Slurm time (:func:`parse_slurm_time`) in seconds; a number counts ``unit`` seconds
    (minutes, as Slurm reads one).  Anything else is left to the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return value
    if isinstance(value, (int, float)):
        return float(value) * unit
    return parse_slurm_time(value)


def parse_scheduler_parameters(text: str) -> dict[str, object]:
    """``bf_interval=5,bf_continue`` as a mapping (a bare key is True), as slurmctld reads the line."""
    out: dict[str, object] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, val = item.partition("=")
        val = val.strip()
        out[key.strip().lower()] = (int(val) if val.lstrip("-").isdigit() else val) if sep else True
    return out


class SchedParams(StrictModel):
    """The SchedulerParameters keys the model reads (Slurm 22.05 defaults)."""

    bf_interval: int = Field(30, ge=1, le=10800, description="seconds between two backfill passes")
    bf_resolution: int = Field(60, ge=1, le=3600, description="seconds: the backfill map's times are "
                               "rounded down to multiples of it")
    bf_window: int = Field(1440, ge=1, le=43200, description="minutes ahead the backfill pass plans")
    bf_max_job_test: int = Field(500, ge=1, le=1_000_000, description="pending jobs a backfill pass tests")
    bf_window_linear: int = Field(0, ge=0, description="seconds added to the running jobs' grouping "
                                  "window at each step instead of doubling it")
    bf_continue: bool = Field(False, description="accepted; no effect here: a pass over a replay's queue "
                              "never yields its locks (bf_yield_interval, 2 s)")
    batch_sched_delay: int = Field(3, ge=0, description="seconds: a submission is scheduled by the "
                                   "controller's background loop at most this often")
    default_queue_depth: int = Field(100, ge=0, description="jobs an event's main pass tests")
    defer: bool = Field(False, description="job ends too wait for the background loop")
    ignored: tuple[str, ...] = Field((), description="keys given that the model does not read")

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, v: object) -> object:
        if v is None:
            return {}
        if isinstance(v, str):
            v = parse_scheduler_parameters(v)
        if not isinstance(v, dict):
            return v
        known = set(cls.model_fields) - {"ignored"}
        out: dict[str, object] = {}
        ignored = list(v.get("ignored", ()))
        for key, val in v.items():
            k = str(key).lower()
            if k == "ignored":
                continue
            if k in known:
                out[k] = val
            elif k in IGNORED_PARAMETERS:
                ignored.append(k)
            else:
                raise ValueError(f"unknown SchedulerParameters key {key!r} (Slurm 22.05 has no such key; the "
                                 f"model reads {', '.join(sorted(known))})")
        return {**out, "ignored": tuple(ignored)}

    def line(self) -> str:
        """The non-default keys as a SchedulerParameters value."""
        parts = []
        for name, f in type(self).model_fields.items():
            val = getattr(self, name)
            if name == "ignored" or val == f.default:
                continue
            parts.append(name if val is True else f"{name}={val}")
        return ",".join(parts)


class SlurmConf(StrictModel):
    """The slurm.conf lines the ``slurm`` scheduler follows (Slurm 22.05 defaults)."""

    SchedulerType: Literal["sched/backfill", "sched/builtin"] = "sched/backfill"
    SchedulerParameters: SchedParams = Field(default_factory=SchedParams)
    PriorityType: Literal["priority/basic", "priority/multifactor"] = "priority/basic"
    PriorityWeightAge: int = Field(0, ge=0, le=2**32 - 1)
    PriorityWeightJobSize: int = Field(0, ge=0, le=2**32 - 1)
    PriorityWeightFairshare: int = Field(0, ge=0, le=2**32 - 1)
    PriorityMaxAge: float = Field(7 * 86400, ge=0, description="seconds (slurm.conf: 7-0)")
    PriorityDecayHalfLife: float = Field(7 * 86400, ge=0, description="seconds (slurm.conf: 7-0); 0: none")
    PriorityCalcPeriod: float = Field(300, gt=0, description="seconds (slurm.conf: 5, minutes)")
    PriorityFavorSmall: bool = False
    epoch: float = Field(0.0, ge=0, description="not a slurm.conf key: the wall-clock time (s since 1970) "
                         "of the run's time 0; Slurm rounds its times on its own clock (a replay sets it)")
    bf_cycle_at: float | None = Field(None, ge=0, description="not a slurm.conf key: the wall-clock time (s "
                                      "since 1970) of one backfill cycle (sdiag: 'Last cycle when'); the cycles "
                                      "are every bf_interval from it; default: from the run's first decision")

    @field_validator("PriorityMaxAge", "PriorityDecayHalfLife", "PriorityCalcPeriod", mode="before")
    @classmethod
    def _minutes(cls, v: object) -> object:
        return slurm_time(v)

    @field_validator("PriorityFavorSmall", mode="before")
    @classmethod
    def _yes(cls, v: object) -> object:
        return {"yes": True, "no": False}.get(v.strip().lower(), v) if isinstance(v, str) else v

    @field_validator("SchedulerType", "PriorityType", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v
