"""carretero2020 §6.2.3–6.2.4: Make-Pack against First-Fit over the I/O load.

For each alpha_gen in {0.5, 0.75, 1, 2, ..., 10}, ten workloads are generated
(§6.2.2) and run under:

- ``first-fit``: Make-Pack with S = infinity, FIFO (the baseline);
- ``s1``: Make-Pack with S = 1, FIFO;
- ``salpha``: Make-Pack with S = alpha (the workload's Eq. 6 load), FIFO;
- ``s1-lr``: Make-Pack with S = 1 and the longest-remaining I/O policy.

Each workload's packs are simulated once, one after the other on one I/O
node (they start at 0, so a pack's run does not depend on where it runs).
For R = 3 and 5 I/O nodes, LPT places the packs by their contention-free
length and the makespan is the largest sum of *simulated* pack durations on
one node: exactly what a full simulation on R nodes gives (a test checks it).

Outputs: ``runs.csv`` (one row per workload and strategy), ``summary.json``
(geometric means relative to First-Fit), and Figs. 10, 11, 12, 14, 15 as PNG.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iolab.middleware.policies.mapping import lpt_assign
from iolab.sim.io.event import EventEngine
from iolab.sim.io.scenario import Scenario
from iolab.workloads.carretero import CarreteroParams, generate

from iolab.atomic import atomic_write_text
from iolab.metrics import geometric_mean, node_times, pack_max_slowdowns, pack_spans, sequential_makespan
from iolab.middleware.policies.plan import make_packs, packed_plan
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import write_csv

ALPHAS = (0.5, 0.75, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
IO_NODE_COUNTS = (1, 3, 5)
STRATEGIES = {  # name -> (sensibility, policy); sensibility None means alpha
    "first-fit": (math.inf, "fifo"),
    "s1": (1.0, "fifo"),
    "salpha": (None, "fifo"),
    "s1-lr": (1.0, "longest-remaining"),
}
LABELS = {"first-fit": "First-Fit", "s1": "Sensibility=1", "salpha": "Sensibility=I/O load",
          "s1-lr": "Sensibility=1, longest remaining"}


@dataclass(frozen=True)
class StudySize:
    alphas: tuple[float, ...] = ALPHAS
    workloads: int = 10
    params: CarreteroParams = CarreteroParams()


QUICK = StudySize(alphas=(0.5, 1, 4, 10), workloads=2,
                  params=CarreteroParams(iterations=(25, 100)))


def workload_seed(master: int, alpha_index: int, k: int) -> int:
    ss = np.random.SeedSequence([master, alpha_index, k])
    return int(ss.generate_state(1, dtype=np.uint64)[0] % (2**63))


def run_workload(alpha_gen: float, k: int, seed: int, params: CarreteroParams) -> list[dict]:
    """Every strategy on one generated workload; one row per strategy."""
    spec = generate(alpha_gen, seed, params)
    alpha = spec.io_load()
    P = spec.platform.nodes_per_io_node
    rows = []
    for name, (s, policy) in STRATEGIES.items():
        sens = alpha if s is None else s
        t0 = time.perf_counter()
        packs = make_packs(spec, sens)
        plan = packed_plan(spec, packs, [list(range(len(packs)))], sens)  # all on one I/O node, in order
        sc = Scenario.from_spec(spec, plan)
        rec = EventEngine(sc, policy, rows=False).run()
        # simulated duration and worst slowdown of every pack (the apps' ranks index the record)
        min_time = [a.min_time for a in sc.apps]
        durations = pack_spans(rec.start, rec.end, plan.nodes[0])
        worst = pack_max_slowdowns(rec.start, rec.end, min_time, plan.nodes[0])
        row = {
            "alpha_gen": alpha_gen, "workload": k, "seed": seed, "alpha": alpha, "apps": len(spec.apps),
            "strategy": name, "policy": policy, "sensibility": sens, "packs": len(packs),
        }
        lengths = [pk.length for pk in packs]
        for R in IO_NODE_COUNTS:
            row[f"makespan_R{R}"] = sequential_makespan(durations, lpt_assign(lengths, R))
        # Fig. 13's ideal: the packs one after the other at their contention-free lengths (the I/O node's
        # bandwidth unbounded in total, each app's own I/O still at b)
        row["ideal_R1"] = sequential_makespan(lengths, [range(len(packs))])
        # Fig. 14 is for one I/O node: its P compute nodes; an app executes while it computes or transfers
        exec_t, delay_t, idle_t = node_times(
            [a.nodes for a in sc.apps], [rec.io_busy[a.rank] + a.compute_time for a in sc.apps],
            [rec.wait[a.rank] for a in sc.apps], row["makespan_R1"], P)
        row.update({
            "pack_max_slowdown_mean": float(np.mean(worst)),
            "max_slowdown": float(worst.max()),
            "exec_time": exec_t, "delay_time": delay_t, "idle_time": idle_t,
            "events": rec.events, "seconds": time.perf_counter() - t0,
        })
        rows.append(row)
    return rows


def summarise(rows: list[dict]) -> dict:
    base = {(r["alpha_gen"], r["workload"]): r for r in rows if r["strategy"] == "first-fit"}
    out: dict = {"workloads": len(base), "relative_to": "first-fit", "strategies": {}}
    for name in STRATEGIES:
        if name == "first-fit":
            continue
        mine = [r for r in rows if r["strategy"] == name]
        entry = {}
        for R in IO_NODE_COUNTS:
            entry[f"makespan_R{R}"] = geometric_mean(
                r[f"makespan_R{R}"] / base[(r["alpha_gen"], r["workload"])][f"makespan_R{R}"] for r in mine)
        entry["stretch"] = geometric_mean(
            r["pack_max_slowdown_mean"] / base[(r["alpha_gen"], r["workload"])]["pack_max_slowdown_mean"] for r in mine)
        entry["packs"] = geometric_mean(r["packs"] / base[(r["alpha_gen"], r["workload"])]["packs"] for r in mine)
        for t in ("exec_time", "delay_time", "idle_time"):
            entry[t] = float(np.mean([r[t] for r in mine])) / (float(np.mean([base[k]["makespan_R1"] for k in base])) or 1)
        out["strategies"][name] = entry
    ff_mk = float(np.mean([base[k]["makespan_R1"] for k in base]))
    out["first-fit"] = {t: float(np.mean([base[k][t] for k in base])) / ff_mk
                        for t in ("exec_time", "delay_time", "idle_time")}
    out["paper"] = {"s1": {"makespan_R1": 1.09, "makespan_R3": 0.71, "makespan_R5": 0.53}}
    return out


def run_study(out_dir: Path, size: StudySize = StudySize(), seed: int = 2020, jobs: int | None = None,
              figures: bool = True, progress: bool = True, engine: Engine | None = None) -> dict:
    t0 = time.perf_counter()
    rows = run_workloads(out_dir, size, seed, engine or Engine(workers=jobs, progress=progress))
    wall = time.perf_counter() - t0
    summary = summarise(rows)
    summary.update({"wall_seconds": wall, "events": int(sum(r["events"] for r in rows)),
                    "seed": seed, "jobs": jobs, "alphas": list(size.alphas), "workloads_per_alpha": size.workloads})
    summary["events_per_second"] = summary["events"] / sum(r["seconds"] for r in rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "runs.csv", rows)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2))
    if figures:
        draw_figures(rows, out_dir)
    return summary


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt  # lazy: matplotlib only when figures are drawn

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def draw_figures(rows: list[dict], out_dir: Path) -> list[Path]:
    import matplotlib  # lazy: matplotlib only when figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib only when figures are drawn

    base = {(r["alpha_gen"], r["workload"]): r for r in rows if r["strategy"] == "first-fit"}
    colors = {"s1": "tab:blue", "salpha": "tab:orange", "s1-lr": "tab:green"}
    made = []

    def rel(name, col):
        mine = [r for r in rows if r["strategy"] == name]
        x = [r["alpha"] for r in mine]
        y = [r[col] / base[(r["alpha_gen"], r["workload"])][col] for r in mine]
        return x, y

    for fig_no, col, ylabel in ((10, "makespan_R1", "makespan relative to First-Fit"),
                                (11, "pack_max_slowdown_mean", "stretch (mean of pack max slowdown)\nrelative to First-Fit"),
                                (12, "packs", "number of packs relative to First-Fit")):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for name in ("s1", "salpha", "s1-lr"):
            if fig_no == 12 and name == "s1-lr":
                continue
            x, y = rel(name, col)
            ax.scatter(x, y, s=14, alpha=0.75, color=colors[name], label=LABELS[name])
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xlabel("I/O load alpha (Eq. 6)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"carretero2020 Fig. {fig_no} (iolab simulation)")
        ax.legend(fontsize=8)
        made.append(_save(fig, out_dir / f"fig{fig_no}.png"))

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for R, c in zip(IO_NODE_COUNTS, ("tab:blue", "tab:orange", "tab:green")):
        x, y = rel("s1", f"makespan_R{R}")
        ax.scatter(x, y, s=14, alpha=0.75, color=c, label=f"{R} I/O node{'s' if R > 1 else ''} "
                   f"(geo. mean {geometric_mean(y):.2f})")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xlabel("I/O load alpha (Eq. 6)")
    ax.set_ylabel("makespan of Sensibility=1 relative to First-Fit")
    ax.set_title("carretero2020 Fig. 15 (iolab simulation)")
    ax.legend(fontsize=8)
    made.append(_save(fig, out_dir / "fig15.png"))

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    names = ["first-fit", "s1", "salpha"]
    ff_total = float(np.mean([r["makespan_R1"] for r in base.values()]))
    bottoms = np.zeros(len(names))
    for part, c in (("exec_time", "tab:green"), ("delay_time", "tab:red"), ("idle_time", "tab:gray")):
        vals = np.array([np.mean([r[part] for r in rows if r["strategy"] == n]) / ff_total for n in names])
        ax.bar([LABELS[n] for n in names], vals, bottom=bottoms, color=c, label=part.replace("_time", ""))
        bottoms += vals
    ax.set_ylabel("average time per compute node\n(normalised to First-Fit's makespan)")
    ax.set_title("carretero2020 Fig. 14 (iolab simulation)")
    ax.legend(fontsize=8)
    made.append(_save(fig, out_dir / "fig14.png"))
    return made


# ---------------------------------------------------------------- the study as a campaign (iolab.studies.as_campaign)

RUN_VERSION = 2  # bump when a run's meaning changes (new run ids); 2: rows hold ideal_R1 (Fig. 13)


def campaign_params(size: StudySize, seed: int) -> dict:
    return {"alphas": list(size.alphas), "workloads": size.workloads, "seed": seed,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in vars(size.params).items()}}


def campaign_runs(params: dict) -> list[dict]:
    """One run per generated workload (all four strategies on it)."""
    unknown = set(params) - {"alphas", "workloads", "seed", "params"}
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)}; known: alphas, workloads, seed, params")
    seed = int(params.get("seed", 2020))
    gen = params.get("params", campaign_params(StudySize(), seed)["params"])
    CarreteroParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in gen.items()})  # checks the fields
    return [{"alpha_gen": a, "k": k, "seed": workload_seed(seed, i, k), "params": gen}
            for i, a in enumerate(params.get("alphas", list(ALPHAS))) for k in range(int(params.get("workloads", 10)))]


def campaign_task(args: dict) -> list[dict]:
    gen = CarreteroParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in args["params"].items()})
    return run_workload(args["alpha_gen"], args["k"], args["seed"], gen)


def run_workloads(out_dir: Path, size: StudySize, seed: int, engine: Engine) -> list[dict]:
    """Every workload's rows, run (or resumed) as a campaign in ``out_dir``."""
    res, _ = run_as_campaign("carretero", campaign_params(size, seed), out_dir, engine)
    return rows_of(res)


def campaign_summary(params: dict, out_dir: Path, figures: bool = True) -> dict:
    """The summary and figures of a finished study campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    gen = CarreteroParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in params.get("params", {}).items()})
    size = StudySize(alphas=tuple(params.get("alphas", ALPHAS)), workloads=int(params.get("workloads", 10)), params=gen)
    return run_study(Path(out_dir), size, seed=int(params.get("seed", 2020)), figures=figures,
                     engine=Engine(use_ray=False, progress=False))
