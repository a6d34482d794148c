"""soysal2019's experiments for the scorecard: T_NAP on KTH-SP2 under FCFS, conservative backfilling with
the paper's schedule compression, and Mu'alem–Feitelson's conservative backfilling, for every lambda of
Eq. 1 and the per-user predictor (Figs. 3a, 4 and 5; :mod:`iolab.studies.soysal`, without the advance
stage-in runs, which go beyond the paper) in ``OUT/soysal2019/kth``; Fig. 3a's ratio of SDSC-BLUE, shown
beside the paper's SDSC SP2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iolab.studies import soysal as study
from iolab.studies.as_campaign import Engine

PAPER = "soysal2019"
CONS = "conservative-reinsert"  # §3.4.1: conservative backfilling with schedule compression (Alea's)
LAMBDAS = (1.0, 0.7, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.0)
QUICK_LAMBDAS = (1.0, 0.3, 0.2, 0.1, 0.01, 0.0)  # the ones the claims read


def size_of(size: str) -> study.Size:
    """quick (CI): KTH's first 600 jobs; otherwise all of KTH-SP2 (27 992 jobs), the paper's trace."""
    if size == "quick":
        return study.Size(lambdas=QUICK_LAMBDAS, limit=600, advance=False)
    return study.Size(lambdas=LAMBDAS, advance=False)


def run(out: Path, size: str, engine: Engine, figures: bool = True, real: bool = False) -> dict[str, Any]:
    """The measurements (``real``: none; soysal2019 is a simulation study)."""
    s = study.run_study(out / "kth", size_of(size), trace="kth", figures=figures, engine=engine)
    m = tnap_measures(s["records"])
    m["soysal.fig3a.kth"] = s["requested_over_used"]
    path, _ = study.trace_path("sdsc-blue")
    if path.is_file():
        m["soysal.fig3a.others"] = {"SDSC-BLUE (not the paper's SDSC SP2)": study.requested_over_used(path, None)}
    m["_sizes"] = {"jobs": s["records"][0]["jobs"] if s["records"] else 0, "limit": s["limit"],
                   "runs": s["runs"]}
    m["_tables"] = {"soysal2019: share of jobs with a long-term (> 600 s) node prediction, KTH-SP2 (Fig. 4's red bars)":
                    long_term_table(s["records"])}
    m["_why"] = whys(s["records"])
    return m


def long_term_table(recs: list[dict[str, Any]]) -> dict[str, Any]:
    ests = list(dict.fromkeys(r["estimate"] for r in recs))
    scheds = list(dict.fromkeys(r["scheduler"] for r in recs))
    return {"columns": ["scheduler"] + [e.replace("lambda=", "λ ") for e in ests],
            "rows": [[sc] + [f"{_share(recs, sc, e):.3f}" for e in ests] for sc in scheds]}


def whys(recs: list[dict[str, Any]]) -> dict[str, str]:
    """What the runs' numbers say where a claim does not hold as the paper states it."""
    ests = [r["estimate"] for r in recs if r["scheduler"] == "fcfs"]
    lams = [e for e in ests if e.startswith("lambda=")]
    rise = ", ".join(f"{e.replace('lambda=', 'λ ')}: {_share(recs, CONS, e):.3f}" for e in lams)
    med = {(r["scheduler"], r["estimate"]): r["quantiles"][50] for r in recs if r["quantiles"]}
    lower = [e.replace("lambda=", "λ ") for e in ests
             if ("fcfs", e) in med and (CONS, e) in med and med[("fcfs", e)] <= med[(CONS, e)]]
    below = [e.replace("lambda=", "λ ") for e in ests if _share(recs, "fcfs", e) <= _share(recs, CONS, e)]
    return {
        "soysal.fig4.rise": f"the long-term share under conservative backfilling rises with every step of λ: {rise}",
        "soysal.fig5.fcfs_later": "FCFS's median non-instant T_NAP is not above conservative's at "
                                  f"{', '.join(lower) or 'no estimate'}",
        "soysal.fig4.fcfs_above": f"FCFS is not above at {', '.join(below) or 'no estimate'}",
    }


def _share(recs, sched, est, cls=">600s"):
    r = next(x for x in recs if x["scheduler"] == sched and x["estimate"] == est)
    return r[f"share_{cls}"]


def tnap_measures(recs: list[dict[str, Any]]) -> dict[str, Any]:
    ests = [r["estimate"] for r in recs if r["scheduler"] == "fcfs"]
    lam = lambda x: f"lambda={x:g}"  # noqa: E731
    m: dict[str, Any] = {}
    m["soysal.fig4.fcfs_above"] = sum(_share(recs, "fcfs", e) > _share(recs, CONS, e) for e in ests) / len(ests)
    lo, mid, hi = _share(recs, CONS, lam(1.0)), _share(recs, CONS, lam(0.2)), _share(recs, CONS, lam(0.0))
    m["soysal.fig4.rise"] = (mid - lo) / (hi - lo) if hi != lo else float("nan")
    m["soysal.fig4.fcfs_perfect"] = _share(recs, "fcfs", lam(0.0), "instant") + _share(recs, "fcfs", lam(0.0))
    m["soysal.fig4.instant"] = {
        "conservative: instant at λ 0 − at λ 1": _share(recs, CONS, lam(0.0), "instant")
        - _share(recs, CONS, lam(1.0), "instant"),
        "0.02 − |FCFS: instant at λ 0 − at λ 1|": 0.02 - abs(_share(recs, "fcfs", lam(0.0), "instant")
                                                              - _share(recs, "fcfs", lam(1.0), "instant"))}
    m["soysal.fig5.gap"] = {s: _share(recs, s, lam(0.0)) - _share(recs, s, lam(0.01)) for s in (CONS, "fcfs")}
    m["soysal.fig5.predictor"] = {s: _share(recs, s, "predictor") - _share(recs, s, lam(0.3)) for s in (CONS, "fcfs")}
    med = {(r["scheduler"], r["estimate"]): r["quantiles"][50] for r in recs if r["quantiles"]}
    later = [med[("fcfs", e)] > med[(CONS, e)] for e in ests if ("fcfs", e) in med and (CONS, e) in med]
    m["soysal.fig5.fcfs_later"] = sum(later) / len(later) if later else float("nan")
    return m


__all__ = ["PAPER", "run", "size_of", "tnap_measures"]
