"""A JSON spec is read, validated and simulated without importing yaml (8 ms of the start of
``iolab simulate SPEC.json``), and a YAML one still with it: the same spec either way."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

SPEC = {"kind": "batch", "name": "tiny", "platform": {"nodes": 4, "lps": {"rate": "1 GB/s"},
                                                      "hps": {"rate": "2 GB/s", "capacity": "10 GB"},
                                                      "stage_rate": "1 GB/s"},
        "scheduler": "easy",
        "workload": {"source": "inline", "jobs": [{"id": "a", "submit": 0, "nodes": 2, "walltime": 10, "runtime": 5},
                                                  {"id": "b", "submit": 1, "nodes": 4, "walltime": 10, "runtime": 5}]}}

CHILD = """
import json, sys
from iolab.cli import cli
from click.testing import CliRunner
r = CliRunner().invoke(cli, ["simulate", sys.argv[1], "--json"])
print(json.dumps({"exit": r.exit_code, "out": r.output, "yaml": "yaml" in sys.modules}))
"""


def _simulate(path) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.splitlines()[-1])


def test_a_json_spec_runs_without_yaml_and_as_its_yaml_twin(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SPEC))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SPEC))
    as_json, as_yaml = _simulate(tmp_path / "s.json"), _simulate(tmp_path / "s.yaml")
    assert as_json["exit"] == 0 and not as_json["yaml"]
    assert as_yaml["exit"] == 0 and as_yaml["yaml"]
    assert json.loads(as_json["out"]) == json.loads(as_yaml["out"])


def test_a_bad_json_spec_is_refused_without_yaml(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"kind": "batch",\n "kind": "io"}')
    got = _simulate(path)
    assert got["exit"] == 2 and not got["yaml"] and "given twice" in got["out"] and "Traceback" not in got["out"]
