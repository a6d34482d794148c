"""The batch user's metrics against values computed by hand for the small trace of small_batch_trace.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.cli import cli
from iolab.metrics.batch import (
    assign_nodes, bounded_slowdown, id_ranges, node_utilisation, step_curve, summary, time_weighted_summary,
)
from iolab.metrics.batch_trace import batch_report, job_nodes
from iolab.metrics.batch_trace import trace_batch_metrics
from iolab.trace import read_trace

# window [0, 105]: nodes held 2 on [0,20), 3 on [20,60), 2 on [60,100), 3 on [100,105) of 4
UTIL_MEAN = (0.5 * 60 + 0.75 * 45) / 105
HPS_MEAN = 0.5 * 40 / 105


def test_per_job_values(small_trace):
    r = batch_report(small_trace)
    by = {j.id: j for j in r.per_job}
    assert set(by) == {"A", "B", "C"}  # D never started
    assert (r.jobs, r.finished, r.statuses) == (4, 3, {"ok": 3, "pending": 1})
    assert [by[k].wait for k in "ABC"] == [0.0, 90.0, 0.0]
    assert [by[k].turnaround for k in "ABC"] == [100.0, 95.0, 40.0]
    assert [by[k].run for k in "ABC"] == [100.0, 5.0, 40.0]
    assert [by[k].bounded_slowdown for k in "ABC"] == [1.0, 9.5, 1.0]  # B: 95 / max(5, 10)


def test_aggregates(small_trace):
    r = batch_report(small_trace)
    assert r.tau == 10.0
    assert r.wait == pytest.approx({"mean": 30.0, "median": 0.0, "p95": 81.0, "max": 90.0})
    assert r.turnaround == pytest.approx({"mean": 235 / 3, "median": 95.0, "p95": 99.5, "max": 100.0})
    assert r.bounded_slowdown == pytest.approx({"mean": 11.5 / 3, "median": 1.0, "p95": 8.65, "max": 9.5})
    assert r.utilisation == pytest.approx({"mean": UTIL_MEAN, "median": 0.5, "p95": 0.75, "max": 0.75})
    assert r.hps_utilisation == pytest.approx({"mean": HPS_MEAN, "median": 0.0, "p95": 0.5, "max": 0.5})
    assert (r.span, r.makespan) == ((0.0, 105.0), 105.0)


def test_time_weighted_mean_is_eq3(small_trace):
    """The mean of utilisation over time is lackner2019 Eq. 3, computed independently by trace_batch_metrics."""
    m = trace_batch_metrics(small_trace)
    r = batch_report(small_trace)
    assert r.utilisation["mean"] == pytest.approx(m.node_utilisation)
    assert r.hps_utilisation["mean"] == pytest.approx(m.hps_utilisation)
    assert m.node_utilisation == pytest.approx(255 / 420)  # node-seconds used / (105 s x 4 nodes)


def test_step_curve_and_quantiles():
    t, lv = step_curve([0, 20, 100, 20], [100, 60, 105, 60], [2, 1, 3, 0])
    assert t.tolist() == [0, 20, 60, 100, 105]
    assert lv.tolist() == [2, 3, 2, 3, 0]
    s = time_weighted_summary(t, lv, 0, 105)
    assert s["mean"] == pytest.approx(255 / 105)
    assert (s["median"], s["p95"], s["max"]) == (2, 3, 3)
    # a window starting before the first step counts level 0 there
    assert time_weighted_summary([10], [1], 0, 20)["mean"] == pytest.approx(0.5)
    assert np.isnan(summary([])["mean"])


def test_bounded_slowdown_tau():
    assert bounded_slowdown([0], [0], [1], tau=10).tolist() == [1.0]  # 1 / 10 -> bounded to 1
    assert bounded_slowdown([0], [50], [51], tau=10).tolist() == [5.1]
    assert bounded_slowdown([0], [50], [51], tau=1).tolist() == [51.0]
    with pytest.raises(ValueError):
        bounded_slowdown([0], [0], [1], tau=0)


def test_assign_nodes(small_trace):
    ids = job_nodes(small_trace)
    assert ids == [[0, 1], [0, 1, 2], [2], []]  # A then C take the lowest; at 100 A frees 0, 1 and B starts
    with pytest.raises(ValueError, match="needs 3 nodes"):
        assign_nodes([0, 0], [10, 10], [2, 3], 4)
    assert id_ranges([5, 0, 1, 2, 7, 8]) == "0-2 5 7-8"
    assert node_utilisation([0], [0], [10], [2], 4) == 0.5


def test_report_prints_batch_metrics(small_trace_file, tmp_path):
    res = CliRunner().invoke(cli, ["report", str(small_trace_file)])
    assert res.exit_code == 0, res.output
    assert "bounded slowdown" in res.output and "tau" not in res.output.split("\n")[0]
    line = next(x for x in res.output.splitlines() if x.startswith("wait s"))
    assert line.split()[2:] == ["30", "0", "81", "90"]
    assert "max(run, 10 s)" in res.output


def test_report_json_and_figures(small_trace_file, tmp_path):
    figs = tmp_path / "figs"
    res = CliRunner().invoke(cli, ["report", str(small_trace_file), "--json", "--figures", str(figs)])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["bounded_slowdown"]["max"] == 9.5 and d["tau"] == 10.0
    assert d["utilisation"]["mean"] == pytest.approx(UTIL_MEAN)
    assert [j["id"] for j in d["per_job"]] == ["A", "B", "C"]
    for name in ("gantt.png", "utilisation.png"):
        assert (figs / name).stat().st_size > 5000


def test_report_still_refuses_non_traces(tmp_path):
    bad = tmp_path / "x.h5"
    bad.write_text("not hdf5")
    res = CliRunner().invoke(cli, ["report", str(bad)])
    assert res.exit_code == 2 and "not an HDF5 file" in res.output


def test_report_reads_back_written_trace(small_trace_file):
    assert batch_report(read_trace(small_trace_file)).wait["max"] == 90.0


intervals = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 20), st.integers(1, 3)), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(intervals, st.sampled_from([0.5, 0.95, 0.3]))
def test_time_weighted_summary_against_second_by_second(ivs, q):
    """Integer times: the curve sampled once per second is the reference (mean, quantile = order statistic)."""
    b = [a for a, _, _ in ivs]
    e = [a + d for a, d, _ in ivs]
    w = [x for _, _, x in ivs]
    t, lv = step_curve(b, e, w)
    t0, t1 = 0, max(e) + 3
    samples = sorted(sum(x for a, z, x in zip(b, e, w) if a <= s < z) for s in range(t0, t1))
    got = time_weighted_summary(t, lv, t0, t1)
    assert got["mean"] == pytest.approx(sum(samples) / len(samples))
    assert got["max"] == samples[-1]
    k = max(0, math.ceil(q * len(samples) - 1e-9) - 1)
    key = {0.5: "median", 0.95: "p95"}.get(q)
    if key:
        assert got[key] == samples[k]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 15), st.integers(1, 4)), min_size=1, max_size=15))
def test_assign_nodes_never_shares_a_node(jobs):
    start = [a for a, _, _ in jobs]
    end = [a + d for a, d, _ in jobs]
    n = [k for _, _, k in jobs]
    total = int(max(step_curve(start, end, n)[1].max(), max(n)))  # the peak demand fits exactly
    ids = assign_nodes(start, end, n, total)
    assert [len(x) for x in ids] == n
    for i in range(len(jobs)):
        assert all(0 <= x < total for x in ids[i])
        for j in range(i):
            if start[i] < end[j] and start[j] < end[i] and start[i] < end[i] and start[j] < end[j]:
                assert not set(ids[i]) & set(ids[j])
