"""soysal2019: how long before its start is a job's node set known (T_NAP), against walltime
quality and scheduler (Figs. 3a, 4 and 5).

Runs: every (scheduler, estimate) pair on one SWF trace, each an independent simulation with
plan tracking (``track_predictions``); its record holds the T_NAP class shares and 101
quantiles of the non-instant T_NAP values (Fig. 5's CDF).  With ``jobs > 1`` the runs are Ray
tasks (one CPU each) on a local Ray of ``jobs`` CPUs; ``jobs = 1`` runs them in this process.

Outputs in ``out``: ``runs.jsonl`` (each record as it arrives), ``runs.csv`` (one row per run), ``summary.json`` (Fig. 3a's ratio, every
run's shares and CDF quantiles, wall time), ``fig3a.png``, ``fig4.png``, ``fig5.png``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..metrics import TNAP_CLASSES, tnap_summary
from ..sim.batch.run import simulate_batch
from ..sim.workloads.swf import read_swf, swf_jobs
from ..specs import parse_spec
from ..shared_data import shared_data_file
from .common import Progress, write_csv

LAMBDAS = (1.0, 0.7, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.0)
SCHEDULERS = ("conservative", "conservative-reinsert", "fcfs")
TRACES = {"kth": ("KTH-SP2-1996-2.1-cln.swf.gz", 100), "sdsc-blue": ("SDSC-BLUE-2000-4.2-cln.swf.gz", 144)}
# soysal2019 Fig. 3a and Fig. 4 (KTH), read from the paper's text and figures
PAPER = {"kth_requested_over_used": 1.5,
         "trend": "long-term (>600 s) predictions rise only for lambda <= 0.1; FCFS above conservative"}


@dataclass(frozen=True)
class Size:
    lambdas: tuple[float, ...] = LAMBDAS
    predictor: bool = True
    schedulers: tuple[str, ...] = SCHEDULERS
    limit: int | None = None  # first jobs of the trace only


QUICK = Size(lambdas=(1.0, 0.1, 0.0), limit=600)


def trace_path(trace: str) -> tuple[Path, int]:
    """``kth``, ``sdsc-blue`` or a path to an SWF file (nodes from its MaxNodes header)."""
    if trace in TRACES:
        name, nodes = TRACES[trace]
        return shared_data_file(name), nodes
    p = Path(trace)
    hdr = read_swf(p, limit=1)
    nodes = hdr.max_nodes or hdr.max_procs
    if not nodes:
        raise ValueError(f"{p}: no MaxNodes or MaxProcs header: cannot size the machine")
    return p, int(nodes)


def estimate_of(est: str | float) -> Any:
    return "predictor" if est == "predictor" else {"refined": float(est)}


def one_run(path: str, nodes: int, scheduler: str, est: str | float, limit: int | None) -> dict[str, Any]:
    """One simulation; its record (plain data)."""
    t0 = time.perf_counter()
    wl: dict[str, Any] = {"source": "swf", "path": path}
    if limit:
        wl["limit"] = limit
    spec = parse_spec({"kind": "batch", "name": f"soysal-{scheduler}-{est}",
                       "platform": {"nodes": nodes, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": 1e12},
                                    "stage_rate": 5e9},
                       "scheduler": scheduler, "estimate": estimate_of(est), "track_predictions": True,
                       "workload": wl})
    tr = simulate_batch(spec, swf_jobs(path, limit=limit), strict=False)
    s = tnap_summary(tr)
    v = s.values
    q = [v[min(len(v) - 1, round(i / 100 * (len(v) - 1)))] for i in range(101)] if v else []
    return {"scheduler": scheduler, "estimate": "predictor" if est == "predictor" else f"lambda={float(est):g}",
            "lam": math.nan if est == "predictor" else float(est), "jobs": s.jobs,
            **{f"share_{k}": s.shares[k] for k in TNAP_CLASSES},
            "prediction_rows": len(tr.predictions), "seconds": time.perf_counter() - t0, "quantiles": q}


def requested_over_used(path: Path, limit: int | None) -> float:
    """Fig. 3a: total requested time over total used time of the trace's jobs (jobs with a runtime)."""
    jobs = [j for j in swf_jobs(path, limit=limit) if j.runtime > 0]
    return sum(float(j.walltime) for j in jobs) / sum(float(j.runtime) for j in jobs)


def run_study(out: Path, size: Size = Size(), *, trace: str = "kth", jobs: int = 1,
              figures: bool = True) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    path, nodes = trace_path(trace)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SWF trace")
    ests: list[str | float] = list(size.lambdas) + (["predictor"] if size.predictor else [])
    todo = [(str(path), nodes, s, e, size.limit) for s in size.schedulers for e in ests]
    t0 = time.perf_counter()
    prog = Progress(len(todo), f"soysal {trace}")
    records = _run_all(todo, jobs, prog, out / "runs.jsonl")
    order = {(s, str(e)): i for i, (_, _, s, e, _) in enumerate(todo)}
    records.sort(key=lambda r: order[(r["scheduler"], "predictor" if r["estimate"] == "predictor" else str(r["lam"]))])
    ratio = requested_over_used(path, size.limit)
    summary = {"trace": trace, "path": str(path), "nodes": nodes, "limit": size.limit,
               "requested_over_used": ratio, "runs": len(records), "wall_seconds": time.perf_counter() - t0,
               "paper": PAPER, "records": records}
    write_csv(out / "runs.csv", [{k: v for k, v in r.items() if k != "quantiles"} for r in records])
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=float))
    if figures:
        _figures(out, summary)
    return summary


def _run_all(todo, jobs: int, prog: Progress, partial: Path) -> list[dict[str, Any]]:
    """Every run's record, each also appended to ``partial`` (JSON lines) as it arrives."""
    partial.write_text("")

    def keep(r: dict[str, Any]) -> None:
        with open(partial, "a") as f:
            f.write(json.dumps(r, default=float) + "\n")
        prog.step(f"{r['scheduler']} {r['estimate']}")

    if jobs <= 1:
        out = []
        for t in todo:
            out.append(one_run(*t))
            keep(out[-1])
        return out
    import ray  # lazy: Ray only when the study runs in parallel

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(one_run)
        pending = [task.remote(*t) for t in todo]
        out = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            r = ray.get(done[0])
            out.append(r)
            keep(r)
        return out
    finally:
        if started:
            ray.shutdown()


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
    axes[0][-1].legend(fontsize=7)
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
