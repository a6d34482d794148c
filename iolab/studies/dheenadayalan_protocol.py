"""dheenadayalan2017 by a protocol: the volume's unpublished constants fitted on DS1 alone, then DS2 and
DS3 out of sample, the sensitivity around the fit, and §5's forecast-horizon sweep.

The paper publishes the controller's values (§5: d 10 s, r_threshold 60 s, ws and t 3 min, alpha 0.75, p
1 GB, omega 4000 MB) but not its NetApp volume: its rate and how it loses throughput under concurrent
writers.  The protocol keeps §5's values (and §4.2's AR(3) forecast) and chooses the volume from DS1 only:

1. **DS1** (:func:`ds1_jobs`, fixed before the fit): Fig. 1's six jobs, four I/O jobs writing 10, 40, 70
   and 100 GB (§5: files of 10 to 100 GB) in 1 GB checkpoints through 1000 s of compute each, two CPU jobs
   of 3000 s, submitted 5 s apart; every job one slot of 12.  A job's runtime is its time alone on the
   volume, so it depends on the rate being fitted.
2. **The fit** (:func:`fit`): the volume's rate R and its loss ``gamma`` (the law ``f(k) = 1 / (1 + gamma
   (k - 1))``) on a grid, coarse then fine around the best point; each point runs DS1 under FCFS without
   and with the controller; the fitted point minimises the squared relative errors of DS1's two total
   completion times against Table 1's (15:35:27 and 12:51:16) among the points that hold Fig. 1's premise,
   DS1's four I/O jobs load the volume (the unit beside them answers in ``5 p / (R f(5))`` >= r_threshold).
   Nothing of DS2 or DS3 is read (a test checks it).
3. **Out of sample** (:func:`oos_runs`): DS1, DS2 and DS3 (the study's ``FITTED`` draw, their I/O volumes
   capped at 80 % of a job's time at R instead of at 100 MB/s) under FCFS and EASY, without and with the
   controller, on the fitted volume; whatever comes out is reported.
4. **Sensitivity**: the controller's effect on DS1-3's total completion (FCFS) for R x {0.5 .. 2} and
   r_threshold in {30 .. 120} s around the fit: how much of the outcome hangs on the constants.
5. **Horizon** (§5): DS2 under FCFS with t = 1, 2, 3 and 5 min.

Each step is a campaign of this module (``kind``: ``ds1`` for the fit's points, ``run`` for the others);
:func:`run_protocol` chains them and writes ``fit.csv``, ``runs.csv``, ``sweep.csv``, ``horizon.csv``,
``summary.json`` and ``fit.png``, ``sweep.png`` in its folder.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.metrics.batch import total_completion, total_flow
from iolab.middleware.policies.controller.forecast import forecast_skill
from iolab.sim.batch.run import run_batch
from iolab.specs import parse_spec
from iolab.specs.controller import ControllerSpec

from iolab.studies import dheenadayalan as study
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import write_csv

RUN_VERSION = 1  # bump when a run's meaning changes (new run ids)
GB = 1e9
MB = 1e6
SECTION5 = ControllerSpec()  # §5's values: d 10 s, r_threshold 60 s, ws 3 min, t 3 min, p 1 GB, omega 4000 MB
PAPER_DS1 = {"off": study.PAPER["DS1"]["fcfs"][0], "on": study.PAPER["DS1"]["fcfs"][1]}  # Table 1, FCFS


def seconds(hms: str) -> float:
    h, m, s = (int(x) for x in hms.split(":"))
    return 3600.0 * h + 60.0 * m + s


@dataclass(frozen=True)
class DS1Shape:
    """DS1's jobs as the protocol states them before fitting (see the module doc)."""

    io_gb: tuple[float, ...] = (10.0, 40.0, 70.0, 100.0)
    io_compute: float = 1000.0
    cpu_runtime: float = 3000.0
    cpu_jobs: int = 2


@dataclass(frozen=True)
class ProtocolSize:
    rates_mb: tuple[float, ...] = tuple(round(5 * 2 ** (i / 2), 2) for i in range(11))  # 5 .. 160 MB/s
    gammas: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
    refine: bool = True  # a finer grid around the coarse grid's best point
    rate_factors: tuple[float, ...] = (0.5, 0.75, 1.0, 1.5, 2.0)  # the sensitivity sweep around the fit
    thresholds: tuple[float, ...] = (30.0, 45.0, 60.0, 90.0, 120.0)
    horizons_min: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0)  # §5's t
    workload: study.DheenadayalanSize = study.FITTED  # DS2 and DS3's draw
    shape: DS1Shape = DS1Shape()
    forecast: str = "ar"  # §4.2's AR(3); "last" (persistence) only to keep CI's quick size quick


# CI: a 3 x 3 grid, no refinement, DS2 of 40 jobs and DS3 of 10, the persistence forecast (an AR(3) fit per cycle
# costs ~3 ms: seconds per DS2 run)
QUICK = ProtocolSize(rates_mb=(10.0, 20.0, 40.0), gammas=(0.0, 0.25, 1.0), refine=False,
                     rate_factors=(0.5, 1.0, 2.0), thresholds=(60.0,),
                     workload=study.DheenadayalanSize(ds2_jobs=40, ds2_io=13, ds3_jobs=10), forecast="last")


# ---------------------------------------------------------------- the volume and the data sets

def law(gamma: float) -> Any:
    return {"gamma": gamma, "knee": 1} if gamma > 0 else "none"


def factor(gamma: float, k: int) -> float:
    """The law's share of the rate with ``k`` streams."""
    return 1.0 / (1.0 + gamma * max(0, k - 1))


def unit_response(rate: float, gamma: float, writers: int, p: float = SECTION5.p) -> float:
    """The simulated benchmark unit's answer beside ``writers`` streams (docs/controller.md)."""
    return p * (writers + 1) / (rate * factor(gamma, writers + 1))


def ds1_jobs(rate: float, shape: DS1Shape = DS1Shape()) -> list[dict]:
    """DS1 on a volume of ``rate`` bytes/s: the I/O jobs first (Fig. 1's jobs 1-3 and 6), then the CPU jobs."""
    jobs = []
    for i, gb in enumerate(shape.io_gb):
        runtime = shape.io_compute + gb * GB / rate
        jobs.append({"id": f"io{i + 1}", "submit": 10.0 * i, "nodes": 1, "walltime": round(1.5 * runtime, 3),
                     "runtime": round(runtime, 3), "data": gb * GB})
    for i in range(shape.cpu_jobs):
        jobs.append({"id": f"cpu{i + 1}", "submit": 5.0 + 10.0 * i, "nodes": 1,
                     "walltime": 1.5 * shape.cpu_runtime, "runtime": shape.cpu_runtime})
    return jobs


def recapped(jobs: list[dict], rate: float) -> list[dict]:
    """DS2 or DS3's jobs with their I/O volumes capped at 80 % of their time at ``rate`` (the study draws them
    capped at 100 MB/s: below that rate the cap is redrawn exactly; above it the volumes stay)."""
    return [{**j, "data": float(min(j["data"], 0.8 * j["runtime"] * rate))} if "data" in j else j for j in jobs]


def spec(jobs: list[dict], scheduler: str, controller: bool, rate: float, gamma: float, seed: int,
         settings: dict | None = None):
    """A data set on the protocol's volume with §5's controller and §4.2's AR(3) forecast (``settings``
    overrides some: r_threshold, t, forecast)."""
    return parse_spec({
        "kind": "batch", "name": "dheenadayalan-protocol", "seed": seed, "scheduler": scheduler,
        "platform": {"nodes": 12, "memory_per_node": "1GB", "lps": {"rate": rate, "interference": law(gamma)},
                     "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"},
        "workload": {"source": "inline", "jobs": jobs},
        "controller": {"enabled": controller, "volumes": ["lps"], "forecast": "ar", **(settings or {})},
    })


def simulate(jobs: list[dict], scheduler: str, controller: bool, rate: float, gamma: float, seed: int,
             settings: dict | None = None, accuracy: bool = False) -> dict[str, Any]:
    """One run's totals, suspensions and the controller's samples' summary (``accuracy``: also the
    forecast's state accuracy over its samples, a few hundred AR fits)."""
    sp = spec(jobs, scheduler, controller, rate, gamma, seed, settings)
    rec = run_batch(sp, strict=False)
    ctl = sp.controller
    io = {j["id"] for j in jobs if j.get("data")}
    first_io = min((s for s in rec.jobs if s.id in io), key=lambda s: (s.start, s.id), default=None)
    samples = rec.controller.samples if rec.controller is not None else []
    row = {"total_completion": total_completion([s.start for s in rec.jobs], [s.end for s in rec.jobs]),
           "total_flow": total_flow([s.queued.submit for s in rec.jobs], [s.end for s in rec.jobs]),
           "suspensions": sum(len(s.suspensions) for s in rec.jobs),
           "io_jobs_suspended": sum(1 for s in rec.jobs if s.suspensions and s.id in io),
           "oldest_suspended": int(first_io is not None and bool(first_io.suspensions)),
           "cpu_suspended": sum(1 for s in rec.jobs if s.suspensions and s.id not in io),
           "max_writers": max((int(x[3]) for x in samples), default=-1),
           "max_response": max((float(x[2]) for x in samples), default=-1.0),
           "r_threshold": float(ctl.r_threshold), "t": float(ctl.t)}
    row["state_accuracy"] = _state_accuracy([float(x[2]) for x in samples], ctl) if samples and accuracy else math.nan
    return row


def _state_accuracy(responses: list[float], ctl: ControllerSpec) -> float:
    """How often the AR(q) forecast ``t`` ahead put the response on the right side of r_threshold (§4.2's
    "prediction" of Table 1, on the simulated volume's responses)."""
    steps = max(1, round(ctl.t / ctl.d))
    try:
        got = forecast_skill(responses, [steps], q=ctl.ar_order, threshold=float(ctl.r_threshold), origins=200)
    except ValueError:  # too short a series
        return math.nan
    return float(got[0]["state_accuracy"])


# ---------------------------------------------------------------- the campaign (iolab.studies.as_campaign)

def params_of(size: ProtocolSize) -> dict[str, Any]:
    def plain(x):
        return {k: plain(v) for k, v in x.items()} if isinstance(x, dict) else list(x) if isinstance(x, tuple) else x
    return plain(asdict(size))


def size_of(params: dict[str, Any]) -> ProtocolSize:
    fields = set(ProtocolSize.__dataclass_fields__)
    unknown = set(params) - fields
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: {sorted(fields)}")
    kw: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
    if "workload" in kw:
        kw["workload"] = study.size_of(dict(kw["workload"]))
    if "shape" in kw:
        kw["shape"] = DS1Shape(**{k: tuple(v) if isinstance(v, list) else v for k, v in kw["shape"].items()})
    return ProtocolSize(**kw)


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs are given whole by the driver (``params["runs"]``): the fit's grid, then the runs at its result."""
    runs = params.get("runs")
    if not isinstance(runs, list) or not runs:
        raise ValueError("a protocol campaign lists its runs (params.runs); run it with iolab reproduce")
    return runs


def campaign_task(args: dict[str, Any]) -> dict[str, Any]:
    rate, gamma = float(args["rate"]), float(args["gamma"])
    if args["kind"] == "ds1":
        shape = DS1Shape(**{k: tuple(v) if isinstance(v, list) else v for k, v in args["shape"].items()})
        jobs = ds1_jobs(rate, shape)
    else:
        jobs = datasets_at(study.size_of(dict(args["workload"])), DS1Shape(**{
            k: tuple(v) if isinstance(v, list) else v for k, v in args["shape"].items()}), rate)[args["dataset"]]
    settings = {k: args[k] for k in ("r_threshold", "t", "forecast") if args.get(k) is not None}
    row = simulate(jobs, args.get("scheduler", "fcfs"), bool(args["controller"]), rate, gamma, 2017, settings,
                   accuracy=args.get("step") in ("table1", "horizon"))
    return {k: args[k] for k in ("kind", "dataset", "scheduler", "controller", "rate", "gamma", "step")
            if k in args} | row


def datasets_at(workload: study.DheenadayalanSize, shape: DS1Shape, rate: float) -> dict[str, list[dict]]:
    """DS1 (the protocol's) and the study's DS2 and DS3 drawn by ``workload``, on a volume of ``rate``."""
    drawn = study.datasets(workload)
    return {"DS1": ds1_jobs(rate, shape), "DS2": recapped(drawn["DS2"], rate), "DS3": recapped(drawn["DS3"], rate)}


# ---------------------------------------------------------------- the fit (DS1 only)

@dataclass(frozen=True)
class Fit:
    rate: float  # bytes/s
    gamma: float
    completion_off: float
    completion_on: float
    error: float  # sum of the two squared relative errors
    premise: float  # the unit's answer beside DS1's four writers (s)
    points: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_runs(rates_mb, gammas, size: ProtocolSize, step: str) -> list[dict[str, Any]]:
    return [{"kind": "ds1", "step": step, "rate": float(r) * MB, "gamma": float(g), "controller": on,
             "shape": params_of(size)["shape"], "forecast": size.forecast}
            for r in rates_mb for g in gammas for on in (False, True)]


def choose(rows: list[dict[str, Any]], shape: DS1Shape, threshold: float = SECTION5.r_threshold) -> tuple[Fit, list]:
    """The grid point nearest Table 1's DS1 totals among those holding Fig. 1's premise; every point's errors."""
    off_t, on_t = seconds(PAPER_DS1["off"]), seconds(PAPER_DS1["on"])
    by: dict[tuple[float, float], dict[bool, dict]] = {}
    for r in rows:
        by.setdefault((r["rate"], r["gamma"]), {})[bool(r["controller"])] = r
    table, best = [], None
    writers = len(shape.io_gb)
    for (rate, gamma), pair in sorted(by.items()):
        if len(pair) != 2:
            continue
        off, on = pair[False]["total_completion"], pair[True]["total_completion"]
        err = (off / off_t - 1) ** 2 + (on / on_t - 1) ** 2
        premise = unit_response(rate, gamma, writers)
        ok = premise >= threshold
        table.append({"rate_mb": rate / MB, "gamma": gamma, "completion_off": off, "completion_on": on,
                      "error": err, "premise_s": premise, "premise_holds": ok, "suspensions": pair[True]["suspensions"]})
        if ok and (best is None or err < best.error):
            best = Fit(rate, gamma, off, on, err, premise, 0)
    if best is None:
        raise ValueError("no grid point holds Fig. 1's premise (DS1's four writers load the volume)")
    return Fit(**{**asdict(best), "points": len(table)}), table


def refined_grid(best: Fit, rates_mb, gammas) -> tuple[list[float], list[float]]:
    """A finer grid around ``best``: the rate by eighths of an octave, gamma by a fifth of its coarse step."""
    r0 = best.rate / MB
    rates = sorted({round(r0 * 2 ** (i / 8), 3) for i in range(-4, 5)})
    gs = sorted(gammas)
    i = gs.index(best.gamma) if best.gamma in gs else 0
    lo, hi = gs[max(0, i - 1)], gs[min(len(gs) - 1, i + 1)]
    span = np.linspace(lo, hi, 11)
    return rates, sorted({round(float(g), 4) for g in span})


def fit(out: Path, size: ProtocolSize, engine: Engine) -> tuple[Fit, list[dict[str, Any]]]:
    """Fit the volume to DS1 alone (coarse grid, then a finer one around its best point); the fit and the table
    of every point.  Reads nothing of DS2 or DS3."""
    res, _ = run_as_campaign("dheenadayalan_protocol", {"runs": fit_runs(size.rates_mb, size.gammas, size,
                                                                           "coarse")}, out / "fit-coarse", engine)
    best, table = choose(rows_of(res), size.shape)
    table = [{**r, "grid": "coarse"} for r in table]
    if size.refine:
        rates, gammas = refined_grid(best, size.rates_mb, size.gammas)
        res, _ = run_as_campaign("dheenadayalan_protocol", {"runs": fit_runs(rates, gammas, size, "fine")},
                                 out / "fit-fine", engine)
        fine, fine_table = choose(rows_of(res), size.shape)
        table += [{**r, "grid": "fine"} for r in fine_table]
        if fine.error < best.error:
            best = fine
    return replace(best, points=len(table)), table


# ---------------------------------------------------------------- out of sample, sensitivity, horizon

def oos_runs(size: ProtocolSize, f: Fit) -> list[dict[str, Any]]:
    base = {"kind": "run", "gamma": f.gamma, "workload": study.params_of(size.workload),
            "shape": params_of(size)["shape"], "forecast": size.forecast}
    runs = []
    for ds in study.DATASETS:  # Table 1 at the fit
        for sched in study.SCHEDULERS:
            for on in (False, True):
                runs.append({**base, "step": "table1", "dataset": ds, "scheduler": sched, "controller": on,
                             "rate": f.rate})
    for k in size.rate_factors:  # the sensitivity around the fit (FCFS)
        for ds in study.DATASETS:
            runs.append({**base, "step": "sweep", "dataset": ds, "scheduler": "fcfs", "controller": False,
                         "rate": f.rate * k})
            for thr in size.thresholds:
                runs.append({**base, "step": "sweep", "dataset": ds, "scheduler": "fcfs", "controller": True,
                             "rate": f.rate * k, "r_threshold": thr})
    for t in size.horizons_min:  # §5: DS2 with four forecast horizons
        runs.append({**base, "step": "horizon", "dataset": "DS2", "scheduler": "fcfs", "controller": True,
                     "rate": f.rate, "t": 60.0 * t})
    return runs


def effect(on: dict, off: dict, col: str = "total_completion") -> float:
    return 100.0 * (on[col] / off[col] - 1.0)


def tables(rows: list[dict[str, Any]], f: Fit) -> dict[str, list[dict[str, Any]]]:
    """Table 1 at the fit, the sensitivity grid and the horizon sweep, from the out-of-sample runs' rows."""
    t1 = [r for r in rows if r["step"] == "table1"]
    by = {(r["dataset"], r["scheduler"], bool(r["controller"])): r for r in t1}
    table1 = []
    for (ds, sched, on), r in by.items():
        if on:
            off = by[(ds, sched, False)]
            table1.append({"dataset": ds, "scheduler": sched, "completion_off": off["total_completion"],
                           "completion_on": r["total_completion"], "completion_effect_pct": effect(r, off),
                           "flow_off": off["total_flow"], "flow_on": r["total_flow"],
                           "flow_effect_pct": effect(r, off, "total_flow"), "suspensions": r["suspensions"],
                           "max_writers": r["max_writers"], "max_response": r["max_response"],
                           "state_accuracy": r["state_accuracy"], "io_jobs_suspended": r["io_jobs_suspended"],
                           "oldest_suspended": r["oldest_suspended"], "cpu_suspended": r["cpu_suspended"]})
    sw = [r for r in rows if r["step"] == "sweep"]
    offs = {(r["dataset"], round(r["rate"])): r for r in sw if not r["controller"]}
    sweep = [{"dataset": r["dataset"], "rate_mb": r["rate"] / MB, "rate_factor": r["rate"] / f.rate,
              "r_threshold": r["r_threshold"], "completion_effect_pct": effect(r, offs[(r["dataset"], round(r["rate"]))]),
              "suspensions": r["suspensions"]} for r in sw if r["controller"]]
    off2 = by.get(("DS2", "fcfs", False))
    horizon = [{"t_min": r["t"] / 60, "completion_effect_pct": effect(r, off2), "suspensions": r["suspensions"],
                "state_accuracy": r["state_accuracy"]}
               for r in rows if r["step"] == "horizon" and off2 is not None]
    return {"table1": table1, "sweep": sweep, "horizon": sorted(horizon, key=lambda h: h["t_min"])}


def run_protocol(out: Path, size: ProtocolSize = ProtocolSize(), *, engine: Engine | None = None,
                 figures: bool = True) -> dict[str, Any]:
    """The protocol's four steps as campaigns in ``out``; its summary (also ``summary.json``)."""
    engine = engine or Engine()
    t0 = time.perf_counter()
    f, fit_table = fit(out, size, engine)
    res, _ = run_as_campaign("dheenadayalan_protocol", {"runs": oos_runs(size, f)}, out / "out-of-sample", engine)
    tabs = tables(rows_of(res), f)
    summary = {"fit": f.as_dict(), "fit_rate_mb": f.rate / MB, "paper_ds1": PAPER_DS1, "shape": asdict(size.shape),
               "section5": {k: getattr(SECTION5, k) for k in ("d", "r_threshold", "ws", "alpha", "t", "p", "omega",
                                                              "recent")},
               **tabs, "wall_seconds": time.perf_counter() - t0}
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "fit.csv", fit_table)
    write_csv(out / "runs.csv", tabs["table1"])
    write_csv(out / "sweep.csv", tabs["sweep"])
    write_csv(out / "horizon.csv", tabs["horizon"])
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
    if figures:
        draw(fit_table, tabs["sweep"], f, out)
    return summary


def draw(fit_table: list[dict], sweep: list[dict], f: Fit, out: Path) -> None:
    """``fit.png``: the fit's error over the coarse grid; ``sweep.png``: the controller's effect around the fit."""
    import matplotlib  # lazy: figures only when asked

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: figures only when asked

    from matplotlib.ticker import ScalarFormatter  # lazy: figures only when asked

    coarse = [r for r in fit_table if r.get("grid", "coarse") == "coarse"]
    rates = sorted({r["rate_mb"] for r in coarse})
    gammas = sorted({r["gamma"] for r in coarse})
    err = {(r["rate_mb"], r["gamma"]): r for r in coarse}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for g in gammas:
        pts = [(r, err[(r, g)]["error"]) for r in rates if (r, g) in err and err[(r, g)]["premise_holds"]]
        if pts:
            ax.plot(*zip(*pts), "o-", ms=2.5, lw=0.8, label=f"gamma {g:g}")
    fine = [r for r in fit_table if r.get("grid") == "fine" and r["premise_holds"]]
    if fine:
        ax.plot([r["rate_mb"] for r in fine], [r["error"] for r in fine], ".", color="0.6", ms=3,
                label="finer grid")
    ax.plot([f.rate / MB], [f.error], "k*", ms=12, label=f"fit: {f.rate / MB:.3g} MB/s, gamma {f.gamma:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("volume rate R (MB/s)")
    ax.set_ylabel("squared relative error of DS1's two totals")
    ax.set_title("dheenadayalan2017: the volume fitted to DS1 alone (points holding Fig. 1's premise)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "fit.png", dpi=110)
    plt.close(fig)

    sets = sorted({r["dataset"] for r in sweep})
    if not sets:
        return
    fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 3.6), squeeze=False)
    for ax, ds in zip(axes[0], sets):
        mine = [r for r in sweep if r["dataset"] == ds]
        facs = sorted({r["rate_factor"] for r in mine})
        thrs = sorted({r["r_threshold"] for r in mine})
        grid = np.array([[next(r["completion_effect_pct"] for r in mine if r["rate_factor"] == k
                               and r["r_threshold"] == t) for k in facs] for t in thrs])
        lim = max(1.0, float(np.nanmax(np.abs(grid))))
        im = ax.imshow(grid, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        for i in range(len(thrs)):
            for j in range(len(facs)):
                ax.text(j, i, f"{grid[i, j]:+.1f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(facs)), [f"{k:g}" for k in facs])
        ax.set_yticks(range(len(thrs)), [f"{t:g}" for t in thrs])
        ax.set_xlabel(f"rate / fitted ({f.rate / MB:.3g} MB/s)")
        ax.set_ylabel("r_threshold (s)")
        ax.set_title(f"{ds}: controller effect on total completion (%)", fontsize=8)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("dheenadayalan2017: sensitivity around the DS1 fit (FCFS; < 0: the controller shortens it)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=110)
    plt.close(fig)


__all__ = ["DS1Shape", "Fit", "ProtocolSize", "QUICK", "campaign_runs", "campaign_task", "choose", "datasets_at",
           "ds1_jobs", "fit", "fit_runs", "oos_runs", "run_protocol", "simulate", "tables", "unit_response"]
