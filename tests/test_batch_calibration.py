"""Calibration: measured from a real run's records, read back from its trace, applied to any batch spec."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from iolab.calibration import alone, calibrated, delivered_of, measure, overheads_of, read_calibration
from iolab.cli import cli as main
from iolab.errors import TraceError
from iolab.specs import parse_spec
from iolab.trace import TraceBuilder, write_trace
from shared_data import REPO

JOB = {"id": "a", "submit": 0, "nodes": 1, "walltime": 200, "runtime": 100, "output": "2GB"}


def spec(time_scale=0.01, jobs=(JOB,)):
    return parse_spec({"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": "1GB/s"},
                                                      "hps": {"rate": "10GB/s", "capacity": "10GB"},
                                                      "stage_rate": "5GB/s"},
                       "scheduler": "fcfs", "workload": list(jobs), "emulator": {"time_scale": time_scale}})


def test_only_phases_with_their_tier_to_themselves_count():
    phases = [("lps", 0.0, 1.0, 10.0), ("lps", 0.5, 2.0, 10.0), ("hps", 0.5, 2.0, 10.0), ("lps", 2.0, 3.0, 10.0)]
    assert alone(phases) == [2, 3]  # the first two overlap on lps; touching at 2.0 is not overlapping


def test_measure_takes_medians_and_the_fixed_cost_over_the_paced_time():
    cal = measure(launch={"a": 1.0, "b": 3.0, "c": 2.0}, exit={"a": 0.5, "b": 0.7},
                  io_phases=[("lps", 0.0, 1.2, 100.0), ("hps", 5.0, 5.3, 100.0), ("lps", 0.5, 0.6, 1.0)],
                  wall_rates={"lps": 100.0, "hps": 1000.0}, time_scale=0.01)
    assert cal["wall"]["launch"] == 2.0 and cal["wall"]["exit"] == pytest.approx(0.6)
    # the two lps phases overlap: only the hps one counts, 0.3 s for 0.1 s of paced transfer
    assert cal["wall"]["io_phase"] == pytest.approx(0.2) and cal["samples"]["io_phase"] == 1
    assert cal["per_job"]["c"] == {"launch": 2.0, "exit": math.nan} or math.isnan(cal["per_job"]["c"]["exit"])
    unpaced = measure(launch={}, exit={}, io_phases=[("hps", 5.0, 5.3, 100.0)], wall_rates=None, time_scale=1)
    assert all(math.isnan(v) for v in unpaced["wall"].values())


def test_measure_separates_the_fixed_cost_from_the_delivered_rate():
    """Phases alone on their tier, built as wall = 0.05 s + bytes / (0.8 x 100 B/s) on lps and
    0.02 s + bytes / (1.0 x 1000 B/s) on hps: the lines (scipy's least squares, checked here against
    the exact values they were built from) give the shares and the fixed cost; staging
    alone at 0.9 of its rate gives 0.9 (an overlapping pair is left out)."""
    io = []
    t = 0.0
    for nbytes in (10.0, 40.0, 100.0, 200.0):
        io.append(("lps", t, t + 0.05 + nbytes / 80.0, nbytes))
        t += 10.0
    for nbytes in (100.0, 500.0, 1000.0):
        io.append(("hps", t, t + 0.02 + nbytes / 1000.0, nbytes))
        t += 10.0
    staging = [(0.0, 100 / 45, 100.0), (50.0, 50 + 300 / 45, 300.0),  # alone: 45 of 50 B/s
               (80.0, 90.0, 10.0), (85.0, 95.0, 10.0)]  # overlapping: left out
    cal = measure(launch={}, exit={}, io_phases=io, wall_rates={"lps": 100.0, "hps": 1000.0}, time_scale=0.01,
                  staging=staging, stage_wall_rate=50.0)
    d = cal["delivered"]
    assert d["lps"] == pytest.approx(0.8) and d["hps"] == pytest.approx(1.0) and d["stage"] == pytest.approx(0.9)
    assert cal["fits"]["lps"]["intercept"] == pytest.approx(0.05) and cal["fits"]["lps"]["n"] == 4
    # the fixed cost of each phase at its tier's delivered rate: 0.05 (lps) and 0.02 (hps); the median
    assert cal["wall"]["io_phase"] == pytest.approx(0.05) and cal["samples"]["io_phase"] == 7
    assert delivered_of(cal) == pytest.approx({"lps": 0.8, "hps": 1.0, "stage": 0.9})
    # too few phases, or sizes too alike for a slope: not measured (the paced rate is assumed)
    same = [("lps", 10.0 * i, 10.0 * i + 0.1 + 50 / 80.0, 50.0) for i in range(5)]
    few = measure(launch={}, exit={}, io_phases=same + io[4:6], wall_rates={"lps": 100.0, "hps": 1000.0},
                  time_scale=1)
    assert math.isnan(few["delivered"]["lps"]) and math.isnan(few["delivered"]["hps"])
    assert few["wall"]["io_phase"] == pytest.approx(0.1 + 50 / 80 - 0.5)  # lps median over the paced rate
    assert delivered_of(few) == {} and delivered_of({"wall": {}}) == {}  # nothing measured / a version-1 record
    # a fixed cost that comes out below 0 is refitted through the origin; scattered times are not a line
    neg = [("lps", 10.0 * i, 10.0 * i + t, b) for i, (b, t) in enumerate([(10.0, 0.01), (100.0, 1.0), (200.0, 2.3)])]
    c = measure(launch={}, exit={}, io_phases=neg, wall_rates={"lps": 100.0}, time_scale=1)
    slope = (10 * 0.01 + 100 * 1.0 + 200 * 2.3) / (10 ** 2 + 100 ** 2 + 200 ** 2)
    assert c["fits"]["lps"]["intercept"] == 0.0 and c["delivered"]["lps"] == pytest.approx(1 / slope / 100.0)
    noisy = [("lps", 10.0 * i, 10.0 * i + t, b) for i, (b, t) in enumerate([(10.0, 2.0), (100.0, 0.5), (200.0, 2.2),
                                                                             (50.0, 0.1)])]
    c = measure(launch={}, exit={}, io_phases=noisy, wall_rates={"lps": 100.0}, time_scale=1)
    assert math.isnan(c["delivered"]["lps"]) and c["fits"]["lps"]["r2"] < 0.9 and "r2" in c["fits"]["lps"]["why"]


def test_a_calibration_sets_the_measured_shares_and_keeps_the_others():
    cal = {"wall": {"launch": 0.1}, "delivered": {"lps": 0.7, "hps": math.nan, "stage": 0.95}}
    o = calibrated(spec(), cal).platform.overheads
    assert (o.delivered.lps, o.delivered.hps, o.delivered.stage) == (0.7, 1.0, 0.95)
    assert spec().platform.overheads.delivered.lps == 1.0


def test_wall_costs_become_the_seconds_of_the_spec_they_are_applied_to():
    cal = {"wall": {"launch": 0.8, "exit": 0.3, "io_phase": math.nan}}
    assert overheads_of(cal, 0.01) == pytest.approx({"launch": 80.0, "exit": 30.0, "io_phase": 0.0})
    s = calibrated(spec(time_scale=0.05), cal)
    assert (s.platform.overheads.launch, s.platform.overheads.exit) == pytest.approx((16.0, 6.0))
    assert spec().platform.overheads.launch == 0  # the original is untouched
    hand = spec().model_copy(update={"platform": spec().platform.model_copy(update={
        "overheads": spec().platform.overheads.model_copy(update={"io_phase": 7.0})})})
    assert calibrated(hand, cal).platform.overheads.io_phase == 7.0  # unmeasured: the spec's own value stays
    with pytest.raises(TypeError):
        calibrated(parse_spec({"platform": {"io_nodes": 1, "nodes_per_io_node": 2, "bandwidth": 1},
                               "apps": [{"id": "A", "nodes": 1, "iterations": 1, "compute": 1, "io_volume": 1}]}),
                   cal)


def _trace_with(path, calibration):
    tb = TraceBuilder()
    write_trace(tb.build(runtime="emulator-batch", **({"calibration": calibration} if calibration else {})), path)
    return path


def test_simulate_with_a_calibration_shifts_the_run_by_the_converted_costs(tmp_path):
    cal = {"version": 1, "wall": {"launch": 0.5, "exit": 0.2, "io_phase": 0.0}}
    trace = _trace_with(tmp_path / "real.h5", cal)
    assert read_calibration(trace)["wall"] == cal["wall"]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec(time_scale=0.01).model_dump(mode="json")))
    plain = json.loads(CliRunner().invoke(main, ["simulate", str(path), "--json"]).output)
    r = CliRunner().invoke(main, ["simulate", str(path), "--json", "--calibration", str(trace)])
    assert r.exit_code == 0, r.output
    # one job: 50 s launch + 20 s exit at time scale 0.01
    assert json.loads(r.output)["makespan"] == pytest.approx(plain["makespan"] + 70.0)


def test_a_trace_without_a_calibration_is_refused_before_anything_runs(tmp_path):
    bare = _trace_with(tmp_path / "sim.h5", None)
    with pytest.raises(TraceError, match="no calibration"):
        read_calibration(bare)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec().model_dump(mode="json")))
    for bad, why in ((bare, "no calibration"), (tmp_path / "missing.h5", "no such trace"), (path, "not an HDF5")):
        r = CliRunner().invoke(main, ["simulate", str(path), "--calibration", str(bad), "--out",
                                      str(tmp_path / "out.h5")])
        assert r.exit_code == 2 and why in r.output and "Traceback" not in r.output, r.output
        assert not (tmp_path / "out.h5").exists()
    # a calibration serves specs of its own level only, either way round
    batch_cal = _trace_with(tmp_path / "batch.h5", {"version": 2, "wall": {"launch": 0.5, "exit": 0.2, "io_phase": 0.0}})
    r = CliRunner().invoke(main, ["simulate", str(REPO / "examples" / "carretero-table1.yaml"), "--calibration",
                                  str(batch_cal)])
    assert r.exit_code == 2 and "a calibration of a real batch run; an I/O spec needs one of a real I/O run" in r.output
    io_cal = tmp_path / "io.h5"
    write_trace(TraceBuilder().build(runtime="emulator-batch", calibration={"version": 2, "level": "io", "wall": {}}),
                io_cal)
    r = CliRunner().invoke(main, ["simulate", str(path), "--calibration", str(io_cal)])
    assert r.exit_code == 2 and "a calibration of a real I/O run; a batch spec needs" in r.output
    r = CliRunner().invoke(main, ["validate", str(path), "--calibration", str(io_cal), "--work-dir",
                                  str(tmp_path / "v")])  # refused before the real run starts
    assert r.exit_code == 2 and "a calibration of a real I/O run; a batch spec needs" in r.output, r.output
    assert not (tmp_path / "v").exists()


def test_the_delivered_share_line_is_scipys_least_squares_line():
    """delivered_share fits with numpy.polyfit; scipy.stats.linregress (imported here only: it costs
    a real run 0.8 s and 60 MB) must give the same line on noisy random samples."""
    import random

    from scipy.stats import linregress

    from iolab.calibration import delivered_share

    rng = random.Random(4)
    for _ in range(50):
        fixed, rate = rng.uniform(0.0, 0.2), rng.uniform(50.0, 5000.0)
        sizes = [rng.uniform(1.0, 1000.0) for _ in range(rng.randrange(4, 30))]
        samples = [(b, fixed + b / rate * rng.uniform(0.97, 1.03)) for b in sizes]
        share, fit = delivered_share(samples, rate)
        ref = linregress(sizes, [t for _, t in samples])
        if ref.intercept >= 0:
            assert fit["slope"] == pytest.approx(ref.slope, rel=1e-9)
            assert fit["intercept"] == pytest.approx(ref.intercept, rel=1e-7, abs=1e-12)
            assert share == pytest.approx(1.0 / ref.slope / rate, rel=1e-9)
