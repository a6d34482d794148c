"""``iolab study monniot --quick`` writes its files; the summary holds sane values (real Theta week)."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from iolab.studies.as_campaign import Engine
from iolab.studies.monniot import QUICK, MonniotSize, run_study, theta_requests, workload_stats
from shared_data import shared_file

THETA = "theta-2022-week4-io-jobs.yaml"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    path = shared_file(THETA)
    out = tmp_path_factory.mktemp("monniot")
    from iolab.cli.study import study

    res = CliRunner().invoke(study,
                             ["monniot", "--quick", "--no-ray", "--theta", str(path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, res.output


def test_quick_writes_files_and_progress(quick):
    out, output = quick
    for name in ("runs.csv", "disks.csv", "summary.json", "fig4.png", "fig6.png", "fig7.png"):
        assert (out / name).stat().st_size > 0, name
    assert "runs in" in output and "sum_cap" in output and "paper:" in output
    rows = list(csv.DictReader(open(out / "runs.csv")))
    n = len(QUICK.layouts) * len(QUICK.capacities_tb) * len(QUICK.strategies) * len(QUICK.splits)
    assert len(rows) == n == 32


def test_quick_summary_structure_and_values(quick):
    out, _ = quick
    s = json.loads((out / "summary.json").read_text())
    assert set(s) >= {"input", "scalings", "headline", "paper", "size", "runs", "wall_seconds"}
    inp = s["input"]
    assert inp["requests"] == 57 and inp["sum_cap"] == pytest.approx(1.0632e12, rel=1e-3)
    f = s["scalings"]["sum-cap"]["factor"]
    assert f == pytest.approx(inp["sum_cap"] / 1.6e15)
    assert s["scalings"]["sum-cap"]["capacities_bytes"]["32TB"] == pytest.approx(32e12 * f)
    h = s["headline"]["sum-cap"]
    assert set(h["pct_sum_cap"]) == {"split", "no_split"}
    rows = list(csv.DictReader(open(out / "runs.csv")))
    for r in rows:
        assert 0.0 <= float(r["pct_sum_cap"]) <= 100.0
        assert 0.0 <= float(r["max_disk_use"]) <= 1.0 + 1e-12
        assert int(r["allocated"]) + int(r["refused"]) + int(r["failed"]) == int(r["requests"]) == 57
        if r["strategy"] in ("random", "worst-fit"):
            assert int(r["refused"]) == 0
        else:
            assert int(r["failed"]) == 0
    assert s["runs"] == len(rows)


def test_more_capacity_never_allocates_less_round_robin_split():
    """% of sum_cap is non-decreasing in capacity for round-robin with split on (every layout, both scalings)."""
    path = shared_file(THETA)
    import tempfile
    from pathlib import Path

    size = MonniotSize(strategies=("round-robin", "best-bandwidth"), splits=(True,))
    with tempfile.TemporaryDirectory() as d:
        s = run_study(Path(d), size, theta=path, figures=False, engine=Engine(use_ray=False, progress=False))
        rows = list(csv.DictReader(open(Path(d) / "runs.csv")))
    for scaling in size.scalings:
        for layout in size.layouts:
            pct = [float(r["pct_sum_cap"]) for r in rows
                   if r["scaling"] == scaling and r["layout"] == layout and r["strategy"] == "round-robin"]
            assert len(pct) == 4
            assert pct == sorted(pct), (scaling, layout, pct)
    # peak scaling at 64 TB-eq with split: every request of the week fits (paper: 100 % at 64 TB)
    assert s["headline"]["peak"]["pct_sum_cap"]["split"]["64TB"]["min"] == pytest.approx(100.0)


def test_week_statistics_say_how_the_week_differs():
    reqs = theta_requests(shared_file(THETA))
    st = workload_stats(reqs)
    assert st["peak_demand"] <= st["sum_cap"]
    assert st["largest_request"] == pytest.approx(652.98e9, rel=1e-3)
    assert st["requests_over_split"] == 1


def test_missing_theta_file_is_a_clear_cli_error(tmp_path):
    from iolab.cli.study import study

    res = CliRunner().invoke(study, ["monniot", "--quick", "--theta", str(tmp_path / "nope.yaml"),
                                     "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "Theta job file not found" in res.output
