"""The two-app example of the issue: FIFO, ties by lowest id."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.metrics import io_metrics
from iolab.specs import parse_spec
from iolab.sim.io.run import simulate

EXAMPLE = """\
platform: {io_nodes: 1, nodes_per_io_node: 64, bandwidth: 1.0}
policy: fifo
apps:
  - {id: A, nodes: 16, release: 0, iterations: 2, compute: 10, io_volume: 5}
  - {id: B, nodes: 16, release: 0, iterations: 2, compute: 10, io_volume: 5}
"""


@pytest.mark.parametrize("mode,dt", [("event", 1.0), ("step", 1.0), ("step", 0.25)])
def test_two_apps_fifo(mode, dt):
    import yaml

    m = io_metrics(simulate(parse_spec(yaml.safe_load(EXAMPLE)), mode=mode, dt=dt))
    assert m.makespan == 35.0
    assert [a.stretch for a in m.apps] == [1.0, 30 / 35]
    assert m.max_stretch == pytest.approx(35 / 30)


def test_cli_json_output(tmp_path):
    spec = tmp_path / "ex.yaml"
    spec.write_text(EXAMPLE)
    out = tmp_path / "t.h5"
    res = CliRunner().invoke(cli, ["simulate", str(spec), "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["makespan"] == 35.0
    assert [(a["id"], a["end"]) for a in data["apps"]] == [("A", 30.0), ("B", 35.0)]
    assert data["apps"][1]["stretch"] == pytest.approx(30 / 35)
    # report reads the saved trace and gives the same numbers
    rep = CliRunner().invoke(cli, ["report", str(out), "--json"])
    assert rep.exit_code == 0, rep.output
    assert json.loads(rep.output) == data


def test_cli_table_and_policy_override(tmp_path):
    spec = tmp_path / "ex.yaml"
    spec.write_text(EXAMPLE)
    res = CliRunner().invoke(cli, ["simulate", str(spec), "--policy", "shared"])
    assert res.exit_code == 0, res.output
    assert "makespan 40 s" in res.output  # shared: both transfers take 10 s at b/2
    assert "policy shared" in res.output
