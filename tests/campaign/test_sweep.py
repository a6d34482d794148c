"""Campaigns on a real local Ray: results equal direct simulation, failures recorded, report figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from iolab.campaign import load_results, load_runs, run_campaign
from iolab.campaign.results import equal, read_h5
from iolab.cli import cli
from iolab.metrics import io_metrics

from campaign_helpers import QUICK, small_campaign

pytestmark = pytest.mark.ray

DIRECT = ("makespan", "max_stretch", "mean_stretch", "worst_stretch", "io_load", "packs", "exec_time",
          "delay_time", "idle_time")


@pytest.fixture(scope="module")
def quick_results(ray_local, tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    summary = run_campaign(QUICK, out, workers=2, progress=False)
    return out, summary


def test_quick_campaign_complete_and_equal_to_direct_simulation(quick_results):
    from iolab.sim.io.run import simulate

    out, summary = quick_results
    assert (summary.total, summary.executed, summary.ok, summary.failed) == (20, 20, 20, 0)
    _, runs = load_runs(QUICK)
    res = read_h5(out / "results.h5")
    assert res.attrs["finished"] == 20 and res.attrs["pending"] == 0
    assert res["run_id"].tolist() == [r.run_id for r in runs]  # campaign order, whatever finished first
    assert set(res["status"].tolist()) == {"ok"}
    for i, run in enumerate(runs):
        trace = simulate(run.spec())
        m = io_metrics(trace)
        for col in DIRECT:
            assert res[col][i] == getattr(m, col), (run.params, col)
        assert res["events"][i] == trace.attrs["events"]
        assert res["policy"][i] == run.params["policy"] and res["workload"][i] == run.params["workload"]
    # the table in the folder (journal + manifest) is the same as results.h5
    assert equal(load_results(out), res, ignore=())
    with h5py.File(out / "results.h5") as f:  # plain h5py access, as docs/campaigns.md shows
        assert f["runs/makespan"].shape == (20,) and f.attrs["campaign"] == "quick"


def test_rerun_skips_every_finished_run(quick_results):
    out, _ = quick_results
    before = (out / "journal.jsonl").read_text()
    again = run_campaign(QUICK, out, workers=2, progress=False)
    assert (again.skipped, again.executed) == (20, 0)
    assert (out / "journal.jsonl").read_text() == before


def test_failing_run_recorded_with_its_error_others_complete(ray_local, tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="failing", runtime="iolab_test_runtimes:failing")
    out = tmp_path / "out"
    s = run_campaign(camp, out, workers=2, progress=False)
    assert (s.executed, s.ok, s.failed) == (20, 15, 5)
    res = load_results(out)
    failed = res["status"] != "ok"
    assert set(res["policy"][failed].tolist()) == {"stretch"}
    for err, wl in zip(res["error"][failed], res["workload"][failed]):
        assert err == f"InjectedFailure: injected failure for {wl} under policy stretch"
    assert np.isnan(res["makespan"][failed]).all() and np.isfinite(res["makespan"][~failed]).all()
    lines = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    assert sum(x["status"] == "failed" and "InjectedFailure" in x["traceback"] for x in lines) == 5
    # a rerun trusts the failures; --retry-failed reruns exactly them
    assert run_campaign(camp, out, workers=2, progress=False).executed == 0
    retry = run_campaign(camp, out, workers=2, progress=False, retry_failed=True)
    assert (retry.executed, retry.failed) == (5, 5)
    # and the CLI says so with exit status 3
    r = CliRunner().invoke(cli, ["sweep", str(camp), "--out", str(out), "--retry-failed"])
    assert r.exit_code == 1 and "5 run(s) failed" in r.output


def test_traces_kept_on_request(ray_local, tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="traces", policies=["fifo"], workloads=[
        {"generate": "carretero", "alpha": [1, 2], "params": {"apps": [3, 4], "iterations": [5, 6]}}])
    s = run_campaign(camp, tmp_path / "out", workers=2, progress=False, traces=tmp_path / "traces")
    assert s.ok == 2
    res = load_results(tmp_path / "out")
    from iolab.trace import read_trace

    for rid, path, mk in zip(res["run_id"], res["trace"], res["makespan"]):
        assert Path(path) == (tmp_path / "traces" / f"{rid}.h5").resolve()
        assert io_metrics(read_trace(path)).makespan == mk


def test_report_on_a_campaign_summary_and_figures(quick_results, tmp_path):
    out, _ = quick_results
    figs = tmp_path / "figs"
    r = CliRunner().invoke(cli, ["report", str(out), "--figures", str(figs)])
    assert r.exit_code == 0, r.output
    assert "campaign quick: 20 of 20 runs finished, 0 failed" in r.output
    for policy in ("fifo", "shortest-io", "longest-remaining", "stretch", "shared"):
        assert any(line.startswith(policy + " ") for line in r.output.splitlines()), policy
    for name in ("makespan.png", "max_slowdown.png"):
        data = (figs / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    j = CliRunner().invoke(cli, ["report", str(out / "results.h5"), "--json"])
    s = json.loads(j.output)
    assert {k: v["runs"] for k, v in s["strategies"].items()} == {
        "fifo": 4, "shortest-io": 4, "longest-remaining": 4, "stretch": 4, "shared": 4}
    res = load_results(out)
    fifo = res["makespan"][res["policy"] == "fifo"]
    assert math.isclose(s["strategies"]["fifo"]["makespan"]["gmean"], float(np.exp(np.log(fifo).mean())))
    assert min(v["makespan_relative"]["min"] for v in s["strategies"].values()) == 1.0
