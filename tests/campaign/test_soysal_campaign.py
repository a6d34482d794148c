"""``iolab study soysal`` as a campaign: the engine gives the numbers of a bare loop over the same
runs, the advance stage-in rows are consistent (off: zero; on: counters within the link model),
``--quick`` killed mid-way resumes in-process (``--no-ray``) without redoing finished runs, and
``--campaign FILE`` writes a file ``iolab sweep`` accepts and runs to the same study."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.campaign import load_results
from iolab.campaign.journal import Journal
from iolab.cli import cli
from iolab.workloads import load_workload
from iolab.studies import soysal as S
from iolab.studies.as_campaign import Engine

from shared_data import shared_file
from test_resume import kill_after_records

IN_PROCESS = Engine(use_ray=False, progress=False)
STUDY = [sys.executable, "-c", "from iolab.cli import main; main()", "study", "soysal"]
SMALL = S.Size(lambdas=(1.0, 0.0), predictor=True, schedulers=("fcfs", "conservative"), limit=200,
               advance_schedulers=("fcfs", "sas"), advance_lambdas=(0.0,), advance_window=120)
STAGE_RATE = 5e9  # the study's platform: R_stage = 5 R_lps


def without(d: dict, *keys) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def same_records(a: list[dict], b: list[dict]) -> bool:
    def norm(r):
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()
                if k not in ("seconds", "turnaround_change")}
    return [norm(r) for r in a] == [norm(r) for r in b]


@pytest.fixture(scope="module")
def kth_path() -> Path:
    return shared_file("KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.fixture(scope="module")
def small(kth_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("soysal-small")
    return out, S.run_study(out, SMALL, trace="kth", figures=True, engine=IN_PROCESS)


def test_engine_rows_equal_a_bare_loop(small, kth_path):
    out, s = small
    nodes = S.TRACES["kth"][1]
    bare = [S.one_run(str(kth_path), nodes, sc, e, SMALL.limit) for sc in SMALL.schedulers
            for e in (*SMALL.lambdas, "predictor")]
    assert same_records(s["records"], [without(r, "kind") for r in bare])
    assert all(len(r["quantiles"]) == 101 for r in s["records"])
    adv = [S.advance_run(str(kth_path), nodes, sc, lam, SMALL.limit, on, SMALL.hps_capacity_gb, SMALL.io_seed,
                         SMALL.theta_stable, SMALL.margin, SMALL.advance_window)
           for sc in SMALL.advance_schedulers for lam in SMALL.advance_lambdas for on in (False, True)]
    assert same_records([without(r, "kind") for r in adv], s["advance"])
    res = load_results(out)
    assert set(res.columns["status"]) == {"ok"} and len(res.columns["run_id"]) == 6 + 4
    for f in ("runs.csv", "advance.csv", "summary.json", "fig3a.png", "fig4.png", "fig5.png"):
        assert (out / f).is_file(), f
    assert (out / "fig_advance.png").stat().st_size > 10_000


def test_advance_rows_are_consistent(small, kth_path):
    _, s = small
    rows = s["advance"]
    for r in (r for r in rows if not r["advance"]):  # advance staging off: the counters stay zero
        assert all(r[k] == 0 for k in S.ADVANCE_STATS) and r["turnaround_change"] == 0
    jobs = [j for skip, n in S.windows(SMALL.limit, SMALL.advance_window)  # each window's spec, read alone
            for j in load_workload(S.experiment(str(kth_path), 100, "sas", 0.0, n, skip=skip, io=True,
                                                seed=SMALL.io_seed, hps_capacity_gb=SMALL.hps_capacity_gb))]
    assert [j.id for j in jobs] == [j.id for j in load_workload(S.experiment(str(kth_path), 100, "sas", 0.0,
                                                                              SMALL.limit))]
    assert all(r["windows"] == 2 and r["jobs"] == SMALL.limit for r in rows)
    max_input = max(j.input for j in jobs)
    on = {r["scheduler"]: r for r in rows if r["advance"]}
    for r in on.values():
        assert r["hidden_seconds"] >= 0 and r["wasted_link_seconds"] >= 0
        assert r["wasted_copies"] <= r["early_copies"]
        # a copy moves at R_stage: bytes = link seconds x R_stage, hidden or wasted
        assert math.isclose(r["early_bytes"], r["hidden_seconds"] * STAGE_RATE, rel_tol=1e-9, abs_tol=1e-3)
        assert math.isclose(r["wasted_bytes"], r["wasted_link_seconds"] * STAGE_RATE, rel_tol=1e-9, abs_tol=1e-3)
        assert r["wasted_bytes"] <= r["wasted_copies"] * max_input  # a wasted copy moved at most its input
        used = r["early_copies"] - r["wasted_copies"]
        assert r["early_bytes"] <= used * max_input
        assert math.isclose(r["turnaround_change"], r["mean_turnaround"] - next(
            o["mean_turnaround"] for o in rows if not o["advance"] and o["scheduler"] == r["scheduler"]))
    # FCFS runs with hps_requests: the jobs that ask for HPS run there (the advance runs' point)
    off = {r["scheduler"]: r for r in rows if not r["advance"]}
    asking = sum(1 for j in jobs if 0 < j.storage <= SMALL.hps_capacity_gb * 1e9)
    assert off["fcfs"]["hps_jobs"] == asking > 0
    # SAS puts jobs on HPS: some stage-in is hidden behind the wait
    assert on["sas"]["hps_jobs"] > 0 and on["sas"]["hidden_seconds"] > 0


@pytest.mark.parametrize("n,w", [(200, 120), (600, 500), (27992, 500), (7, 3), (10, 10), (10, None), (1, 5)])
def test_windows_cut_the_jobs_into_consecutive_near_equal_parts(n, w):
    cuts = S.windows(n, w)
    assert cuts[0][0] == 0 and sum(k for _, k in cuts) == n
    assert all(a + k == b for (a, k), (b, _) in zip(cuts, cuts[1:]))  # consecutive, no gap, no overlap
    sizes = [k for _, k in cuts]
    assert max(sizes) - min(sizes) <= 1 and (w is None or max(sizes) <= w)
    assert len(cuts) == (1 if w is None else -(-n // w))


def test_a_windowed_advance_row_is_the_sum_of_its_windows_run_from_their_specs(kth_path):
    """The study reads the trace once and cuts it; each window is also a spec of its own
    (``skip``/``limit``/``io``) that ``iolab simulate`` runs from the file: the same numbers."""
    from iolab.sim.batch.run import simulate_batch
    import numpy as np
    row = S.advance_run(str(kth_path), 100, "sas", 0.0, 150, True, 2048.0, 0, 600.0, 60.0, 60)
    turn, hps, copies = [], 0, 0.0
    for skip, n in S.windows(150, 60):
        tr = simulate_batch(S.experiment(str(kth_path), 100, "sas", 0.0, n, skip=skip, io=True, advance=True,
                                         hps_capacity_gb=2048.0, seed=0), strict=False)
        turn += list(np.asarray(tr.jobs["end"], dtype=float) - np.asarray(tr.jobs["release"], dtype=float))
        hps += int(np.sum(np.asarray(tr.jobs["tier"]) == "hps"))
        copies += tr.attrs["advance_stage_in"]["early_copies"]
    assert row["windows"] == 3 and row["jobs"] == len(turn) == 150
    assert row["hps_jobs"] == hps > 0 and row["early_copies"] == copies
    assert math.isclose(row["mean_turnaround"], sum(turn) / len(turn), rel_tol=1e-12)


@pytest.mark.long
def test_quick_killed_mid_way_resumes_in_process_without_redoing_runs(tmp_path):
    shared_file("KTH-SP2-1996-2.1-cln.swf.gz")
    out = tmp_path / "killed"
    cmd = STUDY + ["--quick", "--no-ray", "--no-figures", "--out", str(out)]
    journal = out / "journal.jsonl"
    total = len(S.campaign_runs(S.params_of(S.QUICK)))
    kill_after_records(cmd, journal, 5, timeout=120, what="the study")
    done = Journal(journal).load()
    assert 5 <= len(done) < total
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done)} done earlier, {total - len(done)} to run" in rerun.stderr
    ids = [json.loads(line)["run_id"] for line in journal.read_text().splitlines()]
    assert len(ids) == total and Counter(ids).most_common(1)[0][1] == 1  # no run recorded twice
    after = Journal(journal).load()
    assert all(after[rid]["finished_at"] == rec["finished_at"] for rid, rec in done.items())  # kept, not rerun
    resumed = json.loads((out / "summary.json").read_text())
    ref = S.run_study(tmp_path / "ref", S.QUICK, figures=False, engine=IN_PROCESS)
    assert same_records(resumed["records"], ref["records"]) and same_records(resumed["advance"], ref["advance"])


def small_swf(kth_path: Path, path: Path, jobs: int) -> Path:
    """The header and the first ``jobs`` records of KTH-SP2 as a plain SWF file."""
    lines, n = [], 0
    with gzip.open(kth_path, "rt") as f:
        for line in f:
            if not line.startswith(";") and line.strip():
                n += 1
                if n > jobs:
                    break
            lines.append(line)
    path.write_text("".join(lines))
    return path


def test_campaign_file_is_a_campaign_sweep_accepts(kth_path, tmp_path):
    trace = small_swf(kth_path, tmp_path / "kth-120.swf", 120)
    camp = tmp_path / "soysal.json"
    r = CliRunner().invoke(cli, ["study", "soysal", "--quick", "--trace", str(trace), "--campaign", str(camp)])
    assert r.exit_code == 0, r.output
    doc = json.loads(camp.read_text())
    assert doc["study"] == "soysal" and doc["params"]["trace"] == str(trace.resolve())
    dry = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--dry-run"], capture_output=True,
                         text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert len(S.campaign_runs(doc["params"])) == 20 and dry.stdout.count("kind=") == 20
    assert not (tmp_path / "results").exists()  # --campaign runs nothing


@pytest.mark.long
@pytest.mark.ray
def test_campaign_file_runs_with_sweep_and_gives_the_study(kth_path, tmp_path):
    trace = small_swf(kth_path, tmp_path / "kth-120.swf", 120)
    camp = tmp_path / "soysal.json"
    assert CliRunner().invoke(cli, ["study", "soysal", "--quick", "--trace", str(trace),
                                    "--campaign", str(camp)]).exit_code == 0
    out = tmp_path / "swept"
    run = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--workers", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    swept = json.loads((out / "summary.json").read_text())
    ref = S.run_study(tmp_path / "ref", S.QUICK, trace=str(trace), figures=False, engine=IN_PROCESS)
    assert same_records(swept["records"], ref["records"]) and same_records(swept["advance"], ref["advance"])
    assert (out / "fig_advance.png").is_file()


def test_a_campaign_of_advance_runs_only_gives_its_table_and_figure(tmp_path):
    """No T_NAP run (``schedulers: []``): no ``cdf`` table in the results, and the summary, CSVs and
    the advance figure still come out (it crashed on the missing table before)."""
    trace = shared_file("KTH-SP2-1996-2.1-cln.swf.gz")  # skips, saying where it looked, without the data
    size = S.Size(schedulers=(), predictor=False, limit=120, advance_schedulers=("sas",), advance_lambdas=(0.0,))
    s = S.run_study(tmp_path, size, trace=str(trace), figures=True, engine=IN_PROCESS)
    assert s["records"] == [] and len(s["advance"]) == 2 and {r["advance"] for r in s["advance"]} == {False, True}
    assert (tmp_path / "fig_advance.png").is_file() and not (tmp_path / "fig4.png").exists()
    assert (tmp_path / "advance.csv").read_text().count("\n") == 3


def test_one_run_with_a_depth_is_the_spec_iolab_simulate_runs(kth_path):
    """``advance_run`` without windows and with a backfill depth is one simulation of the spec
    ``experiment(..., backfill_depth=D)``: the same numbers; and the depth reaches the scheduler (a
    depth of 0 under SAS gives another schedule than none on these 300 crowded jobs)."""
    from iolab.sim.batch.run import simulate_batch
    import numpy as np
    row = S.advance_run(str(kth_path), 100, "sas", 1.0, 300, True, 2048.0, 0, 600.0, 60.0, None, 0)
    spec = S.experiment(str(kth_path), 100, "sas", 1.0, 300, io=True, advance=True, hps_capacity_gb=2048.0, seed=0,
                        backfill_depth=0)
    assert spec.scheduler.backfill_depth == 0
    tr = simulate_batch(spec, strict=False)
    turn = np.asarray(tr.jobs["end"], dtype=float) - np.asarray(tr.jobs["release"], dtype=float)
    assert row["windows"] == 1 and row["jobs"] == 300
    assert row["early_copies"] == tr.attrs["advance_stage_in"]["early_copies"]
    assert math.isclose(row["mean_turnaround"], float(np.mean(turn)), rel_tol=1e-12)
    free = S.advance_run(str(kth_path), 100, "sas", 1.0, 300, True, 2048.0, 0, 600.0, 60.0, None, None)
    assert free["mean_turnaround"] != row["mean_turnaround"]


def test_window_and_depth_options_reach_the_advance_runs_only(kth_path, tmp_path):
    """``--window 0 --backfill-depth 7``: every advance run is one run of the trace with depth 7, the
    T_NAP runs are untouched; without the options the advance runs name no depth (their ids as before)."""
    camp = tmp_path / "c.json"
    r = CliRunner().invoke(cli, ["study", "soysal", "--quick", "--window", "0", "--backfill-depth", "7",
                                 "--campaign", str(camp)])
    assert r.exit_code == 0, r.output
    params = json.loads(camp.read_text())["params"]
    assert params["advance_window"] is None and params["advance_backfill_depth"] == 7
    runs = S.campaign_runs(params)
    adv = [a for a in runs if a["kind"] == "advance"]
    assert adv and all(a["window"] is None and a["backfill_depth"] == 7 for a in adv)
    assert all("backfill_depth" not in a for a in runs if a["kind"] == "tnap")
    plain = S.params_of(S.QUICK)
    assert "advance_backfill_depth" not in plain
    assert all("backfill_depth" not in a and a["window"] == 500 for a in S.campaign_runs(plain) if a["kind"] == "advance")
    bad = CliRunner().invoke(cli, ["study", "soysal", "--quick", "--backfill-depth", "-1", "--campaign", str(camp)])
    assert bad.exit_code == 2 and "--backfill-depth" in bad.output
