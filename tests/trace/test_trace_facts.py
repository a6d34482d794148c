"""Damaged traces are not reported or exported as runs: `report` and `export` check a trace's facts (finite
times, end >= start >= release, nodes within the machine, finite attributes) and name the first that fails,
exit 2, no traceback; a partial trace (a job cut short, one never started) still passes."""

from __future__ import annotations

import json
import math

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.trace import read_trace
from iolab.trace.facts import first_problem

BATCH = {"kind": "batch", "scheduler": "easy",
         "platform": {"nodes": 8, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                      "stage_rate": "1GB/s"},
         "workload": {"source": "inline", "jobs": [{"id": f"j{i}", "submit": 100 * i, "nodes": 2, "walltime": 900,
                                                    "runtime": 500, "input": "1GB", "output": "1GB"}
                                                   for i in range(5)]}}
IO = {"name": "small", "platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0},
      "apps": [{"id": "A", "nodes": 16, "iterations": 2, "compute": 10, "io_volume": 5},
               {"id": "B", "nodes": 16, "iterations": 3, "compute": 5, "io_volume": 5}]}


@pytest.fixture(params=["batch", "io"])
def trace(request, tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(BATCH if request.param == "batch" else IO))
    out = tmp_path / "t.h5"
    assert CliRunner().invoke(cli, ["simulate", str(spec), "--out", str(out)]).exit_code == 0
    return out


def edit(path, table, column, row, value):
    with h5py.File(path, "r+") as f:
        col = f[f"{table}/{column}"][...]
        col[row] = value(col) if callable(value) else value
        f[f"{table}/{column}"][...] = col


DAMAGE = {
    "end-before-start": (lambda p: edit(p, "jobs", "end", 1, -1e6), "ends at -1000000.0, before its start"),
    "nan-start-ok": (lambda p: edit(p, "jobs", "start", slice(None), np.nan), "start nan (status ok)"),
    "inf-end": (lambda p: edit(p, "jobs", "end", 1, np.inf), "end inf (status ok)"),
    "start-before-release": (lambda p: edit(p, "jobs", "start", 1, lambda c: c[1] - 1e5),
                             "before its release"),
    "negative-release": (lambda p: edit(p, "jobs", "release", 0, -5.0), "release -5.0"),
    "nodes-above-machine": (lambda p: edit(p, "jobs", "nodes", 0, 10**6), "needs 1000000 nodes; the machine has"),
    "zero-nodes": (lambda p: edit(p, "jobs", "nodes", 0, 0), "nodes 0.0"),
    "phase-backwards": (lambda p: edit(p, "phases", "end", 0, -3.0), "phase"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", ["report", "export"])
def test_a_damaged_trace_is_refused_naming_the_first_fact_it_breaks(trace, tmp_path, damage, command):
    make, words = DAMAGE[damage]
    make(trace)
    args = ["report", str(trace)] if command == "report" else \
        ["export", str(trace), "--format", "swf", "-o", str(tmp_path / "o.swf")]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and words in r.output and str(trace) in r.output, r.output
    assert "Traceback" not in r.output and not (tmp_path / "o.swf").exists()


@pytest.mark.parametrize("attr", ["total_nodes", "lps_rate", "bandwidth", "nodes_per_io_node", "wall_seconds"])
def test_a_nan_attribute_is_refused_naming_it(trace, attr):
    with h5py.File(trace, "r+") as f:
        if attr not in f.attrs:
            pytest.skip("not an attribute of this level's trace")
        f.attrs[attr] = np.nan
    r = CliRunner().invoke(cli, ["report", str(trace)])
    assert r.exit_code == 2 and f"attribute {attr} is nan" in r.output, r.output


def test_a_partial_trace_still_passes(trace):
    """An interrupted run: a job killed while running (no end), one never started (no start, no end)."""
    with h5py.File(trace, "r+") as f:
        status = f["jobs/status"][...]
        status[0], status[1] = b"killed", b"pending"
        f["jobs/status"][...] = status
    edit(trace, "jobs", "end", 0, np.nan)
    edit(trace, "jobs", "start", 1, np.nan)
    edit(trace, "jobs", "end", 1, np.nan)
    t = read_trace(trace)
    assert first_problem(t) is None
    assert math.isnan(t.jobs["end"][0])


def test_the_facts_agree_with_an_independent_row_by_row_check(trace):
    """A plain loop over the rows, written from the facts' text, finds the same first bad row."""
    rng = np.random.default_rng(0)
    t = read_trace(trace)
    for trial in range(20):
        n = len(t.jobs)
        start = t.jobs["start"].astype(float).copy()
        end = t.jobs["end"].astype(float).copy()
        for _ in range(2):
            i = int(rng.integers(n))
            end[i] = start[i] - float(rng.choice([0.0, 1e-4, 5.0]))  # 0 and within the slack are fine
        t.jobs.columns["end"] = end
        want = next((i for i in range(n) if end[i] < start[i] - 1e-3), None)
        got = first_problem(t)
        if want is None:
            assert got is None, got
        else:
            assert got is not None and f"(row {want})" in got, (want, got)
