"""lackner2019 §V-A: SAS against random tier assignment (Figs. 3 and 4).

Platform (§IV-A): 128 nodes with 16 GB of memory each (the checkpoint size),
R_hps = 15 R_lps, R_stage = k R_lps (k = 5 unless varied), HPS of 2048 or
4096 GB; R_lps = 1 GB/s (the paper scales everything to it).  Workloads:
the Feitelson-1996 model with Table I's parameters (500 jobs) and the I/O
model of §IV-B, ten seeds.

- Fig. 3: for both HPS capacities, SAS and random assignment with
  p = 0, 0.05, ..., 1: makespan and mean turnaround (arithmetic means over
  workloads and repetitions), node and HPS utilisation (Eq. 3, pooled).
- Fig. 4: the same with R_stage = k R_lps, k in {1, 2, 5, 10} (HPS 4096 GB).

Each run is an independent simulation (``iolab.sim.batch``) with the same policy
objects a real batch loop uses; the runs are a campaign (:mod:`.engine`: Ray,
resumable, ``results.h5``), and the tables and figures are computed from its results.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.metrics.batch import batch_metrics, pooled_utilisation, used_hps_byte_seconds, used_node_seconds
from iolab.middleware.policies.batch import get_scheduler
from iolab.middleware.policies.batch.kernel import make_policy
from iolab.sim.batch.run import run_batch
from iolab.specs import parse_spec

from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import write_csv

RUN_VERSION = 1  # bump when a run's meaning changes (new run ids)

GB = 1e9


@dataclass(frozen=True)
class LacknerSize:
    jobs: int = 500
    workloads: int = 10
    repetitions: int = 1  # the paper: 10
    ps: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))
    capacities_gb: tuple[float, ...] = (2048, 4096)
    ks: tuple[float, ...] = (1, 2, 5, 10)
    # the sensitivity sweep (--sensitivity): workload constants the paper does not give, one at a time
    # ("name=value"; "" is the baseline), each at the first capacity and k = 5; empty: Figs. 3 and 4
    sensitivity: tuple[str, ...] = ()
    # Fig. 4 at these capacities too (its k != 5 runs; the paper's "more HPS hurts at low staging
    # bandwidth" compares capacities at k = 1); empty: Fig. 4 at the largest capacity only
    fig4_capacities: tuple[float, ...] = ()
    # Fig. 5 (§V-B): SAS with the users' I/O estimates drawn N(x, (theta x)^2), at the largest capacity and
    # k = 5, on every workload (one estimate draw each: the draw follows the workload's seed); empty: none
    thetas: tuple[float, ...] = ()


QUICK = LacknerSize(jobs=60, workloads=2, repetitions=1, ps=(0.0, 0.5, 1.0), capacities_gb=(2048,), ks=(1, 5))

# the constants of the Feitelson/I-O model the paper does not state (docs/batch-policies.md), each moved
# to half and double its default, one at a time
SENSITIVITY = LacknerSize(
    ps=(0.3, 0.4, 0.5, 0.6, 0.7), capacities_gb=(2048,), ks=(5,),
    sensitivity=("", "io_fraction=0.05", "io_fraction=0.2", "checkpoint_fraction=0.05", "checkpoint_fraction=0.2",
                 "arrival_factor=250", "arrival_factor=1000", "sas.start_now=1"))
QUICK_SENSITIVITY = LacknerSize(jobs=60, workloads=2, ps=(0.5,), capacities_gb=(2048,), ks=(5,),
                                sensitivity=("", "io_fraction=0.2"))
TUNABLE = ("io_fraction", "io_fraction_sd", "checkpoint_fraction", "checkpoint_min_runtime", "arrival_factor",
           "shortest", "longest", "max_repetitions")


SAS_OPTIONS = ("start_now",)  # readings of Alg. 1-2 the paper leaves open (``sas.NAME=0|1``; iolab.specs.batch)


def setting_of(text: str) -> tuple[dict[str, float], dict[str, bool]]:
    """``"NAME=VALUE"`` as (workload overrides, SAS options); ``""``: neither.  ValueError naming what
    is wrong."""
    if not text:
        return {}, {}
    name, sep, value = text.partition("=")
    option = name.removeprefix("sas.")
    if sep and name.startswith("sas.") and option in SAS_OPTIONS:
        return {}, {option: float(value) != 0}
    if not sep or name not in TUNABLE:
        raise ValueError(f"sensitivity setting {text!r}: expected NAME=VALUE with NAME one of {', '.join(TUNABLE)} "
                         f"or sas.{'|sas.'.join(SAS_OPTIONS)}")
    return {name: float(value)}, {}


def experiment(capacity_gb: float, k: float, scheduler, seed: int, jobs: int, workload: dict | None = None):
    return parse_spec({
        "kind": "batch", "name": f"lackner-{capacity_gb:g}GB-k{k:g}",
        "platform": {"nodes": 128, "memory_per_node": 16 * GB, "lps": {"rate": GB},
                     "hps": {"rate": 15 * GB, "capacity": capacity_gb * GB}, "stage_rate": k * GB},
        "scheduler": scheduler, "seed": seed,
        "workload": {"source": "feitelson", "jobs": jobs, **(workload or {})},
    })


def run_one(figure: int, capacity_gb: float, k: float, scheduler: str, p: float | None, workload: int,
            repetition: int, jobs: int, setting: str | None = None, theta: float | None = None) -> dict:
    overrides, sas_options = setting_of(setting or "")
    if theta is not None:
        overrides = {**overrides, "theta": theta}
    sched = {"kind": "random-tier", "p": p} if scheduler == "random" else {"kind": "sas", **sas_options}
    spec = experiment(capacity_gb, k, sched, seed=workload, jobs=jobs, workload=overrides)
    policy = (get_scheduler("random-tier", p=p, rng=np.random.default_rng([workload, repetition, int(p * 1000)]))
              if scheduler == "random" else make_policy(spec))
    t0 = time.perf_counter()
    rec = run_batch(spec, scheduler=policy, rows=False)
    wall = time.perf_counter() - t0
    js = rec.jobs
    submit = np.array([s.queued.submit for s in js])
    start = np.array([s.start for s in js])
    end = np.array([s.end for s in js])
    nodes = np.array([s.queued.nodes for s in js])
    tier = np.array([s.tier for s in js])
    hb = np.array([s.storage for s in js])
    m = batch_metrics(submit, start, end, nodes, 128, tier, hb, capacity_gb * GB)
    # Eq. 3's used and available node-seconds (HPS byte-seconds) of this experiment, pooled by the tables
    return {
        "figure": figure, "capacity_gb": capacity_gb, "k": k, "scheduler": scheduler,
        "p": p if p is not None else float("nan"), "workload": workload, "repetition": repetition,
        "makespan": m.makespan, "mean_turnaround": m.mean_turnaround,
        "node_used": used_node_seconds(start, end, nodes), "node_avail": m.makespan * 128,
        "hps_used": used_hps_byte_seconds(start, end, tier, hb),
        "hps_avail": m.makespan * capacity_gb * GB, "hps_jobs": m.hps_jobs, "wall_seconds": wall,
        **({"setting": setting or "baseline"} if setting is not None else {}),
        **({"theta": theta} if theta is not None else {}),
    }


def tasks(size: LacknerSize) -> list[tuple]:
    if size.sensitivity:
        return sensitivity_tasks(size)
    out = []
    for cap in size.capacities_gb:  # Fig. 3
        for w in range(size.workloads):
            out.append((3, cap, 5, "sas", None, w, 0, size.jobs))
            for p in size.ps:
                for r in range(size.repetitions):
                    out.append((3, cap, 5, "random", p, w, r, size.jobs))
    cap4 = max(size.capacities_gb)
    for cap in dict.fromkeys((cap4, *size.fig4_capacities)):
        for k in size.ks:  # Fig. 4 (k = 5 is Fig. 3's runs)
            if k == 5:
                continue
            for w in range(size.workloads):
                out.append((4, cap, k, "sas", None, w, 0, size.jobs))
                for p in size.ps:
                    for r in range(size.repetitions):
                        out.append((4, cap, k, "random", p, w, r, size.jobs))
    return out


def theta_tasks(size: LacknerSize) -> list[dict[str, Any]]:
    """Fig. 5: SAS at the largest capacity and k = 5 with inaccurate estimates, one run per theta and workload
    (theta = 0 is Fig. 3's SAS run)."""
    cap = max(size.capacities_gb)
    return [{**dict(zip(ARGS, (5, cap, 5, "sas", None, w, 0, size.jobs))), "theta": float(t)}
            for t in size.thetas if t > 0 for w in range(size.workloads)]


def sensitivity_tasks(size: LacknerSize) -> list[tuple]:
    """Per setting, at the first capacity and k = 5: SAS and random p on every workload (figure 0)."""
    cap = size.capacities_gb[0]
    out = []
    for setting in size.sensitivity:
        setting_of(setting)  # a bad setting is refused before anything runs
        for w in range(size.workloads):
            out.append((0, cap, 5, "sas", None, w, 0, size.jobs, setting))
            for p in size.ps:
                for r in range(size.repetitions):
                    out.append((0, cap, 5, "random", p, w, r, size.jobs, setting))
    return out


def sensitivity_table(rows: list[dict]) -> list[dict]:
    """Per setting: SAS against the best random p (means over workloads and repetitions) and against the
    minimum of the quadratic fit over p (less flattering to random assignment than the best noisy mean)."""
    out = []
    for setting in dict.fromkeys(r["setting"] for r in rows):
        mine = [r for r in rows if r["setting"] == setting]
        sas = [r for r in mine if r["scheduler"] == "sas"]
        rnd = [r for r in mine if r["scheduler"] == "random"]
        row = {"setting": setting, "runs": len(mine),
               "sas_hps_utilisation": pooled_utilisation([r["hps_used"] for r in sas], [r["hps_avail"] for r in sas]),
               "sas_node_utilisation": pooled_utilisation([r["node_used"] for r in sas], [r["node_avail"] for r in sas])}
        for col in ("makespan", "mean_turnaround"):
            sas_mean = float(np.mean([r[col] for r in sas]))
            ps = sorted({r["p"] for r in rnd})
            means = [float(np.mean([r[col] for r in rnd if r["p"] == p])) for p in ps]
            best = int(np.argmin(means))
            fit_min = float(min(np.polyval(np.polyfit(ps, means, 2), np.linspace(min(ps), max(ps), 101))))\
                if len(ps) >= 3 else means[best]
            row.update({f"sas_{col}": sas_mean, f"best_random_{col}": means[best], f"best_p_{col}": ps[best],
                        f"gap_{col}": sas_mean / means[best] - 1, f"gap_fit_{col}": sas_mean / fit_min - 1})
        out.append(row)
    return out


def aggregate(rows: list[dict]) -> dict:
    """Means per (capacity, k, scheduler, p); utilisations pooled (Eq. 3)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["capacity_gb"], r["k"], r["scheduler"], None if r["scheduler"] == "sas" else r["p"])
        groups.setdefault(key, []).append(r)
    out = []
    for (cap, k, sched, p), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3] or -1)):
        out.append({
            "capacity_gb": cap, "k": k, "scheduler": sched, "p": p, "runs": len(rs),
            "makespan": float(np.mean([r["makespan"] for r in rs])),
            "makespan_sd": float(np.std([r["makespan"] for r in rs])),
            "mean_turnaround": float(np.mean([r["mean_turnaround"] for r in rs])),
            "mean_turnaround_sd": float(np.std([r["mean_turnaround"] for r in rs])),
            "node_utilisation": pooled_utilisation([r["node_used"] for r in rs], [r["node_avail"] for r in rs]),
            "hps_utilisation": pooled_utilisation([r["hps_used"] for r in rs], [r["hps_avail"] for r in rs]),
        })
    return {"groups": out}


def theta_table(rows: list[dict], capacity_gb: float) -> list[dict]:
    """Fig. 5: per theta, SAS's means over the workloads at ``capacity_gb`` and k = 5 (theta 0: Fig. 3's SAS
    runs) and its utilisations pooled (Eq. 3)."""
    sas = [r for r in rows if r["scheduler"] == "sas" and r["capacity_gb"] == capacity_gb and r["k"] == 5
           and r["figure"] in (3, 5)]
    by: dict[float, list[dict]] = {}
    for r in sas:
        t = r.get("theta")
        by.setdefault(0.0 if t is None or t != t else float(t), []).append(r)
    return [{"theta": t, "runs": len(rs), "makespan": float(np.mean([r["makespan"] for r in rs])),
             "mean_turnaround": float(np.mean([r["mean_turnaround"] for r in rs])),
             "hps_jobs": float(np.mean([r["hps_jobs"] for r in rs])),
             "node_utilisation": pooled_utilisation([r["node_used"] for r in rs], [r["node_avail"] for r in rs]),
             "hps_utilisation": pooled_utilisation([r["hps_used"] for r in rs], [r["hps_avail"] for r in rs])}
            for t, rs in sorted(by.items())]


def headline(agg: dict) -> dict:
    """SAS against the best random p, per capacity and k."""
    out = {}
    for g in agg["groups"]:
        if g["scheduler"] != "sas":
            continue
        rnd = [h for h in agg["groups"] if h["scheduler"] == "random" and h["capacity_gb"] == g["capacity_gb"]
               and h["k"] == g["k"]]
        if not rnd:
            continue
        best_mk = min(rnd, key=lambda h: h["makespan"])
        best_ta = min(rnd, key=lambda h: h["mean_turnaround"])
        out[f"{g['capacity_gb']:g}GB_k{g['k']:g}"] = {
            "sas_makespan": g["makespan"], "best_random_makespan": best_mk["makespan"], "best_p_makespan": best_mk["p"],
            "sas_turnaround": g["mean_turnaround"], "best_random_turnaround": best_ta["mean_turnaround"],
            "best_p_turnaround": best_ta["p"], "sas_node_utilisation": g["node_utilisation"],
            "sas_hps_utilisation": g["hps_utilisation"],
        }
    return out


def verdict(head: dict, size: LacknerSize) -> str:
    """What this run shows against the paper's claim (SAS better than every p on makespan and mean
    turnaround), in the study's own output: said plainly when it does not show it, with why."""
    worse = [case for case, h in head.items() if h["sas_makespan"] > h["best_random_makespan"]
             or h["sas_turnaround"] > h["best_random_turnaround"]]
    if not head:
        return "no SAS-against-random case in this run"
    if not worse:
        return f"reproduced: SAS beats the best random p on makespan and mean turnaround in all {len(head)} cases"
    paper = LacknerSize()
    small = (size.jobs < paper.jobs or size.workloads < paper.workloads or size.repetitions < 10
             or len(size.ps) < len(paper.ps))
    text = (f"NOT reproduced in {len(worse)} of {len(head)} cases ({', '.join(worse)}): SAS is worse than the best "
            "random p here")
    if small:
        text += (f". This size cannot show the paper's result: {size.jobs} jobs per workload (the paper: "
                 f"{paper.jobs}) leave the 128 nodes and the HPS mostly idle (see the utilisation), so the makespan "
                 "hinges on when a few long jobs (up to 24 h each) start, not on the tier choice; and the best of "
                 f"{len(size.ps)} p values x {size.workloads} workloads x {size.repetitions} random draw(s) is the "
                 "luckiest of a few noisy draws (the paper: 21 p x 10 workloads x 10 draws). The quick size checks "
                 "the pipeline; at the paper's size (iolab study lackner --repetitions 10, docs/studies.md) SAS beats "
                 "every p in all five cases")
    return text


ARGS = ("figure", "capacity_gb", "k", "scheduler", "p", "workload", "repetition", "jobs")


def params_of(size: LacknerSize) -> dict[str, Any]:
    """The study's size as campaign parameters (JSON data; no ``sensitivity`` key for Figs. 3 and 4, so
    campaigns written before the sweep existed resume)."""
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(size).items()}
    for name in ("sensitivity", "fig4_capacities", "thetas"):  # absent when unused: older campaigns resume
        if not out[name]:
            del out[name]
    return out


def size_of(params: dict[str, Any]) -> LacknerSize:
    unknown = set(params) - set(LacknerSize.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: {sorted(LacknerSize.__dataclass_fields__)}")
    return LacknerSize(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()})


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The campaign's runs: one per task of :func:`tasks`, by argument name."""
    size = size_of(params)
    return [dict(zip(ARGS + ("setting",), t)) for t in tasks(size)] + ([] if size.sensitivity else theta_tasks(size))


def campaign_task(args: dict[str, Any]) -> dict:
    return run_one(**args)


def run_study(out_dir: Path, size: LacknerSize = LacknerSize(), jobs: int | None = None, figures: bool = True,
              progress: bool = True, engine: Engine | None = None) -> dict:
    """Run (or resume) the study as a campaign in ``out_dir``, then its tables and figures.

    ``jobs`` (runs in flight) is kept for old callers; ``engine`` says where the runs go."""
    engine = engine or Engine(workers=jobs, progress=progress)
    t0 = time.perf_counter()
    res, _ = run_as_campaign("lackner", params_of(size), out_dir, engine)
    rows = rows_of(res)
    if size.sensitivity:
        return sensitivity_summary(rows, out_dir, size, time.perf_counter() - t0, figures)
    agg = aggregate([r for r in rows if r["figure"] != 5])
    if size.thetas:
        agg["theta"] = theta_table(rows, max(size.capacities_gb))
    head = headline(agg)
    summary = {"headline": head, "wall_seconds": time.perf_counter() - t0, "runs": len(rows),
               "size": {"jobs": size.jobs, "workloads": size.workloads, "repetitions": size.repetitions},
               "paper": "SAS: ~80 % node and ~70 % HPS utilisation; better makespan and turnaround than any p",
               "verdict": verdict(head, size)}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "runs.csv", rows)
    atomic_write_text(out_dir / "summary.json", json.dumps({**summary, **agg}, indent=2))
    if figures:
        draw(agg, out_dir, size)
        if size.thetas:
            draw_theta(agg, out_dir, max(size.capacities_gb))
    return {**summary, **agg}


def draw_theta(agg: dict, out_dir: Path, capacity_gb: float) -> None:
    """Fig. 5: SAS's makespan, mean turnaround (against the range of random assignment's means over p),
    HPS jobs and utilisations against theta."""
    import matplotlib  # lazy: matplotlib only when the figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figures are drawn

    tt = agg["theta"]
    th = [r["theta"] for r in tt]
    rnd = [g for g in agg["groups"] if g["scheduler"] == "random" and g["capacity_gb"] == capacity_gb and g["k"] == 5]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
    for ax, col, label in ((axes[0], "makespan", "makespan [h]"), (axes[3], "mean_turnaround", "mean turnaround [h]")):
        if rnd:
            ax.axhspan(min(g[col] for g in rnd) / 3600, max(g[col] for g in rnd) / 3600, color="tab:green",
                       alpha=0.2, label="random, p in [0, 1]")
        ax.plot(th, [r[col] / 3600 for r in tt], "o", ms=3, label="SAS")
        ax.plot(th, np.polyval(np.polyfit(th, [r[col] / 3600 for r in tt], 1), th), lw=0.8)
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    axes[1].plot(th, [r["hps_jobs"] for r in tt], "o", ms=3)
    axes[1].set_ylabel("jobs on HPS (mean per workload)")
    axes[2].plot(th, [r["hps_utilisation"] for r in tt], "o", ms=3, label="HPS")
    axes[2].plot(th, [r["node_utilisation"] for r in tt], "s", ms=3, label="nodes")
    axes[2].set_ylabel("utilisation (Eq. 3)")
    axes[2].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("theta (relative sd of the I/O estimates)")
    fig.suptitle(f"lackner2019 Fig. 5 (iolab simulation): SAS with inaccurate estimates, HPS {capacity_gb:g} GB, "
                 "R_stage = 5 R_lps")
    fig.tight_layout()
    fig.savefig(out_dir / "fig5.png", dpi=110)
    plt.close(fig)


def sensitivity_summary(rows: list[dict], out_dir: Path, size: LacknerSize, wall: float, figures: bool) -> dict:
    table = sensitivity_table(rows)
    summary = {"sensitivity": table, "wall_seconds": wall, "runs": len(rows),
               "size": {"jobs": size.jobs, "workloads": size.workloads, "repetitions": size.repetitions,
                        "ps": list(size.ps), "capacity_gb": size.capacities_gb[0], "k": 5},
               "paper": "SAS better than random assignment for every p (Figs. 3 and 4)"}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "runs.csv", rows)
    write_csv(out_dir / "sensitivity.csv", table)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2))
    if figures:
        draw_sensitivity(table, out_dir, size)
    return summary


def draw_sensitivity(table: list[dict], out_dir: Path, size: LacknerSize) -> None:
    import matplotlib  # lazy: matplotlib only when the figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figures are drawn

    labels = [r["setting"] for r in table]
    x = np.arange(len(labels))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, title in ((axes[0], "makespan", "makespan"), (axes[1], "mean_turnaround", "mean turnaround")):
        ax.bar(x - 0.2, [100 * r[f"gap_{col}"] for r in table], 0.4, label="vs the best random p")
        ax.bar(x + 0.2, [100 * r[f"gap_fit_{col}"] for r in table], 0.4, label="vs the quadratic fit's minimum")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"SAS {title} vs random [%]")
        ax.legend(fontsize=7)
    fig.suptitle(f"lackner2019 sensitivity (< 0: SAS better): HPS {size.capacities_gb[0]:g} GB, R_stage = 5 R_lps, "
                 f"{size.workloads} workloads x {size.repetitions} repetition(s)")
    fig.tight_layout()
    fig.savefig(out_dir / "sensitivity.png", dpi=110)
    plt.close(fig)


def draw(agg: dict, out_dir: Path, size: LacknerSize) -> None:
    import matplotlib  # lazy: matplotlib only when the figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figures are drawn

    def series(cap, k, col):
        rnd = [g for g in agg["groups"] if g["scheduler"] == "random" and g["capacity_gb"] == cap and g["k"] == k]
        sas = [g for g in agg["groups"] if g["scheduler"] == "sas" and g["capacity_gb"] == cap and g["k"] == k]
        return ([g["p"] for g in rnd], [g[col] for g in rnd],
                [g.get(col + "_sd", 0.0) for g in rnd], sas[0][col] if sas else None)

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = (("makespan", "makespan [h]", 3600), ("mean_turnaround", "mean turnaround [h]", 3600),
              ("node_utilisation", "node utilisation", 1), ("hps_utilisation", "HPS utilisation", 1))
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for ax, (col, label, scale) in zip(axes.flat, panels):
        for cap, c in zip(size.capacities_gb, colors):
            p, y, sd, sas = series(cap, 5, col)
            y, sd = np.array(y) / scale, np.array(sd) / scale
            ax.errorbar(p, y, yerr=sd if sd.any() else None, fmt="o", ms=3, color=c, label=f"random, {cap:g} GB")
            if len(p) >= 3:
                fit = np.polyfit(p, y, 2)
                xs = np.linspace(0, 1, 50)
                ax.plot(xs, np.polyval(fit, xs), color=c, lw=0.8)
            if sas is not None:
                ax.axhline(sas / scale, color=c, ls="--", label=f"SAS, {cap:g} GB")
        ax.set_xlabel("p (probability of HPS, random assignment)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle("lackner2019 Fig. 3 (iolab simulation): SAS vs random tier assignment, R_stage = 5 R_lps")
    fig.tight_layout()
    fig.savefig(out_dir / "fig3.png", dpi=110)
    plt.close(fig)

    cap4 = max(size.capacities_gb)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (col, label) in zip(axes, (("makespan", "makespan [h]"), ("mean_turnaround", "mean turnaround [h]"))):
        for k, c in zip(size.ks, colors):
            p, y, sd, sas = series(cap4, k, col)
            if not p:
                continue
            ax.plot(p, np.array(y) / 3600, "o", ms=3, color=c, label=f"random, k={k:g}")
            if sas is not None:
                ax.axhline(sas / 3600, color=c, ls="--", label=f"SAS, k={k:g}")
        ax.set_xlabel("p (probability of HPS, random assignment)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(f"lackner2019 Fig. 4 (iolab simulation): R_stage = k R_lps, HPS {cap4:g} GB")
    fig.tight_layout()
    fig.savefig(out_dir / "fig4.png", dpi=110)
    plt.close(fig)


def campaign_summary(params: dict[str, Any], out_dir: Path, figures: bool = True) -> dict:
    """The summary and figures of a finished study campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    return run_study(Path(out_dir), size_of(params), figures=figures, engine=Engine(use_ray=False, progress=False))
