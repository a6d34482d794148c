"""Calibration: the costs of a real run the simulator must know, measured once, applied anywhere.

A real job pays what lackner2019's model leaves out: its processes start
(``mpiexec``, Python, MPI, joining Ray) before its first phase, stop after its
last, and every read or write has a fixed cost (a round trip to the storage
manager, opening an HDF5 file) before its bytes move.  :func:`measure` computes
them from a real run's wall-clock records (``iolab.emulator.batch.trace`` calls
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
  their tier to themselves (``numpy.polyfit``, degree 1; at least
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

import numpy as np  # numpy.polyfit, not scipy.stats.linregress: scipy.stats cost 0.8 s and 60 MB to import

from iolab.errors import TraceError
from iolab.trace import read_trace
from iolab.units import short

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
    times = [t for _, t in samples]
    slope, intercept = (float(x) for x in np.polyfit(sizes, times, 1))
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


# -- the I/O level --------------------------------------------------------------------------------
# A real I/O run (carretero2020's model: apps alternating compute and I/O phases, one I/O node's
# transfers arbitrated by a list policy) pays the same kinds of costs: an app's processes start
# before its first phase and stop after its last; every transfer holds its I/O node for a fixed
# time (the grant's message, opening the file, the release) besides its bytes; and between two
# phases an app spends a few milliseconds (the request's round trip, a barrier) that belong to
# neither.  :func:`measure_io` computes them from an I/O trace's tables (the emulator stores them
# as the trace's ``calibration`` attribute; :func:`read_calibration` measures an older trace's on
# the fly) and :func:`calibrated` turns them into the ``platform.bandwidth`` and
# ``platform.overheads`` of any I/O spec.

IO_KEYS = ("launch", "gap", "exit", "io_phase")


def _io_tables(trace) -> tuple[list[tuple[float, float]], dict[str, list[float]]]:
    """``(volume, hold)`` of every finished, non-empty transfer a list policy granted alone on its
    I/O node, and the apps' delays (trace seconds): ``launch`` (start -> first phase), ``gap``
    (a phase's end -> the next's begin; an I/O phase begins with its request) and ``exit`` (last
    phase -> end), over the apps that ended ok."""
    p, g, j = trace.phases, trace.grants, trace.jobs
    volume = {(str(a), int(i)): float(v) for a, i, k, v in zip(p["job"], p["index"], p["kind"], p["volume"])
              if k != "compute"}
    held = [((str(a), int(ph)), int(n), float(gr), float(rl))
            for a, ph, n, gr, rl in zip(g["job"], g["phase"], g["io_node"], g["grant"], g["release"])
            if math.isfinite(gr) and math.isfinite(rl) and rl > gr and volume.get((str(a), int(ph)), 0.0) > 0]
    by_node: dict[int, list[tuple[float, float, tuple]]] = {}
    for key, n, gr, rl in held:
        by_node.setdefault(n, []).append((gr, rl, key))
    samples = []
    for spans in by_node.values():
        spans.sort()
        held_until = -math.inf  # the latest release among the transfers granted before this one
        for k, (gr, rl, key) in enumerate(spans):  # alone: no other transfer of the node overlapped it
            if held_until <= gr + 1e-9 and (k + 1 == len(spans) or spans[k + 1][0] >= rl - 1e-9):
                samples.append((volume[key], rl - gr))
            held_until = max(held_until, rl)
    requested = {(str(a), int(ph)): float(r) for a, ph, r in zip(g["job"], g["phase"], g["request"])}
    rows: dict[str, list[tuple[int, float, float]]] = {}
    for a, i, kind, start, end in zip(p["job"], p["index"], p["kind"], p["start"], p["end"]):
        a, i = str(a), int(i)
        begin = float(start) if kind == "compute" else requested.get((a, i), float(start))
        rows.setdefault(a, []).append((i, begin, float(end)))
    delays: dict[str, list[float]] = {"launch": [], "gap": [], "exit": []}
    for a, start, end, status in zip(j["id"], j["start"], j["end"], j["status"]):
        mine = sorted(rows.get(str(a), []))
        if status != "ok" or not mine or not all(math.isfinite(x) for r in mine for x in r[1:]):
            continue
        delays["launch"].append(mine[0][1] - float(start))
        delays["gap"] += [b[1] - a_[2] for a_, b in zip(mine, mine[1:])]
        delays["exit"].append(float(end) - mine[-1][2])
    return samples, delays


def measure_io(trace) -> dict[str, Any]:
    """The calibration record of a real I/O run (an ``iolab.trace.Trace`` of ``runtime: emulator``).

    Like :func:`measure`'s, in wall seconds (trace seconds times the run's ``time_scale``), medians:
    ``launch``, ``gap`` and ``exit`` over the apps that ended ok (clipped at 0); ``io_phase``, a
    transfer's hold time minus its volume at the delivered bandwidth, over the transfers that held
    their I/O node alone; ``delivered["io"]``, the share of the spec's bandwidth those transfers
    were delivered at (:func:`delivered_share`: a least-squares line through (volume, hold); not
    measured, NaN, when the volumes are too few or too alike, as in a run with one volume per phase).
    """
    spec = trace.attrs.get("spec") or {}
    ts = float(trace.attrs.get("time_scale") or (spec.get("emulator") or {}).get("time_scale") or 1.0)
    b = float((spec.get("platform") or {}).get("bandwidth") or trace.attrs.get("bandwidth") or math.nan)
    samples, delays = _io_tables(trace)
    share, fit = delivered_share(samples, b) if b > 0 else (math.nan, {"n": len(samples), "why": "no bandwidth"})
    rate = b * (share if share == share else 1.0)
    fixed = [max(0.0, hold - v / rate) for v, hold in samples] if rate > 0 else []
    wall = {k: max(0.0, _median(delays[k])) * ts if delays[k] else math.nan for k in ("launch", "gap", "exit")}
    wall["io_phase"] = _median(fixed) * ts if fixed else math.nan
    return {
        "version": CALIBRATION_VERSION, "level": "io", "wall": wall,
        "samples": {**{k: len(v) for k, v in delays.items()}, "io_phase": len(fixed)},
        "delivered": {"io": share}, "fits": {"io": fit}, "time_scale": ts,
    }


def io_overheads(cal: dict[str, Any], spec) -> tuple[float, dict[str, float]]:
    """``(bandwidth, overheads)`` an I/O ``spec`` is simulated with under ``cal``: the delivered share
    times the spec's bandwidth, and the costs in the spec's seconds (wall / its
    ``emulator.time_scale``); what the run could not measure keeps the spec's value."""
    share = (cal.get("delivered") or {}).get("io", math.nan)
    ok = isinstance(share, (int, float)) and share == share and 0 < share <= DELIVERED_MAX
    bandwidth = spec.platform.bandwidth * (float(share) if ok else 1.0)
    ts = spec.emulator.time_scale
    over = spec.platform.overheads.model_dump()
    for key in IO_KEYS:
        w = cal["wall"].get(key, math.nan)
        if isinstance(w, (int, float)) and w == w and 0 <= w < math.inf:
            over[key] = float(w) / ts
    return bandwidth, over


def describe_costs(bandwidth: float, o: dict[str, float], note: str = "") -> str:
    """One line for an I/O simulation's ``platform.bandwidth`` and ``platform.overheads`` (``note``
    follows the bandwidth)."""
    return (f"bandwidth {short(bandwidth)} units/s{note}, {short(o['io_phase'], 3)} s fixed per transfer; "
            f"launch {short(o['launch'], 3)} s, gap between phases {short(o['gap'], 3)} s, exit {short(o['exit'], 3)} s")


def describe_io(cal: dict[str, Any], spec) -> str:
    """One line for what an I/O calibration record gives the simulation of ``spec`` (its units and seconds)."""
    bandwidth, o = io_overheads(cal, spec)
    share = (cal.get("delivered") or {}).get("io", math.nan)
    how = f"{short(share)} of the spec's" if share == share else "the spec's: not measured"
    return describe_costs(bandwidth, o, f" ({how})")


def describe_batch(spec) -> str:
    """One line for the costs a batch calibration put in ``spec`` (:func:`calibrated`'s result: its overheads
    and the share of their rates the tiers' links deliver)."""
    o = spec.platform.overheads
    d = o.delivered
    return (f"launch {short(o.launch)} s, exit {short(o.exit)} s, I/O phase {short(o.io_phase)} s (spec seconds at "
            f"time_scale {spec.emulator.time_scale:g}); links deliver lps {short(d.lps, 3)}, hps {short(d.hps, 3)}, "
            f"stage {short(d.stage, 3)} of their rates")


def trace_calibration(trace) -> dict[str, Any]:
    """A real I/O run's calibration record: the one its trace stores, else measured now."""
    cal = trace.attrs.get("calibration")
    return cal if isinstance(cal, dict) and cal.get("level") == "io" else measure_io(trace)


def median_calibration(cals: list[dict[str, Any]]) -> dict[str, Any]:
    """Several I/O runs' records as one: every cost's and share's median over the runs that measured it."""
    wall = {k: _median([c["wall"].get(k, math.nan) for c in cals]) for k in IO_KEYS}
    share = _median([(c.get("delivered") or {}).get("io", math.nan) for c in cals])
    return {"version": CALIBRATION_VERSION, "level": "io", "wall": wall, "delivered": {"io": share},
            "time_scale": _median([c.get("time_scale", math.nan) for c in cals]), "runs": len(cals)}


def level_of(cal: dict[str, Any]) -> str:
    """``"io"`` or ``"batch"``: the level of the real run a calibration record comes from."""
    return "io" if cal.get("level") == "io" else "batch"


def read_calibration(path: str | Path, level: str | None = None) -> dict[str, Any]:
    """The calibration record of the real run traced in ``path`` (a TraceError otherwise; also when
    ``level`` is given and the run was of the other level); a real I/O run's trace written before
    the emulator stored its record is measured now."""
    trace = read_trace(path)
    cal = trace.attrs.get("calibration")
    if trace.attrs.get("runtime") == "emulator":  # a real I/O run
        cal = trace_calibration(trace)
    if not isinstance(cal, dict) or not isinstance(cal.get("wall"), dict):
        runtime = trace.attrs.get("runtime", "?")
        raise TraceError(f"{path}: no calibration in this trace (runtime {runtime}; a real run's trace "
                         "from `iolab emulate SPEC --out TRACE` has one)")
    if int(cal.get("version", 0)) > CALIBRATION_VERSION:
        raise TraceError(f"{path}: calibration version {cal.get('version')} is newer than this iolab's")
    if level is not None and level_of(cal) != level:
        name = {"io": "I/O", "batch": "batch"}
        raise TraceError(f"{path}: a calibration of a real {name[level_of(cal)]} run; {'an' if level == 'io' else 'a'} "
                         f"{name[level]} spec needs one of a real {name[level]} run (--calibration)")
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
    """``spec`` with the costs ``cal`` measured, converted with the spec's own
    ``emulator.time_scale``.  A batch spec gets ``platform.overheads`` and the delivered link shares
    (a cost or share the run could not measure keeps the spec's value); an I/O spec its
    ``platform.bandwidth`` and ``platform.overheads`` (:func:`io_overheads`).  The levels must match."""
    level = level_of(cal)
    kind = "batch" if getattr(spec, "kind", None) == "batch" else "io"
    if level != kind:
        raise TypeError(f"a calibration of a real {level} run applies to {level} specs, not to a {kind} spec")
    if kind == "io":
        bandwidth, over = io_overheads(cal, spec)
        platform = spec.platform.model_copy(update={
            "bandwidth": bandwidth, "overheads": spec.platform.overheads.model_copy(update=over)})
        return spec.model_copy(update={"platform": platform})
    o: dict[str, Any] = overheads_of(cal, spec.emulator.time_scale, measured_only=True)
    d = delivered_of(cal)
    if d:
        o["delivered"] = spec.platform.overheads.delivered.model_copy(update=d)
    platform = spec.platform.model_copy(update={"overheads": spec.platform.overheads.model_copy(update=o)})
    return spec.model_copy(update={"platform": platform})


__all__ = ["CALIBRATION_VERSION", "IO_KEYS", "KEYS", "LINKS", "alone", "calibrated", "delivered_of",
           "delivered_share", "describe_costs", "describe_io", "level_of", "io_overheads", "measure", "measure_io", "median_calibration",
           "overheads_of", "read_calibration", "trace_calibration"]
