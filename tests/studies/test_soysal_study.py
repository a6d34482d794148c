"""``iolab study soysal`` on the first KTH-SP2 jobs: its records and Fig. 3a's ratio against an
independent reading of the SWF file."""

from __future__ import annotations

import csv
import gzip
import json

from click.testing import CliRunner

from iolab.cli import cli
from iolab.studies.as_campaign import Engine
from iolab.studies.soysal import Size, run_study


def test_small_study_records_and_ratio(kth, tmp_path):
    s = run_study(tmp_path, Size(lambdas=(1.0, 0.0), predictor=True, schedulers=("fcfs", "conservative"),
                                 limit=200, advance=False), trace="kth", figures=False,
                  engine=Engine(use_ray=False, progress=False))
    assert s["runs"] == 6
    for r in s["records"]:
        assert r["jobs"] == 200
        assert abs(sum(r[f"share_{c}"] for c in ("instant", "<=1s", "<=600s", ">600s")) - 1) < 1e-12
    fcfs0 = next(r for r in s["records"] if r["scheduler"] == "fcfs" and r["lam"] == 0.0)
    assert fcfs0["prediction_rows"] == 200  # lambda = 0 under FCFS: one plan per job, never changed
    # Fig. 3a independently: fields 4 (run time) and 9 (requested time) of the first 200 records
    req = run = 0.0
    n = 0
    with gzip.open(kth, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            p = line.split()
            n += 1
            if n > 200:
                break
            if float(p[3]) > 0:
                run += float(p[3])
                req += float(p[8]) if float(p[8]) > 0 else float(p[3])
    assert abs(s["requested_over_used"] - req / run) < 1e-9
    rows = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert len(rows) == 6 and json.loads((tmp_path / "summary.json").read_text())["runs"] == 6


def test_cli_refuses_a_missing_trace(tmp_path):
    r = CliRunner().invoke(cli, ["study", "soysal", "--trace", str(tmp_path / "nope.swf"), "--out", str(tmp_path)])
    assert r.exit_code == 2 and "nope.swf" in r.output and "Traceback" not in r.output
