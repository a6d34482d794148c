"""The simulator as a distribution: where does a real run fall among jittered simulations?

A deterministic simulation is one sample of what a policy does.  Real phases
are not exactly periodic, and a policy that can starve an app
(``shortest-io``) turns millisecond noise into minutes of difference
(docs/validation.md).  So, per policy:

1. :func:`duration_ratios` reads the real run's phase durations over their
   nominal length (compute: the spec's seconds; transfers: their hold time less
   the measured fixed cost, over volume / measured bandwidth, or under ``shared``
   over their duration on a fair share replayed from the real starts);
2. :func:`simulate_spread` simulates the spec ``seeds`` times (seeds
   ``spec.seed + k``), each phase's duration scaled by a factor drawn from
   those ratios (``resample``, the default: it keeps their shape — compute
   phases in ``duration`` mode never end early but sometimes late, transfers
   have tails) or from a normal law (``sim.jitter``, when a jitter is given);
3. :func:`compare_spread` places the real run in that distribution: per app
   slowdown and for the makespan, the simulated median, min, max and the
   *percentile* of the real value (share of simulations at or below it), and
   the error against the median.

Everything is deterministic for a given spec, seed and trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iolab.metrics.io import io_makespan, slowdown as app_slowdown
from iolab.middleware.policies import POLICIES, get_policy
from iolab.middleware.policies.interference import law_of
from iolab.sim.io.run import run_engine
from iolab.sim.io.scenario import Scenario, resample_jitter
from iolab.specs.io import IOExperiment, Jitter
from iolab.trace import Trace

from iolab.validation.relative_errors import geo_error
from iolab.validation.fair_replay import fair_share_durations

__all__ = ["Spread", "measured_jitter", "simulate_spread", "compare_spread", "duration_ratios"]


def duration_ratios(trace: Trace, spec: IOExperiment, bandwidth: float, fixed: float = 0.0,
                    policy: str | None = None) -> dict[str, list[float]]:
    """Real duration / nominal duration of every finished phase, by ``compute`` and ``io``; a
    transfer's ``fixed`` cost (``platform.overheads.io_phase``) is taken off first, since the
    simulator scales only the rest.

    A transfer's nominal duration is its volume at ``bandwidth`` under a list policy (it held its
    I/O node alone); under a policy that shares the node (``shared``; ``policy``, by default the
    trace's) it is its duration on a fair share of ``bandwidth`` with the spec's interference law,
    replayed from the real transfers' own starts (:func:`iolab.validation.fair_replay.fair_share_durations`):
    the sharing is the model's, only what the real link added beyond it is noise."""
    plans = {a.id: a.phase_list() for a in spec.apps}
    name = policy if policy is not None else str(trace.attrs.get("policy", ""))
    shared = name in POLICIES and not get_policy(name).exclusive
    replayed = (fair_share_durations(trace, bandwidth, law_of(spec.platform.interference), fixed)
                if shared else {})
    out: dict[str, list[float]] = {"compute": [], "io": []}
    p = trace.phases
    for job, idx, kind, start, end, vol in zip(p["job"], p["index"], p["kind"], p["start"], p["end"],
                                               p["volume"]):
        job, idx = str(job), int(idx)
        if not (math.isfinite(start) and math.isfinite(end)) or job not in plans or idx >= len(plans[job]):
            continue
        if kind == "compute":
            nominal = float(plans[job][idx][1])
            key = "compute"
        else:
            nominal = (replayed.get((job, idx), math.nan) - fixed) if shared else float(vol) / bandwidth
            key = "io"
            start = float(start) + fixed
        if nominal > 0:
            out[key].append((float(end) - float(start)) / nominal)
    return out


def measured_jitter(ratios: dict[str, list[float]]) -> Jitter:
    """The relative standard deviation of the ratios, as a normal-law jitter (capped at 0.5)."""
    def sd(r: list[float]) -> float:
        return float(np.std(r) / np.mean(r)) if len(r) > 1 else 0.0

    return Jitter(compute=min(0.5, round(sd(ratios["compute"]), 6)), io=min(0.5, round(sd(ratios["io"]), 6)))


@dataclass
class Spread:
    """``seeds`` jittered simulations of one policy: makespan and slowdown per app, per seed."""

    policy: str
    jitter: dict  # how the durations were drawn: {"law": "resample"|"normal", "compute": sd, "io": sd}
    seeds: list[int]
    makespan: np.ndarray            # (seeds,)
    slowdown: dict[str, np.ndarray]  # app -> (seeds,)


def simulate_spread(spec: IOExperiment, policy: str, bandwidth: float, seeds: int, *,
                    ratios: dict[str, list[float]] | None = None, jitter: Jitter | None = None) -> Spread:
    """Simulate ``spec`` at ``bandwidth`` (with its ``platform.overheads``), ``seeds`` times (seeds
    ``spec.seed + k``), with durations resampled from ``ratios`` (see :func:`duration_ratios`) or
    jittered by ``jitter``."""
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    if (ratios is None) == (jitter is None):
        raise ValueError("give ratios (resample) or jitter (normal law), not both")
    base = spec.model_copy(update={
        "policy": policy,
        "platform": spec.platform.model_copy(update={"bandwidth": bandwidth}),
        "sim": spec.sim.model_copy(update={"jitter": jitter or Jitter(), "mode": "event"}),
    })
    if ratios is not None:
        law = {"law": "resample", **measured_jitter(ratios).model_dump(),
               "phases": {k: len(v) for k, v in ratios.items()}}
    else:
        law = {"law": "normal", **jitter.model_dump()}
    # the contention-free time T_i of the deterministic spec: the same yardstick for every seed
    tmin = {a.id: a.min_time(bandwidth) for a in spec.apps}
    numbers = [spec.seed + k for k in range(seeds)]
    makespan = np.empty(seeds)
    slowdown = {a: np.full(seeds, np.nan) for a in tmin}
    for k, seed in enumerate(numbers):
        one = base.model_copy(update={"seed": seed})
        sc = Scenario.from_spec(one)
        if ratios is not None:
            resample_jitter(sc, ratios["compute"], ratios["io"], seed)
        rec = run_engine(one, policy=policy, mode="event", rows=False, scenario=sc)
        makespan[k] = io_makespan(rec.end)
        yardstick = [tmin.get(a.id, 0.0) for a in sc.apps]
        with np.errstate(divide="ignore", invalid="ignore"):  # an app without a contention-free time is left out
            sd = app_slowdown([a.release for a in sc.apps], rec.end, yardstick).tolist()
        for app, t, v in zip(sc.apps, yardstick, sd):
            if t > 0:
                slowdown[app.id][k] = v
    return Spread(policy, law, numbers, makespan, slowdown)


def _place(real: float, sims: np.ndarray) -> dict:
    sims = sims[np.isfinite(sims)]
    if not math.isfinite(real) or sims.size == 0:
        return {"emulator": real, "median": math.nan, "min": math.nan, "max": math.nan,
                "percentile": math.nan, "inside": False, "error": math.nan}
    med = float(np.median(sims))
    lo, hi = float(sims.min()), float(sims.max())
    return {"emulator": real, "median": med, "min": lo, "max": hi,
            "percentile": float(np.mean(sims <= real)),
            # inside the simulated range, with the rounding of the last digit
            "inside": bool(lo * (1 - 1e-9) <= real <= hi * (1 + 1e-9)),
            "error": abs(real - med) / abs(med) if med else math.nan}


def compare_spread(comparison: dict, spread: Spread) -> dict:
    """Where the real run of one policy falls in its simulated distribution.

    ``comparison`` is :func:`iolab.validation.io_comparison.compare` of the same policy (its
    real slowdowns and makespan are reused).
    """
    apps = {a: _place(v["emulator"], spread.slowdown[a]) for a, v in comparison["apps"].items()
            if a in spread.slowdown}
    makespan = _place(comparison["makespan"]["emulator"], spread.makespan)
    values = list(apps.values()) + [makespan]
    errors = [v["error"] for v in values if math.isfinite(v["error"])]
    return {
        "seeds": len(spread.seeds), "jitter": spread.jitter,
        "apps": apps, "makespan": makespan,
        "max_stretch_median": float(np.median(np.nanmax(np.vstack(list(spread.slowdown.values())), axis=0)))
        if spread.slowdown else math.nan,
        "inside": sum(v["inside"] for v in values), "values": len(values),
        "error_max": max(errors, default=math.nan),
        "error_geomean": geo_error([(v["emulator"], v["median"]) for v in values]),
    }
