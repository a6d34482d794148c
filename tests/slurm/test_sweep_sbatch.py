"""``iolab sweep`` on a Ray cluster spanning a real Slurm allocation (the shipped template).

``sbatch --wait --nodes=2 slurm/templates/sweep.sbatch CAMPAIGN OUTDIR``: Ray head on n1,
a worker on n2 (srun steps), then ``iolab sweep --address``. Skipped without a cluster
(see conftest). About 12 s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import pytest


pytestmark = [pytest.mark.slurm, pytest.mark.ray]

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "slurm" / "templates" / "sweep.sbatch"
CAMPAIGN = REPO / "examples" / "campaigns" / "quick.yaml"


def test_sbatch_sweep_runs_the_campaign_on_a_ray_cluster_over_two_nodes(cluster, job_name, tmp_path):
    if len(cluster.idle_nodes) < 2:
        pytest.skip(f"needs 2 idle nodes, the cluster has {cluster.idle_nodes}")
    out = tmp_path / "sweep"
    text = cluster.sbatch_wait(TEMPLATE, [str(CAMPAIGN), str(out)], nodes=2, job_name=job_name, workdir=tmp_path)

    # a raylet on each node (the worker joined the head), and the sweep used the cluster
    assert sorted(p.name for p in (out / "ray-logs").iterdir()) == ["ray-n1.log", "ray-n2.log"]
    for node in ("n1", "n2"):
        assert "Ray runtime started" in (out / "ray-logs" / f"ray-{node}.log").read_text(), node
    started = re.search(r"20 runs, 0 done earlier, 20 to run on Ray \((\S+):6390, (\d+) in flight\)", text)
    assert started, text[-2000:]
    in_flight = int(started.group(2))
    assert in_flight >= 2 and in_flight % 2 == 0  # both raylets' CPUs (the same count on each virtual node)

    runs = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert len(runs) == 20 and {r["status"] for r in runs} == {"ok"}
    assert len({r["run_id"] for r in runs}) == 20
    with h5py.File(out / "results.h5", "r") as f:
        assert (int(f.attrs["finished"]), int(f.attrs["failed"]), int(f.attrs["pending"])) == (20, 0, 0)
