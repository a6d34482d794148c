"""Batsim JSON workloads: imported as a spec (each profile kind's runtime and bytes, by hand), simulated, exported
(``--format batsim-json``) and imported again give the same jobs; a workload iolab cannot read is refused naming
the job, the profile and the field (exit 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.specs.load import load_spec

WORKLOAD = {
    "nb_res": 4,
    "jobs": [
        {"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "d20"},
        {"id": "2", "subtime": 5, "res": 4, "walltime": 200, "profile": "ph"},
        {"id": "3", "subtime": 6, "res": 1, "profile": "seq"},
        {"id": "4", "subtime": 7, "res": 1, "walltime": 50, "profile": "d20", "input": 2e9, "storage": 4e9,
         "user": "u7", "dependencies": ["1"]},
        {"id": "5", "subtime": 9, "res": 2, "walltime": 30, "profile": "pht"},
    ],
    "profiles": {
        "d20": {"type": "delay", "delay": 20},
        "ph": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 1.25e8},
        "pht": {"type": "parallel_homogeneous_total", "cpu": 4e10, "com": 2.5e9},
        "pfs": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e9, "bytes_to_write": 5e8},
        "seq": {"type": "composed", "repeat": 2, "seq": ["d20", "pfs"]},
    },
}


def _import(path, out, *extra):
    return CliRunner().invoke(cli, ["workload", "import", "batsim", str(path), "-o", str(out), *extra])


def _jobs(spec_path):
    return [j.model_dump() for j in load_spec(str(spec_path)).workload.jobs]


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(WORKLOAD))
    return path


def test_each_profile_kind_gives_the_runtime_and_bytes_the_docs_say(workload, tmp_path):
    res = _import(workload, tmp_path / "s.yaml")
    assert res.exit_code == 0, res.output
    jobs = {j["id"]: j for j in _jobs(tmp_path / "s.yaml")}
    assert jobs["1"]["runtime"] == 20 and jobs["1"]["input"] == 0
    # cpu / 1e9 flop/s + com x (res - 1) / 1.25e9 B/s
    assert jobs["2"]["runtime"] == pytest.approx(10 + 1.25e8 * 3 / 1.25e9)
    # (delay 20 + pfs) twice: 40 s of compute, 2 x 1 GB read, the first write a checkpoint, the last the output;
    # its bytes at R_lps = 1 GB/s; no walltime: its runtime
    j3 = jobs["3"]
    assert (j3["runtime"], j3["input"], j3["data"], j3["output"], j3["walltime"]) == (43, 2e9, 5e8, 5e8, 43)
    # iolab's fields set the bytes within the delay's runtime; user kept; unknown fields ignored
    assert (jobs["4"]["runtime"], jobs["4"]["input"], jobs["4"]["storage"], jobs["4"]["user"]) == (20, 2e9, 4e9, "u7")
    # the total's cpu and com split over 2 nodes: 2e10 / 1e9 + 1.25e9 x 1 / 1.25e9
    assert jobs["5"]["runtime"] == pytest.approx(21)


def test_import_simulate_export_import_gives_the_same_jobs(workload, tmp_path):
    assert _import(workload, tmp_path / "s.yaml").exit_code == 0
    run = CliRunner().invoke(cli, ["simulate", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "t.h5"), "--strict"])
    assert run.exit_code == 0, run.output
    exp = CliRunner().invoke(cli, ["export", str(tmp_path / "t.h5"), "--format", "batsim-json",
                                   "-o", str(tmp_path / "w2.json")])
    assert exp.exit_code == 0, exp.output
    doc = json.loads((tmp_path / "w2.json").read_text())
    ran = {j["id"]: j["iolab"] for j in doc["jobs"]}
    assert ran["1"] == {"status": "ok", "start": 0.0, "end": 20.0, "tier": "lps", "alloc": "0-1"}
    assert _import(tmp_path / "w2.json", tmp_path / "s2.yaml").exit_code == 0
    assert _jobs(tmp_path / "s2.yaml") == _jobs(tmp_path / "s.yaml")


@pytest.mark.parametrize("change, words", [
    (lambda w: w["profiles"].update(d20={"type": "smpi", "trace": "x.txt"}),
     ["jobs[0] (1)", "profiles.d20.type", "'smpi'", "delay"]),
    (lambda w: w["jobs"][1].update(id="w0!2"), ["jobs[1].id", "'w0!2'"]),
    (lambda w: w["jobs"][1].update(res=8), ["job 2 needs 8 nodes", "4 (nb_res)"]),
    (lambda w: w["jobs"][2].update(profile="nope"), ["jobs[2] (3)", "profiles.nope: no such profile"]),
    (lambda w: w["profiles"].update(pfs={"type": "composed", "seq": ["seq"]}), ["cycle", "seq -> pfs -> seq"]),
    (lambda w: w["jobs"][0].update(subtime=-1), ["jobs[0].subtime", "-1"]),
    (lambda w: w["jobs"][3].update(input="2 GB"), ["jobs[3].input", "'2 GB'"]),
])
def test_a_workload_iolab_cannot_read_is_refused_naming_the_field(workload, tmp_path, change, words):
    w = json.loads(workload.read_text())
    change(w)
    workload.write_text(json.dumps(w))
    res = _import(workload, tmp_path / "s.yaml")
    assert res.exit_code == 2, res.output
    for word in words:
        assert word in res.output, res.output
    assert not (tmp_path / "s.yaml").exists()


def test_a_file_that_is_not_json_is_refused_with_its_line(tmp_path):
    bad = tmp_path / "w.json"
    bad.write_text('{"jobs": [\n  {"id": 1,}\n]}')
    res = _import(bad, tmp_path / "s.yaml")
    assert res.exit_code == 2 and "not JSON (line 2" in res.output, res.output
