"""lackner2019's experiments for the scorecard: Figs. 3 and 4 (SAS against random tier assignment, Fig. 4
at both capacities), Fig. 5 (inaccurate estimates, theta), each a campaign of :mod:`iolab.studies.lackner`
in ``OUT/lackner2019/figs``; and where random assignment's minima in p lie under each modelling choice
the paper leaves open (its sensitivity settings over p in [0, 1]), in ``OUT/lackner2019/minima``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from iolab.campaign import load_results
from iolab.metrics.batch import pooled_utilisation
from iolab.reproduce.stats import quadratic_minimum, spearman
from iolab.studies import lackner as study
from iolab.studies.as_campaign import Engine, rows_of

PAPER = "lackner2019"
PS_FULL = tuple(round(0.1 * i, 1) for i in range(11))
THETAS_PAPER = tuple(round(0.025 * i, 3) for i in range(1, 41))  # §V-B: 0 to 1 in steps of 0.025
THETAS_DEFAULT = tuple(round(0.05 * i, 2) for i in range(1, 21))


def sizes(size: str) -> tuple[study.LacknerSize, study.LacknerSize]:
    """(Figs. 3-5, the minima's examination) at ``size``: quick (CI), default (one repetition), paper (ten)."""
    if size == "quick":
        figs = study.LacknerSize(jobs=60, workloads=2, ps=(0.0, 0.5, 1.0), capacities_gb=(2048, 4096), ks=(1, 5),
                                 fig4_capacities=(2048,), thetas=(0.5, 1.0))
        minima = replace(study.QUICK_SENSITIVITY, ps=(0.0, 0.5, 1.0))
        return figs, minima
    figs = study.LacknerSize(repetitions=10 if size == "paper" else 1, fig4_capacities=(2048,),
                             thetas=THETAS_PAPER if size == "paper" else THETAS_DEFAULT)
    minima = replace(study.SENSITIVITY, ps=PS_FULL)
    return figs, minima


def run(out: Path, size: str, engine: Engine, figures: bool = True, real: bool = False) -> dict[str, Any]:
    """The measurements (``real``: none; lackner2019 is a simulation study)."""
    figs_size, minima_size = sizes(size)
    s = study.run_study(out / "figs", figs_size, figures=figures, engine=engine)
    m = figure_measures(s["groups"], s["theta"])
    sens = study.run_study(out / "minima", minima_size, figures=figures, engine=engine)
    table = minima_table(out / "minima")
    m["_tables"] = {"lackner2019: where random assignment's minima in p lie (quadratic fit) under each modelling "
                    "choice the paper leaves open (2048 GB, k = 5)": table}
    m["_why"] = {**minima_why(table), **m.get("_why", {})}
    m["_sizes"] = {"figs": {"jobs": figs_size.jobs, "workloads": figs_size.workloads,
                            "repetitions": figs_size.repetitions, "ps": len(figs_size.ps),
                            "thetas": len(figs_size.thetas)},
                   "minima": {"settings": list(minima_size.sensitivity), "ps": list(minima_size.ps)},
                   "runs": s["runs"] + sens["runs"]}
    return m


def _case(groups, cap, k, sched):
    return [g for g in groups if g["capacity_gb"] == cap and g["k"] == k and g["scheduler"] == sched]


def _fit_min(rnd, col) -> float:
    ps = [g["p"] for g in rnd]
    return quadratic_minimum(ps, [g[col] for g in rnd]) if len(ps) >= 3 else float(min(rnd, key=lambda g: g[col])["p"])


def figure_measures(groups: list[dict], theta: list[dict]) -> dict[str, Any]:
    caps = sorted({g["capacity_gb"] for g in groups})
    lo, hi = caps[0], caps[-1]
    m: dict[str, Any] = {}
    for col, key in (("makespan", "makespan"), ("mean_turnaround", "turnaround")):
        m[f"lackner.fig3.{key}"] = {f"{c:g} GB": _case(groups, c, 5, "sas")[0][col]
                                    / min(g[col] for g in _case(groups, c, 5, "random")) - 1 for c in caps}
        m[f"lackner.fig3.{key}_min_p"] = {f"{c:g} GB": _fit_min(_case(groups, c, 5, "random"), col) for c in caps}
    m["lackner.fig3.sas_node"] = {f"{c:g} GB": _case(groups, c, 5, "sas")[0]["node_utilisation"] for c in caps}
    m["lackner.fig3.sas_hps"] = {f"{c:g} GB": _case(groups, c, 5, "sas")[0]["hps_utilisation"] for c in caps}
    m["lackner.fig3.capacity"] = {
        "SAS makespan": _case(groups, hi, 5, "sas")[0]["makespan"] / _case(groups, lo, 5, "sas")[0]["makespan"] - 1,
        "best random makespan": min(g["makespan"] for g in _case(groups, hi, 5, "random"))
        / min(g["makespan"] for g in _case(groups, lo, 5, "random")) - 1}
    rnd = sorted(_case(groups, lo, 5, "random"), key=lambda g: g["p"])
    m["lackner.fig3.random_util"] = {
        "Spearman(p, HPS utilisation)": spearman([g["p"] for g in rnd], [g["hps_utilisation"] for g in rnd]),
        "node utilisation at p = 0 − at p = 1": rnd[0]["node_utilisation"] - rnd[-1]["node_utilisation"]}
    ks = sorted({g["k"] for g in groups if g["capacity_gb"] == hi and g["k"] != 5})
    wins = [_case(groups, hi, k, "sas")[0][col] < min(g[col] for g in _case(groups, hi, k, "random"))
            for k in ks for col in ("makespan", "mean_turnaround")]
    m["lackner.fig4.sas_all_k"] = sum(wins) / len(wins) if wins else float("nan")
    kmin = min(ks) if ks else 5
    low = {}
    for col, name in (("makespan", "makespan"), ("mean_turnaround", "turnaround")):
        low[f"SAS {name}"] = _case(groups, hi, kmin, "sas")[0][col] / _case(groups, lo, kmin, "sas")[0][col] - 1
        low[f"best random {name}"] = (min(g[col] for g in _case(groups, hi, kmin, "random"))
                                      / min(g[col] for g in _case(groups, lo, kmin, "random")) - 1)
    m["lackner.fig4.low_staging"] = low
    sas_lo, sas_hi = _case(groups, lo, kmin, "sas")[0], _case(groups, hi, kmin, "sas")[0]
    rnd_lo, rnd_hi = (min(g["makespan"] for g in _case(groups, c, kmin, "random")) / 3600 for c in (lo, hi))
    m.setdefault("_why", {})["lackner.fig4.low_staging"] = (
        f"at k = {kmin:g} SAS's makespan is {sas_lo['makespan'] / 3600:.1f} h with {lo:g} GB and "
        f"{sas_hi['makespan'] / 3600:.1f} h with {hi:g} GB, its HPS utilisation {sas_lo['hps_utilisation']:.2f} and "
        f"{sas_hi['hps_utilisation']:.2f}; random assignment's best makespan {rnd_lo:.1f} h and {rnd_hi:.1f} h: at "
        "this staging rate more HPS still shortens both")
    m["lackner.fig4.k1_vs_k5"] = {f"SAS {name}": _case(groups, hi, kmin, "sas")[0][col]
                                  / _case(groups, hi, 5, "sas")[0][col] - 1
                                  for col, name in (("makespan", "makespan"), ("mean_turnaround", "turnaround"))}
    theta_m = theta_measures(theta, _case(groups, hi, 5, "random"))
    m["_why"].update(theta_m.pop("_why"))
    m.update(theta_m)
    return m


def theta_measures(theta: list[dict], rnd: list[dict]) -> dict[str, Any]:
    """Fig. 5 against random assignment's means over p at the same capacity and k."""
    t = [r["theta"] for r in theta]
    best_mk = min(g["makespan"] for g in rnd)
    ta = [g["mean_turnaround"] for g in rnd]
    lower_end = min(ta) + 0.25 * (max(ta) - min(ta))
    zero, top = theta[0], theta[-1]
    why = {
        "lackner.fig5.nodes": f"node utilisation {zero['node_utilisation']:.3f} at theta 0, "
                              f"{top['node_utilisation']:.3f} at {top['theta']:g}; jobs on HPS "
                              f"{zero['hps_jobs']:.0f} → {top['hps_jobs']:.0f} per "
                              "workload",
        "lackner.fig5.hps": f"jobs on HPS {zero['hps_jobs']:.0f} at theta 0, {top['hps_jobs']:.0f} at {top['theta']:g}; "
                            f"HPS utilisation {zero['hps_utilisation']:.3f} → {top['hps_utilisation']:.3f}",
        "lackner.fig5.makespan": f"SAS's makespan {min(r['makespan'] for r in theta) / 3600:.1f}–"
                                 f"{max(r['makespan'] for r in theta) / 3600:.1f} h over theta; the best random p "
                                 f"{best_mk / 3600:.1f} h",
        "lackner.fig5.turnaround": f"SAS's mean turnaround "
                                   f"{min(r['mean_turnaround'] for r in theta) / 3600:.1f}–"
                                   f"{max(r['mean_turnaround'] for r in theta) / 3600:.1f} h over theta; random's means "
                                   f"over p {min(ta) / 3600:.1f}–{max(ta) / 3600:.1f} h"}
    return {
        "_why": why,
        "lackner.fig5.makespan": float(np.mean([r["makespan"] < best_mk for r in theta])),
        "lackner.fig5.turnaround": float(np.mean([r["mean_turnaround"] <= lower_end for r in theta])),
        "lackner.fig5.hps": {"Spearman(θ, jobs on HPS)": spearman(t, [r["hps_jobs"] for r in theta]),
                             f"HPS utilisation at θ = {top['theta']:g} − at 0": top["hps_utilisation"]
                             - zero["hps_utilisation"]},
        "lackner.fig5.nodes": top["node_utilisation"] - zero["node_utilisation"],
    }


def minima_why(table: dict[str, Any]) -> dict[str, str]:
    """Where the minima lie over every modelling choice examined (the table of :func:`minima_table`)."""
    rows = table["rows"]
    out = {}
    mk, ta = [r[1] for r in rows], [r[2] for r in rows]
    below = sum(1 for a, b in zip(mk, ta) if a < b)
    both = (f"over the {len(rows)} modelling choices examined (the constants the paper leaves open at half and double, "
            f"the other reading of Alg. 1; table below) the makespan minimum lies at p {min(mk):g}–{max(mk):g}, the "
            f"turnaround's at {min(ta):g}–{max(ta):g}; in {below} of {len(rows)} the makespan's lies at the lower p, "
            "the paper's order (makespan at 0.6–0.8, turnaround at 0.4) reversed")
    out["lackner.fig3.makespan_min_p"] = out["lackner.fig3.turnaround_min_p"] = both
    hps = [r[3] for r in rows]
    out["lackner.fig3.sas_hps"] = (f"over the {len(rows)} modelling choices examined SAS's HPS utilisation stays at "
                                   f"{min(hps):.2f}–{max(hps):.2f} (table below)")
    return out


def minima_table(folder: Path) -> dict[str, Any]:
    """Per sensitivity setting: the p of random assignment's fitted minimum, makespan and turnaround."""
    rows = rows_of(load_results(folder))
    out = []
    for setting in dict.fromkeys(r["setting"] for r in rows):
        rnd = [r for r in rows if r["setting"] == setting and r["scheduler"] == "random"]
        ps = sorted({r["p"] for r in rnd})
        mk = [float(np.mean([r["makespan"] for r in rnd if r["p"] == p])) for p in ps]
        ta = [float(np.mean([r["mean_turnaround"] for r in rnd if r["p"] == p])) for p in ps]
        fit = (lambda y: quadratic_minimum(ps, y)) if len(ps) >= 3 else (lambda y: ps[int(np.argmin(y))])
        sas = [r for r in rows if r["setting"] == setting and r["scheduler"] == "sas"]
        hps = pooled_utilisation([r["hps_used"] for r in sas], [r["hps_avail"] for r in sas])
        nodes = pooled_utilisation([r["node_used"] for r in sas], [r["node_avail"] for r in sas])
        gap = float(np.mean([r["makespan"] for r in sas])) / min(mk) - 1
        out.append([setting, round(fit(mk), 2), round(fit(ta), 2), round(hps, 3), round(nodes, 3), f"{gap:+.1%}"])
    return {"columns": ["setting", "makespan minimum at p (paper: 0.6–0.8)", "turnaround minimum at p (paper: 0.4)",
                        "SAS HPS utilisation (paper: ~0.7)", "SAS node utilisation (paper: ~0.8)",
                        "SAS makespan vs the best p"], "rows": out}


__all__ = ["PAPER", "figure_measures", "run", "sizes", "theta_measures"]
