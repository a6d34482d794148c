"""Figures of a trace: the Gantt chart of phases and grants, and node utilisation (no Ray)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.plots.trace import gantt, occupancy
from iolab.specs import load_spec
from iolab.trace import write_trace
from iolab.sim.io.run import simulate

from shared_data import REPO

TABLE1 = REPO / "examples" / "carretero-table1.yaml"


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


def test_bin_means_is_the_exact_average_of_the_step_function():
    from iolab.plots import bin_means

    rng = np.random.default_rng(7)
    times = np.sort(rng.uniform(0, 100, 300))
    levels = rng.integers(0, 9, 300).astype(float)
    edges = np.linspace(0, 100, 41)
    # reference: the step function's value at the midpoints of 2 000 sub-intervals of each bin
    ref = []
    for a, b in zip(edges[:-1], edges[1:]):
        x = a + (np.arange(2000) + 0.5) * (b - a) / 2000
        k = np.searchsorted(times, x, side="right") - 1
        ref.append(np.where(k >= 0, levels[np.maximum(k, 0)], 0.0).mean())
    assert np.allclose(bin_means(times, levels, edges), ref, atol=0.05)  # midpoint sampling's own error
    # and exactly the integral over the whole span (nothing lost between samples)
    exact = float(np.sum(levels[:-1] * np.diff(times)) + levels[-1] * (100 - times[-1]))
    assert float(np.sum(bin_means(times, levels, edges) * np.diff(edges))) == pytest.approx(exact)


def test_a_dense_gantt_is_drawn_as_shares_and_says_so(tmp_path):
    """Table 1 at its full size has hundreds of phases per app: thinner than a pixel each, so each row
    shows the share of every time bin spent in each state; a small run keeps a bar per phase."""
    from iolab.plots.trace import DENSE, _busy

    full = simulate(load_spec(TABLE1), policy="fifo")
    per_app = max(int((full.phases["job"] == j).sum()) for j in full.jobs["id"])
    assert per_app > DENSE
    drawn = gantt(full, tmp_path / "g.svg")
    assert drawn.binned and "too many phases for a bar each" in drawn.path.read_text()
    assert not gantt(small_trace(), tmp_path / "s.svg").binned
    # the covered seconds per bin against a direct sum of each span's overlap with each bin
    spans = [(1.0, 2.5), (5.0, 0.5), (9.9, 0.2)]
    edges = np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
    ref = [sum(max(0.0, min(s + d, b) - max(s, a)) for s, d in spans) for a, b in zip(edges[:-1], edges[1:])]
    assert np.allclose(_busy(spans, edges), ref)


def test_batch_gantt_writes_ids_only_where_they_fit_and_never_over_one_another(tmp_path):
    """lackner2019's 500 jobs over 7 days: the axis in days, and ids written only where they fit (at
    most 60; before, every one of the 60 largest boxes got its id, over its neighbours')."""
    from pathlib import Path

    from iolab.plots.batch import batch_gantt
    from iolab.sim.batch.run import simulate_batch

    example = Path(__file__).resolve().parents[2] / "examples" / "lackner-sas.yaml"
    trace = simulate_batch(load_spec(example))
    drawn = batch_gantt(trace, tmp_path / "g.svg")
    assert drawn.jobs == 500 and 0 < drawn.labels <= 60
    svg = drawn.path.read_text()
    assert "time (days)" in svg
    # the ids as drawn: their real text extents (the renderer's, as saved) never intersect, and each
    # lies inside the box of its job (the polygon of that job's largest run of nodes, in display units)
    (ax,) = drawn.figure.axes
    renderer = drawn.figure.canvas.get_renderer()
    ids = [t for t in ax.texts if t.get_text()]
    assert len(ids) == drawn.labels
    extents = [t.get_window_extent(renderer) for t in ids]
    for i, a in enumerate(extents):
        for b in extents[i + 1:]:
            assert not (a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1), (a, b)
    boxes = [p.get_extents() for c in ax.collections for p in c.get_paths()]
    to_display = ax.transData
    for t, e in zip(ids, extents):
        x, y = to_display.transform(t.get_position())
        inside = [b for b in (to_display.transform_bbox(b) for b in boxes) if b.contains(x, y)]
        assert any(b.x0 <= e.x0 and e.x1 <= b.x1 and b.y0 <= e.y0 and e.y1 <= b.y1 for b in inside), t.get_text()


def test_box_plot_axis_reads_plain_numbers_and_explains_its_marks(tmp_path):
    from iolab.plots.campaign import _boxes
    from iolab.plots import new_figure

    fig = new_figure(8, 4)
    ax = fig.add_subplot()
    _boxes(ax, ["a", "b"], [np.array([6.0, 12.0, 30.0]), np.array([8.0, 20.0, 25.0])], "slowdown", log=True)
    fig.canvas.draw()
    texts = [t.get_text() for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels() if t.get_text()]
    assert texts and all("10^" not in t and "times" not in t and "$" not in t for t in texts), texts
    assert set(texts) >= {"10", "20"}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "mean" in legend and "median" in legend and any("quartiles" in t for t in legend)
