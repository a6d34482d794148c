"""A real batch run (MPI jobs, the Ray storage manager) reported and exported like a simulated one."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.workloads import read_swf
from iolab.trace import read_trace

pytestmark = [pytest.mark.mpi, pytest.mark.ray, pytest.mark.long]  # a real run of ~15 s behind every test

SPEC = """
kind: batch
name: sas-small
platform: {nodes: 4, memory_per_node: 8GB, lps: {rate: 1 GB/s}, hps: {rate: 15 GB/s, capacity: 150 GB},
           stage_rate: 5 GB/s}
scheduler: sas
workload:
  - {id: a, submit: 0, nodes: 1, walltime: 1200, runtime: 1000, input: 100GB, output: 100GB, data: 16GB,
     storage: 108GB}
  - {id: b, submit: 0, nodes: 1, walltime: 700, runtime: 600, output: 1GB}
  - {id: d, submit: 150, nodes: 2, walltime: 900, runtime: 700, input: 20GB, output: 5GB, storage: 20GB}
emulator: {time_scale: 0.01, bytes_scale: 0.0001}
"""


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("emu")
    (d / "spec.yaml").write_text(SPEC)
    res = CliRunner().invoke(cli, ["emulate", str(d / "spec.yaml"), "--out", str(d / "run.h5")])
    assert res.exit_code == 0, res.output
    return d / "run.h5"


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_report_and_exports_of_a_real_run(emulated, tmp_path):
    trace = read_trace(emulated)
    assert trace.attrs["runtime"] == "emulator-batch"
    res = CliRunner().invoke(cli, ["report", str(emulated), "--json", "--figures", str(tmp_path / "f")])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    jobs = {j["id"]: j for j in r["per_job"]}
    assert set(jobs) == {"a", "b", "d"}
    for row in trace.jobs.rows():
        assert jobs[row["id"]]["wait"] == pytest.approx(row["start"] - row["release"])
    assert jobs["d"]["wait"] >= 0 and r["utilisation"]["max"] <= 1.0
    assert (tmp_path / "f" / "gantt.png").stat().st_size > 5000

    swf = tmp_path / "run.swf"
    assert CliRunner().invoke(cli, ["export", str(emulated), "--format", "swf", "-o", str(swf)]).exit_code == 0
    recs = {r.job: r for r in read_swf(swf).records}
    assert [recs[k].req_time for k in (1, 2, 3)] == [1200, 700, 900]  # the spec's walltimes
    assert recs[3].submit == 150

    csv_ = tmp_path / "jobs.csv"
    assert CliRunner().invoke(cli, ["export", str(emulated), "--format", "batsim-csv", "-o", str(csv_)]).exit_code == 0
    JobSet = pytest.importorskip("evalys.jobset").JobSet
    js = JobSet.from_csv(str(csv_), resource_bounds=(0, 3))
    hosts = {row["id"]: row["hosts"] for row in trace.jobs.rows()}
    for jid, res_ in zip(js.df["jobID"], js.df["allocated_resources"]):  # the nodes the run recorded
        assert sorted(f"n{x}" for x in res_) == sorted(hosts[jid].split(","))
