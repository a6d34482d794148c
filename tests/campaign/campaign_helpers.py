"""Helpers of the campaign tests: paths, a small campaign writer, the environment of a sweep subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TABLE1 = REPO / "examples" / "carretero-table1.yaml"
QUICK = REPO / "examples" / "campaigns" / "quick.yaml"


def small_campaign(path: Path, name: str = "small", runtime: str = "sim", **axes) -> Path:
    """20 tiny runs: 5 generated workloads x 4 policies, 64-node partition."""
    data = {
        "kind": "campaign", "name": name, "runtime": runtime,
        "base": {"platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0}, "mapping": "first-fit"},
        "axes": {
            "policies": ["fifo", "longest-io", "stretch", "shared"],
            "workloads": [{"generate": "carretero", "alpha": [0.5, 1, 2, 4, 8], "count": 1,
                           "params": {"apps": [3, 6], "iterations": [5, 10]}}],
            "seeds": [7],
            **axes,
        },
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def sweep_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a sweep subprocess (and its Ray workers) needs to import the test runtimes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra or {})
    return env
