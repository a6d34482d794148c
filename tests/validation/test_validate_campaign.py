"""``iolab validate --repeats N --campaign FILE``: the real runs as a campaign, run by ``iolab sweep``, validated after."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner

from iolab.campaign.journal import Journal
from iolab.cli import cli
from iolab.trace import read_trace

pytestmark = [pytest.mark.mpi, pytest.mark.ray]

TINY = {"name": "tiny", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 3, "compute": 0.6, "io_volume": 0.5} for a in "AB"],
        "emulator": {"ranks_per_app": 2, "unit_bytes": 1 << 20, "grid": 32, "lease": 20}}


@pytest.mark.long
def test_the_repeats_campaign_runs_under_sweep_and_validate_reads_its_traces(tmp_path):
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(TINY))
    camp = tmp_path / "campaign.yaml"
    r = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "2", "--campaign",
                                 str(camp)])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(camp.read_text())
    assert doc["runtime"] == "emulate" and doc["axes"] == {"policies": ["fifo"], "seeds": [0, 1]}
    assert "iolab sweep" in r.output and not (tmp_path / "out").exists()  # nothing ran

    out = tmp_path / "out"
    sweep = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--workers", "1", "--out", str(out),
                            "--traces", str(out / "traces")], capture_output=True, text=True, timeout=600)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    recs = sorted(Journal(out / "journal.jsonl").load().values(), key=lambda rec: rec["params"]["seed"])
    assert [rec["status"] for rec in recs] == ["ok", "ok"] and all(rec["trace"] for rec in recs)
    # the same priorities as `iolab validate` runs them with, not Ray's default nice 15 for its workers
    for rec in recs:
        assert read_trace(rec["trace"]).attrs["nice"] == {"driver": 0, "arbiter": 0, "apps": 10}
    # one trace per run, and its work folder without the checkpoints (the logs and manifests stay)
    traces = out / "traces"
    assert sorted(p.name for p in traces.glob("*.h5")) == sorted(f"{rec['run_id']}.h5" for rec in recs)
    for rec in recs:
        work = traces / f"{rec['run_id']}.work"
        assert (work / "logs").is_dir() and any((work / "logs").iterdir())
        assert not list(work.glob("io-node-*")), list(work.iterdir())

    v = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "2", "--seeds", "6",
                                 "--traces", str(out), "--json"])
    assert v.exit_code == 0, v.output
    d = json.loads(v.output)["policies"]["fifo"]["distribution"]
    assert d["repeats"] == 2 and d["makespan"]["n_real"] == 2
    # the real makespans are the campaign's (the journal's metric of each run)
    assert sorted(d["makespan"]["real"]) == pytest.approx(sorted(rec["metrics"]["makespan"] for rec in recs))
    three = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "3", "--traces",
                                     str(out)])
    assert three.exit_code == 2 and "2 ok run(s) of fifo" in three.output
