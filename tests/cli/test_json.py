"""``--json`` wherever a command prints results: stdout is one JSON document and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def iolab_json(*args, cwd: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "iolab", *args, "--json"], cwd=cwd, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)  # fails if anything else is on stdout


def test_every_command_that_prints_results_has_json():
    """Walk the command tree: a command that prints results (every one but the groups, schema and the
    ones that write only a file the user named) takes --json."""
    import click

    from iolab.cli import cli

    ctx = click.Context(cli)
    missing = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])
            return
        if path[-1] == "schema":  # prints a JSON schema already
            return
        if not any("--json" in p.opts for p in cmd.params if isinstance(p, click.Option)):
            missing.append(" ".join(path))

    walk(cli, ["iolab"])
    assert not missing, missing


def test_study_json_is_its_summary(tmp_path):
    s = iolab_json("study", "dheenadayalan", "--quick", "--no-ray", "--no-emulate", "--no-figures", "--out", str(tmp_path / "d"), cwd=tmp_path)
    assert json.loads((tmp_path / "d" / "summary.json").read_text())["rows"] == s["rows"]
    assert {r["scheduler"] for r in s["rows"]} == {"fcfs", "easy"}


def test_export_and_import_json(tmp_path):
    spec = ROOT / "examples" / "lackner-sas.yaml"
    if not spec.exists():
        pytest.skip("examples/lackner-sas.yaml not in this checkout")
    r = subprocess.run([sys.executable, "-m", "iolab", "simulate", str(spec), "--out", str(tmp_path / "t.h5"),
                        "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    e = iolab_json("export", str(tmp_path / "t.h5"), "--format", "swf", "-o", str(tmp_path / "t.swf"), cwd=tmp_path)
    assert e["format"] == "swf" and e["jobs"] == sum(1 for line in (tmp_path / "t.swf").read_text().splitlines()
                                                     if line.strip() and not line.startswith(";"))
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --time=10:00\n#DW jobdw capacity=10GB type=scratch "
                      "access_mode=striped\nsrun ./app\n")
    w = iolab_json("workload", "import", "slurm", str(script), "-o", str(tmp_path / "s.yaml"), cwd=tmp_path)
    assert w == {"output": str(tmp_path / "s.yaml"), "kind": "batch", "jobs": 1, "scripts": 1}
