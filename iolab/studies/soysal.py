"""soysal2019: how long before its start is a job's node set known (T_NAP), against walltime
quality and scheduler (Figs. 3a, 4 and 5), and what advance stage-in makes of it (beyond the paper).

Runs (a campaign, :mod:`.engine`: Ray tasks, resumable, ``results.h5``), all on one SWF trace:

- ``kind: tnap``: every (scheduler, estimate) pair, an independent simulation with plan
  tracking; its row holds the T_NAP class shares, its ``cdf`` table 101 quantiles of the
  non-instant T_NAP values (Fig. 5's CDF);
- ``kind: advance``: the trace's jobs with lackner2019's I/O model (``io: lackner``, seed
  ``io_seed``) on a platform with an HPS of ``hps_capacity_gb``; for each scheduler of
  ``advance_schedulers`` and each lambda, once with advance stage-in and once without; the row
  holds the kernel's advance counters and the mean turnaround.

A run's arguments name the trace and its SHA-256 (part of the run id: a changed file means
new runs).  Outputs in ``out``: ``results.h5`` and ``journal.jsonl`` (the campaign),
``runs.csv`` (the tnap runs), ``advance.csv`` (the advance runs, with the turnaround change
against the same run without advance staging), ``summary.json`` (Fig. 3a's ratio, every
run's shares and CDF quantiles, the advance rows, wall time), ``fig3a.png``, ``fig4.png``,
``fig5.png``, ``fig_advance.png``.
"""

from __future__ import annotations

import json
import math
import time
from itertools import accumulate
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.metrics import TNAP_CLASSES, tnap_summary
from iolab.metrics.batch import hps_jobs, mean_turnaround
from iolab.sim.batch.run import simulate_batch
from iolab.workloads import swf_window_io
from iolab.workloads.swf import read_swf, swf_jobs
from iolab.specs import parse_spec
from iolab.specs.batch import HPS_REQUEST_SCHEDULERS
from iolab.shared_data import shared_data_file
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import check_unchanged, file_sha256, write_csv

RUN_VERSION = 2  # bump when a run's meaning changes (new run ids)

LAMBDAS = (1.0, 0.7, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.0)
SCHEDULERS = ("conservative", "conservative-reinsert", "fcfs")
# FCFS and conservative plan every job on LPS (compute-only planners): their early copies are
# never used; SAS plans HPS for the jobs it puts there, so the effect shows (docs/studies.md)
ADVANCE_SCHEDULERS = ("fcfs", "conservative", "sas")
TRACES = {"kth": ("KTH-SP2-1996-2.1-cln.swf.gz", 100), "sdsc-blue": ("SDSC-BLUE-2000-4.2-cln.swf.gz", 144)}
# soysal2019 Fig. 3a and Fig. 4 (KTH), read from the paper's text and figures
PAPER = {"kth_requested_over_used": 1.5,
         "trend": "long-term (>600 s) predictions rise only for lambda <= 0.1; FCFS above conservative"}
ADVANCE_STATS = ("early_copies", "hidden_seconds", "early_bytes", "wasted_bytes", "wasted_link_seconds",
                 "wasted_copies")
GB = 1e9


@dataclass(frozen=True)
class Size:
    lambdas: tuple[float, ...] = LAMBDAS
    predictor: bool = True
    schedulers: tuple[str, ...] = SCHEDULERS
    limit: int | None = None  # first jobs of the trace only
    advance: bool = True  # the advance stage-in runs too
    advance_schedulers: tuple[str, ...] = ADVANCE_SCHEDULERS
    advance_lambdas: tuple[float, ...] | None = (1.0, 0.1, 0.0)  # None: the same as lambdas
    hps_capacity_gb: float = 2048.0  # lackner2019's smaller HPS
    io_seed: int = 0  # seed of the I/O volumes drawn for the trace's jobs
    theta_stable: float = 600.0
    margin: float = 60.0
    # the advance runs cut the trace into windows of at most this many jobs, each its own workload
    # from an empty machine (lackner2019 simulates workloads of 500 jobs, Table I); None: one run
    # of the whole trace.  Its I/O overloads a year of KTH: docs/studies.md
    advance_window: int | None = 500
    # the advance runs' scheduler.backfill_depth (Slurm's bf_max_job_test: the head and this many jobs
    # behind it are planned, tracked and considered); None: no limit
    advance_backfill_depth: int | None = None


QUICK = Size(lambdas=(1.0, 0.1, 0.0), limit=600, advance_schedulers=("fcfs", "sas"), advance_lambdas=(1.0, 0.0))


def trace_path(trace: str) -> tuple[Path, int]:
    """``kth``, ``sdsc-blue`` or a path to an SWF file (nodes from its MaxNodes header)."""
    if trace in TRACES:
        name, nodes = TRACES[trace]
        return shared_data_file(name), nodes
    p = Path(trace)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such SWF trace")
    hdr = read_swf(p, limit=1)
    nodes = hdr.max_nodes or hdr.max_procs
    if not nodes:
        raise ValueError(f"{p}: no MaxNodes or MaxProcs header: cannot size the machine")
    return p, int(nodes)


def estimate_of(est: str | float) -> Any:
    return "predictor" if est == "predictor" else {"refined": float(est)}


def label_of(est: str | float) -> str:
    return "predictor" if est == "predictor" else f"lambda={float(est):g}"




@lru_cache(maxsize=4)
def _checked(path: str, sha256: str) -> str:
    check_unchanged(path, sha256)
    return path


def experiment(path: str, nodes: int, scheduler: str, est: str | float, limit: int | None, *,
               skip: int = 0, io: bool = False, advance: bool = False, hps_capacity_gb: float = 1000.0, seed: int = 0,
               theta_stable: float = 600.0, margin: float = 60.0, backfill_depth: int | None = None):
    """The batch spec of one run (the platform of lackner2019 §IV-A: R_lps = 1 GB/s, R_hps = 15
    R_lps, R_stage = 5 R_lps, 16 GB per node); ``backfill_depth``: the scheduler's."""
    wl: dict[str, Any] = {"source": "swf", "path": path}
    if limit:
        wl["limit"] = limit
    if skip:
        wl["skip"] = skip
    sched: Any = scheduler
    if io:
        wl["io"] = "lackner"
        if scheduler in HPS_REQUEST_SCHEDULERS:  # the jobs that ask for HPS get it (and can stage early)
            sched = {"kind": scheduler, "hps_requests": True}
    if backfill_depth is not None:
        sched = {**(sched if isinstance(sched, dict) else {"kind": sched}), "backfill_depth": backfill_depth}
    return parse_spec({"kind": "batch", "name": f"soysal-{scheduler}-{est}", "seed": seed,
                       "platform": {"nodes": nodes, "lps": {"rate": GB},
                                    "hps": {"rate": 15 * GB, "capacity": hps_capacity_gb * GB},
                                    "stage_rate": 5 * GB},
                       "scheduler": sched, "estimate": estimate_of(est), "track_predictions": True,
                       "advance_stage_in": {"enabled": advance, "theta_stable": theta_stable, "margin": margin},
                       "workload": wl})


@lru_cache(maxsize=1)
def _trace_jobs(path: str, limit: int | None) -> tuple:
    """The trace's jobs, read once per worker process: its T_NAP runs share them (the kernel only
    reads a job; every run builds its own state)."""
    return tuple(swf_jobs(path, limit=limit))


def one_run(path: str, nodes: int, scheduler: str, est: str | float, limit: int | None) -> dict[str, Any]:
    """One T_NAP simulation; its record (plain data, with the CDF quantiles)."""
    t0 = time.perf_counter()
    spec = experiment(path, nodes, scheduler, est, limit)
    tr = simulate_batch(spec, list(_trace_jobs(path, limit)), strict=False)
    s = tnap_summary(tr)
    v = s.values
    q = [v[min(len(v) - 1, round(i / 100 * (len(v) - 1)))] for i in range(101)] if v else []
    return {"kind": "tnap", "scheduler": scheduler, "estimate": label_of(est),
            "lam": math.nan if est == "predictor" else float(est), "jobs": s.jobs,
            **{f"share_{k}": s.shares[k] for k in TNAP_CLASSES},
            "prediction_rows": len(tr.predictions), "seconds": time.perf_counter() - t0, "quantiles": q}


def windows(n: int, window: int | None) -> list[tuple[int, int]]:
    """``(skip, size)`` of the consecutive windows the advance runs cut ``n`` jobs into: ``ceil(n /
    window)`` windows of near-equal size (at most ``window`` jobs each; one window if None)."""
    if not window or n <= window:
        return [(0, n)]
    k = -(-n // window)
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    return list(zip(accumulate(sizes[:-1], initial=0), sizes))


def advance_run(path: str, nodes: int, scheduler: str, lam: float, limit: int | None, advance: bool,
                hps_capacity_gb: float, io_seed: int, theta_stable: float, margin: float,
                window: int | None = None, backfill_depth: int | None = None) -> dict[str, Any]:
    """One configuration of the trace with I/O (lackner2019's model), advance stage-in on or off:
    the trace cut into :func:`windows` (one if ``window`` is None), each simulated from an empty
    machine as its own workload (the spec ``workload: {source: swf, skip, limit, io: lackner}``, whose
    I/O draws from ``[io_seed, skip]``; the scheduler with ``backfill_depth`` if given); counters and
    turnarounds summed over the windows."""
    t0 = time.perf_counter()
    trace = _trace_jobs(path, limit)
    release, end = [], []
    hps = 0
    stats = dict.fromkeys(ADVANCE_STATS, 0.0)
    cuts = windows(len(trace), window)
    for skip, n in cuts:
        spec = experiment(path, nodes, scheduler, lam, n, skip=skip, io=True, advance=advance,
                          hps_capacity_gb=hps_capacity_gb, seed=io_seed, theta_stable=theta_stable, margin=margin,
                          backfill_depth=backfill_depth)
        tr = simulate_batch(spec, swf_window_io(list(trace[skip:skip + n]), spec), strict=False, phases="none")
        j = tr.jobs
        release.append(np.asarray(j["release"], dtype=float))
        end.append(np.asarray(j["end"], dtype=float))
        hps += hps_jobs(j["tier"])
        got = tr.attrs.get("advance_stage_in") or {}
        for k in ADVANCE_STATS:
            stats[k] += float(got.get(k, 0.0))
    jobs = sum(len(e) for e in end)
    return {"kind": "advance", "scheduler": scheduler, "estimate": label_of(lam), "lam": float(lam),
            "advance": bool(advance), "windows": len(cuts), "jobs": jobs, "hps_jobs": hps,
            "mean_turnaround": mean_turnaround(np.concatenate(release), np.concatenate(end)) if jobs else math.nan,
            **stats,
            "seconds": time.perf_counter() - t0}


def requested_over_used(path: Path, limit: int | None) -> float:
    """Fig. 3a: total requested time over total used time of the trace's jobs (jobs with a runtime)."""
    jobs = [j for j in swf_jobs(path, limit=limit) if j.runtime > 0]
    return sum(float(j.walltime) for j in jobs) / sum(float(j.runtime) for j in jobs)


# ---------------------------------------------------------------- the campaign

def params_of(size: Size, trace: str = "kth") -> dict[str, Any]:
    """The study's size and trace as campaign parameters (JSON data)."""
    if trace not in TRACES:
        trace = str(Path(trace).resolve())
    params = {"trace": trace, **{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(size).items()}}
    if params["advance_backfill_depth"] is None:
        del params["advance_backfill_depth"]  # a campaign written before the field: the same parameters
    return params


def size_of(params: dict[str, Any]) -> tuple[Size, str]:
    fields = set(Size.__dataclass_fields__)
    unknown = set(params) - fields - {"trace"}
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: {sorted(fields | {'trace'})}")
    size = Size(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k in fields})
    return size, str(params.get("trace", "kth"))


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The T_NAP runs (scheduler x estimate), then the advance runs (scheduler x lambda x off/on);
    each names the trace file and its SHA-256."""
    size, trace = size_of(params)
    path, nodes = trace_path(trace)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SWF trace")
    base = {"trace": str(path), "sha256": file_sha256(path), "nodes": nodes, "limit": size.limit}
    ests: list[str | float] = list(size.lambdas) + (["predictor"] if size.predictor else [])
    runs = [{"kind": "tnap", **base, "scheduler": s, "estimate": e} for s in size.schedulers for e in ests]
    if size.advance:
        lams = size.lambdas if size.advance_lambdas is None else size.advance_lambdas
        # a depth is named only when set: the runs without one keep their ids
        depth = {} if size.advance_backfill_depth is None else {"backfill_depth": size.advance_backfill_depth}
        runs += [{"kind": "advance", **base, "scheduler": s, "estimate": float(lam), "advance": on,
                  "hps_capacity_gb": size.hps_capacity_gb, "io_seed": size.io_seed,
                  "theta_stable": size.theta_stable, "margin": size.margin, "window": size.advance_window, **depth}
                 for s in size.advance_schedulers for lam in lams for on in (False, True)]
    return runs


def campaign_task(args: dict[str, Any]) -> dict:
    path = _checked(args["trace"], args["sha256"])
    if args["kind"] == "tnap":
        r = one_run(path, args["nodes"], args["scheduler"], args["estimate"], args["limit"])
        q = r.pop("quantiles")
        return {"rows": [r], "tables": {"cdf": [{"q": i / 100, "tnap": v} for i, v in enumerate(q)]}}
    return advance_run(path, args["nodes"], args["scheduler"], args["estimate"], args["limit"], args["advance"],
                       args["hps_capacity_gb"], args["io_seed"], args["theta_stable"], args["margin"],
                       args.get("window"), args.get("backfill_depth"))


TNAP_COLUMNS = ("scheduler", "estimate", "lam", "jobs", *(f"share_{k}" for k in TNAP_CLASSES), "prediction_rows",
                "seconds")
ADVANCE_COLUMNS = ("scheduler", "estimate", "lam", "advance", "windows", "jobs", "hps_jobs", "mean_turnaround",
                   *ADVANCE_STATS, "seconds")


def with_turnaround_change(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each advance row plus ``turnaround_change`` (its mean turnaround minus that of the same
    scheduler and lambda without advance staging; 0 for the runs without) and ``hidden_share``."""
    off = {(r["scheduler"], r["lam"]): r["mean_turnaround"] for r in rows if not r["advance"]}
    out = []
    for r in rows:
        ref = off.get((r["scheduler"], r["lam"]), math.nan)
        out.append({**r, "turnaround_change": r["mean_turnaround"] - ref})
    return out


def run_study(out: Path, size: Size = Size(), *, trace: str = "kth", jobs: int | None = None,
              figures: bool = True, progress: bool = True, engine: Engine | None = None) -> dict[str, Any]:
    """Run (or resume) the study as a campaign in ``out``, then its tables and figures.

    ``jobs`` (runs in flight) is kept for old callers; ``engine`` says where the runs go."""
    path, nodes = trace_path(trace)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SWF trace")
    engine = engine or Engine(workers=jobs, progress=progress)
    t0 = time.perf_counter()
    res, _ = run_as_campaign("soysal", params_of(size, trace), out, engine)
    rows = rows_of(res)
    cdf: dict[int, list[float]] = {}
    for c in rows_of(res, "cdf"):
        cdf.setdefault(int(c["index"]), []).append(float(c["tnap"]))
    ok = [int(i) for i, s in zip(res.columns["index"], res.columns["status"]) if s == "ok"]
    records, adv = [], []
    for i, r in zip(ok, rows):
        if r["kind"] == "tnap":
            records.append({**{k: r[k] for k in TNAP_COLUMNS}, "quantiles": cdf.get(i, [])})
        else:
            adv.append({k: r[k] for k in ADVANCE_COLUMNS})
    adv = with_turnaround_change(adv)
    ratio = requested_over_used(path, size.limit)
    summary = {"trace": trace, "path": str(path), "nodes": nodes, "limit": size.limit,
               "advance_window": size.advance_window, "advance_backfill_depth": size.advance_backfill_depth,
               "requested_over_used": ratio, "runs": len(records), "advance_runs": len(adv),
               "wall_seconds": time.perf_counter() - t0, "paper": PAPER, "records": records, "advance": adv}
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "runs.csv", [{k: v for k, v in r.items() if k != "quantiles"} for r in records])
    write_csv(out / "advance.csv", adv)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=float))
    if figures:
        _figures(out, summary)
    return summary


def campaign_summary(params: dict[str, Any], out_dir: Path, figures: bool = True) -> dict:
    """The summary and figures of a finished study campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    size, trace = size_of(params)
    return run_study(Path(out_dir), size, trace=trace, figures=figures, engine=Engine(use_ray=False, progress=False))


def _figures(out: Path, s: dict[str, Any]) -> None:
    import matplotlib  # lazy: figures only when asked

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: figures only when asked

    fig, ax = plt.subplots(figsize=(3, 3))
    ax.bar([s["trace"]], [s["requested_over_used"]])
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_ylabel("requested / used time")
    ax.set_title("Fig. 3a")
    fig.tight_layout()
    fig.savefig(out / "fig3a.png", dpi=120)
    plt.close(fig)

    recs = s["records"]
    scheds = list(dict.fromkeys(r["scheduler"] for r in recs))
    if not scheds:  # a campaign of advance runs only: no T_NAP figures
        _fig_advance_if_any(plt, out, s)
        return
    fig, axes = plt.subplots(1, len(scheds), figsize=(4.5 * len(scheds), 3.5), sharey=True, squeeze=False)
    for ax, sc in zip(axes[0], scheds):
        rs = [r for r in recs if r["scheduler"] == sc]
        labels = [r["estimate"].replace("lambda=", "λ") for r in rs]
        bottom = [0.0] * len(rs)
        for c in TNAP_CLASSES:
            vals = [r[f"share_{c}"] for r in rs]
            ax.bar(labels, vals, bottom=bottom, label=c)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_title(sc)
        ax.tick_params(axis="x", rotation=60)
    axes[0][0].set_ylabel("share of jobs")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, not on them
    fig.suptitle(f"Fig. 4: T_NAP classes ({s['trace']})")
    fig.tight_layout()
    fig.savefig(out / "fig4.png", dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(scheds), figsize=(4.5 * len(scheds), 3.5), sharey=True, squeeze=False)
    for ax, sc in zip(axes[0], scheds):
        for r in (r for r in recs if r["scheduler"] == sc and r["quantiles"]):
            q = [max(x, 0.1) for x in r["quantiles"]]
            ax.plot(q, [i / 100 for i in range(101)], label=r["estimate"].replace("lambda=", "λ"))
        ax.axvline(600, color="k", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("T_NAP (s), instant jobs excluded")
        ax.set_title(sc)
    axes[0][0].set_ylabel("CDF")
    axes[0][-1].legend(fontsize=6)
    fig.suptitle(f"Fig. 5: T_NAP CDFs ({s['trace']})")
    fig.tight_layout()
    fig.savefig(out / "fig5.png", dpi=120)
    plt.close(fig)

    _fig_advance_if_any(plt, out, s)


def _fig_advance_if_any(plt, out: Path, s: dict[str, Any]) -> None:
    adv = [r for r in s.get("advance", []) if r["advance"]]
    if adv:
        _fig_advance(plt, out, s, adv)


def _fig_advance(plt, out: Path, s: dict[str, Any], adv: list[dict[str, Any]]) -> None:
    """fig_advance.png: hidden staging time, wasted bytes and the turnaround change against lambda,
    one line per scheduler."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for sc in dict.fromkeys(r["scheduler"] for r in adv):
        rs = sorted((r for r in adv if r["scheduler"] == sc), key=lambda r: r["lam"])
        lam = [r["lam"] for r in rs]
        axes[0].plot(lam, [r["hidden_seconds"] / 3600 for r in rs], "o-", label=sc)
        axes[1].plot(lam, [r["wasted_bytes"] / 1e12 for r in rs], "o-", label=sc)
        axes[2].plot(lam, [r["turnaround_change"] for r in rs], "o-", label=sc)
    for ax, lab in zip(axes, ("staging hidden [h]", "wasted early copies [TB]", "mean turnaround change [s]")):
        ax.set_xlabel("λ (walltime refinement, Eq. 1)")
        ax.set_ylabel(lab)
        ax.legend(fontsize=7)
    axes[2].axhline(0, color="k", lw=0.5)
    fig.suptitle(f"Advance stage-in on {s['trace']} with lackner2019 I/O (θ_stable = 600 s)")
    fig.tight_layout()
    fig.savefig(out / "fig_advance.png", dpi=120)
    plt.close(fig)
