"""carretero2020 Table 1 under its exclusive orders, ``shared`` and the sharing policies (simulated).

usage:: python benchmarks/sharing_table1.py [--sizes 24,16,8,8,8] [--figure sharing_table1.png]

Prints, per policy, every app's slowdown ((end - release) / T_min), the makespan, the maximum and the
geometric mean of the slowdowns, and the mean I/O wait of ``examples/carretero-table1.yaml`` (every app on
one I/O node of b = 1).  The policies: carretero2020's eight list orders (one transfer at a time), ``shared``
(every transfer at once, b / k each) and the sharing policies of docs/sharing.md: ThemisIO's ``job-fair``,
``size-fair``, ``user-fair``, and three Lustre TBF rule sets (``TBF``, below).  ``--sizes`` gives the apps'
node counts (Table 1 gives none; the example's are 8 each, which makes size-fair's shares 1/k);
``--figure`` draws every app's slowdown per policy.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import yaml

from iolab.sim.io.run import simulate
from iolab.specs import parse_spec

SPEC = Path(__file__).resolve().parent.parent / "examples" / "carretero-table1.yaml"
ORDERS = ("lowest-id", "longest-io", "shortest-io", "shortest-remaining", "longest-remaining", "fifo", "bandwidth",
          "stretch")
#: the TBF rule sets compared (rates in units/s of the I/O node's b = 1)
TBF = {
    "tbf-cap-0.5": {"kind": "tbf", "default_rate": 0.5},  # every app at most half the node
    "tbf-cap-0.25": {"kind": "tbf", "default_rate": 0.25},  # every app at most a quarter of the node
    # the apps with the short phases (the ones FIFO slows most) 0.4, the others 0.2
    "tbf-app34": {"kind": "tbf", "rules": [{"job": "app[34]", "rate": 0.4}], "default_rate": 0.2},
}


def rows(base: dict) -> list[tuple[str, list[float], float, float]]:
    """(policy, every app's slowdown, makespan, mean I/O wait) per policy."""
    out = []
    for name in (*ORDERS, "shared", "job-fair", "size-fair", "user-fair", *TBF):
        spec = parse_spec({**base, "policy": TBF.get(name, name)}, "<sharing_table1>")
        t = simulate(spec, strict=False)
        j = t.jobs
        slow = list((np.asarray(j["end"]) - np.asarray(j["release"])) / np.asarray(j["min_time"]))
        g = t.grants
        wait = float(np.mean(np.asarray(g["grant"]) - np.asarray(g["request"]))) if len(g["grant"]) else 0.0
        out.append((name, slow, float(np.max(j["end"])), wait))
    return out


def draw(table, apps: list[str], nodes: list[int], path: Path) -> None:
    import matplotlib  # lazy: only with --figure

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: only with --figure

    fig, ax = plt.subplots(figsize=(12, 4.2))
    x = np.arange(len(table))
    width = 0.8 / len(apps)
    for k, app in enumerate(apps):
        ax.bar(x - 0.4 + (k + 0.5) * width, [r[1][k] for r in table], width, label=app)
    ax.plot(x, [math.exp(np.mean(np.log(r[1]))) for r in table], "k_", markersize=18, label="geo-mean")
    ax.set_xticks(x, [r[0] for r in table], rotation=30, ha="right", fontsize=8)
    ax.axvline(len(ORDERS) - 0.5, color="grey", lw=0.8)
    ax.set_ylabel("slowdown (end - release) / T_min")
    ax.set_ylim(1.0, max(max(r[1]) for r in table) * 1.05)
    ax.grid(axis="y", lw=0.3)
    ax.legend(fontsize=8, ncol=6)
    ax.set_title("carretero2020 Table 1 (simulated; nodes " + ", ".join(map(str, nodes)) + "): exclusive orders "
                 "(left) and bandwidth sharing (right)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="", help="the apps' node counts, comma-separated (default: the example's)")
    ap.add_argument("--figure", default="", help="write every app's slowdown per policy to this PNG")
    a = ap.parse_args()
    base = yaml.safe_load(SPEC.read_text())
    if a.sizes:
        for app, n in zip(base["apps"], a.sizes.split(","), strict=True):
            app["nodes"] = int(n)
    apps = [app["id"] for app in base["apps"]]
    table = rows(base)
    print("nodes: " + ", ".join(f"{app['id']} {app['nodes']}" for app in base["apps"]))
    print("| policy | " + " | ".join(apps) + " | makespan s | max | geo-mean | mean I/O wait s |")
    print("|---" * (len(apps) + 5) + "|")
    for name, slow, makespan, wait in table:
        geo = math.exp(np.mean(np.log(slow)))
        print(f"| {name} | " + " | ".join(f"{s:.3f}" for s in slow)
              + f" | {makespan:,.0f} | {max(slow):.3f} | {geo:.3f} | {wait:.1f} |")
    if a.figure:
        draw(table, apps, [app["nodes"] for app in base["apps"]], Path(a.figure))
        print(f"wrote {a.figure}")


if __name__ == "__main__":
    main()
