"""One machine, both levels: what each lever of a combined batch platform does alone and together.

The machine (:func:`platform_of`): compute nodes behind I/O (forwarding) nodes, an LPS tier that loses
throughput under contention (the preset ``lustre-plafrim-b``, carretero2020 §3) and a capacity-limited
HPS; a job's read, checkpoint and output phases go through the arbiter of its nodes' I/O node(s) onto its
tier (docs/batch-policies.md).  One seeded Feitelson workload with lackner2019's I/O model runs on it
under every combination of four levers:

- **arbitration** (``platform.io_node.policy``): ``fifo`` (one part at a time per I/O node, in request
  order), ``shared`` (every granted part at once, the node's bandwidth shared equally), a dynamic list
  policy (``shortest-remaining`` by default: the job with the least remaining work first) and three
  sharing policies written through the public ``Sharing`` API (docs/sharing.md): ThemisIO's ``job-fair``
  and ``size-fair`` (each part capped at its share, by job or by job size) and Lustre's TBF (``tbf`` here:
  every job capped at ``tbf_share`` of an I/O node's rate);
- **tier choice** (``scheduler``): ``lps`` (EASY backfilling, every job on LPS) or ``sas`` (lackner2019's
  storage-aware scheduler: it puts the jobs it expects to finish sooner there on HPS);
- **allocation** (``allocation``): ``lowest`` (the lowest free node ids) or ``io-aware`` (the nodes whose
  I/O nodes carry the least I/O load, keeping each under its bandwidth x S);
- **controller**: dheenadayalan2017's storage load controller on LPS, off or on.

A run is one (policy, tier, allocation, controller, workload seed); the study is a campaign
(:mod:`.as_campaign`: Ray, resumable, ``results.h5``).  Its row holds the run's makespan, mean
turnaround, mean bounded slowdown, total I/O time (the jobs' ``io_time``: seconds in read, write and
staging phases, waiting for the I/O node included), HPS and node utilisation (lackner2019 Eq. 3, time
weighted over [first submit, last end]), suspensions, jobs on HPS and the run's wall time.

Outputs in ``out``: the campaign (``campaign.json``, ``journal.jsonl``, ``results.h5``), ``runs.csv``
(one row per run), ``combined.csv`` (one row per lever combination, the mean over the workload seeds, and
each metric against the baseline: fifo, lps, lowest, controller off; relative change for times and the
slowdown, difference for utilisations), ``levers.csv`` (each lever setting's effect alone, on the
baseline, with its smallest and largest value over the workload seeds, and on average over every
combination of the other levers),
``summary.json`` and ``combined.png`` (one panel per metric, a bar per combination).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, replace
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.errors import SpecError
from iolab.metrics.batch import hps_jobs
from iolab.metrics.batch_trace import batch_report, total_io_time
from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import write_csv

__all__ = ["CombinedSize", "LEVERS", "METRICS", "QUICK", "SHARES", "campaign_runs", "campaign_summary",
           "campaign_task", "combination_table", "label_of", "lever_table", "params_of", "run_one", "run_study",
           "size_of", "spec_of", "with_seed_spread"]

RUN_VERSION = 2  # bump when a run's meaning changes (new run ids)

GB = 1e9
TIERS = {"lps": "easy", "sas": "sas"}  # the tier lever's values -> the scheduler
LEVERS = ("policy", "tier", "allocation", "controller")
# metric -> (label, lower is better)
METRICS: dict[str, tuple[str, bool]] = {
    "makespan": ("makespan [h]", True),
    "mean_turnaround": ("mean turnaround [h]", True),
    "mean_bsld": ("mean bounded slowdown", True),
    "total_io_time": ("total I/O time [job h]", True),
    "hps_utilisation": ("HPS utilisation", False),
    "node_utilisation": ("node utilisation", False),
}
HOURS = ("makespan", "mean_turnaround", "total_io_time")  # shown in hours in the figure
SHARES = ("hps_utilisation", "node_utilisation")  # compared by difference, the others by relative change


@dataclass(frozen=True)
class CombinedSize:
    """The study's size, machine, workload and lever values (every field is a campaign parameter)."""

    # levers (the first value of each is the baseline)
    policies: tuple[str, ...] = ("fifo", "shared", "shortest-remaining", "job-fair", "size-fair", "tbf")
    tiers: tuple[str, ...] = ("lps", "sas")
    allocations: tuple[str, ...] = ("lowest", "io-aware")
    controllers: tuple[bool, ...] = (False, True)
    # workload: seeds (one Feitelson workload each) and its size
    seeds: tuple[int, ...] = (1, 2, 3, 4, 5)
    jobs: int = 120
    arrival_factor: float = 400.0  # mean inter-arrival of new job families, s
    shortest: float = 600.0
    longest: float = 14400.0
    io_fraction: float = 0.2  # share of a job's runtime reading input + writing output alone on LPS
    checkpoint_fraction: float = 0.1
    checkpoint_min_runtime: float = 1800.0
    # machine
    nodes: int = 16
    io_nodes: int = 4
    io_node_rate: float = 1.0 * GB
    memory_per_node: float = 4.0 * GB
    lps_rate: float = 2.0 * GB
    lps_law: str = "lustre-plafrim-b"
    hps_rate: float = 8.0 * GB
    hps_capacity: float = 1000.0 * GB
    stage_rate: float = 4.0 * GB
    sensibility: float = 1.0  # io-aware allocation's S
    tbf_share: float = 0.5  # the policy "tbf": every job's bucket at this share of an I/O node's rate
    # the load controller on LPS (spec seconds and bytes; the rest: dheenadayalan2017 §5's)
    controller_p: float = 10.0 * GB  # benchmark unit
    controller_r_threshold: float = 20.0
    controller_d: float = 30.0


# CI and a first look: one workload of 40 jobs, every lever combination (48 runs, seconds in all)
QUICK = CombinedSize(seeds=(1,), jobs=40)


def policy_of(size: CombinedSize, policy: str) -> Any:
    """A policy of the arbitration lever as a spec value: ``tbf`` is Lustre's TBF with every job's bucket at
    ``tbf_share`` of an I/O node's rate (no rule: one default rate); any other name is the spec's."""
    if policy == "tbf":
        return {"kind": "tbf", "default_rate": size.tbf_share * size.io_node_rate}
    return policy


def platform_of(size: CombinedSize, policy: str) -> dict[str, Any]:
    """The combined machine, with ``policy`` on every I/O node."""
    return {"nodes": size.nodes, "memory_per_node": size.memory_per_node,
            "lps": {"rate": size.lps_rate, "interference": size.lps_law},
            "hps": {"rate": size.hps_rate, "capacity": size.hps_capacity},
            "stage_rate": size.stage_rate,
            "io_nodes": size.io_nodes,
            "io_node": {"rate": size.io_node_rate, "policy": policy_of(size, policy)}}


def controller_of(size: CombinedSize, on: bool) -> dict[str, Any]:
    return {"enabled": on, "volumes": ["lps"], "p": size.controller_p, "r_threshold": size.controller_r_threshold,
            "d": size.controller_d}


def spec_of(size: CombinedSize, policy: str, tier: str, allocation: str, controller: bool, seed: int):
    """The batch spec of one run (checked like any spec: a bad value is refused naming its field)."""
    alloc: Any = allocation if allocation == "lowest" else {"kind": allocation, "sensibility": size.sensibility}
    return parse_spec({
        "kind": "batch", "name": "combined", "seed": seed,
        "platform": platform_of(size, policy),
        "scheduler": TIERS[tier],
        "allocation": alloc,
        "controller": controller_of(size, controller),
        "workload": {"source": "feitelson", "jobs": size.jobs, "arrival_factor": size.arrival_factor,
                     "shortest": size.shortest, "longest": size.longest, "io_fraction": size.io_fraction,
                     "io_fraction_sd": min(0.02, size.io_fraction / 4),
                     "checkpoint_fraction": size.checkpoint_fraction,
                     "checkpoint_min_runtime": size.checkpoint_min_runtime},
    }, "<iolab study combined>")


def run_one(size: CombinedSize, policy: str, tier: str, allocation: str, controller: bool, seed: int) -> dict:
    """One simulation; its row (plain values)."""
    t0 = time.perf_counter()
    spec = spec_of(size, policy, tier, allocation, controller, seed)
    tr = simulate_batch(spec, strict=False, phases="jobs")
    rep = batch_report(tr)
    return {"policy": policy, "tier": tier, "allocation": allocation, "controller": bool(controller), "seed": seed,
            "jobs": rep.jobs, "finished": rep.finished,
            "makespan": rep.makespan, "mean_turnaround": rep.turnaround["mean"],
            "mean_bsld": rep.bounded_slowdown["mean"],
            "total_io_time": total_io_time(tr),
            "hps_utilisation": rep.hps_utilisation["mean"], "node_utilisation": rep.utilisation["mean"],
            "hps_jobs": hps_jobs(tr.jobs["tier"]),
            "suspensions": len(tr.actions["job"]),
            "events": int(tr.attrs.get("events", 0)), "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- the campaign

def params_of(size: CombinedSize) -> dict[str, Any]:
    """The study's size as campaign parameters (JSON data)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(size).items()}


def size_of(params: dict[str, Any]) -> CombinedSize:
    """The size of campaign parameters; unknown or empty fields are refused (ValueError naming them)."""
    fields = CombinedSize.__dataclass_fields__
    unknown = set(params) - set(fields)
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: {sorted(fields)}")
    size = CombinedSize(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()})
    for name in ("policies", "tiers", "allocations", "controllers", "seeds"):
        v = getattr(size, name)
        if not v or len(set(v)) != len(v):
            raise ValueError(f"{name} must be a non-empty list without repeats, got {list(v)!r}")
    if not all(isinstance(x, bool) for x in size.controllers):
        raise ValueError(f"controllers: each is true or false, got {list(size.controllers)!r}")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in size.seeds):
        raise ValueError(f"seeds: each is an integer >= 0, got {list(size.seeds)!r}")
    bad = [t for t in size.tiers if t not in TIERS]
    if bad:
        raise ValueError(f"tiers: unknown {bad}; known: {list(TIERS)}")
    # floats written as ints (1 and 1.0) give one run id
    floats = {k: float(getattr(size, k)) for k, f in fields.items() if f.type == "float"}
    return replace(size, **floats)


# a field of the study's spec -> the campaign parameter that sets it (the first matching prefix)
PARAM_OF_FIELD = (("platform.io_node.policy.default_rate", "tbf_share"), ("platform.io_node.policy", "policies"),
                  ("platform.io_node.rate", "io_node_rate"),
                  ("platform.io_nodes", "io_nodes"), ("platform.nodes", "nodes"),
                  ("platform.memory_per_node", "memory_per_node"), ("platform.lps.rate", "lps_rate"),
                  ("platform.lps", "lps_law"), ("platform.hps.rate", "hps_rate"), ("platform.hps", "hps_capacity"),
                  ("platform.stage_rate", "stage_rate"), ("allocation.sensibility", "sensibility"),
                  ("allocation", "allocations"), ("scheduler", "tiers"), ("controller.p", "controller_p"),
                  ("controller.r_threshold", "controller_r_threshold"), ("controller.d", "controller_d"),
                  ("seed", "seeds"), ("workload.io_fraction", "io_fraction"), ("workload.", ""))


def param_of(field: str) -> str:
    """The campaign parameter behind a spec field (``workload.jobs`` -> ``jobs``)."""
    for prefix, name in PARAM_OF_FIELD:
        if field == prefix or field.startswith(prefix + ".") or (prefix.endswith(".") and field.startswith(prefix)):
            return name or field[len(prefix):].split(".")[0]
    return field


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    """One run per (policy, tier, allocation, controller, seed); each holds the size with its own levers. Every
    combination's spec is built (and so checked) here, before anything runs: a bad value is refused
    (ValueError) naming the parameter, with the spec field and the reason."""
    size = size_of(params)
    base = params_of(size)
    for pol, tier, alloc, on, seed in product(size.policies, size.tiers, size.allocations, size.controllers,
                                              size.seeds[:1] + size.seeds[-1:]):
        try:
            spec_of(size, pol, tier, alloc, on, seed)
        except SpecError as err:
            raise ValueError("; ".join(f"{param_of(f)}: {f}: {why}" for f, why in err.problems)) from None
    # each run's size names its own levers and seed only: a run's parameters do not grow with the study
    # (1 000 seeds held by each of 24 000 runs would be 287 MB of manifest and 2.4 GB before the first run)
    return [{"policy": pol, "tier": tier, "allocation": alloc, "controller": on, "seed": seed,
             "size": {**base, "policies": [pol], "tiers": [tier], "allocations": [alloc], "controllers": [on],
                      "seeds": [seed]}}
            for pol, tier, alloc, on in product(size.policies, size.tiers, size.allocations, size.controllers)
            for seed in size.seeds]


def campaign_task(args: dict[str, Any]) -> dict:
    return run_one(size_of(args["size"]), args["policy"], args["tier"], args["allocation"], args["controller"],
                   args["seed"])


# ---------------------------------------------------------------- tables

def combo_of(row: dict[str, Any]) -> tuple:
    return tuple(row[k] for k in LEVERS)


def label_of(combo: tuple) -> str:
    pol, tier, alloc, on = combo
    return f"{pol}/{tier}/{alloc}/{'ctl' if on else 'no-ctl'}"


def combination_table(rows: list[dict[str, Any]], size: CombinedSize) -> list[dict[str, Any]]:
    """One row per lever combination (in campaign order): the mean of each metric over the workload seeds,
    and its change relative to the baseline combination (the first value of every lever)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(combo_of(r), []).append(r)
    base_key = (size.policies[0], size.tiers[0], size.allocations[0], size.controllers[0])
    means = {k: {m: float(np.mean([r[m] for r in rs])) for m in (*METRICS, "suspensions", "hps_jobs")}
             for k, rs in groups.items()}
    base = means.get(base_key)
    out = []
    for combo, rs in groups.items():
        row = {"combination": label_of(combo), **dict(zip(LEVERS, combo)), "runs": len(rs), **means[combo]}
        for m in METRICS:
            row[f"{m}_vs_baseline"] = _change({m: means[combo][m]}, base, m)
        out.append(row)
    return out


def lever_table(table: list[dict[str, Any]], size: CombinedSize) -> list[dict[str, Any]]:
    """Each lever setting other than its baseline value: its effect (relative change of each metric's
    mean) ``alone`` (every other lever at its baseline) and ``together`` (the mean of the relative changes
    over every combination of the other levers, paired on them); and the combination of every lever
    off its baseline value (``all``, one row per policy other than the baseline)."""
    by = {tuple(r[k] for k in LEVERS): r for r in table}
    values = {"policy": size.policies, "tier": size.tiers, "allocation": size.allocations,
              "controller": size.controllers}
    base = tuple(v[0] for v in values.values())
    out = []
    for i, lever in enumerate(LEVERS):
        for v in values[lever][1:]:
            row: dict[str, Any] = {"lever": lever, "setting": _name(v), "against": _name(values[lever][0])}
            for m in METRICS:
                alone_on = by.get(base[:i] + (v,) + base[i + 1:])
                row[f"{m}_alone"] = _change(alone_on, by.get(base), m)
                pairs = []
                for key, r in by.items():
                    if key[i] != v:
                        continue
                    ref = by.get(key[:i] + (values[lever][0],) + key[i + 1:])
                    pairs.append(_change(r, ref, m))
                row[f"{m}_together"] = float(np.mean(pairs)) if pairs else math.nan
            out.append(row)
    if all(len(values[k]) > 1 for k in LEVERS):
        for pol in values["policy"][1:]:
            key = (pol,) + tuple(values[k][-1] for k in LEVERS[1:])
            row = {"lever": "all", "setting": label_of(key), "against": label_of(base)}
            for m in METRICS:
                row[f"{m}_alone"] = _change(by.get(key), by.get(base), m)
                row[f"{m}_together"] = row[f"{m}_alone"]
            out.append(row)
    return out


def with_seed_spread(levers: list[dict[str, Any]], rows: list[dict[str, Any]], size: CombinedSize) -> list[dict]:
    """``levers`` (:func:`lever_table` of the means) plus, per metric, the smallest and largest ``alone``
    effect over the workload seeds (each seed's own lever table): how far one workload moves the mean."""
    per_seed = []
    for seed in size.seeds:
        mine = [r for r in rows if r["seed"] == seed]
        if mine:
            one = replace(size, seeds=(seed,))
            per_seed.append({(r["lever"], r["setting"]): r for r in lever_table(combination_table(mine, one), one)})
    out = []
    for r in levers:
        row = dict(r)
        for m in METRICS:
            vals = [t[(r["lever"], r["setting"])][f"{m}_alone"] for t in per_seed if (r["lever"], r["setting"]) in t]
            vals = [v for v in vals if math.isfinite(v)]
            row[f"{m}_alone_min"] = min(vals) if vals else math.nan
            row[f"{m}_alone_max"] = max(vals) if vals else math.nan
        out.append(row)
    return out


def _name(v: Any) -> str:
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def _change(a: dict | None, b: dict | None, m: str) -> float:
    """``a``'s metric ``m`` against ``b``'s: the relative change of a time or slowdown, the difference of a
    utilisation (a share already: its relative change is undefined where the reference's is 0)."""
    if a is None or b is None:
        return math.nan
    if m in SHARES:
        return a[m] - b[m]
    return a[m] / b[m] - 1 if b[m] else math.nan


# ---------------------------------------------------------------- the driver

def run_study(out: Path, size: CombinedSize = CombinedSize(), *, figures: bool = True, progress: bool = True,
              engine: Engine | None = None) -> dict[str, Any]:
    """Run (or resume) the study as a campaign in ``out``, then its tables, summary and figure."""
    engine = engine or Engine(progress=progress)
    t0 = time.perf_counter()
    res, _ = run_as_campaign("combined", params_of(size), out, engine)
    rows = rows_of(res)
    table = combination_table(rows, size)
    levers = with_seed_spread(lever_table(table, size), rows, size)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "runs.csv", rows)
    write_csv(out / "combined.csv", table)
    write_csv(out / "levers.csv", levers)
    summary = {"runs": len(rows), "combinations": len(table), "wall_seconds": time.perf_counter() - t0,
               "cpu_seconds_in_runs": float(sum(r["seconds"] for r in rows)),
               "size": params_of(size), "table": table, "levers": levers,
               "best": {m: label_of(combo_of(min(table, key=lambda r: r[m] if lower else -r[m])))
                        for m, (_, lower) in METRICS.items()}}
    if figures:
        summary["figure"] = str(draw(table, out / "combined.png", size))
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str))
    return summary


def campaign_summary(params: dict[str, Any], out_dir: Path, figures: bool = True) -> dict:
    """The summary and figure of a finished study campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    return run_study(Path(out_dir), size_of(params), figures=figures, engine=Engine(use_ray=False, progress=False))


def draw(table: list[dict[str, Any]], path: Path, size: CombinedSize) -> Path:
    """One panel per metric: its change against the baseline combination (relative for times and slowdown,
    in percentage points for utilisations), a group of bars per (tier, allocation, controller), a bar per
    I/O-node policy; the baseline's own value in the panel's title."""
    import matplotlib  # lazy: matplotlib only when the figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when the figures are drawn

    groups = list(product(size.tiers, size.allocations, size.controllers))
    by = {combo_of(r): r for r in table}
    base = by.get((size.policies[0], *groups[0]))
    x = np.arange(len(groups))
    width = 0.8 / len(size.policies)
    fig, axes = plt.subplots(2, 3, figsize=(15.5, 7.5), sharex=True)
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
              "tab:grey", "tab:olive")
    for ax, (m, (label, lower)) in zip(axes.flat, METRICS.items()):
        share = m in SHARES
        for k, pol in enumerate(size.policies):
            ys = [100 * by[(pol, *g)][f"{m}_vs_baseline"] if (pol, *g) in by else np.nan for g in groups]
            ax.bar(x - 0.4 + (k + 0.5) * width, ys, width, label=pol, color=colors[k % len(colors)])
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(x, [f"{t}\n{a}\n{'ctl' if c else 'no ctl'}" for t, a, c in groups], fontsize=7)
        ax.tick_params(labelbottom=True)
        value = "-" if base is None else (f"{base[m]:.3f}" if share else f"{base[m] / 3600:.2f} h" if m in HOURS
                                          else f"{base[m]:.2f}")
        ax.set_title(f"{label.split(' [')[0]}: {'points' if share else '%'} vs baseline ({value}); "
                     f"{'lower' if lower else 'higher'} is better", fontsize=8)
        ax.set_ylabel("percentage points" if share else "change [%]", fontsize=8)
        ax.grid(axis="y", lw=0.3)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), title="I/O-node policy", fontsize=8, title_fontsize=8,
               loc="upper right", ncol=len(size.policies))
    fig.suptitle(f"one combined machine ({size.nodes} nodes, {size.io_nodes} I/O nodes of "
                 f"{size.io_node_rate / GB:g} GB/s, LPS {size.lps_rate / GB:g} GB/s {size.lps_law}, HPS "
                 f"{size.hps_capacity / GB:g} GB): {size.jobs} Feitelson jobs, mean of {len(size.seeds)} "
                 f"workload(s)\nbaseline: {size.policies[0]}/{size.tiers[0]}/{size.allocations[0]}/no controller; "
                 "x: tier (lps = EASY, every job on LPS), allocation, controller", fontsize=9, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
