"""Validate the simulator against real runs (carretero2020 §6.2.1, Fig. 9).

For each policy: emulate the spec, measure what the run really cost (the bandwidth its transfers
got, their fixed cost, the apps' launch, the gaps between their phases and their exit:
:func:`iolab.calibration.measure_io`), simulate the same spec with those (``platform.bandwidth``
and ``platform.overheads``; or with one given calibration for every policy, e.g. another spec's
run), and compare per app and per run:

- stretch, as the *slowdown* ``(C_i - r_i) / T_i`` (>= 1, the quantity
  carretero2020 plots), with the same ``T_i`` (the simulator's, at the measured
  bandwidth) on both sides, so the error is the error of the app's time in the
  system;
- makespan ``C_max``.

Relative error ``|emu - sim| / sim``.  Per policy and overall: the maximum and
the geometric mean, taken as ``exp(mean |ln(emu / sim)|) - 1`` (defined when
an error is 0).  Rankings: the policies ordered by makespan and by max
stretch in each runtime; ``same`` is an exact match; pairs the simulator puts
within ``tie`` (1 %) of each other count as ties, not as disagreements.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from iolab.calibration import calibrated, io_overheads, median_calibration, trace_calibration
from iolab.metrics.distribution import compare_samples
from iolab.sim.io.run import simulate
from iolab.specs.io import IOExperiment, Jitter
from iolab.trace import Trace, read_trace

from iolab.validation.relative_errors import geo_error
from iolab.validation.io_comparison import compare, measured_bandwidth, ranking
from iolab.emulator.ray_session import RaySession
from iolab.emulator.io.run import run_emulation
from iolab.validation.run_folders import run_in, temporary_folder
from iolab.validation.spread import compare_spread, duration_ratios, simulate_spread


@dataclass
class PolicyRun:
    policy: str
    emulated: Trace
    simulated: Trace
    bandwidth: float
    comparison: dict
    calibration: dict | None = None  # the record the simulation was given (iolab.calibration.measure_io)
    spread: dict | None = None  # where the real run falls among jittered simulations (seeds > 0)
    distribution: dict | None = None  # the real runs against the jittered simulations, value by value


class TraceMismatch(ValueError):
    """A kept trace does not belong to the spec being validated."""


def trace_name(policy: str, repeat: int = 0) -> str:
    """The kept trace of a policy's ``repeat``-th real run: ``POLICY.h5``, then ``POLICY-r1.h5``, ..."""
    return f"{policy}.h5" if repeat == 0 else f"{policy}-r{repeat}.h5"


def load_kept_trace(spec: IOExperiment, traces: str | Path | dict[str, list[Path]], policy: str,
                    repeat: int = 0) -> Trace:
    """``DIR/POLICY.h5`` (``DIR/POLICY-rK.h5`` for the K-th repeat) from an earlier ``--work-dir DIR`` run,
    or, when ``traces`` maps every policy to its trace files (a campaign's runs, see
    :mod:`iolab.campaign.validation`), the K-th of ``policy``'s; checked against ``spec``."""
    if isinstance(traces, dict):
        found = traces.get(policy, [])
        if repeat >= len(found):
            raise TraceMismatch(f"the campaign has {len(found)} ok run(s) of {policy} with a kept trace, "
                                f"{repeat + 1} wanted (run it with `iolab sweep FILE --traces DIR`)")
        path = Path(found[repeat])
    else:
        path = Path(traces) / trace_name(policy, repeat)
    if not path.is_file():
        raise TraceMismatch(f"{path}: no such trace; make it with `iolab validate SPEC --work-dir {path.parent}`")
    # platform.overheads is the simulator's alone (validate measures it from the trace)
    trace = checked_trace(path, spec, "emulator", ("apps", "platform", "mapping"), {"platform": "overheads"})
    if trace.attrs.get("policy") != policy:
        raise TraceMismatch(f"{path}: policy is {trace.attrs.get('policy')!r}, expected {policy!r}")
    return trace


def checked_trace(path: Path, spec, runtime: str, fields: tuple[str, ...],
                  sim_only: dict[str, str] | None = None) -> Trace:
    """The trace in ``path`` if it is a complete run of ``runtime`` whose spec has ``spec``'s ``fields``
    (``sim_only``: field -> a key of it that is the simulator's alone and may differ); else TraceMismatch
    naming the file and the field."""
    trace = read_trace(path)
    if trace.attrs.get("runtime") != runtime:
        raise TraceMismatch(f"{path}: runtime is {trace.attrs.get('runtime')!r}, not a real run ({runtime})")
    kept, want = trace.attrs.get("spec") or {}, spec.model_dump(mode="json")
    for field in fields:
        a, b = kept.get(field), want.get(field)
        if sim_only and field in sim_only and isinstance(a, dict) and isinstance(b, dict):
            a, b = ({k: v for k, v in d.items() if k != sim_only[field]} for d in (a, b))
        if a != b:
            raise TraceMismatch(f"{path}: spec.{field} differs from the spec being validated "
                                "(the trace was made from another spec)")
    if trace.attrs.get("complete") is False:
        raise TraceMismatch(f"{path}: a partial trace (the run was interrupted)")
    return trace


def validate(spec: IOExperiment, policies: list[str], *, address: str | None = None,
             work_dir: str | Path | None = None, progress: bool = False,
             on_policy: Callable[[PolicyRun], None] | None = None, seeds: int = 0,
             jitter: Jitter | str = "auto", traces: str | Path | dict[str, list[Path]] | None = None,
             repeats: int = 1, calibration: dict | None = None, keep_work: bool = False,
             note: Callable[[str], None] | None = None) -> tuple[dict, list[PolicyRun]]:
    """Emulate then simulate ``spec`` under every policy; returns (report, runs).

    ``seeds`` > 0 also simulates each policy ``seeds`` times with jittered phase
    durations (``"auto"``: resampled from the real run's own phases; a
    :class:`Jitter`: a normal law; see :mod:`iolab.validation.spread`) and
    reports where the real run falls.  ``traces``: reuse ``DIR/POLICY.h5``
    of an earlier run instead of emulating (every trace is checked first).  ``repeats`` > 1 runs
    each policy that many times (kept as ``POLICY-rK.h5``) and compares the real runs with the
    ``seeds`` jittered simulations as distributions (:mod:`iolab.metrics.distribution`).
    ``calibration``: simulate every policy with this record (:func:`iolab.calibration.read_calibration`
    of a real I/O run, e.g. of another spec) instead of each run's own.  Without ``work_dir`` each real
    run works in a temporary folder, removed when it ended well unless ``keep_work``
    (:mod:`.run_folders`); ``note`` is told what happened to it.
    """
    if seeds < 0:
        raise ValueError(f"seeds must be >= 0, got {seeds}")
    if repeats < 1 or (repeats > 1 and seeds < 1):
        raise ValueError(f"repeats must be >= 1, and > 1 only with seeds >= 1 (got {repeats}, seeds {seeds})")
    kept = ({p: [load_kept_trace(spec, traces, p, k) for k in range(repeats)] for p in policies}
            if traces is not None else None)
    runs = []
    with (nullcontext() if kept else RaySession.open(address)):  # one Ray for every policy
        for p in policies:
            if kept:
                emus = kept[p]
            else:
                emus = []
                for k in range(repeats):
                    label = p if k == 0 else f"{p}-r{k}"
                    if work_dir is not None:  # kept for later (--traces)
                        wd, out = Path(work_dir) / label, Path(work_dir) / trace_name(p, k)
                        emus.append(run_emulation(spec, p, work_dir=wd, out=out, progress=progress))
                    else:  # a temporary folder, removed after a run that ended well
                        wd = temporary_folder(spec, label)
                        emus.append(run_in(wd, lambda: run_emulation(spec, p, work_dir=wd, progress=progress),
                                           keep=keep_work, say=note or (lambda _msg: None)))
            emu = emus[0]
            cal = calibration if calibration is not None else trace_calibration(emu)
            cspec = calibrated(spec, cal)
            b = cspec.platform.bandwidth
            sim = simulate_at(cspec, p, b)  # the deterministic simulation
            run = PolicyRun(p, emu, sim, b, compare(emu, sim), cal)
            if seeds:
                law = ({"ratios": duration_ratios(emu, spec, b, cspec.platform.overheads.io_phase, p)}
                       if jitter == "auto" else {"jitter": jitter})
                run.spread = compare_spread(run.comparison, simulate_spread(cspec, p, b, seeds, **law))
            if repeats > 1:
                run.distribution = distribution_of(spec, p, emus, seeds, jitter, calibration)
            runs.append(run)
            if on_policy is not None:
                on_policy(run)
    per = {r.policy: {"bandwidth_spec": spec.platform.bandwidth, "bandwidth_measured": r.bandwidth,
                      "calibration": r.calibration, "simulated_with": _simulated_with(spec, r.calibration),
                      "wall_seconds": r.emulated.attrs.get("wall_seconds"), **r.comparison,
                      **({"spread": r.spread} if r.spread else {}),
                      **({"distribution": r.distribution} if r.distribution else {})} for r in runs}
    pairs = []
    for r in runs:
        c = r.comparison
        pairs += [(v["emulator"], v["simulator"]) for v in c["apps"].values()]
        pairs.append((c["makespan"]["emulator"], c["makespan"]["simulator"]))
    report = {
        "spec": spec.name, "policies": per,
        "summary": {"error_max": max((r.comparison["error_max"] for r in runs), default=math.nan),
                    "error_geomean": geo_error(pairs),
                    "stretch_error_max": max((r.comparison["stretch_error_max"] for r in runs), default=math.nan),
                    "makespan_error_max": max((r.comparison["makespan"]["error"] for r in runs), default=math.nan)},
        "ranking": {
            "makespan": ranking({r.policy: (r.comparison["makespan"]["emulator"],
                                            r.comparison["makespan"]["simulator"]) for r in runs}),
            "max_stretch": ranking({r.policy: (r.comparison["max_stretch"]["emulator"],
                                               r.comparison["max_stretch"]["simulator"]) for r in runs}),
        },
    }
    if seeds:
        spread_pairs = []
        for r in runs:
            sp = r.spread
            spread_pairs += [(v["emulator"], v["median"]) for v in [*sp["apps"].values(), sp["makespan"]]]
        report["spread"] = {
            "seeds": seeds,
            "jitter": jitter if jitter == "auto" else jitter.model_dump(),
            "error_max": max((r.spread["error_max"] for r in runs), default=math.nan),
            "error_geomean": geo_error(spread_pairs),
            "makespan_error_max": max((r.spread["makespan"]["error"] for r in runs), default=math.nan),
            "inside": sum(r.spread["inside"] for r in runs), "values": sum(r.spread["values"] for r in runs),
            "ranking": {
                "makespan": ranking({r.policy: (r.comparison["makespan"]["emulator"],
                                                r.spread["makespan"]["median"]) for r in runs}),
                "max_stretch": ranking({r.policy: (r.comparison["max_stretch"]["emulator"],
                                                   r.spread["max_stretch_median"]) for r in runs}),
            },
        }
    if repeats > 1:
        report["distribution"] = distribution_summary(runs, repeats, seeds)
    return report, runs


def distribution_of(spec: IOExperiment, policy: str, emus: list[Trace], seeds: int, jitter,
                    calibration: dict | None = None) -> dict:
    """The real runs of one policy against ``seeds`` jittered simulations, value by value.

    The simulations take every cost's median over the runs' calibrations (or ``calibration``), and
    every real run's slowdowns use the same yardstick: ``T_i`` at that bandwidth (``bandwidth_median``;
    ``bandwidths`` are the runs' mean bandwidths, :func:`measured_bandwidth`, for the record).  The
    durations of the simulations are resampled from all the real runs' phases (``jitter="auto"``)
    or drawn from ``jitter``.
    """
    cal = calibration if calibration is not None else median_calibration([trace_calibration(e) for e in emus])
    bws = [measured_bandwidth(e) for e in emus]
    cspec = calibrated(spec, cal)
    bm = cspec.platform.bandwidth
    sim = simulate_at(cspec, policy, bm)
    real = [compare(e, sim) for e in emus]
    if jitter == "auto":
        ratios: dict[str, list[float]] = {"compute": [], "io": []}
        for e in emus:
            for key, v in duration_ratios(e, spec, bm, cspec.platform.overheads.io_phase, policy).items():
                ratios[key] += v
        spread = simulate_spread(cspec, policy, bm, seeds, ratios=ratios)
    else:
        spread = simulate_spread(cspec, policy, bm, seeds, jitter=jitter)
    apps = {a: compare_samples([c["apps"][a]["emulator"] for c in real if a in c["apps"]], spread.slowdown[a])
            for a in real[0]["apps"] if a in spread.slowdown}
    makespan = compare_samples([c["makespan"]["emulator"] for c in real], spread.makespan)
    return {"repeats": len(emus), "seeds": seeds, "bandwidths": bws, "bandwidth_median": bm,
            "calibration": cal, "simulated_with": _simulated_with(spec, cal),
            "apps": apps, "makespan": makespan, **_tally([*apps.values(), makespan])}


def _simulated_with(spec: IOExperiment, cal: dict) -> dict:
    """The ``platform.bandwidth`` and ``platform.overheads`` (spec units and seconds) ``cal`` gives ``spec``."""
    bandwidth, over = io_overheads(cal, spec)
    return {"bandwidth": bandwidth, "overheads": over}


def simulate_at(spec: IOExperiment, policy: str, bandwidth: float) -> Trace:
    """The deterministic simulation of ``spec`` (with its ``platform.overheads``) under ``policy``
    at a measured ``bandwidth``, no jitter."""
    measured = spec.model_copy(update={"platform": spec.platform.model_copy(update={"bandwidth": bandwidth}),
                                       "sim": spec.sim.model_copy(update={"jitter": Jitter()})})
    return simulate(measured, policy=policy, mode="event")


def _tally(values: list[dict]) -> dict:
    """Verdict counts and the errors of the medians of compared values (:func:`compare_samples`)."""
    errors = [v["error"] for v in values if v["error"] == v["error"]]
    return {"values": len(values), "model_errors": sum(v["verdict"] == "model error" for v in values),
            "noise": sum(v["verdict"] == "noise" for v in values), "error_max": max(errors, default=math.nan),
            "error_geomean": geo_error([(v["real_median"], v["sim_median"]) for v in values])}


def distribution_summary(runs: list[PolicyRun], repeats: int, seeds: int) -> dict:
    """Every policy's distributions together: verdict counts, errors of the medians, ranking by median."""
    values = [v for r in runs for v in [*r.distribution["apps"].values(), r.distribution["makespan"]]]
    over = [v for v in values if v["error"] == v["error"] and v["error"] > 0.10]
    return {
        "repeats": repeats, "seeds": seeds, **_tally(values),
        "over_10pct": len(over), "over_10pct_inside_band": sum(v["inside_band"] for v in over),
        "ranking": {"makespan": ranking({r.policy: (r.distribution["makespan"]["real_median"],
                                                    r.distribution["makespan"]["sim_median"]) for r in runs})},
    }


def figure(runs: list[PolicyRun], path: str | Path) -> Path:
    """carretero2020 Fig. 9 for every policy: simulated vs real stretch (slowdown) per app."""
    import matplotlib  # lazy: matplotlib only when the figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figure is drawn

    n = len(runs)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False, sharey=True)
    for ax, r in zip(axes.flat, runs):
        apps = list(r.comparison["apps"])
        x = np.arange(len(apps))
        sim = [r.comparison["apps"][a]["simulator"] for a in apps]
        emu = [r.comparison["apps"][a]["emulator"] for a in apps]
        ax.bar(x - 0.2, sim, 0.4, label="simulated")
        ax.bar(x + 0.2, emu, 0.4, label="real (emulator)")
        if r.spread:
            sp = r.spread["apps"]
            med = np.array([sp[a]["median"] for a in apps])
            lo, hi = np.array([sp[a]["min"] for a in apps]), np.array([sp[a]["max"] for a in apps])
            ax.errorbar(x - 0.2, med, yerr=[med - lo, hi - med], fmt="k.", ms=4, capsize=2, lw=0.8,
                        label=f"{r.spread['seeds']} jittered sims: median, range")
        ax.set_xticks(x, apps, rotation=45, fontsize=7)
        ax.set_title(f"{r.policy} (max err {r.comparison['stretch_error_max']:.1%})", fontsize=9)
        ax.axhline(1.0, color="grey", lw=0.5)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes[0][0].set_ylabel("stretch (slowdown, >= 1)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
