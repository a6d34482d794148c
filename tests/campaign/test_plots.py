"""Figures of a trace: the Gantt chart of phases and grants, and node utilisation (no Ray)."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from iolab.cli import cli
from iolab.plots.trace import gantt, occupancy
from iolab.specs import load_spec
from iolab.trace import write_trace
from iolab.sim.run import simulate

from campaign_helpers import TABLE1


def small_trace(policy="fifo"):
    spec = load_spec(TABLE1)
    spec = spec.model_copy(update={"apps": [a.model_copy(update={"iterations": a.iterations // 100}) for a in spec.apps]})
    return simulate(spec, policy=policy)


def test_gantt_draws_every_transfer_and_every_wait(tmp_path):
    trace = small_trace()
    io_phases = int((trace.phases["kind"] != "compute").sum())
    waits = int((trace.grants["grant"] > trace.grants["request"]).sum())
    assert waits > 0  # FIFO on one I/O node: some apps wait
    drawn = gantt(trace, tmp_path / "g.svg")
    assert (drawn.apps, drawn.transfers, drawn.waits) == (5, io_phases, waits)
    assert drawn.computes == int((trace.phases["kind"] == "compute").sum())
    assert drawn.path.read_text().count("<svg") == 1


def test_utilisation_never_exceeds_the_platform_and_integrates_to_the_phases():
    trace = small_trace()
    times, levels, total = occupancy(trace)
    stacked = sum(levels.values())
    assert total == 64 and stacked.max() <= total and stacked.min() >= 0
    nodes = dict(zip(trace.jobs["id"], trace.jobs["nodes"]))
    dt = np.diff(times)
    ph = trace.phases
    compute_area = sum(nodes[j] * (e - s) for j, k, s, e in zip(ph["job"], ph["kind"], ph["start"], ph["end"])
                       if k == "compute")
    assert np.isclose((levels["computing"][:-1] * dt).sum(), compute_area)
    g = trace.grants
    wait_area = sum(nodes[j] * (gr - rq) for j, rq, gr in zip(g["job"], g["request"], g["grant"]))
    assert np.isclose((levels["waiting for I/O"][:-1] * dt).sum(), wait_area)
    assert levels["computing"][-1] == levels["transferring"][-1] == levels["waiting for I/O"][-1] == 0


def test_report_on_a_trace_keeps_its_text_and_draws_the_figures(tmp_path):
    path = write_trace(small_trace("stretch"), tmp_path / "t.h5")
    r = CliRunner().invoke(cli, ["report", str(path), "--figures", str(tmp_path / "f")])
    assert r.exit_code == 0, r.output
    assert "policy stretch" in r.output and "makespan" in r.output and "max slowdown" in r.output
    for name in ("gantt.png", "utilisation.png"):
        data = (tmp_path / "f" / name).read_bytes()
        assert data[:4] == b"\x89PNG" and len(data) > 5_000
    j = CliRunner().invoke(cli, ["report", str(path), "--json"])
    assert j.exit_code == 0 and '"makespan"' in j.output
