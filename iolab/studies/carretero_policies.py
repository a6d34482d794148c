"""carretero2020 §6.1 (Figs. 5-8): the eight list-scheduling I/O policies on Table 1's workload over
iteration batches.

Table 1's five Jacobi applications share one I/O node; an *iteration batch* multiplies every app's
iterations (§6.1.2's footnote: a batch of 2 runs 500 iterations of app 1).  For every policy and
batch count, one simulation (:class:`iolab.sim.io.event.EventEngine`, the policy objects a real run's
arbiter calls) gives each app's slowdown (its time over its contention-free time, carretero2020 Eq. 1
and the "stretch" of Figs. 5 and 7, >= 1) and the makespan (Fig. 6/8 divides it by FIFO's).

The workload is ``examples/carretero-table1.yaml`` (the paper's Table 1; the node counts, which the
paper does not give, do not change an I/O-level run).  A campaign like every study: one run per
(policy, batch), rows per app; ``runs.csv``, ``summary.json`` and ``fig5-8.png`` in the output.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from iolab.atomic import atomic_write_text
from iolab.metrics.io import io_makespan, slowdown
from iolab.sim.io.event import EventEngine
from iolab.sim.io.scenario import Scenario
from iolab.specs import load_spec
from iolab.specs.io import LIST_POLICIES

from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign
from iolab.studies.common import write_csv

RUN_VERSION = 1  # bump when a run's meaning changes (new run ids)
BATCHES = (1, 2, 4, 8, 16, 32, 64)  # §6.2.1 compares the runtimes "for 64 batches"
TABLE1 = "carretero-table1.yaml"


@dataclass(frozen=True)
class PoliciesSize:
    policies: tuple[str, ...] = LIST_POLICIES
    batches: tuple[int, ...] = BATCHES


QUICK = PoliciesSize(batches=(1, 2))


def table1_spec():
    """carretero2020 Table 1 as shipped (``iolab examples``)."""
    with as_file(files("iolab.examples").joinpath(TABLE1)) as path:
        return load_spec(path)


def run_one(policy: str, batch: int) -> list[dict[str, Any]]:
    """Table 1 with ``batch`` times the iterations under ``policy``: a row per app."""
    spec = table1_spec()
    spec = spec.model_copy(update={"apps": [a.model_copy(update={"iterations": a.iterations * batch})
                                            for a in spec.apps]})
    t0 = time.perf_counter()
    sc = Scenario.from_spec(spec)
    rec = EventEngine(sc, policy, rows=False).run()
    makespan = io_makespan(rec.end)
    # from each app's start, as Figs. 5 and 7 measure it (every app of Table 1 is released at 0)
    slow = slowdown(rec.start, rec.end, [a.min_time for a in sc.apps]).tolist()
    wall = time.perf_counter() - t0
    return [{"policy": policy, "batch": batch, "app": spec.apps[a.rank].id,
             "slowdown": slow[a.rank], "end": rec.end[a.rank],
             "makespan": makespan, "wait": rec.wait[a.rank], "seconds": wall} for a in sc.apps]


def params_of(size: PoliciesSize) -> dict[str, Any]:
    return {k: list(v) for k, v in asdict(size).items()}


def size_of(params: dict[str, Any]) -> PoliciesSize:
    unknown = set(params) - set(PoliciesSize.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; known: policies, batches")
    size = PoliciesSize(**{k: tuple(v) for k, v in params.items()})
    bad = [p for p in size.policies if p not in LIST_POLICIES]
    if bad or not size.policies:
        raise ValueError(f"policies must be some of {', '.join(LIST_POLICIES)}, got {list(size.policies)}")
    if not size.batches or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in size.batches):
        raise ValueError(f"batches must be integers >= 1, got {list(size.batches)}")
    return size


def campaign_runs(params: dict[str, Any]) -> list[dict[str, Any]]:
    size = size_of(params)
    return [{"policy": p, "batch": b} for b in size.batches for p in size.policies]


def campaign_task(args: dict[str, Any]) -> list[dict[str, Any]]:
    return run_one(args["policy"], int(args["batch"]))


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per batch and policy: the largest slowdown (Fig. 5), each app's (Fig. 7) and the makespan over
    FIFO's (Figs. 6 and 8, when FIFO ran)."""
    out: dict[str, Any] = {}
    for b in sorted({r["batch"] for r in rows}):
        mine = [r for r in rows if r["batch"] == b]
        fifo = next((r["makespan"] for r in mine if r["policy"] == "fifo"), None)
        per: dict[str, Any] = {}
        for p in dict.fromkeys(r["policy"] for r in mine):
            rs = [r for r in mine if r["policy"] == p]
            per[p] = {"max_slowdown": max(r["slowdown"] for r in rs), "slowdown": {r["app"]: r["slowdown"] for r in rs},
                      "makespan": rs[0]["makespan"],
                      "makespan_vs_fifo": rs[0]["makespan"] / fifo if fifo else None}
        out[str(b)] = per
    return out


def run_study(out: Path, size: PoliciesSize = PoliciesSize(), *, figures: bool = True,
              engine: Engine | None = None) -> dict[str, Any]:
    engine = engine or Engine()
    t0 = time.perf_counter()
    res, _ = run_as_campaign("carretero_policies", params_of(size), out, engine)
    rows = rows_of(res)
    summary = {"batches": summarise(rows), "size": params_of(size), "runs": len(rows) // 5,
               "wall_seconds": time.perf_counter() - t0}
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "runs.csv", rows)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    if figures:
        draw(summary["batches"], out / "fig5-8.png")
    return summary


def draw(per_batch: dict[str, Any], path: Path) -> Path:
    """Fig. 5 (max slowdown) and Fig. 6/8 (makespan over FIFO's) against the iteration batches."""
    import matplotlib  # lazy: figures only when asked

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: figures only when asked

    batches = sorted(per_batch, key=int)
    policies = list(per_batch[batches[0]])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for p in policies:
        xs = [int(b) for b in batches]
        axes[0].plot(xs, [per_batch[b][p]["max_slowdown"] for b in batches], "o-", ms=3, label=p)
        if per_batch[batches[0]][p]["makespan_vs_fifo"] is not None:
            axes[1].plot(xs, [per_batch[b][p]["makespan_vs_fifo"] for b in batches], "o-", ms=3, label=p)
    for ax, lab in zip(axes, ("max stretch (time / contention-free time)", "makespan relative to FIFO")):
        ax.set_xscale("log", base=2)
        ax.set_xticks([int(b) for b in batches], [str(int(b)) for b in batches])
        ax.minorticks_off()
        ax.set_xlabel("iteration batches")
        ax.set_ylabel(lab)
    axes[1].axhline(1.0, color="black", lw=0.6)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7)
    fig.suptitle("carretero2020 Figs. 5 and 6/8 (iolab simulation of Table 1)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def campaign_summary(params: dict[str, Any], out_dir: Path, figures: bool = True) -> dict[str, Any]:
    """The summary and figures of a finished campaign in ``out_dir`` (what ``iolab sweep`` calls at its end)."""
    return run_study(Path(out_dir), size_of(params), figures=figures, engine=Engine(use_ray=False, progress=False))


__all__ = ["BATCHES", "PoliciesSize", "QUICK", "campaign_runs", "campaign_summary", "campaign_task", "run_one",
           "run_study", "summarise", "table1_spec"]
