"""monniot2023's experiments for the scorecard: Table 4's grid (Figs. 4-7, :mod:`iolab.studies.monniot`) in
``OUT/monniot2023/grid`` and Table 5's heterogeneous platform (Fig. 8) in ``OUT/monniot2023/hetero``, both
replaying the Theta week's requests; the claims read the ``peak`` scaling (32 TB-eq is the week's peak
demand), the closest the week comes to the paper's sizing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iolab.campaign import load_results
from iolab.sim.batch.storage_replay import HETERO, HETERO_KINDS, peak_demand
from iolab.studies import monniot as study
from iolab.studies.as_campaign import Engine, rows_of

PAPER = "monniot2023"
SCALING = "peak"
FULL = 99.5  # % of sum_cap (or of a disk) counted as 100 %, the study's FULL_SUCCESS


def sizes(size: str) -> tuple[study.MonniotSize, study.MonniotSize]:
    """(Table 4's grid, Table 5's platform): quick (CI) replays two layouts, one scaling, no requeue; otherwise
    Table 4's grid, requeue on and off (the paper's 256 runs, requeue only for the algorithms that refuse),
    under both scalings."""
    grid = (study.MonniotSize(layouts=("1N1D", "nNnD"), scalings=(SCALING,)) if size == "quick"
            else study.MonniotSize(requeue=(False, True)))
    hetero = study.MonniotSize(layouts=(HETERO,), capacities_tb=(32,), splits=(True,), scalings=(SCALING,))
    return grid, hetero


def run(out: Path, size: str, engine: Engine, figures: bool = True, real: bool = False) -> dict[str, Any]:
    """The measurements (``real``: none; monniot2023 is a simulation study)."""
    grid_size, hetero_size = sizes(size)
    g = study.run_study(out / "grid", grid_size, figures=figures, engine=engine)
    study.run_study(out / "hetero", hetero_size, figures=False, engine=engine)
    runs, disks = _tables(out / "grid")
    m = grid_measures([r for r in runs if r["scaling"] == SCALING], [d for d in disks if d["scaling"] == SCALING])
    h_runs, h_disks = _tables(out / "hetero")
    m.update(hetero_measures(h_runs, h_disks))
    m["_sizes"] = {"grid": len(runs), "hetero": len(h_runs), "requests": g["input"]["requests"],
                   "sum_cap": g["input"]["sum_cap"], "peak_demand": g["input"]["peak_demand"]}
    reqs = sorted(study.theta_requests(g["input"]["theta"]), key=lambda r: r.size)
    m["_why"] = explain(g["input"], g["scalings"][SCALING]["factor"], grid_size.split_bytes, peak_demand(reqs[:-1]))
    return m


def explain(week: dict[str, Any], factor: float, split: float, rest_peak: float) -> dict[str, str]:
    """What in the week's requests sets the claims' outcomes: its largest request against the disks' sizes
    (``rest_peak``: the week's peak demand without that request)."""
    big, share = week["largest_request"], week["largest_request"] / week["sum_cap"]
    parts = -(-int(big) // int(split))
    part = big / parts
    disk = {cap: cap * 1e12 * factor / 8 for cap in (8, 16, 32, 64)}  # a disk of the 8-disk layouts
    het = {kind: 32e12 * factor * sh / (n * k) for kind, (n, k, sh, *_) in HETERO_KINDS.items()}
    head = (f"the week's largest request ({big / 1e9:.0f} GB, {share:.0%} of its volume) splits into {parts} parts of "
            f"{part / 1e9:.0f} GB, larger than a disk of the 8-disk layouts up to 32 TB-eq ({disk[32] / 1e9:.0f} GB "
            "there)")
    lost = f"{head}: it fails whatever the algorithm, and {share:.0%} of sum_cap with it"
    sparse = (f"the requests that fit are small (median {week['median_request'] / 1e9:.1f} GB) and few live at once "
              f"(the week's peak without the largest: {rest_peak / 1e9:.0f} GB)")
    sizes = ", ".join(f"{k.upper()} {v / 1e9:.0f} GB" for k, v in het.items())
    het_lost = (f"the {big / 1e9:.0f} GB request's {part / 1e9:.0f} GB parts exceed every disk of Table 5's platform at "
                f"32 TB-eq ({sizes}): it fails, and "
                f"{share:.0%} of sum_cap with it")
    return {
        "monniot.fig4.no_split_others": f"unsplit, the {big / 1e9:.0f} GB request fits no disk of the 8-disk layouts "
                                        "(a disk holds 1/8 of the capacity), so they top out at "
                                        f"{100 - 100 * share:.0f} %",
        "monniot.fig4.split32_last": f"every algorithm allocates the same requests: {head}; the rest always fits",
        "monniot.fig4.split16": lost, "monniot.conclusion.32tb": lost,
        "monniot.fig5.16tb": f"{lost}; {sparse}", "monniot.fig5.32tb": f"{lost}; {sparse}",
        "monniot.fig5.mean_use": "the week's demand against a capacity scaled to its peak, not the year's sparsity",
        "monniot.fig7.8tb": f"the failures and refusals are the large request's parts: {head}",
        "monniot.fig7.32tb_refused": f"the refusals are the large request's parts: {head}",
        "monniot.fig5.64tb": f"the large request's {part / 1e9:.1f} GB parts are as large as a disk at 64 TB-eq "
                             f"({disk[64] / 1e9:.1f} GB): whichever disk takes one is full",
        "monniot.fig7.64tb": f"the large request's parts ({part / 1e9:.1f} GB) are as large as a disk at 64 TB-eq "
                             f"({disk[64] / 1e9:.1f} GB): a disk holding anything else cannot take one",
        "monniot.table5.pct": het_lost, "monniot.table5.ssd_first": f"{het_lost}; {sparse}",
        "monniot.table5.ssd_favoured": het_lost,
    }


def _tables(folder: Path) -> tuple[list[dict], list[dict]]:
    res = load_results(folder)
    runs = rows_of(res)
    ok = [int(i) for i, s in zip(res.columns["index"], res.columns["status"]) if s == "ok"]
    by = dict(zip(ok, runs))
    disks = [{**{k: by[d["index"]][k] for k in ("scaling", "layout", "capacity_tb", "strategy", "split", "requeue")},
              **d} for d in rows_of(res, "disks")]
    return runs, disks


def grid_measures(runs: list[dict], disks: list[dict]) -> dict[str, Any]:
    def sel(cap, split, layouts=None):
        return [r for r in runs if r["capacity_tb"] == cap and r["split"] == split
                and (layouts is None or r["layout"] in layouts)]

    non_base = sorted({r["layout"] for r in runs} - {"1N1D"})
    strategies = list(dict.fromkeys(r["strategy"] for r in runs))
    m: dict[str, Any] = {}
    full_no_split = {f"{r['layout']}@{r['capacity_tb']:g}TB" for r in runs if not r["split"] and r["pct_sum_cap"] >= FULL}
    m["monniot.fig4.no_split_full"] = sorted(full_no_split)
    m["monniot.fig4.no_split_others"] = max(r["pct_sum_cap"] for r in runs if not r["split"] and r["layout"] != "1N1D")
    m["monniot.fig4.split64"] = float(np.mean([r["pct_sum_cap"] >= FULL for r in sel(64, True)]))
    mean32 = {s: float(np.mean([r["pct_sum_cap"] for r in sel(32, True) if r["strategy"] == s])) for s in strategies}
    top = max(mean32.values())
    m["monniot.fig4.split32_last"] = sorted(s for s, v in mean32.items() if v < top - 0.01)
    pct16 = [r["pct_sum_cap"] for r in sel(16, True, non_base)]
    m["monniot.fig4.split16"] = {"lowest": min(pct16), "highest": max(pct16)}
    d = lambda cap: [x for x in disks if x["capacity_tb"] == cap and x["split"] and x["layout"] != "1N1D"]  # noqa: E731
    m["monniot.fig5.16tb"] = float(np.mean([x["max_use"] >= FULL / 100 for x in d(16)]))
    m["monniot.fig5.32tb"] = sorted({x["strategy"] for x in d(32) if x["max_use"] >= FULL / 100})
    mx = {s: max(x["max_use"] for x in d(64) if x["strategy"] == s) for s in strategies}
    m["monniot.fig5.64tb"] = {"round-robin max disk use − 50 %": mx["round-robin"] - 0.5,
                              "best-bandwidth max disk use − 50 %": mx["best-bandwidth"] - 0.5,
                              "99.5 % − worst-fit max disk use": FULL / 100 - mx["worst-fit"]}
    m["monniot.fig5.mean_use"] = 100 * float(np.mean([x["mean_use"] for x in d(32)]))
    sd = {s: float(np.std([x["max_concurrent"] for x in d(32) if x["strategy"] == s])) for s in strategies}
    m["monniot.fig6.fairness"] = sd
    fr8 = {s: max(r["failed"] + r["refused"] for r in sel(8, True, non_base) if r["strategy"] == s) for s in strategies}
    m["monniot.fig7.8tb"] = (max(fr8["round-robin"], fr8["best-bandwidth"]) / fr8["random"] if fr8["random"]
                             else float("nan"))
    m["monniot.fig7.32tb_refused"] = float(max(r["refused"] for r in sel(32, True, non_base)))
    m["monniot.fig7.64tb"] = float(max(r["failed"] + r["refused"] for r in sel(64, True, non_base)))
    m["monniot.conclusion.32tb"] = min(r["pct_sum_cap"] for r in sel(32, True, non_base)
                                       if r["strategy"] == "best-bandwidth")
    return m


def hetero_measures(runs: list[dict], disks: list[dict]) -> dict[str, Any]:
    """Table 5's platform under best-bandwidth (Fig. 8)."""
    bb = [x for x in disks if x["strategy"] == "best-bandwidth"]
    ssd = [x for x in bb if x["disk"].startswith("ssd")]
    hdd = [x for x in bb if x["disk"].startswith("hdd")]
    first_hdd = min((x["first_alloc"] for x in hdd if x["first_alloc"] == x["first_alloc"]), default=float("inf"))
    run = next(r for r in runs if r["strategy"] == "best-bandwidth")
    return {
        "monniot.table5.ssd_favoured": {
            "mean allocations per SSD disk − per HDD disk": float(np.mean([x["mean_concurrent"] for x in ssd])
                                                                  - np.mean([x["mean_concurrent"] for x in hdd])),
            "max allocations on an SSD disk − on an HDD disk": float(max(x["max_concurrent"] for x in ssd)
                                                                     - max(x["max_concurrent"] for x in hdd))},
        "monniot.table5.pct": run["pct_sum_cap"],
        "monniot.table5.ssd_first": float(np.mean([x["first_full"] == x["first_full"] and x["first_full"] <= first_hdd
                                                   for x in ssd])),
    }


__all__ = ["PAPER", "grid_measures", "hetero_measures", "run", "sizes"]
