"""``iolab validate`` on a batch spec, for real: one run of two small MPI jobs through the storage manager."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.trace import read_trace
from iolab.units import format_duration

pytestmark = [pytest.mark.mpi, pytest.mark.ray]

SPEC = {
    "kind": "batch", "name": "tiny-validate",
    "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                 "hps": {"rate": "10 GB/s", "capacity": "50 GB"}, "stage_rate": "5 GB/s"},
    "scheduler": "sas",
    "workload": [
        {"id": "io", "submit": 0, "nodes": 1, "walltime": 400, "runtime": 300, "input": "20GB", "output": "10GB",
         "storage": "30GB"},
        {"id": "cpu", "submit": 0, "nodes": 1, "walltime": 300, "runtime": 200},
        {"id": "late", "submit": 50, "nodes": 2, "walltime": 200, "runtime": 100, "output": "1GB"},
    ],
    "emulator": {"time_scale": 0.01, "bytes_scale": 0.0001},
}


@pytest.mark.long
def test_validate_runs_the_batch_spec_for_real_and_reports_both_simulations(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SPEC))
    work = tmp_path / "work"
    r = CliRunner().invoke(cli, ["validate", str(path), "--work-dir", str(work), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    real = read_trace(work / "sas.h5")  # the real run is kept for later (--traces)
    assert real.attrs["runtime"] == "emulator-batch" and list(real.jobs["status"]) == ["ok"] * 3
    assert rep["calibration"]["wall"] == real.attrs["calibration"]["wall"]
    for which in ("uncalibrated", "calibrated"):
        c = rep[which]
        assert set(c["jobs"]) == {"io", "cpu", "late"} and c["not_compared"] == []
        assert c["tier_differs"] == [] and c["jobs"]["io"]["tier"]["real"] == "hps"
        assert set(c["run"]) == {"makespan", "mean_turnaround", "node_utilisation", "hps_utilisation"}
        assert c["jobs"]["io"]["stage_in"]["real"] > 0 and c["jobs"]["cpu"]["stage_in"]["real"] == 0
    # the spec's own overheads are 0: the plain simulation ends every job earlier than the real run
    assert all(v["turnaround"]["real"] > v["turnaround"]["sim"] for v in rep["uncalibrated"]["jobs"].values())
    # the kept run validates again without running anything, with the same numbers, and writes the page
    page = tmp_path / "report"
    again = CliRunner().invoke(cli, ["validate", str(path), "--traces", str(work), "--json", "--report", str(page)])
    assert again.exit_code == 0 and json.loads(again.output)["calibrated"] == rep["calibrated"]
    assert json.loads((page / "report.json").read_text())["calibrated"] == rep["calibrated"]
    md = (page / "report.md").read_text()
    assert (page / "scatter.png").read_bytes()[:4] == b"\x89PNG" and "![simulated against real](scatter.png)" in md
    for heading in ("# Validation of `tiny-validate`", "## Batch level", "### simulated as written",
                    "### simulated with the calibration", "--traces"):
        assert heading in md, heading
    assert f"| makespan | {format_duration(rep['calibrated']['run']['makespan']['real'])} |" in md  # a time
    assert real.attrs["host"] in md and "ray " in md  # the machine and the versions of the real run
    assert "{'" not in md and "samples: " in md and " launches" in md  # words, not a Python dict
    # a kept trace of another spec is refused, naming the field
    other = dict(SPEC, workload=SPEC["workload"][:2])
    (tmp_path / "other.json").write_text(json.dumps(other))
    bad = CliRunner().invoke(cli, ["validate", str(tmp_path / "other.json"), "--traces", str(work)])
    assert bad.exit_code == 2 and "spec.workload differs" in bad.output
