"""One run, executed where Ray puts it: spec -> runtime -> trace -> metrics record.

:func:`execute` is plain Python (tests call it without Ray); it never raises
for a failing run but returns a record with ``status: failed`` and the error,
so that one bad run cannot stop a campaign.
"""

from __future__ import annotations

import math
import os
import platform
import time
import traceback
from pathlib import Path
from typing import Any

from iolab.runners import level_of, runner
from iolab.trace import write_trace
from iolab.campaign.expand import experiment_of
from iolab.campaign.runtimes import resolve

# metric columns of a record, in table order: an I/O run's, the run's own, then a batch run's (makespan is
# both levels'; a run leaves the other level's empty)
IO_METRICS: tuple[str, ...] = (
    "makespan", "max_stretch", "mean_stretch", "worst_stretch", "mean_pack_max_slowdown", "io_load", "packs",
    "exec_time", "delay_time", "idle_time",
)
BATCH_METRICS: tuple[str, ...] = ("jobs", "mean_turnaround", "node_utilisation", "hps_utilisation", "hps_jobs")
METRICS: tuple[str, ...] = IO_METRICS + ("events", "sim_seconds") + BATCH_METRICS
INT_METRICS = frozenset({"packs", "events", "jobs", "hps_jobs"})
# what a run must have, finite, to be a result
REQUIRED: dict[str, tuple[str, ...]] = {"io": ("makespan", "max_stretch", "mean_stretch"),
                                        "batch": ("makespan", "mean_turnaround")}


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def metrics_of(trace, level: str = "io") -> dict[str, Any]:
    """The metric columns of a run of ``level`` (its runners' metrics of ``trace``)."""
    m = runner(level, "sim").metrics(trace)
    out = {k: getattr(m, k) for k in (IO_METRICS if level == "io" else ("makespan",) + BATCH_METRICS)}
    out["events"] = int(trace.attrs.get("events", -1))
    out["sim_seconds"] = float(trace.attrs.get("wall_seconds", math.nan))
    return {k: _finite(float(v) if k not in INT_METRICS else int(v)) for k, v in out.items()}


def execute(payload: dict[str, Any], traces_dir: str | None = None) -> dict[str, Any]:
    """Run one payload (see :meth:`Run.payload`); return its journal record."""
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"run_id": payload["run_id"], "params": payload["params"], "status": "ok", "error": "",
                           "metrics": {}, "trace": "", "host": platform.node(), "pid": os.getpid()}
    try:
        spec = experiment_of(payload["experiment"])
        level = level_of(spec)
        fn = resolve(payload["runtime"])
        workdir = Path(traces_dir) if traces_dir else None
        mode = spec.sim.mode if level == "io" else None  # the I/O simulator's engine; a batch run has one
        trace = fn(spec, mode=mode, run_id=payload["run_id"], workdir=workdir)
        rec["metrics"] = metrics_of(trace, level)
        bad = [k for k in REQUIRED[level] if rec["metrics"].get(k) is None]
        if bad:  # a run whose metrics are not finite is not a result (never recorded as ok)
            raise ValueError(f"non-finite metric(s) {', '.join(bad)}: the run's times overflowed")
        if traces_dir:
            path = write_trace(trace, Path(traces_dir) / f"{payload['run_id']}.h5")  # atomic
            rec["trace"] = str(path)
        failed = [str(i) for i, st in zip(trace.jobs["id"], trace.jobs["status"]) if st != "ok"]
        if failed:  # a real run whose apps failed (full disk, a killed rank) failed, as `iolab emulate` says
            raise RuntimeError(f"{len(failed)} app(s) did not end ok: {', '.join(failed[:10])}"
                               + (f" (trace {rec['trace']})" if rec["trace"] else ""))
    except Exception as exc:  # a failing run is a result, not a crash of the campaign
        rec.update(status="failed", error=f"{type(exc).__name__}: {exc}".strip()[:2000], metrics={},
                   traceback="".join(traceback.format_exception(exc)[-4:])[-4000:])
    rec["wall_seconds"] = time.perf_counter() - t0
    rec["finished_at"] = time.time()
    return rec


def failed_record(payload: dict[str, Any], error: str) -> dict[str, Any]:
    """The record of a run whose task died outside :func:`execute` (worker crash, lost node)."""
    return {"run_id": payload["run_id"], "params": payload["params"], "status": "failed",
            "error": error.strip()[:2000], "metrics": {}, "trace": "", "host": "", "pid": -1,
            "wall_seconds": None, "finished_at": time.time()}
