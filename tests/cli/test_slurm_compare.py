"""``iolab slurm compare``: a recorded job completion log against the simulations, and what it refuses
before any simulation (a figure it cannot write, a policy it does not know)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli import cli

LOG = Path(__file__).resolve().parents[1] / "data" / "slurm" / "replay-8nodes.jobcomp"


def run(*args):
    r = CliRunner().invoke(cli, ["slurm", "compare", str(LOG), *map(str, args)])
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r


def test_without_the_slurm_scheduler_the_targets_are_said_not_measured():
    r = run("--policies", "fcfs,easy")
    assert r.exit_code == 0, r.output
    assert "targets for slurm: not measured (slurm is not among --policies)" in r.output
    assert [ln.split()[0] for ln in r.output.splitlines() if ln.startswith(("fcfs", "easy"))] == ["fcfs", "easy"]
    j = json.loads(run("--policies", "fcfs", "--json").output)
    assert [p["policy"] for p in j["policies"]] == ["fcfs"] and j["targets"]["met"] is None
    both = json.loads(run("--policies", "slurm,fcfs", "--json").output)  # with it, the targets are judged
    assert both["targets"]["met"] in (True, False)


@pytest.mark.parametrize("policies", ["bogus", "fcfs,nope", " , "])
def test_an_unknown_policy_is_refused_naming_it(policies):
    r = run("--policies", policies)
    assert r.exit_code == 2 and "--policies" in r.output and "not a built-in scheduler" in r.output, r.output


@pytest.mark.parametrize("name", ["fig.txt", "fig", "fig.jobcomp"])
def test_a_figure_of_a_format_it_cannot_write_is_refused_before_the_work(tmp_path, name):
    r = run("--figure", tmp_path / name)
    assert r.exit_code == 2 and f"--figure {tmp_path / name}: a figure is written as .png, .svg, .pdf" in r.output
    assert "policy" not in r.output  # refused before the comparison was printed
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_the_figure_is_written_in_the_format_its_name_says(tmp_path, suffix):
    fig = tmp_path / f"replay{suffix}"
    r = run("--figure", fig)
    assert r.exit_code == 0, r.output
    head = fig.read_bytes()[:8]
    assert {".png": head.startswith(b"\x89PNG"), ".svg": b"<?xml" in head or b"<svg" in head,
            ".pdf": head.startswith(b"%PDF")}[suffix], head
