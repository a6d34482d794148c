"""Per-strategy statistics of a campaign's results (what ``iolab report`` prints).

A strategy is a policy, or ``policy / mapping`` when the campaign sweeps
mappings.  For each: runs, failed runs, and the geometric mean and spread of
makespan and max stretch (the largest slowdown, >= 1; carretero2020 Eq. 2).
The spread is the geometric standard deviation (a factor: x/÷) plus min and
max; makespans of different workloads differ in scale, so the summary also
gives the geometric mean of each run's makespan relative to the best strategy
on the same instance (same workload, seed, platform and mapping... as applicable).  A batch campaign's
strategies (schedulers) also get the geometric mean and spread of their runs' mean turnaround and node
utilisation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from iolab.campaign.results import Results

BATCH_METRICS = ("mean_turnaround", "node_utilisation")  # summarised where the runs are batch runs
INSTANCE = ("workload", "seed", "io_nodes", "nodes_per_io_node", "bandwidth", "runtime", "mode", "dt")


def strategies(res: Results) -> list[str]:
    """Strategy label of every row."""
    several_mappings = len(set(res["mapping"].tolist())) > 1
    return [f"{p} / {m}" if several_mappings else str(p) for p, m in zip(res["policy"], res["mapping"])]


def _gstats(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    if not len(arr):
        return {"gmean": math.nan, "gsd": math.nan, "min": math.nan, "max": math.nan}
    logs = np.log(arr)
    return {"gmean": float(np.exp(logs.mean())), "gsd": float(np.exp(logs.std())),
            "min": float(arr.min()), "max": float(arr.max())}


def _same(value):
    """A missing float (NaN: a batch run's ``dt``, say) as one value, so that runs missing it match."""
    return None if isinstance(value, float) and math.isnan(value) else value


def relative_makespan(res: Results) -> np.ndarray:
    """Each ok run's makespan / the best makespan among the strategies on its instance."""
    keys = [tuple(_same(res[c][i]) for c in INSTANCE) for i in range(len(res))]
    best: dict[tuple, float] = {}
    for k, st, mk in zip(keys, res["status"], res["makespan"]):
        if st == "ok" and np.isfinite(mk):
            best[k] = min(best.get(k, math.inf), float(mk))
    return np.array([float(mk) / best[k] if st == "ok" and k in best and best[k] > 0 else math.nan
                     for k, st, mk in zip(keys, res["status"], res["makespan"])])


def summarise(res: Results) -> dict[str, Any]:
    labels = strategies(res)
    rel = relative_makespan(res)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(labels):
        groups[s].append(i)
    order = sorted(groups, key=lambda s: min(groups[s]))  # campaign order
    out: dict[str, Any] = {
        "campaign": res.attrs.get("campaign", "?"), "total_runs": int(res.attrs.get("total_runs", len(res))),
        "finished": len(res), "failed": int(sum(res["status"] != "ok")),
        "pending": int(res.attrs.get("pending", 0)), "strategies": {}, "failures": [],
    }
    for s in order:
        idx = groups[s]
        ok = [i for i in idx if res["status"][i] == "ok"]
        out["strategies"][s] = {
            "policy": str(res["policy"][idx[0]]), "mapping": str(res["mapping"][idx[0]]),
            "runs": len(idx), "failed": len(idx) - len(ok),
            "makespan": _gstats([res["makespan"][i] for i in ok]),
            "makespan_relative": _gstats([rel[i] for i in ok]),
            "max_stretch": _gstats([res["max_stretch"][i] for i in ok]),
        }
        for name in BATCH_METRICS:  # a batch campaign's runs: their queue's figures too
            if name in res.columns:
                out["strategies"][s][name] = _gstats([res[name][i] for i in ok])
    for i in range(len(res)):
        if res["status"][i] != "ok":
            out["failures"].append({"run_id": str(res["run_id"][i]), "strategy": labels[i],
                                    "workload": str(res["workload"][i]), "error": str(res["error"][i])})
    return out
