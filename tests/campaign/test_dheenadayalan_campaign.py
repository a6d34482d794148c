"""``iolab study dheenadayalan`` as a campaign: Table 1's totals agree with the per-job rows of every run,
the engine gives the numbers of a bare loop over the same runs, a rerun (or a run cut short) redoes no
finished run, and ``--campaign FILE`` writes a campaign that ``iolab sweep`` expands to the same runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import replace

import pytest
from click.testing import CliRunner

from iolab.campaign import load_results
from iolab.campaign.journal import Journal
from iolab.campaign.study import StudyCampaign, expand_study
from iolab.cli import cli
from iolab.errors import SpecError
from iolab.studies import dheenadayalan as D
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign

from test_study_campaign import csv_rows, same

IN_PROCESS = Engine(use_ray=False, progress=False)
RUNS = 12  # 3 data sets x 2 schedulers x controller off/on


def hms_seconds(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return 3600 * h + 60 * m + s


def test_table1_totals_are_the_sums_over_each_runs_jobs(tmp_path):
    s = D.run_study(tmp_path, D.QUICK, figures=False, engine=IN_PROCESS)
    res = load_results(tmp_path)
    rows = rows_of(res)
    assert rows == s["rows"] and len(rows) == RUNS
    assert {(r["dataset"], r["scheduler"], r["controller"]) for r in rows} == {
        (d, sc, on) for d in ("DS1", "DS2", "DS3") for sc in ("fcfs", "easy") for on in (False, True)}
    jobs, susp = defaultdict(list), defaultdict(list)
    for j in rows_of(res, "jobs"):
        jobs[j["index"]].append(j)
    for x in rows_of(res, "suspensions"):
        susp[x["index"]].append(x)
    drawn = D.datasets(D.QUICK)
    for i, r in zip(res.columns["index"], rows):
        js = jobs[int(i)]
        assert sorted(j["job"] for j in js) == sorted(j["id"] for j in drawn[r["dataset"]])
        assert r["size"] == len(js) and r["io_jobs"] == sum(j["io"] for j in js) == r["size"] - r["cpu_jobs"]
        completion = sum(j["end"] - j["start"] for j in js)
        flow = sum(j["end"] - j["submit"] for j in js)
        assert r["total_completion"] == pytest.approx(completion, rel=1e-12)
        assert r["total_flow"] == pytest.approx(flow, rel=1e-12)
        assert abs(hms_seconds(r["completion_hms"]) - completion) <= 0.5
        assert abs(hms_seconds(r["flow_hms"]) - flow) <= 0.5
        assert r["suspensions"] == len(susp[int(i)]) == sum(j["suspensions"] for j in js)
        if not r["controller"]:
            assert r["suspensions"] == 0
        for x in susp[int(i)]:  # a suspension lies inside its job's run, and only I/O jobs are suspended
            j = next(j for j in js if j["job"] == x["job"])
            assert j["io"] and j["start"] <= x["start"] < x["end"] <= j["end"]
    by = {(r["dataset"], r["scheduler"], r["controller"]): r for r in rows}
    on, off = by[("DS1", "fcfs", True)], by[("DS1", "fcfs", False)]
    # the quick size's DS1 runs under the real DS1 runs' controller (r_threshold 45 s): it suspends I/O jobs and
    # shortens the total; DS2 keeps §5's 60 s, suspends nothing, and the summary says why
    assert on["suspensions"] > 0 and on["total_completion"] < off["total_completion"]
    assert by[("DS2", "fcfs", True)]["suspensions"] == 0
    assert any(w.startswith("DS2 FCFS sim") for w in s["why"])
    table = csv_rows(tmp_path / "runs.csv")  # the CSV copy of Table 1
    assert [(r["dataset"], r["total_completion"]) for r in table] == [(r["dataset"], r["total_completion"]) for r in rows]
    assert len(csv_rows(tmp_path / "jobs.csv")) == sum(len(v) for v in jobs.values())


def test_engine_gives_the_rows_of_a_bare_loop(tmp_path):
    run_as_campaign("dheenadayalan", D.params_of(D.QUICK), tmp_path, IN_PROCESS)
    res = load_results(tmp_path)
    bare = [D.run_one(a["dataset"], a["scheduler"], a["controller"], D.QUICK)
            for a in D.campaign_runs(D.params_of(D.QUICK))]
    assert same(rows_of(res), [b["rows"][0] for b in bare])
    for table in ("jobs", "suspensions"):
        got = [{k: v for k, v in r.items() if k != "index"} for r in rows_of(res, table)]
        assert same(got, [t for b in bare for t in b["tables"][table]]), table


def test_rerun_redoes_nothing_and_a_cut_short_study_runs_only_the_rest(tmp_path):
    out = tmp_path / "d"
    args = ["study", "dheenadayalan", "--quick", "--no-ray", "--no-emulate", "--no-figures", "--out", str(out)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    journal = out / "journal.jsonl"
    done = Journal(journal).load()
    summary = json.loads((out / "summary.json").read_text())
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert journal.read_text().count("\n") == RUNS  # nothing appended: no run redone
    assert all(Journal(journal).load()[rid]["finished_at"] == rec["finished_at"] for rid, rec in done.items())
    assert same(json.loads((out / "summary.json").read_text())["rows"], summary["rows"])

    # what a kill after 5 runs leaves: the journal's first 5 lines; the rerun runs the 7 others
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "journal.jsonl").write_text("".join(journal.read_text().splitlines(keepends=True)[:5]))
    _, run = run_as_campaign("dheenadayalan", D.params_of(D.QUICK), cut, IN_PROCESS)
    assert (run.skipped, run.executed) == (5, RUNS - 5)
    resumed = D.run_study(cut, D.QUICK, figures=False, engine=IN_PROCESS)
    assert same(resumed["rows"], summary["rows"])


def test_campaign_file_expands_in_sweep_to_the_studys_runs(tmp_path):
    camp = tmp_path / "d.json"
    res = CliRunner().invoke(cli, ["study", "dheenadayalan", "--quick", "--seed", "7", "--campaign", str(camp)])
    assert res.exit_code == 0, res.output
    spec = json.loads(camp.read_text())
    assert spec["study"] == "dheenadayalan" and spec["params"]["seed"] == 7 and not (tmp_path / "results").exists()
    dry = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--dry-run"],
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert f"{RUNS} runs (study dheenadayalan)" in dry.stdout
    ids = [line.split()[1] for line in dry.stdout.splitlines()[1:]]
    want = expand_study(StudyCampaign(name="x", study="dheenadayalan", params=D.params_of(replace(D.QUICK, seed=7))))
    assert ids == [r.run_id for r in want]
    other = expand_study(StudyCampaign(name="x", study="dheenadayalan", params=D.params_of(D.QUICK)))
    assert not set(ids) & {r.run_id for r in other}  # the seed is part of every run's id


def test_bad_size_is_refused_naming_the_field():
    for params, word in (({"ds2_jobs": "many"}, "ds2_jobs"), ({"nope": 1}, "nope"), ({"ds2_io": 500}, "ds2_io")):
        with pytest.raises(SpecError) as err:
            expand_study(StudyCampaign(name="x", study="dheenadayalan", params=params))
        assert "params" in str(err.value) and word in str(err.value)
    # 600 and 600.0 are one size: the same run ids
    a = expand_study(StudyCampaign(name="x", study="dheenadayalan", params={"mean_interarrival": 600}))
    b = expand_study(StudyCampaign(name="x", study="dheenadayalan", params={"mean_interarrival": 600.0}))
    assert [r.run_id for r in a] == [r.run_id for r in b]


@pytest.mark.long
@pytest.mark.ray
def test_campaign_file_runs_with_sweep_and_gives_the_study(tmp_path):
    camp = tmp_path / "d.json"
    assert CliRunner().invoke(cli, ["study", "dheenadayalan", "--quick", "--campaign", str(camp)]).exit_code == 0
    out = tmp_path / "swept"
    run = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--workers", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(Journal(out / "journal.jsonl").load()) == RUNS
    ref = D.run_study(tmp_path / "ref", D.QUICK, figures=False, engine=IN_PROCESS)
    swept = json.loads((out / "summary.json").read_text())
    assert same(swept["rows"], ref["rows"]) and (out / "fig1-gantt.png").stat().st_size > 10_000
