"""The papers' studies as campaigns: same numbers as a bare loop of the same runs (and as an
earlier iolab's outputs, a developer check), a study killed mid-way resumes without redoing
finished runs, ``--campaign FILE`` writes a campaign ``iolab sweep`` runs, results read with pandas."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.campaign import load_results
from iolab.campaign.journal import Journal
from iolab.campaign.study import StudyCampaign, expand_study
from iolab.cli import cli
from iolab.studies import carretero as C
from iolab.studies import lackner as L
from iolab.studies import monniot as M
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign

from shared_data import SHARED_DATA, shared_file
from test_resume import kill_after_records

# a developer check (docs/performance.md, "For developers"): IOLAB_BASELINE names a folder of
# `iolab study X --quick` outputs an earlier iolab wrote (one X-quick folder per study)
BASELINE = Path(os.environ["IOLAB_BASELINE"]) if os.environ.get("IOLAB_BASELINE") else None
STUDY = [sys.executable, "-c", "from iolab.cli import main; main()", "study"]
NOISE = {"wall_seconds", "seconds", "replay_seconds", "events_per_second", "jobs"}
IN_PROCESS = Engine(use_ray=False, progress=False)


def same(a, b) -> bool:
    """Equal numbers (NaN equals NaN, 1 equals 1.0), equal strings; recursively, ignoring timings."""
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) - NOISE == set(b) - NOISE and all(same(a[k], b[k]) for k in a if k not in NOISE)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def csv_rows(path: Path) -> list[dict]:
    def value(x: str):
        try:
            return float(x)
        except ValueError:
            return x
    return [{k: value(v) for k, v in r.items()} for r in csv.DictReader(open(path))]


# ---- the engine gives the numbers of a bare loop over the same runs

def test_lackner_quick_through_the_engine_equals_a_bare_loop(tmp_path):
    s = L.run_study(tmp_path, L.QUICK, figures=False, engine=IN_PROCESS)
    bare = [L.run_one(*t) for t in L.tasks(L.QUICK)]
    agg = L.aggregate(bare)
    assert same(rows_of(load_results(tmp_path)), bare)
    assert same(s["groups"], agg["groups"]) and same(s["headline"], L.headline(agg))


def test_carretero_quick_through_the_engine_equals_a_bare_loop(tmp_path):
    s = C.run_study(tmp_path, C.QUICK, seed=2020, figures=False, engine=IN_PROCESS)
    bare = [r for i, a in enumerate(C.QUICK.alphas) for k in range(C.QUICK.workloads)
            for r in C.run_workload(a, k, C.workload_seed(2020, i, k), C.QUICK.params)]
    assert same(rows_of(load_results(tmp_path)), bare)
    assert any(math.isinf(r["sensibility"]) for r in rows_of(load_results(tmp_path)))  # First-Fit's S = inf survives
    assert same(s["strategies"], C.summarise(bare)["strategies"])


def test_monniot_quick_through_the_engine_equals_a_bare_loop(tmp_path):
    theta = shared_file(M.THETA_FILE)
    M.run_study(tmp_path, M.QUICK, theta=theta, figures=False, engine=IN_PROCESS)
    reqs = M.theta_requests(theta)
    stats = M.workload_stats(reqs)
    factors = {sc: M.scale_factor(sc, stats) for sc in M.QUICK.scalings}
    bare = [M.run_one(*t) for t in M.tasks(M.QUICK, factors, reqs)]
    res = load_results(tmp_path)
    assert same(rows_of(res), [b["row"] for b in bare])
    disks = [{k: v for k, v in d.items() if k != "index"} for d in rows_of(res, "disks")]
    assert same(disks, [d for b in bare for d in b["disks"]])


@pytest.mark.parametrize("study", ["lackner", "monniot", "carretero"])
def test_quick_study_equals_the_pre_campaign_baseline(study, tmp_path):
    """``iolab study X --quick`` gives the outputs an earlier iolab wrote (a developer check)."""
    if BASELINE is None:
        pytest.skip("a developer check against an earlier iolab's outputs (docs/performance.md, 'For developers')")
    base = BASELINE / f"{study}-quick"
    if not (base / "summary.json").is_file():
        pytest.skip(f"no baseline in {base}")
    if study == "monniot":
        shared_file(M.THETA_FILE)
    res = CliRunner().invoke(cli, ["study", study, "--quick", "--no-ray", "--no-figures", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for table in ("runs.csv", "disks.csv"):
        if (base / table).is_file():
            assert same(csv_rows(tmp_path / table), csv_rows(base / table)), table
    assert same(json.loads((tmp_path / "summary.json").read_text()), json.loads((base / "summary.json").read_text()))


# ---- files and layout

def test_run_ids_are_stable_and_depend_on_the_arguments():
    a = expand_study(StudyCampaign(name="a", study="lackner", params=L.params_of(L.QUICK)))
    b = expand_study(StudyCampaign(name="b", study="lackner", params=L.params_of(L.QUICK)))
    assert [r.run_id for r in a] == [r.run_id for r in b] and len({r.run_id for r in a}) == len(a) == 16
    bigger = L.params_of(L.QUICK) | {"ps": [0.0, 0.25, 0.5, 1.0]}
    c = {r.run_id for r in expand_study(StudyCampaign(name="c", study="lackner", params=bigger))}
    assert {r.run_id for r in a} < c  # a new p adds runs, keeps the others' ids


def test_bad_study_campaign_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"kind": "campaign", "name": "x", "study": "lackner", "params": {"nope": 1}}))
    res = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(path)], capture_output=True, text=True)
    assert res.returncode == 2 and "params" in res.stderr and "nope" in res.stderr
    assert "Traceback" not in res.stderr


def test_results_read_with_pandas_in_two_lines(tmp_path):
    pd = pytest.importorskip("pandas")
    import h5py

    run_as_campaign("lackner", L.params_of(L.QUICK), tmp_path, IN_PROCESS)
    with h5py.File(tmp_path / "results.h5") as f:
        df = pd.DataFrame({k: (d.asstr()[()] if d.dtype.kind == "O" else d[()]) for k, d in f["runs"].items()})
    assert len(df) == 16 and set(df.status) == {"ok"}
    assert df.groupby("scheduler").makespan.count().to_dict() == {"random": 12, "sas": 4}
    ref = rows_of(load_results(tmp_path))
    assert sorted(df.makespan) == sorted(r["makespan"] for r in ref)
    df2 = load_results(tmp_path / "results.h5").to_pandas()  # the other line: iolab's reader
    assert list(df2.columns[:4]) == ["index", "run_id", "status", "error"] and df2.makespan.tolist() == df.sort_values(
        "index").makespan.tolist()


# ---- Ray: --campaign FILE runs with iolab sweep; SIGKILL mid-way, then resume

@pytest.mark.long
@pytest.mark.ray
def test_campaign_file_runs_with_sweep_and_gives_the_study(tmp_path):
    camp = tmp_path / "lackner.json"
    res = CliRunner().invoke(cli, ["study", "lackner", "--quick", "--campaign", str(camp)])
    assert res.exit_code == 0, res.output
    assert json.loads(camp.read_text())["study"] == "lackner"
    out = tmp_path / "swept"
    run = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--workers", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(Journal(out / "journal.jsonl").load()) == 16
    ref = L.run_study(tmp_path / "ref", L.QUICK, figures=False, engine=IN_PROCESS)
    swept = json.loads((out / "summary.json").read_text())
    assert same(swept["groups"], ref["groups"]) and (out / "fig3.png").stat().st_size > 10_000


@pytest.mark.long
@pytest.mark.ray
def test_study_killed_mid_way_resumes_without_redoing_finished_runs(tmp_path):
    out = tmp_path / "killed"
    cmd = STUDY + ["lackner", "--quick", "--workers", "1", "--no-figures", "--out", str(out)]
    journal = out / "journal.jsonl"
    kill_after_records(cmd, journal, 4, timeout=180, what="the study")
    done = Journal(journal).load()
    assert 4 <= len(done) < 16
    lines_at_kill = journal.read_bytes().count(b"\n")

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done)} done earlier, {16 - len(done)} to run" in rerun.stderr
    ids = [json.loads(line)["run_id"] for line in journal.read_text().splitlines()]
    assert len(ids) == 16 and Counter(ids).most_common(1)[0][1] == 1  # no run recorded twice: none redone
    after = Journal(journal).load()
    assert all(after[rid]["finished_at"] == rec["finished_at"] for rid, rec in done.items())  # kept, not rerun
    assert lines_at_kill == len(done)
    ref = L.run_study(tmp_path / "ref", L.QUICK, figures=False, engine=IN_PROCESS)
    resumed = json.loads((out / "summary.json").read_text())
    assert same(resumed["groups"], ref["groups"]) and same(resumed["headline"], ref["headline"])
