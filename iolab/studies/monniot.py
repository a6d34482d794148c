"""monniot2023 §5: sizing a storage partition from Theta's I/O jobs (Figs. 4, 6, 7).

Grid (Table 4): layouts 1N1D, 1NnD, nN1D, nNnD x capacities 8/16/32/64 TB x
random, round-robin, worst-fit, best-bandwidth x split at 200 GB on/off
(requeue off unless asked: the paper found it unnecessary, §5.2).  Each run
replays the storage requests through ``iolab.sim.batch.storage_replay`` and computes
Table 3 (``iolab.metrics.batch.storage_metrics``).

**Input and scaling.**  The paper replays a year of Theta (24 000 jobs,
sum_cap = 1.6 PB); we have one week (``theta-2022-week4-io-jobs.yaml``).
One storage request per job: size = max(read, written) bytes, duration = the
job's runtime, requested at the job's *start* time (Darshan sees a job while
it runs; the paper replays jobs in the order Theta scheduled them).

- ``sum-cap`` scaling (the default): every platform capacity is multiplied
  by (this week's sum_cap / 1.6 PB), so capacity / sum_cap is the paper's.
  Request sizes are not scaled (they are what the jobs asked for), nor is
  the 200 GB split threshold (a property of requests).
- ``peak`` scaling: the paper finds that "never more than 32 TB are needed
  at the same time" (§5.2); this maps 32 TB to the week's peak concurrent
  demand, so capacity / peak demand is the paper's upper bound.

The summary says, for each scaling, how the week differs from the year
(peak demand / sum_cap, requests larger than a disk).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.sim.batch.storage_replay import (
    LAYOUTS, PAPER_CAPACITIES_TB, PAPER_SPLIT, PAPER_SUM_CAP, TB, StorageRequest, disk_fill_times, monniot_layout,
    peak_demand, replay_layout, requests_from_jobs, week_scale,
)
from iolab.workloads.theta import _utc, theta_trace

from iolab.shared_data import shared_data_file

from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import check_unchanged, file_sha256, write_csv

RUN_VERSION = 2  # bump when a run's meaning changes (new run ids); 2: disk rows hold first_alloc, first_full

STRATEGIES = ("random", "round-robin", "worst-fit", "best-bandwidth")
SCALINGS = ("sum-cap", "peak")
PAPER_PEAK = 32 * TB  # §5.2: "never more than 32TB are needed at the same time"
THETA_FILE = "theta-2022-week4-io-jobs.yaml"
FULL_SUCCESS = 99.5  # % of sum_cap counted as "reaches 100 %"

# What the paper reports (§5.2), next to which the summary puts ours.
PAPER = {
    "fig4_no_split": "only 1N1D reaches 100 % of sum_cap, at 32 and 64 TB; the other layouts peak slightly above 60 %",
    "fig4_split": "every layout and algorithm reaches 100 % at 64 TB; at 32 TB too except a few failures of random "
                  "and worst-fit; 16 TB reaches 91-96 %",
    "fig5": "32 TB: only random and worst-fit fill a disk to 100 %; 64 TB: the best algorithms stay under 50 %",
    "fig6": "mean/max allocations per disk vary least for round-robin and best-bandwidth; worst-fit is the least "
            "fair; best-bandwidth gives the smallest maxima",
    "fig7": "8 TB: up to 217 failures for random, round-robin and best-bandwidth under half as many failed+refused; "
            "16 TB: random 38 failures, best-bandwidth 41 failed or refused; 32 TB: no refusals, a handful of "
            "failures for random and worst-fit; 64 TB: none",
    "conclusion": "32 TB with split at 200 GB absorbs >= 99 % of the I/O-intensive jobs (best-bandwidth)",
}


@dataclass(frozen=True)
class MonniotSize:
    layouts: tuple[str, ...] = tuple(LAYOUTS)
    capacities_tb: tuple[float, ...] = PAPER_CAPACITIES_TB
    strategies: tuple[str, ...] = STRATEGIES
    splits: tuple[bool, ...] = (False, True)
    scalings: tuple[str, ...] = SCALINGS
    requeue: tuple[bool, ...] = (False,)
    seeds: tuple[int, ...] = (0,)
    split_bytes: float = PAPER_SPLIT
    requeue_retries: int = 12  # Table 4: every 5 min until a 60 min delay
    requeue_period: float = 300.0


QUICK = MonniotSize(layouts=("1N1D", "nNnD"), capacities_tb=(8, 32), scalings=("sum-cap",))


def default_theta_path() -> Path:
    return shared_data_file(THETA_FILE)


def theta_requests(path: str | Path, request_time: str = "start") -> list[StorageRequest]:
    """One request per Theta job: max(read, written) bytes for its runtime, at its start (or submit) time."""
    tr = theta_trace(path)
    if request_time == "start":
        times = [_utc(r.get("startTime"), f"{path}: jobs[{i}].startTime") - tr.origin for i, r in enumerate(tr.raw)]
    elif request_time == "submit":
        times = None
    else:
        raise ValueError(f"request_time must be 'start' or 'submit', got {request_time!r}")
    return requests_from_jobs(tr.jobs, times=times)


def workload_stats(reqs: Sequence[StorageRequest]) -> dict:
    sizes = np.array([r.size for r in reqs], dtype=float)
    sum_cap = float(sizes.sum())
    peak = peak_demand(reqs)
    return {"requests": len(reqs), "sum_cap": sum_cap, "peak_demand": peak, "peak_over_sum_cap": peak / sum_cap,
            "paper_peak_over_sum_cap_at_most": PAPER_PEAK / PAPER_SUM_CAP, "largest_request": float(sizes.max()),
            "median_request": float(np.median(sizes)), "requests_over_split": int(np.sum(sizes > PAPER_SPLIT)),
            "span_seconds": float(max(r.submit + r.duration for r in reqs) - min(r.submit for r in reqs))}


def scale_factor(scaling: str, stats: dict) -> float:
    if scaling == "sum-cap":
        return week_scale(stats["sum_cap"])
    if scaling == "peak":
        return stats["peak_demand"] / PAPER_PEAK
    if scaling == "none":
        return 1.0
    raise ValueError(f"unknown scaling {scaling!r}; known: sum-cap, peak, none")


def run_one(scaling: str, factor: float, layout: str, capacity_tb: float, strategy: str, split: bool,
            requeue: bool, seed: int, split_bytes: float, retries: int, period: float,
            reqs: Sequence[StorageRequest]) -> dict:
    capacity = capacity_tb * TB * factor
    t0 = time.perf_counter()
    res = replay_layout(reqs, layout, capacity, strategy, split=split_bytes if split else None,
                        requeue_retries=retries if requeue else 0, requeue_period=period, seed=seed)
    m = res.metrics()
    wall = time.perf_counter() - t0
    disk_size = max(d.capacity for d in res.disks)
    row = {
        "scaling": scaling, "layout": layout, "capacity_tb": capacity_tb, "capacity_bytes": float(capacity),
        "disk_bytes": float(disk_size), "strategy": strategy, "split": split, "requeue": requeue, "seed": seed,
        "requests": m.requests, "sum_cap": m.sum_cap, "allocated_bytes": m.allocated_bytes,
        "pct_sum_cap": m.pct_sum_cap_allocated, "allocated": sum(1 for s in res.status.values() if s == "allocated"),
        "refused": m.refused, "failed": m.failed, "split_requests": m.split, "requeued": m.requeued,
        "requeue_delay": m.requeue_delay, "max_disk_use": m.max_disk_use,
        "mean_disk_use": m.mean_disk_use,
        "mean_concurrent": m.mean_concurrent, "max_concurrent": m.max_concurrent, "events": res.events,
        "wall_seconds": wall,
    }
    fill = disk_fill_times(res.log, res.disk_capacity)
    disks = [{"disk": d, "mean_concurrent": c["mean_concurrent"], "max_concurrent": c["max_concurrent"],
              "max_use": c["max_use"], "mean_use": c["mean_use"],
              "first_alloc": _or_nan(fill[d][0]), "first_full": _or_nan(fill[d][1])} for d, c in m.per_disk.items()]
    return {"row": row, "disks": disks}


def _or_nan(t: float | None) -> float:
    return float("nan") if t is None else float(t)


def tasks(size: MonniotSize, factors: dict[str, float], reqs: list[StorageRequest]) -> list[tuple]:
    out = []
    for scaling in size.scalings:
        for layout in size.layouts:
            for cap in size.capacities_tb:
                for strategy in size.strategies:
                    for split in size.splits:
                        for rq in size.requeue:
                            if rq and strategy not in ("round-robin", "best-bandwidth"):
                                continue  # requeue applies only to refusing strategies (§4.2)
                            for seed in size.seeds:
                                out.append((scaling, factors[scaling], layout, cap, strategy, split, rq, seed,
                                            size.split_bytes, size.requeue_retries, size.requeue_period, reqs))
    return out


def headline(rows: list[dict], size: MonniotSize) -> dict:
    """Per scaling: the numbers the paper's §5.2 text quotes, from our runs."""
    out: dict = {}
    for scaling in size.scalings:
        rs = [r for r in rows if r["scaling"] == scaling and not r["requeue"]]
        h: dict = {"pct_sum_cap": {}, "first_capacity_all_full": {}, "fig7_max_failed_refused": {}}
        for split in size.splits:
            key = "split" if split else "no_split"
            per_cap = {}
            for cap in size.capacities_tb:
                sel = [r for r in rs if r["capacity_tb"] == cap and r["split"] == split]
                if not sel:
                    continue
                non_base = [r for r in sel if r["layout"] != "1N1D"] or sel
                per_cap[f"{cap:g}TB"] = {
                    "min": min(r["pct_sum_cap"] for r in sel), "max": max(r["pct_sum_cap"] for r in sel),
                    "max_excluding_1N1D": max(r["pct_sum_cap"] for r in non_base),
                    "full": sorted(f"{r['layout']}/{r['strategy']}" for r in sel if r["pct_sum_cap"] >= FULL_SUCCESS),
                }
            h["pct_sum_cap"][key] = per_cap
            full = [c for c in size.capacities_tb
                    if all(r["pct_sum_cap"] >= FULL_SUCCESS for r in rs if r["capacity_tb"] == c and r["split"] == split)]
            h["first_capacity_all_full"][key] = min(full) if full else None
        for cap in size.capacities_tb:
            per = {}
            for s in size.strategies:
                sel = [r for r in rs if r["capacity_tb"] == cap and r["strategy"] == s and r["split"]
                       and r["layout"] != "1N1D"]
                if sel:
                    per[s] = {"failed": max(r["failed"] for r in sel), "refused": max(r["refused"] for r in sel)}
            if per:
                h["fig7_max_failed_refused"][f"{cap:g}TB"] = per
        out[scaling] = h
    return out


ARGS = ("scaling", "factor", "layout", "capacity_tb", "strategy", "split", "requeue", "seed", "split_bytes",
        "retries", "period")


def params_of(size: MonniotSize, theta: str | Path | None = None, request_time: str = "start") -> dict[str, Any]:
    """The study's size and input as campaign parameters (JSON data)."""
    path = Path(theta) if theta else default_theta_path()
    return {**{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(size).items()},
            "theta": str(path.resolve()), "request_time": request_time}


def size_of(params: dict[str, Any]) -> MonniotSize:
    fields = set(MonniotSize.__dataclass_fields__)
    unknown = set(params) - fields - {"theta", "request_time"}
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: {sorted(fields | {'theta', 'request_time'})}")
    return MonniotSize(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k in fields})




@lru_cache(maxsize=4)
def _requests(path: str, request_time: str, sha256: str) -> tuple[StorageRequest, ...]:
    check_unchanged(path, sha256)
    return tuple(theta_requests(path, request_time))


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """One run per grid point; each names the Theta file and its content hash (part of the run id)."""
    size = size_of(params)
    path = params.get("theta") or str(default_theta_path())
    if not Path(path).is_file():
        raise ValueError(f"Theta job file not found: {path} (pass --theta or set IOLAB_SHARED_DATA)")
    request_time = params.get("request_time", "start")
    sha = file_sha256(path)
    reqs = _requests(str(path), request_time, sha)
    stats = workload_stats(reqs)
    factors = {sc: scale_factor(sc, stats) for sc in size.scalings}
    return [{**dict(zip(ARGS, t[:-1])), "theta": str(path), "request_time": request_time, "theta_sha256": sha}
            for t in tasks(size, factors, list(reqs))]


def campaign_task(args: dict[str, Any]) -> dict:
    reqs = _requests(args["theta"], args["request_time"], args["theta_sha256"])
    res = run_one(*(args[a] for a in ARGS), reqs)
    return {"rows": [res["row"]], "tables": {"disks": res["disks"]}}


def run_study(out_dir: Path, size: MonniotSize = MonniotSize(), *, theta: str | Path | None = None,
              jobs: int | None = None, figures: bool = True, progress: bool = True, request_time: str = "start",
              engine: Engine | None = None) -> dict:
    """Run (or resume) the study as a campaign in ``out_dir``, then its tables and figures."""
    path = Path(theta) if theta else default_theta_path()
    if not path.is_file():
        raise FileNotFoundError(f"Theta job file not found: {path} (pass --theta or set IOLAB_SHARED_DATA)")
    reqs = theta_requests(path, request_time)
    stats = workload_stats(reqs)
    factors = {s: scale_factor(s, stats) for s in size.scalings}
    engine = engine or Engine(workers=jobs, progress=progress)
    t0 = time.perf_counter()
    res, _ = run_as_campaign("monniot", params_of(size, path, request_time), out_dir, engine)
    wall = time.perf_counter() - t0
    rows = []
    disk_rows = []
    for row in rows_of(res):
        row["run"] = len(rows)
        rows.append(row)
    by_index = {int(i): k for k, i in enumerate(i for i, s in zip(res.columns["index"], res.columns["status"])
                                                 if s == "ok")}
    for d in rows_of(res, "disks"):
        k = by_index[d.pop("index")]
        disk_rows.append({"run": k, **{c: rows[k][c] for c in ("scaling", "layout", "capacity_tb", "strategy",
                                                                "split", "requeue")}, **d})
    scalings = {}
    for s, f in factors.items():
        caps = {f"{c:g}TB": c * TB * f for c in size.capacities_tb}
        disk_min = min(monniot_layout(lay, c * TB * f)[0].capacity for lay in size.layouts for c in size.capacities_tb)
        scalings[s] = {"factor": f, "capacities_bytes": caps,
                       "requests_larger_than_smallest_disk": int(sum(r.size > disk_min for r in reqs)),
                       "requests_larger_than_whole_platform":
                           {k: int(sum(r.size > v for r in reqs)) for k, v in caps.items()}}
    summary = {
        "input": {"theta": str(path), "request_time": request_time, **stats},
        "scalings": scalings, "headline": headline(rows, size), "paper": PAPER,
        "size": {"layouts": list(size.layouts), "capacities_tb": list(size.capacities_tb),
                 "strategies": list(size.strategies), "splits": list(size.splits), "scalings": list(size.scalings),
                 "requeue": list(size.requeue), "seeds": list(size.seeds), "split_bytes": size.split_bytes},
        "runs": len(rows), "wall_seconds": wall,
        "replay_seconds": float(sum(r["wall_seconds"] for r in rows)),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "runs.csv", rows)
    write_csv(out_dir / "disks.csv", disk_rows)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2))
    if figures:
        summary["figures"] = draw(rows, disk_rows, size, out_dir)
    return summary


# ---------------------------------------------------------------- figures

_COLORS = {"random": "tab:red", "round-robin": "tab:blue", "worst-fit": "tab:orange", "best-bandwidth": "tab:green"}


def _fig_name(base: str, scaling: str, size: MonniotSize) -> str:
    return f"{base}.png" if scaling == size.scalings[0] else f"{base}-{scaling}.png"


def draw(rows: list[dict], disk_rows: list[dict], size: MonniotSize, out_dir: Path) -> list[str]:
    import matplotlib  # lazy: matplotlib only when the figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figures are drawn
    from matplotlib.patches import Patch  # lazy: matplotlib only when the figures are drawn

    written = []
    hatches = {"1N1D": "", "1NnD": "//", "nN1D": "..", "nNnD": "xx"}
    for scaling in size.scalings:
        rs = [r for r in rows if r["scaling"] == scaling and not r["requeue"] and r["seed"] == size.seeds[0]]
        # Fig. 4: % of sum_cap per run, rows = split off/on, columns = capacity, ordered by allocated volume.
        fig, axes = plt.subplots(len(size.splits), len(size.capacities_tb), squeeze=False,
                                 figsize=(3.2 * len(size.capacities_tb), 3.2 * len(size.splits)), sharey=True)
        for i, split in enumerate(size.splits):
            for j, cap in enumerate(size.capacities_tb):
                ax = axes[i][j]
                sel = sorted((r for r in rs if r["split"] == split and r["capacity_tb"] == cap),
                             key=lambda r: r["allocated_bytes"])
                x = np.arange(len(sel))
                ax.bar(x, [r["pct_sum_cap"] for r in sel], color=[_COLORS.get(r["strategy"], "grey") for r in sel],
                       edgecolor="black", linewidth=0.3)
                for xi, r in zip(x, sel):
                    ax.bar(xi, r["pct_sum_cap"], color="none", hatch=hatches.get(r["layout"], ""), edgecolor="black",
                           linewidth=0)
                ax.set_xticks([])
                ax.set_ylim(0, 105)
                ax.axhline(100, color="grey", lw=0.5, ls=":")
                ax.set_title(f"{cap:g} TB-eq, {'split 200 GB' if split else 'no split'}", fontsize=9)
                if j == 0:
                    ax.set_ylabel("% of sum_cap allocated")
        handles = [Patch(facecolor=c, label=s) for s, c in _COLORS.items() if s in size.strategies]
        handles += [Patch(facecolor="white", edgecolor="black", hatch=h, label=l) for l, h in hatches.items()
                    if l in size.layouts]
        fig.legend(handles=handles, loc="lower center", ncol=8, fontsize=8)
        fig.suptitle(f"monniot2023 Fig. 4 (iolab replay, Theta week, {scaling} scaling)\nruns ordered by allocated volume", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 0.96))
        name = _fig_name("fig4", scaling, size)
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(name)

        # Fig. 6: per-disk mean and max concurrent allocations, 32 TB-eq (else the nearest), split on, no 1N1D.
        cap6 = min(size.capacities_tb, key=lambda c: abs(c - 32))
        ds = [d for d in disk_rows if d["scaling"] == scaling and d["capacity_tb"] == cap6 and d["split"]
              and not d["requeue"] and d["layout"] != "1N1D"]
        if ds:
            fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
            for ax, col in zip(axes, ("mean_concurrent", "max_concurrent")):
                data = [[d[col] for d in ds if d["strategy"] == s] for s in size.strategies]
                ax.boxplot(data, showfliers=False)
                rng = np.random.default_rng(0)
                for k, vals in enumerate(data, start=1):
                    ax.scatter(k + rng.uniform(-0.15, 0.15, len(vals)), vals, s=8,
                               color=_COLORS.get(size.strategies[k - 1], "grey"), zorder=3)
                ax.set_ylabel(("mean" if col.startswith("mean") else "max") + " allocations per disk")
            axes[1].set_xticks(range(1, len(size.strategies) + 1), size.strategies)
            fig.suptitle(f"monniot2023 Fig. 6 (iolab, {scaling} scaling)\n{cap6:g} TB-eq, split 200 GB, 1N1D excluded", fontsize=10)
            fig.tight_layout()
            name = _fig_name("fig6", scaling, size)
            fig.savefig(out_dir / name, dpi=110)
            plt.close(fig)
            written.append(name)

        # Fig. 7: max (over layouts) failed and refused requests, split on, per algorithm and capacity.
        if True in size.splits:
            fig, ax = plt.subplots(figsize=(8, 4))
            caps = list(size.capacities_tb)
            width = 0.8 / max(1, len(size.strategies))
            for k, s in enumerate(size.strategies):
                failed, refused = [], []
                for c in caps:
                    sel = [r for r in rs if r["split"] and r["capacity_tb"] == c and r["strategy"] == s
                           and r["layout"] != "1N1D"] or \
                          [r for r in rs if r["split"] and r["capacity_tb"] == c and r["strategy"] == s]
                    failed.append(max((r["failed"] for r in sel), default=0))
                    refused.append(max((r["refused"] for r in sel), default=0))
                x = np.arange(len(caps)) + (k - (len(size.strategies) - 1) / 2) * width
                ax.bar(x, failed, width, color=_COLORS.get(s, "grey"), label=f"{s} failed")
                ax.bar(x, refused, width, bottom=failed, color=_COLORS.get(s, "grey"), alpha=0.45, hatch="//",
                       label=f"{s} refused")
            ax.set_xticks(np.arange(len(caps)), [f"{c:g} TB-eq" for c in caps])
            ax.set_ylabel("max failed (solid) + refused (hatched) requests")
            ax.legend(fontsize=7, ncol=2)
            ax.set_title(f"monniot2023 Fig. 7 (iolab, {scaling} scaling): split 200 GB, max over layouts")
            fig.tight_layout()
            name = _fig_name("fig7", scaling, size)
            fig.savefig(out_dir / name, dpi=110)
            plt.close(fig)
            written.append(name)
    return written


def campaign_summary(params: dict[str, Any], out_dir: Path, figures: bool = True) -> dict:
    """The summary and figures of a finished study campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    return run_study(Path(out_dir), size_of(params), theta=params.get("theta"),
                     request_time=params.get("request_time", "start"), figures=figures,
                     engine=Engine(use_ray=False, progress=False))


__all__ = ["MonniotSize", "campaign_runs", "campaign_summary", "campaign_task", "PAPER", "QUICK", "SCALINGS", "STRATEGIES", "default_theta_path", "headline", "run_study",
           "scale_factor", "theta_requests", "workload_stats"]
