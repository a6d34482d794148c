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
  delivered rate, over the phases that had their tier to themselves (no other
  phase on the same tier overlapped them); only with ``bandwidth_cap`` on (without
  it the transfer time is unknown) and never below 0;
- ``delivered`` (shares of the paced rate, per link): for ``lps`` and ``hps``, a
  least-squares line ``wall = fixed + bytes / rate`` through the phases that had
  their tier to themselves (``scipy.stats.linregress``; at least
  :data:`MIN_FIT` phases whose sizes span a factor :data:`MIN_SPREAD`, else not
  measured and the paced rate is assumed); for ``stage``, the bytes over the
  seconds of the staging transfers no other transfer overlapped.  The simulator
  runs its links at ``delivered x`` the spec's rate (``platform.overheads.delivered``)
  while its scheduler still plans with the spec's rates, like a real one.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from .errors import TraceError
from .trace import read_trace

CALIBRATION_VERSION = 2  # 2: the delivered rates
KEYS = ("launch", "exit", "io_phase")
LINKS = ("lps", "hps", "stage")
MIN_FIT = 3  # phases a tier's line needs
MIN_SPREAD = 1.5  # largest / smallest phase bytes a line needs (else its slope is noise)
MIN_R2 = 0.9  # share of the phase times' variance the line must explain (else not measured)
DELIVERED_MAX = 2.0  # the spec field's bound (a share above 1: the pacing ran ahead)


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


def delivered_share(samples: list[tuple[float, float]], wall_rate: float) -> tuple[float, dict[str, float]]:
    """The share of ``wall_rate`` (B/s) that ``(bytes, wall seconds)`` samples of one link were
    delivered at: the inverse slope of their least-squares line over ``wall_rate``.  A line whose
    intercept (the fixed cost) comes out below 0 is refitted through the origin (the least-squares
    line with a fixed cost >= 0).  NaN, the fit record saying why, when there are too few samples,
    their sizes are too alike, the line does not rise or explains less than :data:`MIN_R2` of the
    times' variance."""
    fit: dict[str, Any] = {"n": len(samples)}
    sizes = [b for b, _ in samples]
    if len(samples) < MIN_FIT or min(sizes) <= 0 or max(sizes) / min(sizes) < MIN_SPREAD:
        fit["why"] = "too few phases or sizes too alike"
        return math.nan, fit
    from scipy.stats import linregress  # lazy: only a real run's trace writer needs it

    times = [t for _, t in samples]
    r = linregress(sizes, times)
    slope, intercept = float(r.slope), float(r.intercept)
    if intercept < 0:
        slope, intercept = sum(b * t for b, t in samples) / sum(b * b for b in sizes), 0.0
    mean = sum(times) / len(times)
    total = sum((t - mean) ** 2 for t in times)
    r2 = 1.0 - sum((t - intercept - slope * b) ** 2 for b, t in samples) / total if total > 0 else 0.0
    fit.update(slope=slope, intercept=intercept, r2=r2)
    if not slope > 0 or r2 < MIN_R2:
        fit["why"] = "the line does not rise" if not slope > 0 else f"r2 {r2:.2f} < {MIN_R2}"
        return math.nan, fit
    return 1.0 / slope / wall_rate, fit


def measure(*, launch: dict[str, float], exit: dict[str, float],
            io_phases: list[tuple[str, float, float, float]], wall_rates: dict[str, float] | None,
            time_scale: float, staging: list[tuple[float, float, float]] | None = None,
            stage_wall_rate: float = math.nan) -> dict[str, Any]:
    """The calibration record of a run: ``launch``/``exit`` per job (wall s), ``io_phases`` as
    ``(tier, wall start, wall end, real bytes)``, ``wall_rates`` the paced real B/s per tier (None:
    not paced, no ``io_phase`` and no delivered rates), ``staging`` as ``(wall start, wall end,
    real bytes)`` transfers paced at ``stage_wall_rate`` (``stage_rate_ratio``: all of them,
    overlapping ones too, over that rate; ``delivered["stage"]``: those alone)."""
    fixed: list[float] = []
    stage_ratio = math.nan
    delivered = dict.fromkeys(LINKS, math.nan)
    fits: dict[str, dict[str, float]] = {}
    if wall_rates:
        lone = [io_phases[i] for i in alone(io_phases)]
        for tier in ("lps", "hps"):
            if wall_rates.get(tier):
                delivered[tier], fits[tier] = delivered_share(
                    [(b, e - s) for t, s, e, b in lone if t == tier], wall_rates[tier])
        for tier, s, e, nbytes in lone:
            rate = wall_rates.get(tier)
            if rate:
                share = delivered[tier] if delivered[tier] == delivered[tier] else 1.0
                fixed.append(max(0.0, (e - s) - nbytes / (rate * share)))
        if staging and stage_wall_rate > 0:
            moving = [(b, e - s) for s, e, b in staging if e > s]
            if moving:
                stage_ratio = sum(b for b, _ in moving) / sum(t for _, t in moving) / stage_wall_rate
            lone_st = [staging[i] for i in alone([("stage", s, e, b) for s, e, b in staging])]
            secs = sum(e - s for s, e, _ in lone_st)
            fits["stage"] = {"n": len(lone_st)}
            if lone_st and secs > 0:
                delivered["stage"] = sum(b for _, _, b in lone_st) / secs / stage_wall_rate
    return {
        "version": CALIBRATION_VERSION,
        "wall": {"launch": _median(launch.values()), "exit": _median(exit.values()), "io_phase": _median(fixed)},
        "samples": {"launch": len(launch), "exit": len(exit), "io_phase": len(fixed)},
        "delivered": delivered, "fits": fits,
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


def delivered_of(cal: dict[str, Any]) -> dict[str, float]:
    """The delivered shares the calibration measured (links it could not measure left out; a
    version-1 record has none)."""
    got = cal.get("delivered") or {}
    return {k: float(v) for k, v in got.items()
            if k in LINKS and isinstance(v, (int, float)) and v == v and 0 < v <= DELIVERED_MAX}


def calibrated(spec, cal: dict[str, Any]):
    """``spec`` (a batch experiment) with ``platform.overheads`` from ``cal``, converted with the
    spec's own ``emulator.time_scale``, and the delivered link shares; a cost or share the run
    could not measure keeps the spec's value."""
    if getattr(spec, "kind", None) != "batch":
        raise TypeError("a calibration applies to batch specs (kind: batch)")
    o: dict[str, Any] = overheads_of(cal, spec.emulator.time_scale, measured_only=True)
    d = delivered_of(cal)
    if d:
        o["delivered"] = spec.platform.overheads.delivered.model_copy(update=d)
    platform = spec.platform.model_copy(update={"overheads": spec.platform.overheads.model_copy(update=o)})
    return spec.model_copy(update={"platform": platform})


__all__ = ["CALIBRATION_VERSION", "KEYS", "LINKS", "alone", "calibrated", "delivered_of", "delivered_share",
           "measure", "overheads_of", "read_calibration"]
