"""Calibration: the costs of a real batch run the simulator must know, measured once, applied anywhere.

A real job pays what lackner2019's model leaves out: its processes start
(``mpiexec``, Python, MPI, joining Ray) before its first phase, stop after its
last, and every read or write has a fixed cost (a round trip to the storage
manager, opening an HDF5 file) before its bytes move.  :func:`measure` computes
them from a real run's wall-clock records (``iolab.emulator.batch_trace`` calls
it and stores the result as the trace's ``calibration`` attribute);
:func:`read_calibration` reads it back from a trace file and :func:`calibrated`
turns it into the ``platform.overheads`` of *any* batch spec, in that spec's
seconds: the costs are wall seconds of this machine, so a spec run at time
scale ``ts`` (wall seconds per spec second) pays ``wall / ts`` spec seconds.

What is measured (wall seconds; the median over the run's jobs or phases, so one
slow job on a loaded machine does not set it):

- ``launch``: the job's processes started -> its first phase began;
- ``exit``: its last phase ended -> the runtime saw its processes exit (the
  batch loop polls every 50 ms, so this includes up to one poll);
- ``io_phase``: a read or write phase's wall time minus its bytes at the tier's
  paced rate, over the phases that had their tier to themselves (no other
  phase on the same tier overlapped them); only with ``bandwidth_cap`` on (without
  it the transfer time is unknown) and never below 0.

The delivered staging rate (achieved / target) is recorded beside them, not
applied: the simulator's staging link already runs at the spec's rate.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from .errors import TraceError
from .trace import read_trace

CALIBRATION_VERSION = 1
KEYS = ("launch", "exit", "io_phase")


def _median(values) -> float:
    v = [x for x in values if x == x and math.isfinite(x)]
    return statistics.median(v) if v else math.nan


def alone(phases: list[tuple[str, float, float, float]]) -> list[int]:
    """Indices of the ``(tier, start, end, bytes)`` phases no other phase of the same tier overlapped."""
    out = []
    for i, (tier, s, e, _) in enumerate(phases):
        if not any(j != i and t == tier and s2 < e and s < e2 for j, (t, s2, e2, _) in enumerate(phases)):
            out.append(i)
    return out


def measure(*, launch: dict[str, float], exit: dict[str, float],
            io_phases: list[tuple[str, float, float, float]], wall_rates: dict[str, float] | None,
            time_scale: float, stage_ratio: float = math.nan) -> dict[str, Any]:
    """The calibration record of a run: ``launch``/``exit`` per job (wall s), ``io_phases`` as
    ``(tier, wall start, wall end, real bytes)``, ``wall_rates`` the paced real B/s per tier (None:
    not paced, no ``io_phase``)."""
    fixed: list[float] = []
    if wall_rates:
        for i in alone(io_phases):
            tier, s, e, nbytes = io_phases[i]
            rate = wall_rates.get(tier)
            if rate:
                fixed.append(max(0.0, (e - s) - nbytes / rate))
    return {
        "version": CALIBRATION_VERSION,
        "wall": {"launch": _median(launch.values()), "exit": _median(exit.values()), "io_phase": _median(fixed)},
        "samples": {"launch": len(launch), "exit": len(exit), "io_phase": len(fixed)},
        "per_job": {job: {"launch": launch.get(job, math.nan), "exit": exit.get(job, math.nan)}
                    for job in sorted(set(launch) | set(exit))},
        "time_scale": time_scale,
        "stage_rate_ratio": stage_ratio,
    }


def read_calibration(path: str | Path) -> dict[str, Any]:
    """The calibration record of the real batch run traced in ``path`` (a TraceError otherwise)."""
    trace = read_trace(path)
    cal = trace.attrs.get("calibration")
    if not isinstance(cal, dict) or not isinstance(cal.get("wall"), dict):
        runtime = trace.attrs.get("runtime", "?")
        raise TraceError(f"{path}: no calibration in this trace (runtime {runtime}; a real batch run's trace "
                         "from `iolab emulate SPEC --out TRACE` has one)")
    if int(cal.get("version", 0)) > CALIBRATION_VERSION:
        raise TraceError(f"{path}: calibration version {cal.get('version')} is newer than this iolab's")
    return cal


def overheads_of(cal: dict[str, Any], time_scale: float, *, measured_only: bool = False) -> dict[str, float]:
    """The calibration's costs in the seconds of a spec run at ``time_scale`` (unmeasured: 0, or left
    out with ``measured_only``)."""
    wall = cal["wall"]
    out = {}
    for key in KEYS:
        w = wall.get(key, math.nan)
        if isinstance(w, (int, float)) and w == w and w >= 0:
            out[key] = float(w) / time_scale
        elif not measured_only:
            out[key] = 0.0
    return out


def calibrated(spec, cal: dict[str, Any]):
    """``spec`` (a batch experiment) with ``platform.overheads`` from ``cal``, converted with the
    spec's own ``emulator.time_scale``; a cost the run could not measure keeps the spec's value."""
    if getattr(spec, "kind", None) != "batch":
        raise TypeError("a calibration applies to batch specs (kind: batch)")
    o = overheads_of(cal, spec.emulator.time_scale, measured_only=True)
    platform = spec.platform.model_copy(update={"overheads": spec.platform.overheads.model_copy(update=o)})
    return spec.model_copy(update={"platform": platform})


__all__ = ["CALIBRATION_VERSION", "KEYS", "alone", "calibrated", "measure", "overheads_of", "read_calibration"]
