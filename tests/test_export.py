"""iolab export: SWF that iolab's own reader gives back, Batsim's jobs.csv that evalys loads, CSV per table."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from iolab.trace.schema import TABLES
from click.testing import CliRunner
from shared_data import REPO, shared_file

from iolab.cli import cli
from iolab.cli.export import spec_jobs
from iolab.export import BATSIM_COLUMNS, to_swf
from iolab.metrics.batch_trace import batch_report
from iolab.sim.batch.run import simulate_batch
from iolab.workloads import load_workload, read_swf, swf_jobs
from iolab.specs import load_spec, parse_spec
from iolab.trace import read_trace, write_trace


@pytest.fixture(scope="module")
def lackner(tmp_path_factory):
    """examples/lackner-sas.yaml simulated: 500 jobs, some on HPS (stage-in/out in their run time)."""
    spec = load_spec(REPO / "examples" / "lackner-sas.yaml")
    trace = simulate_batch(spec)
    path = write_trace(trace, tmp_path_factory.mktemp("lackner") / "sas.h5")
    return spec, read_trace(path), path


def test_swf_round_trip_gives_the_same_jobs(lackner, tmp_path):
    spec, trace, path = lackner
    out = tmp_path / "sas.swf"
    res = CliRunner().invoke(cli, ["export", str(path), "--format", "swf", "-o", str(out)])
    assert res.exit_code == 0, res.output
    back = {j.id: j for j in swf_jobs(out)}
    truth = {j.id: j for j in load_workload(spec)}
    jobs = trace.jobs
    assert len(back) == len(jobs) == 500
    for i, jid in enumerate(jobs["id"]):
        b = back[jid]
        assert b.submit == pytest.approx(jobs["release"][i], abs=1e-6)
        assert b.nodes == jobs["nodes"][i]
        assert b.runtime == pytest.approx(jobs["end"][i] - jobs["start"][i], abs=2e-6)  # the run's, not the spec's
        assert b.walltime == pytest.approx(truth[jid].walltime, abs=1e-6)
        assert b.user == truth[jid].user.lstrip("u")
    recs = {str(r.job): r for r in read_swf(out).records}
    waits = [recs[j].wait for j in jobs["id"]]
    assert waits == pytest.approx(list(jobs["start"] - jobs["release"]), abs=2e-6)
    assert all(r.status == 1 for r in recs.values())
    assert read_swf(out).max_nodes == 128 == read_swf(out).max_procs


def test_swf_of_a_real_trace_keeps_its_records(tmp_path):
    """KTH-SP2's first 300 jobs simulated under EASY: submit, size, request and user as in the original."""
    kth = shared_file("KTH-SP2-1996-2.1-cln.swf.gz")
    spec = parse_spec({"kind": "batch", "platform": {"nodes": 100, "lps": {"rate": "1 GB/s"},
                                                      "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                                                      "stage_rate": "5 GB/s"},
                       "scheduler": "easy", "workload": {"source": "swf", "path": str(kth), "limit": 300}})
    trace = simulate_batch(spec)
    out = tmp_path / "kth.swf"
    out.write_text(to_swf(trace, jobs=spec_jobs(trace)))
    orig = {str(r.job): r for r in read_swf(kth, limit=300).records}
    back = read_swf(out).records
    assert len(back) == 300
    for r in back:
        o = orig[str(r.job)]
        assert (r.submit, r.req_procs, r.req_time, r.user) == (o.submit, o.req_procs, o.req_time, o.user)
        assert r.run_time == pytest.approx(o.run_time or 0.0, abs=1e-6)  # all on LPS without I/O: unchanged
    assert sum(r.wait for r in back) > 0  # EASY made some wait


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_batsim_csv_loads_in_evalys(small_trace_file, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    JobSet = pytest.importorskip("evalys.jobset").JobSet
    out = tmp_path / "jobs.csv"
    res = CliRunner().invoke(cli, ["export", str(small_trace_file), "--format", "batsim-csv", "-o", str(out)])
    assert res.exit_code == 0, res.output
    with out.open() as fh:
        assert tuple(next(csv.reader(fh))) == BATSIM_COLUMNS
    js = JobSet.from_csv(str(out), resource_bounds=(0, 3))
    df = js.df.set_index("jobID")
    assert list(df.index) == ["A", "B", "C"]  # D never started: not a Batsim job
    assert df["waiting_time"].tolist() == [0.0, 90.0, 0.0]
    assert df["execution_time"].tolist() == [100.0, 5.0, 40.0]
    assert df["turnaround_time"].tolist() == [100.0, 95.0, 40.0]
    assert df["stretch"].tolist() == [1.0, 19.0, 1.0]  # Batsim's stretch: turnaround / execution time
    assert [str(p) for p in df["allocated_resources"]] == ["0-1", "0-2", "2"]
    # evalys's own utilisation: same mean as ours over [first start, last end] = [0, 105]
    assert js.mean_utilisation() / 4 == pytest.approx(batch_report(read_trace(small_trace_file)).utilisation["mean"])
    js.plot(with_details=True)  # evalys draws its Gantt chart and utilisation from the file
    import matplotlib.pyplot as plt

    fig = plt.gcf()
    fig.savefig(tmp_path / "evalys.png")
    plt.close("all")
    assert (tmp_path / "evalys.png").stat().st_size > 10_000


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_batsim_csv_of_a_simulation_never_overcommits(lackner, tmp_path):
    JobSet = pytest.importorskip("evalys.jobset").JobSet
    _, trace, path = lackner
    out = tmp_path / "jobs.csv"
    assert CliRunner().invoke(cli, ["export", str(path), "--format", "batsim-csv", "-o", str(out)]).exit_code == 0
    js = JobSet.from_csv(str(out), resource_bounds=(0, 127))
    assert len(js.df) == 500
    # no node id held by two jobs at once (jobs that touch at an instant may share)
    df = js.df
    st, en = df["starting_time"].to_numpy(), df["finish_time"].to_numpy()
    res = [set(p) for p in df["allocated_resources"]]
    assert [len(r) for r in res] == df["requested_number_of_resources"].tolist()
    for a in range(len(df)):
        for b in np.flatnonzero((st < en[a]) & (st[a] < en)):
            assert b == a or not (res[a] & res[b]), (df["jobID"][a], df["jobID"][b])
    assert js.mean_utilisation() / 128 == pytest.approx(batch_report(trace).utilisation["mean"], rel=1e-6)


def test_csv_per_table(small_trace, small_trace_file, tmp_path):
    out = tmp_path / "csv"
    res = CliRunner().invoke(cli, ["export", str(small_trace_file), "--format", "csv", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == sorted(["attrs.json"] + [f"{t}.csv" for t in TABLES])
    assert {"jobs.csv", "phases.csv", "grants.csv", "allocations.csv", "actions.csv", "usage.csv"} <= set(
        p.name for p in out.iterdir())
    with (out / "jobs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == list(small_trace.jobs["id"])
    for r, end in zip(rows, small_trace.jobs["end"]):
        assert (r["end"] == "") if math.isnan(end) else float(r["end"]) == end
    with (out / "phases.csv").open() as fh:
        ph = list(csv.DictReader(fh))
    assert [(p["job"], p["kind"], float(p["start"])) for p in ph] == [("C", "stage-in", 20.0), ("C", "compute", 25.0)]
    assert json.loads((out / "attrs.json").read_text())["total_nodes"] == 4


def test_export_refuses_bad_input(tmp_path, small_trace_file):
    bad = tmp_path / "x.h5"
    bad.write_text("nope")
    res = CliRunner().invoke(cli, ["export", str(bad), "--format", "swf", "-o", str(tmp_path / "o.swf")])
    assert res.exit_code == 2 and str(bad) in res.output and "Traceback" not in res.output
    afile = tmp_path / "file"
    afile.write_text("")
    res = CliRunner().invoke(cli, ["export", str(small_trace_file), "--format", "csv", "-o", str(afile)])
    assert res.exit_code == 2 and "exists and is not a folder" in res.output
    res = CliRunner().invoke(cli, ["export", str(small_trace_file), "--format", "xml", "-o", str(afile)])
    assert res.exit_code == 2
